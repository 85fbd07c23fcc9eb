"""Workload partitions (WPs) of the synthetic application and their static counts per processor.

A WP says, for the ``host`` and the ``accel`` processor, how many elements it
processes and which phases (``vecadd``, ``powadd``) it runs. Counts follow the
papers' rules (PeaPaw §6.3.1): VecAdd 1 flop and 12 bytes per element, PowAdd
2048 flops and 256 bytes per element.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sims.sa.kernels import POWADD_BYTES, POWADD_FLOPS, VECADD_BYTES, VECADD_FLOPS

PHASES = ("vecadd", "powadd")
PHASE_COUNTS = {"vecadd": (VECADD_FLOPS, VECADD_BYTES), "powadd": (POWADD_FLOPS, POWADD_BYTES)}
FIXED_WPS = ("CO", "GO", "p-DP", "CP", "CP-reverse")
_DP = re.compile(r"^DP\((?P<alpha>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\)$")


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


def dp_variant(alpha: float) -> str:
    """The variant name of the DP WP with fraction ``alpha`` of the elements on the accelerator."""
    return f"DP({alpha:g})"


def parse_alpha(variant: str) -> float | None:
    """The ``alpha`` of a ``DP(alpha)`` variant, or None for any other variant."""
    m = _DP.match(variant)
    return float(m.group("alpha")) if m else None


def pdp_alpha(t_f_host: float, t_b_host: float, t_f_accel: float, t_b_accel: float) -> float:
    """The balanced (p-DP) fraction of elements for the accelerator, from characterised rates.

    Each processor's time per SA element is its roofline time
    ``max(N_f t_f, N_b t_b)`` for one element of both phases; the elements are
    split inversely to those times so both processors finish together.
    """
    flops = VECADD_FLOPS + POWADD_FLOPS
    nbytes = VECADD_BYTES + POWADD_BYTES
    t_host = max(flops * t_f_host, nbytes * t_b_host)
    t_accel = max(flops * t_f_accel, nbytes * t_b_accel)
    return t_host / (t_host + t_accel)


def data_parallel_alpha(variant: str, alpha_pdp: float | None, case: str, wps: tuple[str, ...]) -> float:
    """The accelerator's share of a data-parallel WP: CO 0, GO 1, p-DP the balanced split, DP(alpha) alpha."""
    if variant == "CO":
        return 0.0
    if variant == "GO":
        return 1.0
    if variant == "p-DP":
        if alpha_pdp is None:
            raise ValueError("p-DP needs the characterised platform to choose its split")
        return alpha_pdp
    parsed = parse_alpha(variant)
    if parsed is None or not 0.0 <= parsed <= 1.0:
        raise ValueError(
            f"unknown {case} variant {variant!r}; allowed: {', '.join(wps)} or DP(alpha) with 0 <= alpha <= 1"
        )
    return parsed


def partition(variant: str, size: int, alpha_pdp: float | None = None) -> tuple[dict[str, Part], float | None]:
    """Split ``size`` elements between ``host`` and ``accel`` for ``variant``.

    Returns the parts and the alpha used (the fraction of elements on the
    accelerator, None for the code partitions ``CP`` and ``CP-reverse``).
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    both = PHASES
    if variant == "CP":
        return {"host": Part(size, ("vecadd",)), "accel": Part(size, ("powadd",))}, None
    if variant == "CP-reverse":
        return {"host": Part(size, ("powadd",)), "accel": Part(size, ("vecadd",))}, None
    alpha = data_parallel_alpha(variant, alpha_pdp, "SA", FIXED_WPS)
    n_accel = int(round(alpha * size))
    n_host = size - n_accel
    parts = {
        "host": Part(n_host, both if n_host else ()),
        "accel": Part(n_accel, both if n_accel else ()),
    }
    return parts, alpha
