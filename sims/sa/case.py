"""Workload partitions (WPs) of the synthetic application and their static counts per processor.

A WP says, for the ``host`` and the ``accel`` processor, how many elements it
processes and which phases (``vecadd``, ``powadd``) it runs. Counts follow the
papers' rules (PeaPaw §6.3.1; :mod:`sims.sa.counts`). Pure: no NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.sa.counts import PHASE_COUNTS, PHASES
from sims.vocab import WPS, balanced_alpha, data_parallel_alpha, roofline_time

FIXED_WPS = WPS


@dataclass(frozen=True)
class Part:
    """One processor's share of a WP."""

    elements: int
    phases: tuple[str, ...]

    @property
    def flops(self) -> int:
        return sum(self.elements * PHASE_COUNTS[p][0] for p in self.phases)

    @property
    def bytes(self) -> int:
        return sum(self.elements * PHASE_COUNTS[p][1] for p in self.phases)

    @property
    def idle(self) -> bool:
        return self.elements == 0 or not self.phases


def pdp_alpha(rates: dict[str, dict[str, float]]) -> float:
    """The balanced (p-DP) fraction of elements for the accelerator, from characterised ``t_f``/``t_b`` per role.

    Each processor's time per element is its roofline time for one element of
    both phases; :func:`sims.vocab.balanced_alpha` splits inversely to them.
    """
    flops = sum(c[0] for c in PHASE_COUNTS.values())
    nbytes = sum(c[1] for c in PHASE_COUNTS.values())
    return balanced_alpha(*(roofline_time(flops, nbytes, rates[r]["t_f"], rates[r]["t_b"]) for r in ("host", "accel")))


def partition(variant: str, size: int, alpha_pdp: float | None = None) -> tuple[dict[str, Part], float | None]:
    """Split ``size`` elements between ``host`` and ``accel`` for ``variant``.

    Returns the parts and the alpha used (the fraction of elements on the
    accelerator, None for the code partitions ``CP`` and ``CP-reverse``).
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    if variant == "CP":
        return {"host": Part(size, ("vecadd",)), "accel": Part(size, ("powadd",))}, None
    if variant == "CP-reverse":
        return {"host": Part(size, ("powadd",)), "accel": Part(size, ("vecadd",))}, None
    alpha = data_parallel_alpha(variant, alpha_pdp, "SA", FIXED_WPS)
    n_accel = int(round(alpha * size))
    n_host = size - n_accel
    return {"host": Part(n_host, PHASES if n_host else ()), "accel": Part(n_accel, PHASES if n_accel else ())}, alpha
