"""The meter interface, the none meter and counter differences."""

from __future__ import annotations

from typing import Any

RAPL_ROOT = "/sys/class/powercap"


class MeterUnavailable(RuntimeError):
    """The requested meter cannot be used on this machine (the message says why)."""


def energy_between(
    before: dict[str, float] | None,
    after: dict[str, float] | None,
    wrap: dict[str, float] | None = None,
) -> dict[str, float] | None:
    """Energy per channel between two cumulative readings, in joules.

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


def whole_channels(channels: list[str] | tuple[str, ...] | dict[str, Any]) -> list[str]:
    """The channels that together make a whole processor's energy, each counted once.

    RAPL package zones contain their core/uncore sub-zones, so only ``package-*``
    and the DRAM zones are kept (``psys`` only when there is nothing else); GPU
    (``gpu*``) and trace channels are whole by themselves.
    """
    names = list(channels)
    keep = [k for k in names if k.startswith("package") and (":" not in k or k.endswith(":dram"))]
    keep += [k for k in names if k == "dram" or (k.endswith("dram") and ":" not in k)]
    keep += [k for k in names if not k.startswith(("package", "psys")) and "dram" not in k]
    if not keep:
        keep = [k for k in names if k.startswith("psys")]
    return sorted(set(keep))


def total_joules(energy: dict[str, float] | None) -> float | None:
    """Whole-processor energy of one meter's delta: :func:`whole_channels` summed; ``None`` for no measurement."""
    if energy is None:
        return None
    keys = whole_channels(energy)
    if not keys:
        return None
    return float(sum(energy[k] for k in keys))


class Meter:
    """Base meter.

    ``source`` is the record's ``energy_source``; ``scope`` says what it covers
    (``node``: every processor of one host, read once per host; ``device``: one
    GPU, read by the rank driving it; ``external``: a trace covering whatever its
    channels are wired to); ``update_period_s`` is how often its value changes,
    so regions shorter than a few periods cannot be metered.
    """

    source = "none"
    scope = "node"
    update_period_s = 0.0
    #: Opened by ``energy.meter: auto`` on the ranks it applies to (an external trace must be asked for).
    auto = False

    # ------------------------------------------------------------ as the registry uses it (hetval.meters)
    @classmethod
    def reads_on(cls, rank: Any) -> bool:
        """Whether this rank (a :class:`sims.meters.node.RankMeters`: role, host, ranks, backend, device)
        reads the meter (e.g. one leader rank per host, or the rank driving a GPU)."""
        return False

    @classmethod
    def open(cls, settings: Any, rank: Any) -> Meter:
        """The meter for this rank from the run's ``energy`` settings (:class:`sims.meters.node.EnergySettings`);
        :class:`MeterUnavailable` (saying why) when the machine has none."""
        raise MeterUnavailable(f"{cls.source}: no meter")

    @classmethod
    def owner(cls, channel: str, rank: dict[str, Any], meter: dict[str, Any],
              ranks: list[dict[str, Any]]) -> tuple[str, str, str | None]:
        """Who a channel's joules belong to: ``(host | accel | node, why, node name or None)``, from the
        reading rank's and every rank's description (:meth:`sims.meters.node.RankMeters.describe`)."""
        return "node", "a node-wide reading", rank["host"]

    def read(self) -> Any:
        return None

    @property
    def channels(self) -> tuple[str, ...]:
        return ()

    def energy_between(self, before: Any, after: Any) -> dict[str, float] | None:
        return energy_between(before, after)

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} source={self.source!r} channels={list(self.channels)}>"


class NoneMeter(Meter):
    """No energy measurement available: every reading is ``None``."""

    source = "none"
