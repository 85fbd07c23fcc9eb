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


def limit_threads(n: int = 1) -> None:
    """Set every thread-count variable to ``n`` for this process (before the libraries read them)."""
    for var in THREAD_VARIABLES:
        os.environ[var] = str(n)


def pin_cores(cores: Sequence[int]) -> list[int]:
    """Bind this process to ``cores``; raise ValueError naming cores this machine does not offer."""
    wanted = {int(c) for c in cores}
    if not wanted:
        raise ValueError("a CPU processor needs at least one core in 'cores'")
    if not hasattr(os, "sched_setaffinity"):
        return sorted(wanted)
    available = os.sched_getaffinity(0)
    n_cpus = os.cpu_count() or 0
    absent = sorted(c for c in wanted if c >= n_cpus or c < 0)
    if absent:
        raise ValueError(
            f"cores {absent} do not exist on this machine (it has cores 0..{n_cpus - 1}); "
            "fix the platform's 'cores'"
        )
    try:
        os.sched_setaffinity(0, wanted)
    except OSError as exc:
        raise ValueError(
            f"cannot pin to cores {sorted(wanted)} (this job may use {sorted(available)}): {exc}"
        ) from exc
    return sorted(wanted)
