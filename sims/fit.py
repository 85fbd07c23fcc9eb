"""The one home of least-squares fitting: linear fits with R² and residuals.

Every calibrated parameter in hetval (the intensity-sweep roofline, the
per-operation costs, the ping-pong latency and bandwidth, Choi's energy
regression) is a least-squares fit whose samples, R² and residuals are kept
next to the value. They all go through :func:`linear_fit` and :func:`r_squared`;
the empirical scaling models (``analysis.models.extrap``), which also need the
coefficients' covariance over regressors spanning many decades, through
:func:`scaled_lstsq`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

#: A fit with R² below this is flagged ``poor_fit`` wherever it is reported.
POOR_R2 = 0.9


def r_squared(y: ArrayLike, predicted: ArrayLike) -> float | None:
    """Coefficient of determination ``1 - SS_res / SS_tot``; None when ``y`` is constant (undefined)."""
    y = np.asarray(y, dtype=float)
    p = np.asarray(predicted, dtype=float)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    if ss_tot <= 0:
        return None
    return 1.0 - float(np.sum((y - p) ** 2)) / ss_tot


@dataclass(frozen=True)
class LinearFit:
    """``y ≈ A @ coef``: the coefficients, R² and the residuals ``y - A @ coef``."""

    coef: tuple[float, ...]
    r2: float | None
    residuals: tuple[float, ...]

    @property
    def poor(self) -> bool:
        return self.r2 is None or self.r2 < POOR_R2


def scaled_lstsq(A: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray] | None:
    """Least squares ``y ≈ A @ coef`` on columns scaled to a largest magnitude of 1 (regressors such as ``p^3``
    for ``p`` up to 1e8 would otherwise make ``A`` numerically rank-deficient), solved by SVD.

    Returns the coefficients and ``(A^T A)^-1`` (the covariance of the coefficients divided by the residual
    variance), both for the unscaled columns; None when ``A`` is rank-deficient (a column that is zero or a
    multiple of another).
    """
    A = np.asarray(A, dtype=float)
    y = np.asarray(y, dtype=float)
    scale = np.max(np.abs(A), axis=0)
    if np.any(scale == 0) or not np.all(np.isfinite(scale)):
        return None
    u, sv, vt = np.linalg.svd(A / scale, full_matrices=False)
    if sv[-1] <= sv[0] * 1e-10:
        return None
    coef = (vt.T @ ((u.T @ y) / sv)) / scale
    cov = (vt.T @ np.diag(1.0 / sv**2) @ vt) / np.outer(scale, scale)
    return coef, cov


def linear_fit(columns: list[ArrayLike], y: ArrayLike, intercept: bool = False) -> LinearFit:
    """Ordinary least squares of ``y`` on the given regressor columns (plus a constant if ``intercept``).

    With ``intercept`` the constant is the last coefficient.
    """
    y = np.asarray(y, dtype=float)
    cols = [np.asarray(c, dtype=float) for c in columns]
    if intercept:
        cols.append(np.ones_like(y))
    A = np.column_stack(cols)
    if A.shape[0] < A.shape[1]:
        raise ValueError(f"a least-squares fit of {A.shape[1]} coefficients needs at least that many samples, "
                         f"got {A.shape[0]}")
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    pred = A @ coef
    return LinearFit(tuple(float(c) for c in coef), r_squared(y, pred), tuple(float(r) for r in y - pred))
