"""MPI ping-pong between ranks 0 and 1: one-way message time against size, fitted as latency + size / bandwidth."""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

from sims.fit import linear_fit

#: message sizes in bytes, 8 B to 4 MiB (the halo faces of the FDM studies fall inside)
SIZES = tuple(8 * 4**k for k in range(0, 10))


def pingpong(comm: Any, sizes=SIZES, repetitions: int = 7, round_trips: int = 20) -> dict[int, list[float]] | None:
    """One-way times (s) per message size between ranks 0 and 1, ``repetitions`` samples each (rank 0 returns them).

    Each sample is the mean over ``round_trips`` blocking send/receive round
    trips halved; one untimed round trip per size comes first. Other ranks
    only take part in the barriers.
    """
    rank = comm.Get_rank()
    out: dict[int, list[float]] = {}
    for size in sizes:
        buf = np.zeros(max(size // 4, 1), dtype=np.float32)
        samples = []
        for rep in range(repetitions + 1):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(round_trips):
                if rank == 0:
                    comm.Send(buf, dest=1, tag=7)
                    comm.Recv(buf, source=1, tag=7)
                elif rank == 1:
                    comm.Recv(buf, source=0, tag=7)
                    comm.Send(buf, dest=0, tag=7)
            dt = (time.perf_counter() - t0) / (2 * round_trips)
            if rep > 0:
                samples.append(dt)
        out[int(buf.nbytes)] = samples
    return out if rank == 0 else None


def measure(comm: Any, repetitions: int = 7, attempts: int = 3, say: Any = None) -> dict[int, list[float]] | None:
    """:func:`pingpong` again, up to ``attempts`` times in all, while the one-way time does not grow with the
    message size (a fitted ``t_net`` <= 0): on a busy machine a rank descheduled for a millisecond swamps a
    2 MiB transfer and tilts the fit. Each repeat is said (``say``, on rank 0); rank 0 returns the last samples,
    the others None."""
    for attempt in range(1, attempts + 1):
        samples = pingpong(comm, repetitions=repetitions)
        slope = fit(samples)["t_net"] if samples is not None else None
        if not comm.bcast(slope is not None and slope <= 0 and attempt < attempts, root=0):
            return samples
        if say is not None and comm.Get_rank() == 0:
            say(f"ping-pong: the one-way time did not grow with the message size (t_net {slope:.3g} s/byte; "
                f"the machine was busy?): measuring again, attempt {attempt + 1} of {attempts}")
    return None  # not reached: the last attempt returns


def fit(samples: dict[int, list[float]]) -> dict[str, Any]:
    """Least-squares fit of the median one-way time ``T(m) = L + m t_net`` over sizes ``m``.

    Returns the latency ``L`` (s), ``t_net`` (s/byte), R² of the fit, the
    residuals per size and the samples behind it.
    """
    m = np.array(sorted(samples), dtype=float)
    t = np.array([statistics.median(samples[int(k)]) for k in m])
    f = linear_fit([m], t, intercept=True)
    slope, intercept = f.coef
    # The latency is measured, not fitted: the median one-way time of the smallest message. The fit's
    # intercept can come out <= 0 on a loaded machine (large messages dominate an unweighted fit).
    return {
        "latency_s": float(t[0]),
        "intercept_s": float(intercept),
        "t_net": float(slope),
        "r2": f.r2,
        "residuals_s": {int(k): float(r) for k, r in zip(m, f.residuals, strict=True)},
        "samples_s": {int(k): [float(x) for x in v] for k, v in samples.items()},
    }
