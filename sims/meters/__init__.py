"""Energy meters: RAPL, NVML, external power-meter traces, or none.

Every meter has the same small interface::

    before = meter.read()                 # a reading (opaque), or None
    ...                                   # measured region
    after = meter.read()
    joules = meter.energy_between(before, after)   # {channel: J}, or None

* :class:`RaplMeter` - ``/sys/class/powercap`` package/DRAM zones of every
  socket, counter wrap-around, unreadable zones named with the reason.
* :class:`NvmlMeter` - the NVML total-energy counter of one GPU.
* :class:`TraceMeter` - an external meter's CSV (``timestamp, channel, watts``)
  integrated over each region's wall-clock window, with a clock offset.
* :class:`NoneMeter` - nothing measured: readings are ``None`` and so is energy.

Each meter is registered as an entry point of group ``hetval.meters``
(:mod:`sims.meters.registry`); a plugin adds one the same way. Which rank
reads which meter, and whom its channels' joules belong to, each meter says
itself; :mod:`sims.meters.node` opens them and attributes node-wide energy to
the host and accelerator processors without double counting. A meter is never asked for a value it did not measure:
energy with no meter is null, never a model estimate.
"""

from __future__ import annotations

from sims.meters.base import (
    RAPL_ROOT,
    Meter,
    MeterUnavailable,
    NoneMeter,
    energy_between,
    total_joules,
)
from sims.meters.nvml import NvmlMeter
from sims.meters.rapl import RaplMeter
from sims.meters.trace import TraceError, TraceMeter, integrate, read_trace

__all__ = [
    "RAPL_ROOT", "Meter", "MeterUnavailable", "NoneMeter", "NvmlMeter", "RaplMeter",
    "TraceError", "TraceMeter", "energy_between", "integrate", "read_trace", "total_joules",
]
