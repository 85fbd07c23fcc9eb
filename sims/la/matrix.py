"""Partitions and static counts of the LA case (PeaPaw §6.3.2) and of PEACH's matrix workloads.

Counting rules (code inspection, as the papers count):

* **matrix multiply** ``C = A B`` (``n x n``): the inner loop of the classic
  kernel does one multiply-add (2 flops) and loads one element of ``A`` and one
  of ``B``; each element of ``C`` is stored once. Per row of ``C``: ``2 n^2``
  flops and ``2 s n^2 + s n`` bytes for ``s``-byte elements. With float32 this
  gives ``I = 2 n^3 / (8 n^3 + 4 n^2) = 0.2498`` - PeaPaw's ``I_G = 0.25`` for CP.
* **matrix transpose** ``E = D^T`` (``m x m``): no flops; each element is
  loaded and stored once, ``2 s`` bytes per element.

LA (float32, ``1024^2`` product and ``8192^2`` transpose) then has
``I = 2^31 / (2^33 + 2^22 + 2^29) = 0.235``, PeaPaw's 0.24.

What a bound counts (``PHASE_KERNELS``, :mod:`sims.bench.ceilings`): the product
runs as BLAS / cuBLAS, a blocked kernel whose loads of ``A`` and ``B`` hit cache,
so it runs against the GEMM ceiling and moves at least its *compulsory* traffic -
its rows of ``A`` and ``C`` and all of ``B`` once: ``s (2 rows n + n^2)``
(:func:`matmul_traffic`). The classic kernel's ``2 s n^3`` above is the papers'
counting rule, kept as the recorded ``bytes`` (and the published reproductions
keep it); scored as DRAM traffic it makes the bandwidth term of the bound exceed
what a BLAS product takes, and the run "beats" its bound. The transpose has no
flops; its counted bytes are its compulsory traffic.

A data-parallel split gives the accelerator ``round(alpha n)`` rows of each
phase's output (``C`` rows for the product, rows of ``D`` - columns of ``E`` -
for the transpose); the host takes the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sims.vocab import balanced_alpha, data_parallel_alpha, dp_variant, parse_alpha, roofline_time

#: PeaPaw's LA sizes: 1024 x 1024 product, 8192 x 8192 transpose, float32.
LA_MATMUL_N = 1024
LA_TRANSPOSE_N = 8192
LA_WPS = ("CO", "GO", "p-DP", "CP")
#: the cache-blocked transpose kernel's tile (:mod:`sims.la.kernels`); a transpose ceiling's size is a multiple of it
TILE = 64
#: PEACH's workloads and their work unit (W): flops for the product, bytes moved for the transpose.
PEACH_WORKLOADS = {"MatrixMultiply": "flop", "MatrixTranspose": "byte"}
DTYPES = {"float32": 4, "float64": 8}

__all__ = ["LA_WPS", "PEACH_WORKLOADS", "Part", "dp_variant", "la_partition", "peach_partition", "pdp_alpha", "transpose_size"]


def matmul_counts(rows: int, n: int, itemsize: int) -> tuple[int, int]:
    """(flops, bytes) of ``rows`` rows of an ``n x n`` product."""
    return 2 * rows * n * n, rows * (2 * itemsize * n * n + itemsize * n)


#: The compute ceiling each phase runs against (None: the phase does no flops)
PHASE_KERNELS = {"matmul": "gemm", "transpose": None}
#: The bandwidth ceiling a phase's traffic moves at when it is not the streaming ``t_b`` (strided access)
PHASE_BANDWIDTH = {"transpose": "transpose"}


def matmul_traffic(rows: int, n: int, itemsize: int) -> int:
    """Compulsory memory traffic of ``rows`` rows of an ``n x n`` product: read ``A_p`` and ``B``, write ``C_p``."""
    return itemsize * (2 * rows * n + n * n) if rows else 0


def transpose_counts(rows: int, m: int, itemsize: int) -> tuple[int, int]:
    """(flops, bytes) of transposing ``rows`` rows of an ``m x m`` matrix."""
    return 0, 2 * itemsize * rows * m


@dataclass(frozen=True)
class Part:
    """One processor's share: rows of the product's output and of the transpose's input."""

    mm_rows: int
    tr_rows: int
    n_mm: int
    n_tr: int
    itemsize: int

    @property
    def phases(self) -> tuple[str, ...]:
        return tuple(p for p, r in (("matmul", self.mm_rows), ("transpose", self.tr_rows)) if r)

    @property
    def flops(self) -> int:
        return matmul_counts(self.mm_rows, self.n_mm, self.itemsize)[0]

    @property
    def bytes(self) -> int:
        return (matmul_counts(self.mm_rows, self.n_mm, self.itemsize)[1]
                + transpose_counts(self.tr_rows, self.n_tr, self.itemsize)[1])

    @property
    def traffic(self) -> int:
        """The memory traffic a bound counts (``PHASE_KERNELS``): the product's compulsory traffic, the
        transpose's counted bytes."""
        return (matmul_traffic(self.mm_rows, self.n_mm, self.itemsize)
                + transpose_counts(self.tr_rows, self.n_tr, self.itemsize)[1])

    @property
    def transpose_traffic(self) -> int:
        """The part of :attr:`traffic` the transpose moves (strided: it runs at its own bandwidth ceiling)."""
        return transpose_counts(self.tr_rows, self.n_tr, self.itemsize)[1]

    @property
    def idle(self) -> bool:
        return not self.phases


