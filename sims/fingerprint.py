"""The machine a measurement ran on, as facts that change only when the machine does.

:func:`machine_facts` reads the CPU model, core count, memory, GPU model and
driver, MPI library and host name; characterisation stores them in the
platform file (``machine``), and every history snapshot keys its series by
:func:`fingerprint` of them, so that a model's accuracy is only ever compared
with its accuracy on the same kind of machine. Nothing here imports MPI or a
GPU library: the GPU comes from ``nvidia-smi`` (when present), the MPI
library from the installed distributions' metadata, so the facts can be read
in any process (a Dask client, a login node).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
from typing import Any

#: The facts that define the machine (and its fingerprint); the host name is recorded but not part of it,
#: so that identical nodes of one cluster share their history.
FINGERPRINT_KEYS = ("cpu_model", "cores", "memory_gib", "gpu_model", "gpu_driver", "mpi_library")


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    import platform

    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _gpu() -> tuple[str | None, str | None]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, None
    try:
        out = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None, None
    rows = [r.split(",") for r in out.stdout.strip().splitlines() if "," in r]
    if out.returncode != 0 or not rows:
        return None, None
    names = sorted({r[0].strip() for r in rows})
    return f"{len(rows)} x " + " + ".join(names), rows[0][1].strip()


def _mpi_library() -> str | None:
    from importlib import metadata

    for dist in ("mpich", "openmpi", "impi_rt", "msmpi"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return os.environ.get("HETVAL_MPI_LIBRARY") or None


def machine_facts(mpi_library: str | None = None) -> dict[str, Any]:
    """This machine's facts (``mpi_library`` overrides the detected one, e.g. with ``MPI.Get_library_version``)."""
    gpu_model, gpu_driver = _gpu()
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpu_model": gpu_model,
        "gpu_driver": gpu_driver,
        "mpi_library": mpi_library or _mpi_library(),
        "hostname": socket.gethostname(),
    }


def fingerprint(facts: dict[str, Any]) -> str:
    """A short stable id of the machine-defining facts (:data:`FINGERPRINT_KEYS`)."""
    body = json.dumps({k: facts.get(k) for k in FINGERPRINT_KEYS}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:12]
