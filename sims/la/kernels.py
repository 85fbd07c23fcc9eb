"""Matrix product and transpose kernels on every backend, for one processor's row blocks.

* product ``C_p = A_p B``: ``xp.matmul`` - OpenBLAS (through NumPy) on the CPU
  backends, cuBLAS through CuPy on a GPU. The numba backend uses the same BLAS
  call: a hand-written product would measure a worse kernel, not a processor.
* transpose ``E_p = D_p^T``: NumPy's strided copy; a cache-blocked Numba
  kernel; ``xp.copyto`` on a GPU.

Each processor holds its own blocks (as on separate memories): ``A_p`` is its
rows of ``A``, ``B`` whole, ``C_p`` its rows of ``C``; ``D_p`` its rows of
``D`` and ``E_p = D_p^T`` the matching columns of ``E``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sims.backends.jit import jit
from sims.la.matrix import TILE


def allocate(backend: Any, part: Any, dtype: str, seed: int) -> dict[str, Any]:
    """The arrays ``part``'s phases need on ``backend``, with deterministic data."""
    dt = np.dtype(dtype)
    out: dict[str, Any] = {}
    if part.mm_rows:
        n = part.n_mm
        out["A"] = backend.uniform((part.mm_rows, n), -1.0, 1.0, seed=seed * 8 + 1, dtype=dt)
        out["B"] = backend.uniform((n, n), -1.0, 1.0, seed=seed * 8 + 2, dtype=dt)
        out["C"] = backend.zeros((part.mm_rows, n), dtype=dt)
    if part.tr_rows:
        m = part.n_tr
        out["D"] = backend.uniform((part.tr_rows, m), -1.0, 1.0, seed=seed * 8 + 3, dtype=dt)
        out["E"] = backend.zeros((m, part.tr_rows), dtype=dt)
    return out


def matmul(backend: Any, arrays: dict[str, Any]) -> None:
    """``C = A @ B`` in place (BLAS / cuBLAS)."""
    backend.xp.matmul(arrays["A"], arrays["B"], out=arrays["C"])


@jit(cache=True)
def _transpose_nb(d, e, tile):  # pragma: no cover - compiled
    rows, cols = d.shape
    for i0 in range(0, rows, tile):
        i1 = min(i0 + tile, rows)
        for j0 in range(0, cols, tile):
            j1 = min(j0 + tile, cols)
            for j in range(j0, j1):
                for i in range(i0, i1):
                    e[j, i] = d[i, j]


def transpose(backend: Any, arrays: dict[str, Any]) -> None:
    """``E = D^T`` in place."""
    if backend.name == "numba":
        _transpose_nb(arrays["D"], arrays["E"], TILE)
    else:
        backend.xp.copyto(arrays["E"], arrays["D"].T)


PHASES = {"matmul": matmul, "transpose": transpose}
