"""Stability (CFL) and resolution checks for the staggered-grid elastic scheme.

CFL for the 3D staggered leap-frog scheme: ``dt <= h / (vp sqrt(3) sum|c_k|)`` with
``sum|c_k| = 1`` (order 2) and ``9/8 + 1/24`` (order 4) (Moczo et al. 2002; Graves 1996).
Resolution: the Ricker wavelet's maximum significant frequency is taken as ``2.5 f0``;
required points per minimum wavelength: order 2 >= 10, order 4 >= 5.
"""

from __future__ import annotations

import math

FMAX_FACTOR = 2.5
MIN_PPW = {2: 10.0, 4: 5.0}
COEFF_SUM = {2: 1.0, 4: 9.0 / 8.0 + 1.0 / 24.0}


def critical_dt(vp_max: float, spacing: float, order: int) -> float:
    """Largest stable time step (s) for P velocity ``vp_max`` (m/s), spacing (m) and ``order``."""
    if order not in COEFF_SUM:
        raise ValueError(f"order must be 2 or 4, got {order!r}")
    if vp_max <= 0 or spacing <= 0:
        raise ValueError("vp_max and spacing must be positive")
    return spacing / (vp_max * math.sqrt(3.0) * COEFF_SUM[order])


def points_per_wavelength(v_min: float, f0: float, spacing: float) -> float:
    """Grid points per shortest wavelength ``v_min / (2.5 f0)``."""
    return v_min / (FMAX_FACTOR * f0) / spacing

