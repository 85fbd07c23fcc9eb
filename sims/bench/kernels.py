"""Microbenchmarks for the machine parameters ``t_b`` (triad) and ``t_f`` (FMA peak).

One call of :func:`triad` or :func:`fma_peak` is one measured repetition; the
caller times it (after ``backend.synchronize()``) and divides the returned count
by the time.

* Triad ``a = b + s*c`` in float32, STREAM counting: 12 bytes per element
  (read b, read c, write a; write-allocate traffic not counted). Arrays are sized
  to ``factor`` x the last-level cache over the three arrays, capped by a memory budget
  (:mod:`sims.bench.plan`).
  numba: one fused loop. numpy: two in-place ufunc passes (``a = s*c`` then
  ``a += b``) without temporaries -- NumPy therefore moves about twice the bytes
  it is credited with (c->a, then a,b->a), so its triad rate is a lower bound of
  the memory bandwidth, as a NumPy kernel would see it. cupy: one elementwise kernel.
* FMA peak: independent chains ``acc_k = acc_k * x + y`` (x, y runtime float32
  scalars, fixed point ``y / (1 - x)`` so values stay normal) on an in-cache
  working set; 2 flops per element and step. numba keeps the 128 accumulators in
  SIMD registers (16 x 8-lane chains; ``fastmath={"contract"}`` lets LLVM emit
  FMA instructions); numpy does ``multiply(acc, x, out=acc)`` then
  ``add(acc, y, out=acc)`` on an L1/L2-resident block placed on a cache line (2 flops
  per element per pair, bounded by load/store traffic and call overhead, which is what NumPy
  code attains; left where the heap puts it, 16 bytes past a line in most processes, the same
  loop runs about a third slower, and a characterisation's ``t_f`` followed the heap). The accumulators are written back to the state, so the work
  cannot be optimised away.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sims.backends.jit import jit
from sims.backends.numpy_backend import placed_empty
from sims.bench.plan import llc_detected

TRIAD_BYTES_PER_ELEMENT = 12
TRIAD_SCALAR = 3.0

#: numba FMA kernel: accumulator count (compile-time constant, 16 AVX2 vectors)
#: and steps per call (~0.07-0.15 s on a 2 GHz AVX2/AVX-512 core).
FMA_NUMBA_LANES = 128
FMA_NUMBA_STEPS = 2**25
#: numpy FMA: accumulator block (256 KiB, L2-resident; measured best of 2 Ki..512 Ki
#: elements: 7.4 GF/s at 64 Ki vs 1.2 at 2 Ki, where call overhead dominates)
#: and multiply+add pairs per call.
FMA_NUMPY_BLOCK = 65536
FMA_NUMPY_STEPS = 4096
#: cupy FMA: one chain per GPU thread.
FMA_CUPY_THREADS = 2**22
FMA_CUPY_STEPS = 1024

# --------------------------------------------------------------------------- cache size

def llc_bytes(cache_dir: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """Size in bytes of the last-level cache of cpu0 (:func:`sims.bench.plan.llc_detected`)."""
    return llc_detected(cache_dir)[0]


def triad_elements(factor: float = 8, llc: int | None = None) -> int:
    """Elements per triad array so the three float32 arrays span ``factor`` x LLC, by the cache rule alone
    (characterisation also caps it by a memory budget: :mod:`sims.bench.plan`).

    Rounded down to a multiple of 1024 (at least 1024).
    """
    if not factor > 0:
        raise ValueError(f"triad factor must be positive, got {factor!r}")
    llc = llc_bytes() if llc is None else int(llc)
    n = int(factor * llc) // TRIAD_BYTES_PER_ELEMENT
    return max(1024, n // 1024 * 1024)


# --------------------------------------------------------------------------- numba



@jit(cache=True, fastmath={"contract"})
def _triad_nb(a, b, c, s):  # pragma: no cover - compiled
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


@jit(cache=True, fastmath={"contract"})
def _fma_nb(acc, x, y, steps):  # pragma: no cover - compiled
    # The lane loop has a constant trip count: LLVM unrolls and vectorises it
    # and keeps all accumulators in registers across the step loop.
    for _t in range(steps):
        for k in range(FMA_NUMBA_LANES):
            acc[k] = acc[k] * x + y


# --------------------------------------------------------------------------- cupy

_cupy_kernels: dict[str, Any] = {}


def _cupy_kernel(xp: Any, name: str) -> Any:
    k = _cupy_kernels.get(name)
    if k is None:
        if name == "triad":
            k = xp.ElementwiseKernel("float32 b, float32 c, float32 s", "float32 a", "a = b + s * c", "hetval_triad")
        else:
            # T is float or double (the accumulators' dtype): fma() has overloads for both in CUDA
            k = xp.ElementwiseKernel(
                "T x, T y, int64 steps",
                "T acc",
                "T v = acc; for (long long t = 0; t < steps; ++t) { v = fma(v, x, y); } acc = v;",
                "hetval_fma",
            )
        _cupy_kernels[name] = k
    return k


def _is_native_cupy(backend: Any) -> bool:
    return backend.name == "cupy" and getattr(backend, "native", False)


# --------------------------------------------------------------------------- triad


def triad_setup(backend: Any, n: int, seed: int) -> dict[str, Any]:
    """Allocate the triad arrays (``a`` zeros, ``b``, ``c`` uniform) on ``backend``."""
    n = int(n)
    if n <= 0:
        raise ValueError(f"triad size must be positive, got {n}")
    return {
        "n": n,
        "a": backend.zeros(n, dtype=np.float32),
        "b": backend.uniform(n, 0.5, 1.5, seed=int(seed) * 4 + 1),
        "c": backend.uniform(n, 0.5, 1.5, seed=int(seed) * 4 + 2),
        "s": np.float32(TRIAD_SCALAR),
    }


def triad(backend: Any, state: dict[str, Any]) -> int:
    """One triad ``a = b + s*c``; returns the bytes counted (12 per element)."""
    a, b, c, s = state["a"], state["b"], state["c"], state["s"]
    if backend.name == "numba":
        _triad_nb(a, b, c, s)
    elif _is_native_cupy(backend):
        _cupy_kernel(backend.xp, "triad")(b, c, s, a)
    else:
        xp = backend.xp
        xp.multiply(c, s, out=a)
        xp.add(a, b, out=a)
    return TRIAD_BYTES_PER_ELEMENT * state["n"]


# --------------------------------------------------------------------------- FMA peak


def fma_setup(backend: Any, seed: int) -> dict[str, Any]:
    """State of the FMA peak benchmark: accumulators, the runtime scalars x, y, steps."""
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    x = np.float32(rng.uniform(0.90, 0.99))
    y = np.float32(rng.uniform(0.01, 0.10))
    if backend.name == "numba":
        lanes, steps = FMA_NUMBA_LANES, FMA_NUMBA_STEPS
    elif _is_native_cupy(backend):
        lanes, steps = FMA_CUPY_THREADS, FMA_CUPY_STEPS
    else:
        lanes, steps = FMA_NUMPY_BLOCK, FMA_NUMPY_STEPS
    acc = backend.uniform(lanes, 0.5, 1.5, seed=int(seed) * 4 + 3)
    if backend.name == "numpy":  # on a cache line, not wherever the heap puts it (placed_empty)
        acc = placed_like(acc)
    return {"acc": acc, "x": x, "y": y, "steps": int(steps), "lanes": int(lanes)}


def placed_like(values: np.ndarray, offset: int = 0) -> np.ndarray:
    """A copy of ``values`` placed ``offset`` bytes past a page boundary (:func:`placed_empty`)."""
    out = placed_empty(values.shape, values.dtype, offset)
    out[...] = values
    return out


def fma_flops(state: dict[str, Any]) -> int:
    """Flops one :func:`fma_peak` call executes (2 per accumulator and step)."""
    return 2 * state["lanes"] * state["steps"]


def fma_peak(backend: Any, state: dict[str, Any]) -> int:
    """One repetition of the FMA peak benchmark; returns the flops executed."""
    acc, x, y, steps = state["acc"], state["x"], state["y"], state["steps"]
    if backend.name == "numba":
        _fma_nb(acc, x, y, steps)
    elif _is_native_cupy(backend):
        _cupy_kernel(backend.xp, "fma")(x, y, steps, acc)
    else:
        xp = backend.xp
        for _t in range(steps):
            xp.multiply(acc, x, out=acc)
            xp.add(acc, y, out=acc)
    return fma_flops(state)
