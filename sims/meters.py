"""Energy meters (DESIGN §6): RAPL via powercap sysfs, NVML total-energy counters, or none.

Usage::

    meter = open_meter("auto")          # rapl if readable, else nvml, else none
    before = meter.read()               # dict channel -> joules (cumulative), or None
    ...                                 # measured region
    after = meter.read()
    used = meter.energy_between(before, after)   # dict channel -> joules, or None

A ``none`` meter reads ``None`` and :meth:`Meter.energy_between` then returns
``None``: energy is null when nothing measured it, never an estimate.

RAPL channels are named by zone: ``package-0``, ``package-0:dram``,
``package-0:core``, ... (sub-zones carry their parent's name). Counters wrap at
``max_energy_range_uj``; one wrap between two reads is corrected (a package at
100 W wraps roughly every 45 min, so read at least that often). NVML channels are
``gpu<index>``; the counter is mJ since driver load (64 bit, no wrap).
"""

from __future__ import annotations

import glob
import os

METER_KINDS = ("auto", "rapl", "nvml", "none")
RAPL_ROOT = "/sys/class/powercap"


class MeterUnavailable(RuntimeError):
    """The requested meter cannot be used on this machine."""


def energy_between(
    before: dict[str, float] | None,
    after: dict[str, float] | None,
    wrap: dict[str, float] | None = None,
) -> dict[str, float] | None:
    """Energy per channel between two readings, in joules.

    ``wrap`` maps a channel to its counter range in joules: a negative
    difference on such a channel is taken as one wrap-around. A negative
    difference without a known range is an error. ``None`` in, ``None`` out.
    """
    if before is None or after is None:
        return None
    wrap = wrap or {}
    out: dict[str, float] = {}
    for ch, e1 in after.items():
        if ch not in before:
            continue
        delta = e1 - before[ch]
        if delta < 0:
            if ch not in wrap:
                raise ValueError(f"energy counter {ch!r} went backwards ({before[ch]} -> {e1}) and has no wrap range")
            delta += wrap[ch]
        out[ch] = delta
    return out


def total_joules(energy: dict[str, float] | None) -> float | None:
    """Whole-processor energy of a RAPL or NVML delta: packages + DRAM, or the GPUs.

    Package zones already contain their core/uncore sub-zones, so only
    ``package-*`` and ``*dram`` channels are summed (then ``psys`` if that is all
    there is); for NVML all ``gpu*`` channels. ``None`` for no measurement.
    """
    if energy is None:
        return None
    keys = [k for k in energy if k.startswith("package") and (":" not in k or k.endswith(":dram"))]
    keys += [k for k in energy if k == "dram" or (k.endswith("dram") and ":" not in k)]
    keys += [k for k in energy if k.startswith("gpu")]
    if not keys:
        keys = [k for k in energy if k.startswith("psys")]
    if not keys:
        return None
    return float(sum(energy[k] for k in sorted(set(keys))))


class Meter:
    """Base meter: ``source`` names it; ``read()`` returns joules per channel or None."""

    source = "none"

    def read(self) -> dict[str, float] | None:
        return None

    @property
    def channels(self) -> tuple[str, ...]:
        return ()

    def energy_between(self, before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
        return energy_between(before, after)

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} source={self.source!r} channels={list(self.channels)}>"


class NoneMeter(Meter):
    """No energy measurement available: every reading is ``None``."""

    source = "none"


class RaplMeter(Meter):
    """Intel/AMD RAPL counters under ``<root>/intel-rapl:*`` (energy_uj, µJ)."""

    source = "rapl"

    def __init__(self, root: str = RAPL_ROOT) -> None:
        self.root = root
        self._zones: dict[str, str] = {}  # channel -> zone dir
        self._wrap: dict[str, float] = {}  # channel -> range in J
        zones = sorted(glob.glob(os.path.join(root, "intel-rapl:*")))
        names: dict[str, str] = {}
        for z in sorted(zones, key=lambda p: os.path.basename(p).count(":")):
            zid = os.path.basename(z)[len("intel-rapl:") :]
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
                with open(os.path.join(z, "max_energy_range_uj")) as f:
                    self._wrap[channel] = int(f.read().strip()) / 1e6
            except (OSError, ValueError):
                continue  # unreadable zone (e.g. energy_uj root-only): skip it
            self._zones[channel] = z
        if not self._zones:
            raise MeterUnavailable(f"no readable RAPL zones under {root} (missing, or energy_uj not readable)")

    @staticmethod
    def _read_uj(zone: str) -> int:
        with open(os.path.join(zone, "energy_uj")) as f:
            return int(f.read().strip())

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(self._zones)

    def read(self) -> dict[str, float]:
        return {ch: self._read_uj(z) / 1e6 for ch, z in self._zones.items()}

    def energy_between(self, before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
        return energy_between(before, after, self._wrap)


class NvmlMeter(Meter):
    """NVIDIA total-energy counter (mJ) of one GPU, via pynvml / nvidia-ml-py."""

    source = "nvml"

    def __init__(self, device: int = 0) -> None:
        try:
            import pynvml  # lazy: only when an NVML meter is requested
        except ImportError as exc:
            raise MeterUnavailable(f"NVML meter needs nvidia-ml-py (pynvml): {exc}") from exc
        self._nvml = pynvml
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # pynvml.NVMLError and friends
            raise MeterUnavailable(f"NVML init failed: {exc}") from exc
        try:
            count = pynvml.nvmlDeviceGetCount()
            if not 0 <= int(device) < count:
                raise MeterUnavailable(f"NVML device {device} does not exist ({count} device(s))")
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(int(device))
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)  # probe: raises if unsupported
        except MeterUnavailable:
            pynvml.nvmlShutdown()
            raise
        except Exception as exc:
            pynvml.nvmlShutdown()
            raise MeterUnavailable(f"NVML total-energy counter unavailable on device {device}: {exc}") from exc
        self.device = int(device)
        self._channel = f"gpu{self.device}"
        self._open = True

    @property
    def channels(self) -> tuple[str, ...]:
        return (self._channel,)

    def read(self) -> dict[str, float]:
        mj = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        return {self._channel: mj / 1e3}

    def close(self) -> None:
        if self._open:
            self._open = False
            self._nvml.nvmlShutdown()


def open_meter(kind: str = "auto", *, device: int = 0, rapl_root: str = RAPL_ROOT) -> Meter:
    """Open an energy meter.

    ``kind``: ``rapl`` / ``nvml`` (raise :class:`MeterUnavailable` if they cannot
    be read), ``none``, or ``auto`` (RAPL if readable, else NVML for ``device``,
    else the none meter). ``rapl_root`` is the powercap directory (tests point it
    at a fake tree).
    """
    if kind not in METER_KINDS:
        raise ValueError(f"unknown meter kind {kind!r}; allowed: {', '.join(METER_KINDS)}")
    if kind == "none":
        return NoneMeter()
    if kind == "rapl":
        return RaplMeter(rapl_root)
    if kind == "nvml":
        return NvmlMeter(device)
    for factory in (lambda: RaplMeter(rapl_root), lambda: NvmlMeter(device)):
        try:
            return factory()
        except MeterUnavailable:
            continue
    return NoneMeter()
