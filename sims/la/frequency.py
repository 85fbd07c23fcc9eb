"""CPU and GPU frequency control for PEACH's (f_C, f_G) study dimension - where the platform allows it.

CPU: the Linux ``cpufreq`` interface - the ``userspace`` governor and
``scaling_setspeed`` of the cores a rank is pinned to (root only). GPU:
``nvidia-smi -i <dev> -lgc <f>,<f>`` locks the graphics clock (``-rgc``
resets it). A pair that cannot be set is never approximated: the run is
recorded as ``skipped`` with the reason (:class:`NotControllable`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

CPUFREQ = "/sys/devices/system/cpu"


class NotControllable(RuntimeError):
    """The requested frequency cannot be set on this platform (the message says why)."""


def cpu_control(cores: Sequence[int] | None, sysfs: str = CPUFREQ) -> tuple[bool, str]:
    """Whether the CPU frequency of ``cores`` can be set here, and why (not)."""
    if not cores:
        return False, "the rank is not pinned to cores, so there is no core whose frequency to set"
    for c in cores:
        d = os.path.join(sysfs, f"cpu{int(c)}", "cpufreq")
        if not os.path.isdir(d):
            return False, f"no cpufreq interface for cpu{c} ({d} missing: no DVFS driver, or a VM)"
        gov = os.path.join(d, "scaling_available_governors")
        try:
            with open(gov) as f:
                governors = f.read().split()
        except OSError as exc:
            return False, f"cannot read {gov}: {exc}"
        if "userspace" not in governors:
            return False, f"cpu{c}: the userspace governor is not available ({' '.join(governors)})"
        if not os.access(os.path.join(d, "scaling_setspeed"), os.W_OK):
            return False, f"cpu{c}: scaling_setspeed is not writable (needs root)"
    return True, "cpufreq userspace governor"


def gpu_control(device: int | None) -> tuple[bool, str]:
    """Whether the GPU clock of ``device`` can be locked here, and why (not)."""
    if device is None:
        return False, "the accelerator is not a GPU"
    if shutil.which("nvidia-smi") is None:
        return False, "nvidia-smi is not installed"
    return True, "nvidia-smi -lgc"


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@contextmanager
def pinned(f_c_ghz: float | None, f_g_mhz: float | None, cores: Sequence[int] | None, device: int | None,
           sysfs: str = CPUFREQ) -> Iterator[None]:
    """Run the block at CPU frequency ``f_c_ghz`` (on ``cores``) and GPU clock ``f_g_mhz``; restore afterwards.

    ``None`` leaves that processor at its default. Raises :class:`NotControllable`.
    """
    restore: list[tuple[str, str]] = []
    gpu_locked = False
    try:
        if f_c_ghz is not None:
            ok, why = cpu_control(cores, sysfs)
            if not ok:
                raise NotControllable(f"CPU frequency {f_c_ghz} GHz cannot be set: {why}")
            for c in cores or ():
                d = os.path.join(sysfs, f"cpu{int(c)}", "cpufreq")
                with open(os.path.join(d, "scaling_governor")) as f:
                    restore.append((os.path.join(d, "scaling_governor"), f.read().strip()))
                _write(os.path.join(d, "scaling_governor"), "userspace")
                _write(os.path.join(d, "scaling_setspeed"), str(int(round(f_c_ghz * 1e6))))  # kHz
        if f_g_mhz is not None:
            ok, why = gpu_control(device)
            if not ok:
                raise NotControllable(f"GPU clock {f_g_mhz} MHz cannot be set: {why}")
            f = str(int(round(f_g_mhz)))
            res = subprocess.run(["nvidia-smi", "-i", str(device), "-lgc", f"{f},{f}"],
                                 capture_output=True, text=True, check=False)
            if res.returncode != 0:
                raise NotControllable(f"nvidia-smi -lgc {f},{f} failed: {res.stderr.strip() or res.stdout.strip()}")
            gpu_locked = True
        yield
    finally:
        for path, gov in reversed(restore):
            try:
                _write(path, gov)
            except OSError:
                pass
        if gpu_locked:
            subprocess.run(["nvidia-smi", "-i", str(device), "-rgc"], capture_output=True, check=False)
