"""The one home of least-squares fitting: linear fits with R² and residuals.

Every calibrated parameter in hetval (the intensity-sweep roofline, the
per-operation costs, the ping-pong latency and bandwidth, Choi's energy
regression) is a least-squares fit whose samples, R² and residuals are kept
next to the value. They all go through :func:`linear_fit` and :func:`r_squared`;
the empirical scaling models (``analysis.equations.extrap``), which also need the
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


def relative_nonnegative_fit(columns: list[ArrayLike], y: ArrayLike, weights: ArrayLike | None = None) -> LinearFit:
    """Least squares of ``y`` on the regressor columns minimising *relative* residuals (each row weighted by
    ``1 / y``: timings spanning a decade count alike), with every coefficient >= 0 (a cost is never negative).
    ``weights`` (>= 0, one per row) multiply each row's squared relative residual (a locally weighted fit).

    Non-negativity by SciPy's ``optimize.nnls`` (the active-set method of Lawson and Hanson, "Solving Least
    Squares Problems" (1974), ch. 23) on the weighted columns scaled to a largest magnitude of 1. A column that is
    zero in every row gets coefficient 0. R² is of ``y`` itself; the residuals are relative, ``(y - A coef) / y``.
    """
    y = np.asarray(y, dtype=float)
    A = np.column_stack([np.asarray(c, dtype=float) for c in columns])
    if A.shape[0] < A.shape[1]:
        raise ValueError(f"a least-squares fit of {A.shape[1]} coefficients needs at least that many samples, "
                         f"got {A.shape[0]}")
    if not np.all(y > 0) or not np.all(np.isfinite(A)):
        raise ValueError("a relative fit needs positive finite targets and finite regressors")
    root = np.ones_like(y) if weights is None else np.sqrt(np.asarray(weights, dtype=float))
    if root.shape != y.shape or not np.all(np.isfinite(root)):
        raise ValueError("a weighted fit needs one finite weight >= 0 per row")
    W = A / y[:, None] * root[:, None]
    scale = np.max(np.abs(W), axis=0)
    live = scale > 0
    Ws = np.where(live, W / np.where(live, scale, 1.0), 0.0)
    from scipy.optimize import nnls

    x = np.zeros(A.shape[1])
    if live.any():
        x[live] = nnls(Ws[:, live], root)[0]
    coef = np.where(live, x / np.where(live, scale, 1.0), 0.0)
    pred = A @ coef
    return LinearFit(tuple(float(c) for c in coef), r_squared(y, pred), tuple(float(r) for r in (y - pred) / y))
