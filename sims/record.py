"""The run-record contract: field names and types, ids, provenance, and the raw-record writer.

This module is the single definition of the record's fields. ``analysis.storage.schema``
builds the pyarrow schema of the Parquet dataset from :data:`FIELDS`, so the
writer (here) and the reader (``analysis``) cannot drift apart.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from sims.atomic import atomic_write_text
from sims.vocab import FDM_PHASES, STATUSES  # noqa: F401 - STATUSES re-exported: the contract names them

#: (name, type, required) for every column of a run record. Types are the
#: logical types ``string``, ``int64``, ``float64``, ``timestamp`` (UTC, ISO 8601
#: text in JSON), ``map:string`` and ``map:doubles`` (a JSON object in the raw record - text or an object -
#: of text values or of lists of numbers; an Arrow map in the dataset). ``required`` fields must be present
#: and non-null in every record. ``params``, ``energy_detail``, ``grid``, ``decomposition`` and ``placement``
#: stay JSON text in the dataset: their structure differs by case, meter or scheduler, and one dataset holds
#: every case (the validation tables turn ``params`` into a struct per table).
FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("run_id", "string", True),
    ("study", "string", True),
    ("case", "string", True),
    ("variant", "string", True),
    ("params", "string", True),  # JSON text of the run's parameters
    ("platform", "string", True),
    ("ranks", "int64", True),
    ("rep", "int64", True),
    ("status", "string", True),  # ok | failed | skipped
    ("error", "string", False),
    ("size", "int64", False),  # problem size (SA: elements per vector; LA: n_mm^2 + n_tr^2; PEACH: n)
    ("alpha", "float64", False),  # fraction of the data on the accelerator (DP WPs)
    ("time_s", "float64", False),  # slowest rank, measured region only
    ("time_host_s", "float64", False),
    ("time_accel_s", "float64", False),
    ("flops", "int64", False),  # static counts by the papers' counting rules
    ("bytes", "int64", False),
    ("flops_host", "int64", False),
    ("bytes_host", "int64", False),
    ("flops_accel", "int64", False),
    ("bytes_accel", "int64", False),
    ("executed_flops_host", "int64", False),  # what the kernels actually executed
    ("executed_flops_accel", "int64", False),
    ("energy_j", "float64", False),  # null unless a meter measured it
    ("energy_host_j", "float64", False),
    ("energy_accel_j", "float64", False),
    ("energy_source", "string", True),  # rapl | nvml | trace | published | none, or a "+"-joined mix (nvml+rapl)
    ("energy_detail", "string", False),  # JSON: per channel joules, processor it went to and why; refusals
    ("timer_resolution_s", "float64", False),
    # FDM runs (null for the other cases). JSON text fields hold per-rank detail.
    ("grid", "string", False),  # JSON: {"shape": [nx, ny, nz], "spacing": m}
    ("steps", "int64", False),  # time steps in the measured loop
    ("order", "int64", False),  # space order (2 or 4)
    ("decomposition", "string", False),  # JSON: [px, py, pz]
    ("marshaling", "string", False),  # host-staging | device-pack | gpu-aware
    ("boundary", "string", False),  # none | cpml(<width>)
    ("phase_times", "map:doubles", False),  # {phase: [seconds per rank]}
    # the slowest rank's total per FDM phase (halo: waiting in the exchange; h2d: host<->device copies)
    *((f"time_{phase}_s", "float64", False) for phase in FDM_PHASES),
    ("points", "int64", False),  # grid points updated per step (whole grid)
    ("started_at", "timestamp", True),
    # when this repetition's timed region began (UTC), and which round of a study measured in rounds it was
    # measured in (0-based; sims.batch): a moment when the machine was slow shows as the rows it touched
    ("measured_at", "timestamp", False),
    ("round", "int64", False),
    ("hostname", "string", True),
    # where it ran (sims.placement): "<job>.<step>" under a batch scheduler (null outside one), and JSON of the
    # scheduler's facts (partition, account, node list) and each rank's host, bound CPUs and visible GPUs
    ("job_id", "string", False),
    ("placement", "string", False),
    ("git_sha", "string", False),
    ("versions", "map:string", True),  # {package: version}
    ("config_hash", "string", True),
)

FIELD_TYPES: dict[str, str] = {name: typ for name, typ, _ in FIELDS}
REQUIRED: frozenset[str] = frozenset(name for name, _, req in FIELDS if req)
#: ``energy_source`` values that are not a meter; a meter's source is its name in :data:`METER_GROUP`.
ENERGY_SOURCES = ("published", "none")
#: The entry point group of energy meters (:mod:`sims.meters.registry`).
METER_GROUP = "hetval.meters"


@functools.cache
def meter_names() -> tuple[str, ...]:
    """The registered meters' names, sorted: entry point names only, no meter imported."""
    return tuple(sorted({ep.name for ep in metadata.entry_points(group=METER_GROUP)}))


