"""Timed regions across MPI ranks: warm-up, barriers around each repetition, the slowest rank's time.

The clock is ``time.perf_counter`` (monotonic). Every repetition is
``barrier -> start -> work -> device sync -> stop -> barrier``, so all ranks
start together and the run's time is the slowest rank's own elapsed time
(docs/contracts.md, "Raw record"). The closing barrier sleeps rather than spins, so a rank that
is done never competes with one still being timed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def timer_resolution() -> float:
    """Resolution of the clock used for measured regions, in seconds."""
    return float(time.get_clock_info("perf_counter").resolution)


def polite_barrier(comm: Any, poll_s: float = 5e-4) -> None:
    """A barrier that waits by sleeping instead of spinning.

    MPI barriers busy-poll. A rank that finished early (or has no work, like the
    accelerator rank in a CPU-only WP) would then burn its core - and on many
    machines the shared power and frequency budget, or an SMT sibling - while
    the other rank is still being timed. Sleeping between tests of a
    non-blocking barrier keeps the waiting rank off the CPU.
    """
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(poll_s)


def mpi_op(name: str) -> Any:
    """An MPI reduction operation by name (``MAX``, ``LOR``, ...), imported lazily."""
    from mpi4py import MPI

    return getattr(MPI, name)


class RegionTooShortError(RuntimeError):
    """A measured region is too short to be timed reliably (shorter than ``min_region_factor`` timer ticks)."""


@dataclass
class Repetition:
    """One timed repetition: this rank's elapsed time and every rank's (on all ranks)."""

    own_s: float
    per_rank_s: list[float]
    meter_before: Any = None
    meter_after: Any = None
    wall_s: tuple[float, float] | None = None  # wall-clock (POSIX) start and end of the metered window

    @property
    def slowest_s(self) -> float:
        return max(self.per_rank_s)


@dataclass
class Measurement:
    """All repetitions of one measured region plus the resolution it was checked against."""

    repetitions: list[Repetition] = field(default_factory=list)
    resolution_s: float = 0.0
    inner: int = 1  # executions of ``work`` per timed region (> 1 only when lengthened for a meter)


PROBES = 4  # at most this many probes to find how many executions span a meter's window


def measure(
    comm: Any,
    work: Callable[[], None],
    sync: Callable[[], None],
    warmup: int,
    repetitions: int,
    min_region_factor: float = 1000.0,
    meter_read: Callable[[], Any] | None = None,
    min_window_s: float = 0.0,
) -> Measurement:
    """Run ``work`` ``warmup`` times untimed, then ``repetitions`` times timed on every rank.

    Parameters
    ----------
    comm
        An mpi4py communicator (all its ranks call this together).
    work
        This rank's part of the region (may do nothing on an idle rank).
    sync
        Waits for asynchronous device work issued by ``work`` (no-op on CPUs).
    warmup, repetitions
        Untimed and timed executions.
    min_region_factor
        The slowest rank's region must last at least this many timer
        resolutions; otherwise :class:`RegionTooShortError` is raised on every rank.
    meter_read
        Optional energy-meter read, taken right after the start barrier and
        right after the closing barrier (so the window covers every rank's work).
        Called on every rank (a rank with no meter returns an empty reading).
    min_window_s
        When > 0, untimed probes after the warm-up time the region; while the
        slowest rank's region is shorter than this (with a 25 % margin), the
        execution count is raised to ``ceil(inner 1.25 min_window_s / probe)``
        and probed again (at most ``PROBES`` times); a timed repetition that still comes out
        shorter (noise) lengthens the count again and restarts the timed repetitions (at most
        ``PROBES`` times). Every timed region then
        runs ``work`` ``inner`` times (the same on all ranks) and the reported
        time is the region divided by ``inner`` - a meter that updates slowly
        then still sees a long enough window. :attr:`Measurement.inner` says
        how many.
    """
    if repetitions < 1:
        raise ValueError("repetitions must be >= 1")
    for _ in range(warmup):
        comm.Barrier()
        work()
        sync()
        polite_barrier(comm)
    inner = 1
    if min_window_s > 0:
        # Untimed probes of the lengthened region itself until it spans the window with a 25 %
        # margin: a single first execution is often slower than the ones after it (caches,
        # clocks, library warm-up), so the count is checked, not just extrapolated.
        for _ in range(PROBES):
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(inner):
                work()
                sync()
            probe = comm.allreduce(time.perf_counter() - start, op=mpi_op("MAX"))
            polite_barrier(comm)
            if probe >= 1.25 * min_window_s:
                break
            inner = max(inner + 1, math.ceil(inner * 1.25 * min_window_s / max(probe, 1e-9)))
    resolution = timer_resolution()
    result = Measurement(resolution_s=resolution, inner=inner)
    restarts = 0
    while len(result.repetitions) < repetitions:
        comm.Barrier()
        before = meter_read() if meter_read else None
        wall_start = time.time()
        start = time.perf_counter()
        for _ in range(inner):
            work()
            sync()
        own = (time.perf_counter() - start) / inner
        # The energy window closes when the slowest rank is done, not when this one is.
        polite_barrier(comm)
        after = meter_read() if meter_read else None
        wall_end = time.time()
        per_rank = comm.allgather(own)
        region = max(per_rank) * inner  # the same on every rank, so every rank decides alike
        if min_window_s > 0 and region < min_window_s and restarts < PROBES:
            # A repetition ran faster than the probes (noise of 20-50 % is common): the window would be
            # too short for the meter. Lengthen and start the timed repetitions again, so that every
            # region of the measurement holds the same number of executions.
            inner = max(inner + 1, math.ceil(inner * 1.25 * min_window_s / max(region, 1e-9)))
            result = Measurement(resolution_s=resolution, inner=inner)
            restarts += 1
            continue
        result.repetitions.append(Repetition(own, per_rank, before, after, (wall_start, wall_end)))
    shortest = min(r.slowest_s for r in result.repetitions)
    if shortest < resolution * min_region_factor:
        raise RegionTooShortError(
            f"measured region lasted {shortest:.3g} s, shorter than {min_region_factor:g} x the "
            f"timer resolution ({resolution:.3g} s); make the problem larger"
        )
    return result
