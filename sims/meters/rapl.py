"""RAPL energy counters through the Linux powercap interface (``/sys/class/powercap/intel-rapl:*``).

Channels are named by zone: ``package-0``, ``package-1`` (one per socket),
``package-0:dram``, ``package-0:core``, ... (sub-zones carry their parent's
name). Counters are µJ and wrap at ``max_energy_range_uj``; one wrap between two
reads is corrected (a 100 W package wraps roughly every 45 min, so read at
least that often). A zone that cannot be read is not silently dropped: it is
listed in :attr:`RaplMeter.unreadable` with the reason, and when no zone can be
read the error names every zone and why.
"""

from __future__ import annotations

import glob
import os
import re

from sims.meters.base import Meter, MeterUnavailable, energy_between

_PACKAGE = re.compile(r"^package-(\d+)")
#: RAPL's energy status registers update about every millisecond (Intel SDM vol. 3B, 14.9).
RAPL_UPDATE_PERIOD_S = 1e-3


def _why(exc: OSError | ValueError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied (energy_uj is root-only on Linux >= 5.10; run as root or relax its mode)"
    return f"{type(exc).__name__}: {exc}"


class RaplMeter(Meter):
    """Intel/AMD RAPL counters of every socket under ``root``."""

    source = "rapl"
    scope = "node"
    update_period_s = RAPL_UPDATE_PERIOD_S

    def __init__(self, root: str = "/sys/class/powercap") -> None:
        self.root = root
        self._zones: dict[str, str] = {}  # channel -> zone dir
        self._wrap: dict[str, float] = {}  # channel -> range in J
        self.unreadable: dict[str, str] = {}  # zone dir -> reason
        zones = sorted(glob.glob(os.path.join(root, "intel-rapl:*")), key=lambda p: (os.path.basename(p).count(":"), p))
        names: dict[str, str] = {}
        for z in zones:
            zid = os.path.basename(z)[len("intel-rapl:"):]
            try:
                with open(os.path.join(z, "name")) as f:
                    name = f.read().strip()
            except OSError:
                name = "zone-" + zid
            parent = zid.rsplit(":", 1)[0] if ":" in zid else None
            channel = f"{names[parent]}:{name}" if parent in names else name
            names[zid] = channel
            try:
                self._read_uj(z)
            except (OSError, ValueError) as exc:
                self.unreadable[z] = f"energy_uj: {_why(exc)}"
                continue
            try:
                with open(os.path.join(z, "max_energy_range_uj")) as f:
                    self._wrap[channel] = int(f.read().strip()) / 1e6
            except (OSError, ValueError) as exc:
                self.unreadable[z] = f"max_energy_range_uj (needed to correct wrap-around): {_why(exc)}"
                continue
            self._zones[channel] = z
        if not self._zones:
            if not zones:
                raise MeterUnavailable(f"no RAPL zones under {root} (no powercap intel-rapl driver on this machine)")
            details = "; ".join(f"{z}: {why}" for z, why in sorted(self.unreadable.items()))
            raise MeterUnavailable(f"no readable RAPL zone under {root}: {details}")

    @staticmethod
    def _read_uj(zone: str) -> int:
        with open(os.path.join(zone, "energy_uj")) as f:
            return int(f.read().strip())

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(self._zones)

    def packages(self) -> dict[str, int]:
        """Channel -> socket (physical package id) for every package-level channel."""
        out = {}
        for ch in self._zones:
            m = _PACKAGE.match(ch)
            if m:
                out[ch] = int(m.group(1))
        return out

    def read(self) -> dict[str, float]:
        return {ch: self._read_uj(z) / 1e6 for ch, z in self._zones.items()}

    def energy_between(self, before, after):
        return energy_between(before, after, self._wrap)


def package_of_cpu(cpu: int, sysfs: str = "/sys/devices/system/cpu") -> int | None:
    """The socket (physical package id) of logical CPU ``cpu``, or None when sysfs does not say."""
    try:
        with open(os.path.join(sysfs, f"cpu{int(cpu)}", "topology", "physical_package_id")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None
