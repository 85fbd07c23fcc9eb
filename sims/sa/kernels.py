"""PeaPaw's synthetic application SA (Tang et al., §6.3.1), float32.

Per element ``i``::

    a[i] = b[i] + c[i]                                  # VecAdd
    for j in range(32): d[i] += pow(e[j][i], 63)        # PowAdd

Static counts follow the paper: VecAdd 1 flop and 12 bytes per element; PowAdd
per ``j`` 63 multiplications + 1 add and 8 bytes, i.e. 2048 flops and 256 bytes
per element.

The kernels execute exactly the operations they declare. ``pow(x, 63)`` is a
chain of 63 multiplications that starts from a *runtime* float32 ``one`` (a
function argument, so no compiler can fold the first multiply or turn the chain
into square-and-multiply), followed by one add into ``d``:

* numba: ``@njit(cache=True)`` without fastmath (LLVM may not reassociate the
  chain). The element loop is tiled so ``d`` stays in L1 while the 32 rows of
  ``e`` stream past; the innermost loop over elements is SIMD-vectorised, each
  vector still doing 63 multiplies + 1 add per ``j`` (checked in the tests via
  the optimised LLVM IR).
* numpy: blocks of elements that fit in cache, in-place ufuncs
  (``np.multiply(p, x, out=p)``) over a ``(32, block)`` buffer, so no
  temporaries stream to DRAM. Per element and ``j``: one copy of ``one`` into
  the buffer (not a flop), 63 multiplies, one add.
* cupy: an ``ElementwiseKernel`` with the same explicit loop (one GPU thread per
  element); with an injected non-CuPy ``xp`` the xp-generic blocked path
  (the numpy code written against ``xp``) runs instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sims.backends.jit import jit
from sims.backends.numpy_backend import placed_empty
from sims.sa.counts import (
    NUMPY_POWADD_BLOCK,
    PHASES,
    POW_EXPONENT,
    POWADD_TERMS,
    VECADD_FLOPS,
)

#: ranges of the initial data; e stays near 1 so e**63 is a normal float32
#: (0.98**63 ~ 0.28, 1.02**63 ~ 3.5): denormals or infinities would wreck timing.
E_RANGE = (0.98, 1.02)
BC_RANGE = (0.5, 1.5)

#: elements per tile of the numba PowAdd (d tile of 8 KiB stays in L1).
NUMBA_POWADD_TILE = 2048

_ONE = np.float32(1.0)


def _check_phases(phases: Any) -> set[str]:
    phases = set(phases)
    bad = phases - set(PHASES)
    if bad:
        raise ValueError(f"unknown SA phase(s) {sorted(bad)}; allowed: {', '.join(PHASES)}")
    return phases


def allocate(backend: Any, n: int, phases: Any, seed: int) -> dict[str, Any]:
    """Allocate and initialise the arrays the given phases need, on ``backend``.

    ``vecadd`` needs ``a`` (output, zeros), ``b``, ``c``; ``powadd`` needs ``d``
    (accumulator, zeros) and ``e`` of shape ``(32, n)``. Data are deterministic
    in ``seed`` and identical across backends.
    """
    phases = _check_phases(phases)
    n = int(n)
    if n <= 0:
        raise ValueError(f"SA size n must be positive, got {n}")
    seed = int(seed)
    arrays: dict[str, Any] = {}
    if "vecadd" in phases:
        arrays["a"] = backend.zeros(n, dtype=np.float32)
        arrays["b"] = backend.uniform(n, *BC_RANGE, seed=seed * 8 + 1)
        arrays["c"] = backend.uniform(n, *BC_RANGE, seed=seed * 8 + 2)
    if "powadd" in phases:
        arrays["d"] = backend.zeros(n, dtype=np.float32)
        arrays["e"] = backend.uniform((POWADD_TERMS, n), *E_RANGE, seed=seed * 8 + 3)
    return arrays


def executed_flops_per_element(backend_name: str, phase: str) -> int:
    """Flops per element the backend's kernel really executes.

    Every backend executes the declared counts: 1 add for VecAdd; 63 multiplies
    and 1 add per term for PowAdd (the numpy path also copies ``one`` into its
    buffer once per term, which is a move, not a flop; on a GPU the last
    multiply and the add may be fused into one FMA, which is still 2 flops).
    """
    if backend_name not in ("numpy", "numba", "cupy"):
        raise ValueError(f"unknown backend {backend_name!r}; allowed: numpy, numba, cupy")
    _check_phases({phase})
    if phase == "vecadd":
        return VECADD_FLOPS
    return POWADD_TERMS * (POW_EXPONENT + 1)


# --------------------------------------------------------------------------- numba



@jit(cache=True)
def _vecadd_nb(a, b, c):  # pragma: no cover - compiled
    for i in range(a.shape[0]):
        a[i] = b[i] + c[i]


@jit(cache=True)
def _powadd_nb(d, e, one):  # pragma: no cover - compiled
    # Tiles of d stay in L1 while the 32 rows of e stream past. The innermost
    # loop runs over the elements of contiguous 1-D views, so LLVM fully unrolls
    # the 63-step chain and then SIMD-vectorises over i (63 vector multiplies +
    # 1 vector add per term; without fastmath nothing is reassociated).
    n = d.shape[0]
    terms = e.shape[0]
    for start in range(0, n, NUMBA_POWADD_TILE):
        stop = min(start + NUMBA_POWADD_TILE, n)
        dd = d[start:stop]
        for j in range(terms):
            ee = e[j, start:stop]
            for i in range(dd.shape[0]):
                x = ee[i]
                p = one
                for _k in range(POW_EXPONENT):
                    p = p * x
                dd[i] = dd[i] + p


# --------------------------------------------------------------------------- cupy

_cupy_kernels: dict[str, Any] = {}

_POWADD_CUDA = f"""
float acc = d;
for (long long j = 0; j < terms; ++j) {{
    const float x = e[j * ne + i];
    float p = one;
    for (int k = 0; k < {POW_EXPONENT}; ++k) {{
        p = p * x;
    }}
    acc = acc + p;
}}
d = acc;
"""


def _cupy_powadd_kernel(xp: Any) -> Any:
    k = _cupy_kernels.get("powadd")
    if k is None:
        k = xp.ElementwiseKernel(
            "raw float32 e, float32 one, int64 ne, int64 terms",
            "float32 d",
            _POWADD_CUDA,
            "hetval_sa_powadd",
        )
        _cupy_kernels["powadd"] = k
    return k


# --------------------------------------------------------------------------- xp-generic


def _powadd_xp(xp: Any, d: Any, e: Any, one: Any, block: int) -> None:
    """PowAdd with in-place ufuncs over (terms, block) buffers, written against ``xp``.

    Each block of ``e`` is first copied into a contiguous buffer ``x`` (rows of
    ``e`` are ``n`` elements apart; with power-of-two ``n`` they would all map to
    the same cache sets), then ``p`` is set to ``one`` and multiplied by ``x`` 63
    times in place, and the 32 rows of ``p`` are added into ``d`` one after the
    other (the same order of operations as the compiled loops).
    """
    terms, n = e.shape
    width0 = min(block, n)
    if xp is np:  # on cache lines, apart in their pages (placed_empty): not wherever the heap puts them
        xbuf = placed_empty((terms, width0), np.float32, 0)
        pbuf = placed_empty((terms, width0), np.float32, 2048)
    else:
        xbuf = xp.empty((terms, width0), dtype=np.float32)
        pbuf = xp.empty((terms, width0), dtype=np.float32)
    for start in range(0, n, block):
        stop = min(start + block, n)
        width = stop - start
        x = xbuf[:, :width]
        p = pbuf[:, :width]
        xp.copyto(x, e[:, start:stop])
        p.fill(one)
        for _k in range(POW_EXPONENT):
            xp.multiply(p, x, out=p)
        dblk = d[start:stop]
        for j in range(terms):
            xp.add(dblk, p[j], out=dblk)


def vecadd(backend: Any, arrays: dict[str, Any]) -> None:
    """``a = b + c`` over all elements, once. Caller synchronises."""
    a, b, c = arrays["a"], arrays["b"], arrays["c"]
    if backend.name == "numba":
        _vecadd_nb(a, b, c)
    else:
        backend.xp.add(b, c, out=a)


def powadd(backend: Any, arrays: dict[str, Any]) -> None:
    """``d[i] += sum_j e[j,i]**63`` (63 multiplies + 1 add per term), once. Caller synchronises."""
    d, e = arrays["d"], arrays["e"]
    one = _ONE
    if backend.name == "numba":
        _powadd_nb(d, e, one)
    elif backend.name == "cupy" and getattr(backend, "native", False):
        _cupy_powadd_kernel(backend.xp)(e, one, e.shape[1], e.shape[0], d)
    else:
        _powadd_xp(backend.xp, d, e, one, NUMPY_POWADD_BLOCK)