def _split(n: int, alpha: float) -> tuple[int, int]:
    accel = int(round(alpha * n))
    return n - accel, accel


def pdp_alpha(whole: Part, rates: dict[str, dict[str, float]]) -> float:
    """The balanced split of ``whole`` (its counts split linearly with the rows) from ``{role: {t_f, t_b}}``.

    Each processor's time is its roofline time for the whole work against the GEMM ceiling at the run's
    precision and the compulsory traffic, the transpose's part of it at the transpose's own bandwidth ceiling
    where the file has one (``t_f_transpose_<dtype>``, s/byte: the memory time the bound counts,
    :mod:`analysis.scoring.ceilings`); with a platform file from before the ceilings (no ``t_f_gemm_<dtype>``),
    the classic ``t_f`` and the counted bytes.
    """
    dtype = {v: k for k, v in DTYPES.items()}[whole.itemsize]
    key = f"t_f_gemm_{dtype}"
    if all(key in rates[r] for r in ("host", "accel")):
        strided = whole.transpose_traffic

        def time(r: str) -> float:
            t_b = rates[r]["t_b"]
            memory = (whole.traffic - strided) * t_b + strided * rates[r].get(f"t_f_transpose_{dtype}", t_b)
            return max(whole.flops * rates[r][key], memory)

        return balanced_alpha(time("host"), time("accel"))
    # a platform file from before the ceilings: the classic t_f with the counted bytes, as it was split then
    return balanced_alpha(*(roofline_time(whole.flops, whole.bytes, rates[r]["t_f"], rates[r]["t_b"])
                            for r in ("host", "accel")))


def la_partition(variant: str, n_mm: int, n_tr: int, itemsize: int = 4,
                 rates: dict[str, dict[str, float]] | None = None) -> tuple[dict[str, Part], float | None]:
    """Split the LA workload for ``variant`` (CO, GO, p-DP, CP or DP(alpha)); returns parts and alpha.

    CP puts the transpose on the host and the product on the accelerator
    (PeaPaw: the more compute-intensive code goes where the flops are cheaper).
    p-DP needs ``rates`` = ``{role: {t_f, t_b}}`` from the characterised platform.
    """
    if n_mm < 1 or n_tr < 1:
        raise ValueError(f"LA sizes must be >= 1, got matmul {n_mm}, transpose {n_tr}")
    if variant == "CP":
        return {"host": Part(0, n_tr, n_mm, n_tr, itemsize), "accel": Part(n_mm, 0, n_mm, n_tr, itemsize)}, None
    whole = Part(n_mm, n_tr, n_mm, n_tr, itemsize)
    alpha = data_parallel_alpha(variant, pdp_alpha(whole, rates) if variant == "p-DP" and rates else None,
                                "LA", LA_WPS)
    mm_h, mm_a = _split(n_mm, alpha)
    tr_h, tr_a = _split(n_tr, alpha)
    return {"host": Part(mm_h, tr_h, n_mm, n_tr, itemsize), "accel": Part(mm_a, tr_a, n_mm, n_tr, itemsize)}, alpha


def peach_partition(workload: str, variant: str, n: int, itemsize: int) -> tuple[dict[str, Part], float]:
    """Split one PEACH workload (MatrixMultiply or MatrixTranspose, ``n x n``) by the variant's alpha."""
    if workload not in PEACH_WORKLOADS:
        raise ValueError(f"unknown PEACH workload {workload!r}; allowed: {', '.join(PEACH_WORKLOADS)}")
    alpha = parse_alpha(variant)
    if alpha is None or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"a PEACH run's variant is DP(alpha) with 0 <= alpha <= 1, got {variant!r}")
    if n < 1:
        raise ValueError(f"PEACH matrix size must be >= 1, got {n}")
    h, a = _split(n, alpha)
    if workload == "MatrixMultiply":
        return {"host": Part(h, 0, n, 0, itemsize), "accel": Part(a, 0, n, 0, itemsize)}, alpha
    return {"host": Part(0, h, 0, n, itemsize), "accel": Part(0, a, 0, n, itemsize)}, alpha


def transpose_size(params: Mapping[str, Any]) -> int | None:
    """The square size ``n`` of the matrix a run's transpose phase works on (LA's ``n_tr``, PEACH's
    MatrixTranspose ``n``), from its spec's ``params``; None for a run without a transpose."""
    if params.get("n_tr"):
        return int(params["n_tr"])
    if params.get("workload") == "MatrixTranspose" and params.get("n"):
        return int(params["n"])
    return None


def work_units(workload: str, part: Part) -> int:
    """PEACH's W of one part: flops for MatrixMultiply, bytes moved for MatrixTranspose."""
    return part.flops if PEACH_WORKLOADS[workload] == "flop" else part.bytes
