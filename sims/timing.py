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
    stopped: str = "fixed"  # why the repetitions stopped: fixed, or an Until's narrow / at most / budget
    extra_warmups: int = 0  # first timed repetitions an Until took as warm-ups


PROBES = 4  # at most this many probes to find how many executions span a meter's window


@dataclass(frozen=True)
class Until:
    """When to stop repeating a measurement (pyperf's and criterion's idea): at least ``at_least`` timed
    repetitions; past that, stop once the 95 % interval of the judged ranks' mean log time is within
    ``precision`` of it (Student's t over the repetitions), or at ``at_most``, or once another repetition would
    take the timed total past ``budget_s``.

    A first timed repetition slower than every later one by more than ``precision`` is a warm-up that was still
    needed: it is taken as one (at most ``extra_warmup`` times) and measured again, so that a short fixed warm-up
    costs no accuracy.
    """

    at_least: int = 3
    at_most: int = 6
    precision: float = 0.05
    budget_s: float = 2.0
    extra_warmup: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.at_least <= self.at_most:
            raise ValueError(f"Until needs 1 <= at_least <= at_most, got {self.at_least} and {self.at_most}")
        if not self.precision > 0 or not self.budget_s > 0:
            raise ValueError(f"Until needs precision > 0 and budget_s > 0, got {self.precision} and {self.budget_s}")

    def half_width(self, times: list[float]) -> float:
        """The relative half-width of the 95 % interval of the mean log time (inf below two samples)."""
        from scipy import stats

        if len(times) < 2 or min(times) <= 0:
            return math.inf
        logs = [math.log(t) for t in times]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        return math.expm1(float(stats.t.ppf(0.975, len(logs) - 1)) * sd / math.sqrt(len(logs)))

    def warm_outlier(self, times: list[float]) -> bool:
        """Whether the first of ``times`` is slower than every later one by more than the precision."""
        return len(times) >= 2 and times[0] > (1 + self.precision) * max(times[1:])

    def verdict(self, series: list[list[float]], warmups_taken: int) -> str | None:
        """``"warm-up"`` (drop the first repetition), ``"narrow"``/``"at most"``/``"budget"`` (stop), or None (go on),
        from each judged rank's series of own times (all the same length)."""
        n = len(series[0]) if series else 0
        if warmups_taken < self.extra_warmup and n >= self.at_least and any(self.warm_outlier(s) for s in series):
            return "warm-up"
        if n < self.at_least:
            return None
        if n >= self.at_most == self.at_least:  # a fixed count: no interval to judge
            return "at most"
        if all(self.half_width(s) <= self.precision for s in series):
            return "narrow"
        if n >= self.at_most:
            return "at most"
        if max(sum(s) * (n + 1) / n for s in series) > self.budget_s:
            return "budget"
        return None


def measure(
    comm: Any,
    work: Callable[[], None],
    sync: Callable[[], None],
    warmup: int,
    repetitions: int,
    min_region_factor: float = 1000.0,
    meter_read: Callable[[], Any] | None = None,
    min_window_s: float = 0.0,
    until: Until | None = None,
    active: bool = True,
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
    until
        Adaptive repetitions instead of ``repetitions`` of them (:class:`Until`), judged on the own times of the
        ranks whose ``active`` is true (every rank decides alike); :attr:`Measurement.stopped` says why they
        stopped.
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
    judged = [i for i, a in enumerate(comm.allgather(bool(active))) if a] if until is not None else []
    if until is not None:
        repetitions = until.at_most
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
        if until is not None and judged:
            verdict = until.verdict([[r.per_rank_s[i] for r in result.repetitions] for i in judged],
                                    result.extra_warmups)
            if verdict == "warm-up":
                del result.repetitions[0]
                result.extra_warmups += 1
            elif verdict is not None:
                result.stopped = verdict
                break
    if until is not None and result.stopped == "fixed":
        result.stopped = "at most"
    shortest = min(r.slowest_s for r in result.repetitions)
    if shortest < resolution * min_region_factor:
        raise RegionTooShortError(
            f"measured region lasted {shortest:.3g} s, shorter than {min_region_factor:g} x the "
            f"timer resolution ({resolution:.3g} s); make the problem larger"
        )
    return result
