"""Convolutional PML damping profiles (Komatitsch & Martin 2007) along one axis."""

from __future__ import annotations

import math

import numpy as np

#: polynomial order of the damping profile and the target reflection coefficient (Komatitsch & Martin 2007)
NPOWER = 2.0
REFLECTION = 1e-3


def profiles(n: int, start: int, stop: int, halo: int, width: int, spacing: float, dt: float, vp_max: float,
             f0: float) -> np.ndarray:
    """``(4, stop - start + 2 halo)`` float32 rows ``a_centre, b_centre, a_face, b_face`` for array indices of one block.

    For a node at ``x`` metres, ``s`` is its depth into the layer (``0`` at the
    layer's inner edge, ``L = width h`` at the grid's edge). With ``r = s / L``:
    ``d = d0 r^N``, ``d0 = -(N + 1) vp_max ln(R) / (2 L)`` (Komatitsch & Martin
    2007, after Collino & Tsogka 2001), ``alpha = pi f0 (1 - r)``,
    ``kappa = 1``; ``b = exp(-(d + alpha) dt)`` and ``a = d (b - 1) / (d + alpha)``
    (the recursive-convolution coefficients). Nodes outside the layer get ``a = 0``, ``b = 1`` (never used).
    "Centre" nodes sit at ``(i + 1/2) h``, "face" nodes at ``(i + 1) h``.
    """
    L = width * spacing
    d0 = -(NPOWER + 1.0) * vp_max * math.log(REFLECTION) / (2.0 * L)
    alpha_max = math.pi * f0
    idx = np.arange(start - halo, stop + halo, dtype=float)
    out = np.empty((4, idx.size), dtype=np.float64)
    for row, off in ((0, 0.5), (2, 1.0)):
        x = (idx + off) * spacing
        s = np.maximum(np.maximum(L - x, x - (n * spacing - L)), 0.0)
        r = np.minimum(s / L, 1.0)
        d = d0 * r**NPOWER
        alpha = alpha_max * (1.0 - r)
        b = np.exp(-(d + alpha) * dt)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(d > 0, d * (b - 1.0) / (d + alpha), 0.0)
        inside = s > 0
        out[row] = np.where(inside, a, 0.0)
        out[row + 1] = np.where(inside, b, 1.0)
    return out.astype(np.float32)
