"""Three-component GPU kernel bound (Panwar 2014, ch. 3 §3.3.4): ``max(t_compute, t_global, t_local)``.

A throughput-oriented device overlaps its components, so a kernel is bound by
the slowest: compute instructions ``t_compute = sum_i instructions_i /
throughput_i`` over instruction types, global-memory transactions over the
global throughput, local (shared) memory transactions over the local
throughput (reads and writes modelled separately and summed). Arrays broadcast.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike


def _sum_over(kind: str, counts: Mapping[str, ArrayLike], throughput: Mapping[str, float]):
    missing = sorted(set(counts) - set(throughput))
    if missing:
        raise ValueError(f"no {kind} throughput for {', '.join(missing)}")
    total = 0.0
    for k, v in counts.items():
        rate = float(throughput[k])
        if rate <= 0:
            raise ValueError(f"{kind} throughput of {k!r} must be > 0")
        v = np.asarray(v, dtype=float)
        if np.any(v < 0):
            raise ValueError(f"{kind} count of {k!r} must be >= 0")
        total = total + v / rate
    return total


def t_compute(instructions: Mapping[str, ArrayLike], throughput: Mapping[str, float]):
    """``sum_i instructions_i / throughput_i`` (s); throughputs in instructions per second."""
    return _sum_over("instruction", instructions, throughput)


def t_memory(transactions: Mapping[str, ArrayLike], throughput: Mapping[str, float]):
    """Memory time (s): transactions per kind (e.g. ``read``, ``write``) over their throughputs, summed."""
    return _sum_over("memory", transactions, throughput)


def time(instructions, instruction_throughput, global_transactions, global_throughput, local_transactions=None,
         local_throughput=None):
    """``max(t_compute, t_global, t_local)`` (s) and which component bounds it."""
    tc = np.asarray(t_compute(instructions, instruction_throughput), dtype=float)
    tg = np.asarray(t_memory(global_transactions, global_throughput), dtype=float)
    tl = np.asarray(t_memory(local_transactions or {}, local_throughput or {}), dtype=float)
    stacked = np.stack(np.broadcast_arrays(tc, tg, tl))
    names = np.array(["compute", "global", "local"])
    return stacked.max(axis=0), names[stacked.argmax(axis=0)]
