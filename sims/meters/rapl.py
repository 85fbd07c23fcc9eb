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
from typing import Any

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
    auto = True

    @classmethod
    def reads_on(cls, rank: Any) -> bool:
        return rank.node_rank == 0  # node-wide counters: one leader rank per host

    @classmethod
    def open(cls, settings: Any, rank: Any) -> RaplMeter:
        meter = cls(settings.rapl_root)
        rank.notes += [f"{rank.hostname}: RAPL zone {z} skipped: {why}" for z, why in sorted(meter.unreadable.items())]
        return meter

    @classmethod
    def owner(cls, channel: str, rank: dict[str, Any], meter: dict[str, Any],
              ranks: list[dict[str, Any]]) -> tuple[str, str, str | None]:
        """A package zone belongs to the processor every rank on its socket plays; anything else to the node."""
        m = re.match(r"^package-(\d+)", channel)
        target, why = _package_owner(rank["host"], int(m.group(1)), ranks) if m else ("node", "platform-wide zone")
        return target, why, rank["host"]

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


def _package_owner(host: str, package: int, ranks: list[dict[str, Any]]) -> tuple[str, str]:
    """(target, why) for RAPL package ``package`` of ``host``."""
    on_host = [r for r in ranks if r["host"] == host]
    if any(r["packages"] is None for r in on_host):
        return "node", "a rank on this host is not pinned to cores, so its socket is unknown"
    roles = {("host" if r["backend"] == "cupy" else r["role"]) for r in on_host if package in r["packages"]}
    if not roles:
        return "node", "no rank runs on this socket (idle socket: static power, in the total only)"
    if len(roles) > 1:
        return "node", "host and accel ranks share this socket; RAPL cannot split it"
    role = roles.pop()
    why = "every rank on this socket plays this processor"
    if any(r["backend"] == "cupy" for r in on_host if package in r["packages"]):
        why += " (a GPU-driving rank's CPU time is hosting work, counted on the host side)"
    return role, why
