"""Compute ceilings per kernel class and precision: what each kind of kernel can reach on one processor.

The roofline literature draws several ceilings under one roof, one per kind of
code (Williams et al., "Roofline", CACM 2009: "in-core ceilings"). A bound is
only a bound for the kernels its ceiling was measured on: OpenBLAS's GEMM on a
core reaches several times what an element-wise FMA chain on the same core
does, so a matrix product scored against
the FMA ceiling beats its "bound". Characterisation therefore measures, per
processor and precision:

* ``vector`` - independent element-wise FMA chains (:func:`sims.bench.kernels.fma_peak`),
  what element-wise array code attains; float32 *is* the platform's classic ``t_f`` (not stored twice);
* ``gemm`` - the backend's matrix product ``C = A B`` (NumPy -> OpenBLAS on the
  CPU backends, CuPy -> cuBLAS on a GPU), ``2 n^3`` flops, over a few square
  sizes; the ceiling is the size with the highest median rate (the best this
  kernel class attains), every size's samples are kept.

and a bandwidth ceiling per access class and precision (``BANDWIDTH_CLASSES``):

* ``transpose`` - the backend's out-of-place transpose (:func:`sims.la.kernels.transpose`,
  NumPy's strided copy, a cache-blocked Numba kernel, ``copyto`` on a GPU), ``2 s n^2``
  bytes per transpose: strided access reaches a fraction of the streaming ``t_b``, and a
  transpose bounded by ``t_b`` is bounded many times too loosely. Its rate depends on the
  stride itself, not only on the footprint: a power-of-two row (8192 elements) maps a
  column's elements onto a few cache sets and runs about half as fast as a row a few
  elements longer. So it is measured at the sizes the study's transposes run at
  (``transpose_sizes``, derived from the study by the workflow; the ceiling is the
  fastest of them), and only without such sizes at the square size whose two arrays
  fill the memory of the triad's three (beyond the cache).

Each case declares which class each of its phases runs against
(``PHASE_KERNELS`` of its job's module); the models read the ceiling of that
class at the run's precision (:mod:`analysis.scoring.ceilings`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sims.bench import kernels
from sims.bench.parameters import parameter
from sims.vocab import BANDWIDTH_CLASSES, CEILING_CLASSES, CEILING_DTYPES

CLASSES = {**CEILING_CLASSES, **BANDWIDTH_CLASSES}
DTYPES = CEILING_DTYPES
#: default square sizes of the GEMM ceiling (the characterize section's ``gemm_sizes`` overrides them)
GEMM_SIZES = (512, 1024, 2048)
#: A platform characterised once measures the transposes in this many rounds at different moments (after the triad,
#: at the end; a replicated one, once per replicate: its replicates are the moments), each on fresh arrays, and
#: the ceiling is the upper end of all the replicates' and rounds
#: samples (:func:`upper_end`): strided access on a shared machine runs at a third to a half of its rate for seconds at a time (one
#: characterisation here measured a transpose at 0.41-0.46 GB/s in all its samples, which the study's runs
#: minutes later beat twice over), and a ceiling is the best the machine does.
TRANSPOSE_ROUNDS = 2


def gemm_setup(backend: Any, n: int, dtype: str, seed: int) -> dict[str, Any]:
    """``A``, ``B`` uniform in [-1, 1] and ``C`` zeros, ``n x n`` of ``dtype``, on ``backend``."""
    n = int(n)
    if n < 1:
        raise ValueError(f"GEMM size must be >= 1, got {n}")
    dt = np.dtype(dtype)
    return {"n": n, "A": backend.uniform((n, n), -1.0, 1.0, seed=seed * 4 + 1, dtype=dt),
            "B": backend.uniform((n, n), -1.0, 1.0, seed=seed * 4 + 2, dtype=dt),
            "C": backend.zeros((n, n), dtype=dt)}


def gemm(backend: Any, state: dict[str, Any]) -> int:
    """One ``C = A B`` (BLAS / cuBLAS, as the LA and PEACH products run); returns the flops (``2 n^3``)."""
    backend.xp.matmul(state["A"], state["B"], out=state["C"])
    return 2 * state["n"] ** 3


def transpose_setup(backend: Any, n: int, dtype: str, seed: int) -> dict[str, Any]:
    """``D`` uniform in [-1, 1] and ``E`` zeros, ``n x n`` of ``dtype``, on ``backend``."""
    dt = np.dtype(dtype)
    return {"n": int(n), "s": dt.itemsize, "D": backend.uniform((n, n), -1.0, 1.0, seed=seed * 4 + 3, dtype=dt),
            "E": backend.zeros((n, n), dtype=dt)}


def transpose(backend: Any, state: dict[str, Any]) -> int:
    """One ``E = D^T`` with the LA/PEACH kernel; returns the bytes counted (each element read and written once)."""
    from sims.la import kernels as la_kernels

    la_kernels.transpose(backend, state)
    return 2 * state["s"] * state["n"] ** 2


def vector_setup(backend: Any, dtype: str, seed: int) -> dict[str, Any]:
    """The FMA-chain state of :func:`sims.bench.kernels.fma_setup` at ``dtype``."""
    state = kernels.fma_setup(backend, seed=seed)
    if dtype != "float32":
        dt = np.dtype(dtype)
        acc = state["acc"].astype(dt)
        if backend.name == "numpy":  # on a cache line, as fma_setup places the float32 block
            acc = kernels.placed_like(acc)
        state.update(acc=acc, x=dt.type(state["x"]), y=dt.type(state["y"]))
    return state


def upper_end(rates: Sequence[float]) -> float:
    """The upper end of a kernel's rate from its samples: ``2 x_(n) - x_(n-1)``, the largest sample plus its gap
    to the second largest (Robson & Whitlock, "Estimation of a truncation point", Biometrika 51, 1964). The
    largest of ``n`` samples falls short of the end by about that gap; a study's runs of the same kernel draw
    as many samples again and beat their largest in about half the studies. One sample: itself."""
    top = sorted(float(r) for r in rates)[-2:]
    return top[-1] if len(top) < 2 else 2.0 * top[1] - top[0]


def summarize(rates_by_size: dict[int, list[float]], unit: str, method: str, warmup: int) -> dict[str, Any]:
    """The ceiling of one class and precision: the size whose median rate is highest, every size kept; its
    value is the upper end of that size's rates (:func:`upper_end`; ``rate_ceiling``), its fastest sample kept
    as ``rate_best``. A bound is what the kernel does not beat: at a run's own kernel and size (the transposes)
    a median-rate ceiling is the run's own typical speed, beaten by half its repetitions, and a fastest-sample
    ceiling is beaten whenever the runs draw a faster sample than characterisation did."""
    if not rates_by_size:
        raise ValueError("no samples to summarize")
    medians = {n: statistics.median(r) for n, r in rates_by_size.items()}
    best = max(medians, key=lambda n: medians[n])
    out = parameter(list(rates_by_size[best]), unit, method, warmup)
    fastest = max(rates_by_size[best])
    top = upper_end(rates_by_size[best])
    out.update(value=1.0 / top, rate_best=fastest, rate_ceiling=top)
    if best:  # a size-swept class: which size gave the ceiling, and every size's rates
        out.update(size=int(best), by_size={int(n): {"rate_median": medians[n], "samples": list(r)}
                                            for n, r in sorted(rates_by_size.items())})
    return out


def measure_ceilings(role: str, target: str, backend: Any, run: Callable[[Callable[[], int] | None], list[float] | None],
                     gemm_sizes: Sequence[int], seed: int) -> dict[str, dict[int, list[float]]] | None:
    """The compute classes x precision on ``target``; ``run(work)`` times ``work`` on every rank (``None`` =
    idle) and returns the rates on the target (flop/s). Returns ``{"<class>/<dtype>": {size: rates}}`` on the
    target. The transposes are measured apart, in rounds (:func:`measure_transposes`)."""
    out: dict[str, dict[int, list[float]]] = {}
    for dt in DTYPES:
        if dt != "float32":  # vector float32 is the platform's t_f, measured once
            state = vector_setup(backend, dt, seed) if role == target else None
            rates = run((lambda s=state: kernels.fma_peak(backend, s)) if state is not None else None)
            if rates is not None:
                out[f"vector/{dt}"] = {0: rates}
        _by_size(out, f"gemm/{dt}", gemm_sizes, role == target, run,
                 lambda n, dt=dt: gemm_setup(backend, n, dt, seed), lambda s: gemm(backend, s))
    return out if role == target else None


def _by_size(out: dict[str, dict[int, list[float]]], key: str, sizes: Sequence[int], mine: bool,
             run: Callable[[Callable[[], int] | None], list[float] | None], setup: Callable[[int], Any],
             kernel: Callable[[Any], int]) -> None:
    """``out[key][n]``: the rates of ``kernel`` at each size ``n``, on arrays made by ``setup(n)`` on this rank
    when it is the target (``mine``) and freed before the next size; every rank takes part in each ``run``."""
    for n in sizes:
        state = setup(n) if mine else None
        rates = run((lambda s=state: kernel(s)) if state is not None else None)
        if rates is not None:
            out.setdefault(key, {})[int(n)] = rates
        del state


def measure_transposes(role: str, target: str, backend: Any, run: Callable[[Callable[[], int] | None], list[float] | None],
                       seed: int, transposes: Mapping[str, Sequence[int]] | None) -> dict[str, dict[int, list[float]]] | None:
    """The transpose on ``target`` at ``transposes[dtype]``'s sizes, each on arrays of its own (freed after):
    ``{"transpose/<dtype>": {size: rates}}`` on the target, None elsewhere (as :func:`measure_ceilings`)."""
    out: dict[str, dict[int, list[float]]] = {}
    for dt in DTYPES:
        _by_size(out, f"transpose/{dt}", (transposes or {}).get(dt, ()), role == target, run,
                 lambda n, dt=dt: transpose_setup(backend, n, dt, seed), lambda s: transpose(backend, s))
    return out if role == target else None


def merge_rounds(rounds: Sequence[dict[str, dict[int, list[float]]] | None]) -> dict[str, dict[int, list[float]]]:
    """Rounds of :func:`measure_transposes` as one: every size's rates of every round, in round order."""
    out: dict[str, dict[int, list[float]]] = {}
    for one in rounds:
        for key, by_size in (one or {}).items():
            for n, rates in by_size.items():
                out.setdefault(key, {}).setdefault(int(n), []).extend(rates)
    return out


def document(measured: dict[str, dict[int, list[float]]], unit: str, warmup: int,
             bandwidth_unit: str = "s/byte") -> dict[str, dict[str, Any]]:
    """The platform file's ``ceilings`` section of one processor: ``{class: {dtype: parameter}}`` (a compute
    class in ``unit``, a bandwidth class in ``bandwidth_unit``)."""
    doc: dict[str, dict[str, Any]] = {}
    for key, by_size in measured.items():
        cls, dt = key.split("/")
        sizes = sorted(n for n in by_size if n)
        method = (f"{CLASSES[cls]}, {dt}" + (f", n = {', '.join(map(str, sizes))}; the ceiling is the size with "
                                             "the highest median rate" if sizes else "")
                  + ("; in rounds at different moments (each replicate, or two in one characterisation), fresh arrays and a "
                     "warm-up call each"
                     if cls == "transpose" else "")
                  + "; value = 1 / the upper end of its rates (the fastest sample plus its gap to the second fastest)")
        doc.setdefault(cls, {})[dt] = summarize(by_size, bandwidth_unit if cls in BANDWIDTH_CLASSES else unit,
                                                method, warmup)
    return doc
