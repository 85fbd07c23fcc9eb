"""Pin a rank to its cores and to one thread per core, before any numerical library loads.

Oversubscribing the cores (ranks x threads above the core count) costs about
3x on small machines, so every entry point calls :func:`limit_threads` before
importing NumPy or Numba and :func:`pin_cores` once it knows its rank's cores.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


from sims.placement import THREADS_VARIABLE  # noqa: E402 - the workflow sets it when threads_per_rank > 1


def limit_threads(n: int = 1) -> None:
    """Set every thread-count variable to ``n`` for this process (before the libraries read them)."""
    for var in THREAD_VARIABLES:
        os.environ[var] = str(n)


def threads_per_rank(default: int = 1) -> int:
    """The threads this rank may use: ``$HETVAL_THREADS_PER_RANK`` when set to a positive integer, else ``default``."""
    value = os.environ.get(THREADS_VARIABLE, "")
    return int(value) if value.isdigit() and int(value) > 0 else default


def relative_cores(cores: Sequence[int], available: Sequence[int]) -> list[int]:
    """The CPUs that the platform's ``cores`` name inside the cpuset ``available`` this rank was given.

    ``cores`` are positions in the rank's cpuset, not absolute CPU numbers, so one platform file works under
    any allocation: on a whole machine (cpuset 0..n-1) position i is CPU i; in a SLURM job given CPUs
    {12, 13}, positions 0 and 1 are CPUs 12 and 13. A launcher that already bound the rank to exactly as
    many CPUs as it asks for (``srun --cpu-bind``, one task per cpuset) keeps that binding. Raises
    ValueError naming the cpuset when a position lies outside it.
    """
    wanted = sorted({int(c) for c in cores})
    if not wanted:
        raise ValueError("a CPU processor needs at least one core in 'cores'")
    avail = sorted({int(c) for c in available})
    if any(c < 0 for c in wanted):
        raise ValueError(f"cores {wanted}: positions in the rank's cpuset cannot be negative")
    if len(avail) == len(wanted):
        return avail
    if wanted[-1] >= len(avail):
        raise ValueError(
            f"cores {wanted} are positions in this rank's cpuset, which holds {len(avail)} CPU(s) {avail}: "
            "fix the platform's 'cores', or give the job more CPUs per task"
        )
    return [avail[i] for i in wanted]


def pin_cores(cores: Sequence[int]) -> list[int]:
    """Bind this process to the CPUs ``cores`` names in its cpuset (see :func:`relative_cores`); returns them."""
    if not hasattr(os, "sched_setaffinity"):
        return sorted({int(c) for c in cores})
    available = os.sched_getaffinity(0)
    chosen = relative_cores(cores, available)
    try:
        os.sched_setaffinity(0, chosen)
    except OSError as exc:
        raise ValueError(f"cannot pin to CPUs {chosen} (this rank may use {sorted(available)}): {exc}") from exc
    return chosen