def valid_energy_source(value: str) -> bool:
    """``none``/``published``, or one or more registered meters' names joined by ``+`` (sorted, e.g.
    ``nvml+rapl``)."""
    if value in ENERGY_SOURCES:
        return True
    parts = value.split("+")
    return parts == sorted(set(parts)) and all(p in meter_names() for p in parts)


def canonical_json(obj: Any) -> str:
    """JSON text with sorted keys and no whitespace: equal objects give equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def stable_hash(obj: Any, length: int = 16) -> str:
    """Hex SHA-256 prefix of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


#: The keys of a run spec that define a run; ``run_id`` hashes exactly these.
RUN_ID_KEYS = ("study", "case", "variant", "params", "platform", "layout", "warmup", "repetitions", "seed")


def run_id_of(spec: dict[str, Any]) -> str:
    """The stable id of a run: a hash of everything that defines it (not of where it is written)."""
    return stable_hash({k: spec.get(k) for k in RUN_ID_KEYS})


def utc_now() -> str:
    """Current UTC time as ISO 8601 text with a ``Z`` suffix (microseconds)."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_at(posix: float) -> str:
    """The POSIX time ``posix`` as :func:`utc_now` writes it."""
    return _dt.datetime.fromtimestamp(posix, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def git_sha(path: str | os.PathLike[str] | None = None) -> str | None:
    """The commit of the source tree this code runs from, or None outside a git checkout."""
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None


def git_state(path: str | os.PathLike[str] | None = None) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the source tree: dirty when tracked files differ from the commit (None outside git)."""
    sha = git_sha(path)
    if sha is None:
        return None, None
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return sha, None
    return sha, (bool(out.stdout.strip()) if out.returncode == 0 else None)


def versions() -> dict[str, str]:
    """Versions of the packages that shape a measurement."""
    import platform as _platform
    from importlib import metadata

    found = {"python": _platform.python_version(), "hetval": package_version("hetval")}
    for dist in ("numpy", "numba", "mpi4py", "mpich", "cupy"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    try:
        from mpi4py import MPI

        found["mpi_library"] = MPI.Get_library_version().splitlines()[0].strip()
    except Exception:  # noqa: BLE001 - provenance must never break a run
        pass
    return found


def package_version(name: str) -> str:
    """The installed version of ``name`` (hetval's own version when it is not installed)."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        from sims import __version__

        return __version__


def provenance() -> dict[str, Any]:
    """The provenance fields of a record except ``config_hash`` (which the run spec carries): the same for every
    record a process writes (one process runs one code: a launch measuring many runs asks git once)."""
    return dict(_provenance())


@functools.cache
def _provenance() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        # "<sha>-dirty" when the tree had uncommitted changes (as `git describe --dirty` marks it)
        "git_sha": _sha_text(*git_state()),
        "versions": canonical_json(versions()),
    }


def placement_fields(where: dict[str, Any] | None) -> dict[str, Any]:
    """The record's ``job_id`` and ``placement`` fields from :func:`sims.placement.placement` (None: unknown)."""
    from sims.placement import job_id

    if where is None:
        return {"job_id": None, "placement": None}
    return {"job_id": job_id(where), "placement": canonical_json(where)}


def _sha_text(sha: str | None, dirty: bool | None) -> str | None:
    return None if sha is None else (f"{sha}-dirty" if dirty else sha)


def measurement_path(path: str | os.PathLike[str], run_id: str, records: list[dict[str, Any]]) -> Path:
    """Where a raw record's permanent copy goes: ``<dir>/.measurements/<run_id>/<started_at>-<random>.json``.

    A forced re-run replaces the raw record (the workflow's output) but never this copy: every
    measurement of a run id is kept, each under its own time.
    """
    import secrets

    when = str(records[0].get("started_at") or utc_now()) if records else utc_now()
    stamp = "".join(ch if ch.isalnum() else "-" for ch in when)
    return Path(path).parent / ".measurements" / run_id / f"{stamp}-{secrets.token_hex(4)}.json"


def write_raw(path: str | os.PathLike[str], run_id: str, records: list[dict[str, Any]],
              keep: bool = False) -> None:
    """Atomically write one run's records as ``{"run_id": ..., "records": [...]}``.

    ``keep``: a new measurement - also write its permanent copy (:func:`measurement_path`).
    """
    for rec in records:
        missing = sorted(k for k in REQUIRED if rec.get(k) is None)
        if missing:
            raise ValueError(f"run record is missing required fields: {', '.join(missing)}")
        unknown = sorted(set(rec) - set(FIELD_TYPES))
        if unknown:
            raise ValueError(f"run record has fields outside the contract: {', '.join(unknown)}")
    text = json.dumps({"run_id": run_id, "records": records}, indent=1, default=str)
    if keep:
        copy = measurement_path(path, run_id, records)
        copy.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(copy, text)
    atomic_write_text(path, text)
