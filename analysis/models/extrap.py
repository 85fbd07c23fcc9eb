"""Empirical scaling models in Extra-P's performance-model normal form, beside the analytical ones.

Calotoiu et al. (SC'13, "Using automated performance modeling to find scalability bugs in complex
codes") model a metric over one parameter ``p`` by the *performance model normal form*

    f(p) = sum_{k=1}^{n} c_k p^{i_k} log2(p)^{j_k},   i_k in I, j_k in J

and search the hypotheses for the one that predicts best. This module implements the
single-parameter, one-term search of Extra-P's default modeller:

* hypotheses: the constant ``c_0``, and ``c_0 + c_1 p^i log2(p)^j`` for every ``(i, j)`` in
  :data:`EXPONENTS_I` x :data:`EXPONENTS_J` except ``(0, 0)`` (documented exponent set:
  Extra-P's default ``I`` from 0 to 3, its negatives from -1/4 to -2 for strong scaling, and
  ``J = {0, 1, 2}``);
* coefficients by linear least squares on every sample (all repetitions at every ``p``);
* only terms whose coefficient is significant are candidates: a two-sided t test over all
  samples at a family-wise 5 % (Bonferroni over the one-term hypotheses), so noise rarely buys a
  term - repetitions at one scale are not independent runs, so the test is optimistic;
* selection by leave-one-out cross-validation *over scales* (each distinct ``p`` left out in
  turn with all its repetitions; the hypothesis with the lowest mean SMAPE of the left-out
  medians wins; ties go to the simpler hypothesis - smaller ``|i|``, positive first, then ``j``). A one-term
  hypothesis needs at least three distinct scales (two to fit, one to leave out); with fewer,
  only the constant is considered and the fit is flagged;
* quality: in-sample SMAPE of the medians, adjusted R² over all samples
  (``1 - (1 - R²)(N - 1)/(N - k - 1)``, ``k`` = non-constant terms), the cross-validated SMAPE;
  a fit is *poor* when there were too few scales, a term's adjusted R² is below :data:`POOR_R2`,
  or a constant misses the medians by SMAPE above :data:`POOR_SMAPE` (a constant's R² is 0 by
  construction);
* a prediction at any ``p`` with a 95 % prediction interval from the least-squares fit
  (Student t with ``N - k - 1`` degrees of freedom; no interval without a degree of freedom).

SMAPE is ``mean(2 |f - y| / (|f| + |y|))``, as a fraction (0 = perfect, 2 = worst).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from sims.fit import POOR_R2, r_squared, scaled_lstsq

#: Extra-P's default polynomial exponents ``I``, plus negative ones for strong scaling (a time that falls with
#: the rank count, e.g. ``c0 + c1 / p``, which no positive exponent can extrapolate); logarithm exponents ``J``
EXPONENTS_I = tuple(Fraction(s) for s in ("0", "1/4", "1/3", "1/2", "2/3", "3/4", "1", "5/4", "4/3", "3/2", "5/3",
                                          "7/4", "2", "9/4", "7/3", "5/2", "8/3", "11/4", "3",
                                          "-1/4", "-1/3", "-1/2", "-2/3", "-3/4", "-1", "-3/2", "-2"))
EXPONENTS_J = (0, 1, 2)
POOR_SMAPE = 0.1
#: family-wise level of the significance test of a term (Bonferroni over the one-term hypotheses)
ALPHA = 0.05


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, dof: int) -> float:
    """Upper tail P(T > t) of Student's t with ``dof`` degrees of freedom."""
    tail = 0.5 * _betainc(dof / 2.0, 0.5, dof / (dof + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_quantile(q: float, dof: int) -> float:
    """The ``q`` quantile of Student's t (q > 0.5), by bisection on :func:`t_sf`; NaN without a degree of freedom."""
    if dof < 1:
        return math.nan
    lo, hi = 0.0, 1.0
    while t_sf(hi, dof) > 1.0 - q:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_sf(mid, dof) > 1.0 - q else (lo, mid)
    return 0.5 * (lo + hi)


def t975(dof: int) -> float:
    """``t_{0.975, dof}``: the two-sided 95 % quantile the prediction intervals use."""
    return t_quantile(0.975, dof)


@dataclass(frozen=True)
class Fit:
    """One fitted hypothesis: ``c0 + c1 p^i log2(p)^j`` (``term`` None: the constant)."""

    term: tuple[Fraction, int] | None
    coef: tuple[float, ...]
    n_samples: int
    n_scales: int
    smape: float
    adj_r2: float
    cv_smape: float
    poor: bool
    reason: str = ""
    _cov: np.ndarray | None = field(default=None, repr=False, compare=False)
    _s2: float = field(default=math.nan, repr=False, compare=False)

    def formula(self) -> str:
        """The fitted function as text, e.g. ``0.012 + 0.034 * p^(1/2) * log2(p)``."""
        if self.term is None:
            return f"{self.coef[0]:.4g}"
        i, j = self.term
        parts = []
        if i != 0:
            parts.append("p" if i == 1 else f"p^({i})")
        if j:
            parts.append("log2(p)" if j == 1 else f"log2(p)^{j}")
        return f"{self.coef[0]:.4g} + {self.coef[1]:.4g} * {' * '.join(parts)}"

    def predict(self, p: np.ndarray | float) -> np.ndarray:
        return _design(np.atleast_1d(np.asarray(p, dtype="float64")), self.term) @ np.asarray(self.coef)

    def interval(self, p: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """The 95 % prediction interval at ``p`` (NaN without a residual degree of freedom)."""
        x = _design(np.atleast_1d(np.asarray(p, dtype="float64")), self.term)
        mid = x @ np.asarray(self.coef)
        dof = self.n_samples - len(self.coef)
        if self._cov is None or dof < 1 or not np.isfinite(self._s2):
            nan = np.full(len(mid), np.nan)
            return nan, nan
        half = t975(dof) * np.sqrt(self._s2 * (1.0 + np.einsum("ij,jk,ik->i", x, self._cov, x)))
        return mid - half, mid + half


def _basis(p: np.ndarray, term: tuple[Fraction, int]) -> np.ndarray:
    i, j = term
    return np.power(p, float(i)) * np.power(np.log2(p), j)


def _design(p: np.ndarray, term: tuple[Fraction, int] | None) -> np.ndarray:
    ones = np.ones((len(p), 1))
    return ones if term is None else np.column_stack([ones, _basis(p, term)])


def smape(pred: np.ndarray, y: np.ndarray) -> float:
    """Symmetric mean absolute percentage error, as a fraction in [0, 2]."""
    pred, y = np.asarray(pred, dtype="float64"), np.asarray(y, dtype="float64")
    den = np.abs(pred) + np.abs(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(den > 0, 2.0 * np.abs(pred - y) / den, 0.0)
    return float(np.mean(terms)) if len(terms) else math.nan


def hypotheses() -> list[tuple[Fraction, int] | None]:
    """The constant, then every one-term hypothesis, simplest first (the tie-break order)."""
    terms = [(i, j) for i in EXPONENTS_I for j in EXPONENTS_J if (i, j) != (0, 0)]
    return [None, *sorted(terms, key=lambda t: (abs(t[0]), t[0] < 0, t[1]))]


def _lstsq(p: np.ndarray, y: np.ndarray, term: tuple[Fraction, int] | None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Coefficients, design matrix and ``(X^T X)^-1`` (:func:`sims.fit.scaled_lstsq`); None when the term
    cannot be told from the constant (e.g. ``log2(p)`` with ``p = 1`` only)."""
    x = _design(p, term)
    got = scaled_lstsq(x, y)
    return None if got is None else (got[0], x, got[1])


def _significant(p: np.ndarray, y: np.ndarray, term: tuple[Fraction, int]) -> bool:
    """True when the term's coefficient differs from 0 at the 95 % level (two-sided t test over all samples):
    a term that noise alone could give is never chosen over the constant."""
    got = _lstsq(p, y, term)
    if got is None:
        return False
    coef, x, cov = got
    dof = len(y) - x.shape[1]
    if dof < 1:
        return True  # no residual degree of freedom: cross-validation alone decides
    s2 = float(np.sum((y - x @ coef) ** 2)) / dof
    var = s2 * float(cov[1, 1])
    if var <= 0.0:
        return True
    return 2.0 * t_sf(abs(float(coef[1])) / math.sqrt(var), dof) < ALPHA / (len(hypotheses()) - 1)


def fit(p: np.ndarray, y: np.ndarray) -> Fit:
    """The best hypothesis for samples ``y`` at scales ``p`` (several samples per scale allowed)."""
    p, y = np.asarray(p, dtype="float64"), np.asarray(y, dtype="float64")
    keep = np.isfinite(p) & np.isfinite(y) & (p > 0)
    p, y = p[keep], y[keep]
    scales = np.unique(p)
    if len(scales) < 1:
        raise ValueError("no finite samples at a positive scale to fit")
    medians = np.array([np.median(y[p == s]) for s in scales])
    cands = [t for t in (hypotheses() if len(scales) >= 3 else [None]) if t is None or _significant(p, y, t)]
    best: tuple[float, int, tuple[Fraction, int] | None] | None = None
    for rank, term in enumerate(cands):
        errs = []
        for k, s in enumerate(scales):  # leave one scale (all its samples) out
            if len(scales) < 2:
                break
            train = p != s
            got = _lstsq(p[train], y[train], term)
            if got is None:
                errs = []
                break
            errs.append(smape(_design(np.array([s]), term) @ got[0], medians[k:k + 1]))
        if not errs and len(scales) >= 2:
            continue
        cv = float(np.mean(errs)) if errs else math.nan
        key = (cv if np.isfinite(cv) else math.inf, rank, term)
        if best is None or key[:2] < best[:2]:
            best = key
    term = best[2] if best is not None else None
    cv = best[0] if best is not None and np.isfinite(best[0]) else math.nan
    got = _lstsq(p, y, term)
    assert got is not None  # the constant always fits
    coef, x, cov = got
    resid = y - x @ coef
    n, k = len(y), x.shape[1] - 1
    r2 = r_squared(y, x @ coef)
    r2 = (1.0 if not np.any(resid) else 0.0) if r2 is None else r2  # constant y: R² undefined
    adj = 1.0 - (1.0 - r2) * (n - 1) / (n - k - 1) if n - k - 1 > 0 else math.nan
    dof = n - x.shape[1]
    s2 = float(np.sum(resid**2)) / dof if dof > 0 else math.nan
    few = len(scales) < 3
    fit_smape = smape(_design(scales, term) @ coef, medians)
    if few:
        reason = f"{len(scales)} scale(s): a one-term hypothesis needs 3 (two to fit, one to leave out)"
    elif term is None:  # R² of a constant is 0 by construction: judge it by how far the medians stray from it
        reason = f"constant misses the medians by SMAPE {fit_smape:.3g} > {POOR_SMAPE}" if fit_smape > POOR_SMAPE else ""
    else:
        reason = f"adjusted R² {adj:.3g} < {POOR_R2}" if not (np.isfinite(adj) and adj >= POOR_R2) else ""
    return Fit(term=term, coef=tuple(float(c) for c in coef), n_samples=n, n_scales=len(scales),
               smape=fit_smape, adj_r2=adj, cv_smape=cv, poor=bool(reason), reason=reason, _cov=cov, _s2=s2)
