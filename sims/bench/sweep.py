"""Operational-intensity sweep: a streaming kernel whose flops per byte are a parameter, and the roofline fit.

Per element the kernel reads one float32, applies ``k`` FMAs ``v = v * x + y``
and writes the result: ``2 k`` flops and 8 bytes (STREAM counting, no
write-allocate), intensity ``k / 4`` flop/byte. The input is processed in
L1-sized blocks so the FMAs never add memory traffic; the arrays have the triad's
length (the cache rule capped by the memory budget, :mod:`sims.bench.plan`), and a point that is
compute-bound for certain runs over fewer of them (:func:`point_elements`). Sweeping ``k`` over :data:`KS` covers intensities
from 0.25 to 64 flop/byte (2.4 decades), through the machine's balance point.

:func:`fit_roofline` fits ``T = max(N_f t_f, N_b t_b)`` (Williams et al.'s
roofline as a time) to the measured times by least squares and returns the
fit with its R², residuals and the samples behind it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sims.backends.jit import jit
from sims.backends.numpy_backend import placed_empty
from sims.fit import POOR_R2, linear_fit, r_squared

#: FMAs per element of the sweep (intensity k / 4 flop/byte)
KS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
BYTES_PER_ELEMENT = 8
BLOCK = 2048  # elements per in-cache block (8 KiB)


@jit(cache=True, fastmath={"contract"})
def _sweep_nb(a, out, x, y, k, block):  # pragma: no cover - compiled
    n = a.shape[0]
    buf = np.empty(block, dtype=np.float32)
    for s in range(0, n, block):
        m = min(block, n - s)
        # views, so every index is the loop variable: no negative-index wrap-around, vectorised loops
        src = a[s:s + m]
        dst = out[s:s + m]
        for i in range(m):
            buf[i] = src[i]
        if k < 8:
            for _ in range(k):
                for i in range(m):
                    buf[i] = buf[i] * x + y
        else:
            # eight FMAs per load/store of the block, the i loop vectorised: compute-bound
            for _ in range(k // 8):
                for i in range(m):
                    v = buf[i]
                    v = v * x + y
                    v = v * x + y
                    v = v * x + y
                    v = v * x + y
                    v = v * x + y
                    v = v * x + y
                    v = v * x + y
                    v = v * x + y
                    buf[i] = v
        for i in range(m):
            dst[i] = buf[i]


def setup(backend: Any, n: int, seed: int) -> dict[str, Any]:
    """Input and output arrays of ``n`` float32 elements and the FMA constants (fixed point stays normal)."""
    if n < BLOCK:
        raise ValueError(f"sweep size must be at least {BLOCK} elements, got {n}")
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    return {
        "a": backend.uniform(int(n), 0.5, 1.5, seed=int(seed) * 4 + 5),
        "out": backend.zeros(int(n), dtype=np.float32),
        "x": np.float32(rng.uniform(0.90, 0.99)),
        "y": np.float32(rng.uniform(0.01, 0.10)),
        "n": int(n),
    }


def counts(n: int, k: int) -> tuple[int, int]:
    """(flops, bytes) of one :func:`run` over ``n`` elements with ``k`` FMAs per element (the one home of
    the sweep's counting: characterisation's roofline fit and the energy fit both use it)."""
    return 2 * k * n, BYTES_PER_ELEMENT * n


#: a point the processor's own t_f and t_b put this many times above the ridge is compute-bound for certain
COMPUTE_MARGIN = 4.0
#: a shortened point still runs at least this long (s), and at least as long as a pass of the whole array
MIN_POINT_S = 0.1


def point_elements(n: int, k: int, t_f: float, t_b: float) -> int:
    """Elements of sweep point ``k``: all ``n`` unless the point is compute-bound by :data:`COMPUTE_MARGIN`
    at the processor's measured ``t_f`` (s/flop) and ``t_b`` (s/byte); then only as many as keep it running
    for :data:`MIN_POINT_S` or a memory-bound pass's time. A compute-bound point's time does not depend on
    where its data lives, and its cost would otherwise grow with ``k x n`` - minutes per point on a machine
    whose large cache made ``n`` large.
    """
    flop_s, byte_s = 2 * k * t_f, BYTES_PER_ELEMENT * t_b  # per element
    if not (flop_s > 0 and byte_s > 0) or flop_s < COMPUTE_MARGIN * byte_s:
        return int(n)
    target = max(MIN_POINT_S, n * byte_s)
    m = int(target / flop_s) // BLOCK * BLOCK
    return int(min(n, max(64 * BLOCK, m)))


def run(backend: Any, state: dict[str, Any], k: int, n: int | None = None) -> None:
    """One pass of the sweep kernel with ``k`` FMAs per element over the first ``n`` elements (all by default)."""
    m = state["n"] if n is None else int(n)
    a, out, x, y = state["a"][:m], state["out"][:m], state["x"], state["y"]
    if backend.name == "numba":
        _sweep_nb(a, out, x, y, int(k), BLOCK)
        return
    xp = backend.xp
    if backend.name == "cupy" and getattr(backend, "native", False):
        kern = xp.ElementwiseKernel("float32 a, float32 x, float32 y, int64 k", "float32 o",
                                    "float v = a; for (long long t = 0; t < k; ++t) { v = fmaf(v, x, y); } o = v;",
                                    "hetval_sweep")
        kern(a, x, y, int(k), out)
        return
    # NumPy: block by block, k multiply+add ufunc passes on an in-cache block, placed on a cache line (left where
    # the heap puts it, the same passes ran a quarter slower in some characterisations than in others)
    block = 65536
    buf = placed_empty(block, np.float32) if xp is np else xp.empty(block, dtype=np.float32)
    for s in range(0, m, block):
        w = min(block, m - s)
        b = buf[:w]
        b[...] = a[s:s + w]
        for _ in range(k):
            xp.multiply(b, x, out=b)
            xp.add(b, y, out=b)
        out[s:s + w] = b


def fit_roofline(flops, nbytes, times) -> dict[str, Any]:
    """Least-squares ``t_f``, ``t_b`` of ``T = max(F t_f, B t_b)`` over the samples.

    Each sample is assigned to the term that bounds it under the current
    estimates and each term is refitted through the origin on its samples
    (relative residuals, so large and small times weigh alike), until the
    assignment is stable. R² is that of ``log T``.
    """
    F = np.asarray(flops, dtype=float)
    B = np.asarray(nbytes, dtype=float)
    T = np.asarray(times, dtype=float)
    if not (F.shape == B.shape == T.shape) or F.size < 3 or np.any(T <= 0):
        raise ValueError("fit_roofline needs at least 3 samples of positive flops, bytes and times")
    t_b, t_f = float(np.median(T / B)), float(np.median(T / F))
    assign = None
    for _ in range(50):
        compute = F * t_f >= B * t_b
        if assign is not None and np.array_equal(compute, assign):
            break
        assign = compute
        # minimise sum ((c X - T) / T)^2 for each group: c = sum(X/T) / sum((X/T)^2)
        for group, X in ((compute, F), (~compute, B)):
            if group.any():
                r = X[group] / T[group]
                c = float(np.sum(r) / np.sum(r * r))
                if X is F:
                    t_f = c
                else:
                    t_b = c
    pred = np.maximum(F * t_f, B * t_b)
    r2 = r_squared(np.log(T), np.log(pred))
    return {
        "t_f": t_f, "t_b": t_b, "r2": r2, "poor_fit": r2 is None or r2 < POOR_R2,
        "relative_residuals": ((T - pred) / pred).tolist(),
        "compute_bound": (F * t_f >= B * t_b).tolist(),
    }


def fit_energy(flops, nbytes, times, energies) -> dict[str, Any]:
    """Least-squares ``E = e_f N_f + e_b N_b + p_s T`` (Choi et al. 2013) over measured samples.

    Returns ``e_f`` (J/flop), ``e_b`` (J/byte), ``p_s`` (W), R² and residuals;
    ``unphysical`` is set when a coefficient comes out negative (the samples do
    not separate the terms), and the fit is then flagged, not clipped.
    """
    F, B, T, E = (np.asarray(x, dtype=float) for x in (flops, nbytes, times, energies))
    if not (F.shape == B.shape == T.shape == E.shape) or F.size < 4:
        raise ValueError("fit_energy needs at least 4 samples of flops, bytes, time and energy")
    f = linear_fit([F, B, T], E)
    e_f, e_b, p_s = f.coef
    return {"e_f": e_f, "e_b": e_b, "p_s": p_s, "r2": f.r2,
            "unphysical": min(f.coef) < 0, "residuals_j": list(f.residuals)}
