"""Empirical scaling models in Extra-P's performance-model normal form, beside the analytical ones.

Calotoiu et al. (SC'13, "Using automated performance modeling to find scalability bugs in complex
codes") model a metric over one parameter ``p`` by the *performance model normal form*

    f(p) = sum_{k=1}^{n} c_k p^{i_k} log2(p)^{j_k},   i_k in I, j_k in J

and search the hypotheses for the one that predicts best. This module implements the
single-parameter, one-term search of Extra-P's default modeller:

* hypotheses: the constant ``c_0``, and ``c_0 + c_1 p^i log2(p)^j`` for every ``(i, j)`` in
  :data:`EXPONENTS_I` x :data:`EXPONENTS_J` except ``(0, 0)``: every exponent of Extra-P's
  default single-parameter space (``i`` from 0 to 3, ``j`` in {0, 1, 2}) and, for strong
  scaling, the negatives of its ``i`` (a time that falls with the rank count, e.g.
  ``c0 + c1 / p``, which no positive exponent extrapolates). A term with a negative exponent
  must have a positive coefficient: it is work divided over the ranks; with a negative one it
  would be a curve rising towards a ceiling, which noise in a rising series fits and which
  extrapolates below it (``benchmarks/bench_extrap.py`` found such fits behind most of its
  worse extrapolations on Extra-P's own space);
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

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from sims.fit import POOR_R2, r_squared, scaled_lstsq

#: Extra-P's default polynomial exponents ``I``, plus their negatives for strong scaling; logarithm exponents ``J``
_POSITIVE_I = ("1/4", "1/3", "1/2", "2/3", "3/4", "4/5", "1", "5/4", "4/3", "3/2", "5/3", "7/4", "2", "9/4", "7/3",
               "5/2", "8/3", "11/4", "3")
EXPONENTS_I = (Fraction(0), *(Fraction(s) for s in _POSITIVE_I), *(-Fraction(s) for s in _POSITIVE_I))
EXPONENTS_J = (0, 1, 2)
POOR_SMAPE = 0.1
#: family-wise level of the significance test of a term (Bonferroni over the one-term hypotheses)
ALPHA = 0.05


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, dof: int) -> float:
    """The ``q`` quantile of Student's t (SciPy's ``stats.t``); NaN without a degree of freedom."""
    if dof < 1:
        return math.nan
    from scipy.stats import t as student

    return float(student.ppf(q, dof))


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


@functools.lru_cache(maxsize=1024)
def _scaled_bases(scales: bytes) -> tuple[list[tuple[Fraction, int]], np.ndarray, np.ndarray]:
    """The one-term hypotheses, each one's basis at these scales (float64 bytes) scaled to a largest magnitude
    of 1 (H x S), and which are usable (finite, not all zero). Series of a study share their scales, so a
    validation builds each set once."""
    at = np.frombuffer(scales, dtype="float64")
    terms = [t for t in hypotheses() if t is not None]
    b_scale = np.stack([_basis(at, t) for t in terms])
    top = np.max(np.abs(b_scale), axis=1, keepdims=True)
    usable = np.all(np.isfinite(b_scale), axis=1) & (top[:, 0] > 0)
    b_scale = np.where(usable[:, None], b_scale / np.where(top > 0, top, 1.0), 0.0)
    for arr in (b_scale, usable):
        arr.setflags(write=False)
    return terms, b_scale, usable


def _select(p: np.ndarray, y: np.ndarray, scales: np.ndarray, medians: np.ndarray
            ) -> tuple[tuple[Fraction, int] | None, float]:
    """The hypothesis :func:`fit` chooses and its cross-validated SMAPE, every hypothesis and fold at once.

    A one-term hypothesis is a straight line in its basis ``b = p^i log2(p)^j``, so its least-squares fit
    over any set of samples follows from five sums (n, Σb, Σy, Σb², Σby); the sums without one scale's
    samples are the totals minus that scale's. Every hypothesis x left-out scale is then a few array
    operations instead of a least-squares solve each (a series of 300 sizes had 24,000 solves). Basis
    columns are scaled to a largest magnitude of 1, and a fold whose basis has no spread left (the term
    cannot be told from the constant there) rules the hypothesis out, as a rank-deficient design would.
    """
    idx = np.searchsorted(scales, p)
    n_s = np.bincount(idx, minlength=len(scales)).astype("float64")
    y_s = np.bincount(idx, weights=y, minlength=len(scales))
    n, sy = float(len(y)), float(y.sum())
    with np.errstate(divide="ignore", invalid="ignore"):  # the constant: the mean of the other scales' samples
        const_cv = float(np.mean(2 * np.abs((sy - y_s) / (n - n_s) - medians)
                                 / (np.abs((sy - y_s) / (n - n_s)) + np.abs(medians)))) if len(scales) >= 2 else math.nan
    if len(scales) < 3:
        return None, const_cv
    terms, b_scale, usable = _scaled_bases(scales.tobytes())
    yy_s = np.bincount(idx, weights=y * y, minlength=len(scales))
    b_g, bb_g, by_g = b_scale * n_s, b_scale**2 * n_s, b_scale * y_s  # per-scale sums (b is constant in a scale)
    sb, sbb, sby = b_g.sum(1, keepdims=True), bb_g.sum(1, keepdims=True), by_g.sum(1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the full fit: its slope's t test (a term noise alone could give is not a candidate)
        sxx, sxy = sbb[:, 0] - sb[:, 0] ** 2 / n, sby[:, 0] - sb[:, 0] * sy / n
        slope = sxy / sxx
        rss = np.maximum((float(yy_s.sum()) - sy**2 / n) - slope * sxy, 0.0)
        dof = int(n) - 2
        tstat = np.abs(slope) / np.sqrt(rss / dof / sxx) if dof >= 1 else np.full(len(terms), np.inf)
        # every fold: the sums without scale g
        m = n - n_s[None, :]
        fb, fbb, fby, fy = sb - b_g, sbb - bb_g, sby - by_g, (sy - y_s)[None, :]
        fxx = fbb - fb**2 / m
        f_slope = (fby - fb * fy / m) / fxx
        pred = (fy - f_slope * fb) / m + f_slope * b_scale
        cv = np.mean(2 * np.abs(pred - medians) / (np.abs(pred) + np.abs(medians)), axis=1)
    falling = np.array([t[0] < 0 for t in terms])
    ok = (usable & (sxx > 1e-12 * sbb[:, 0]) & np.all(fxx > 1e-12 * fbb, axis=1) & np.isfinite(cv)
          & ~(falling & ~(slope > 0)))  # a negative exponent's term is work divided over the ranks: positive
    limit = ALPHA / len(terms)
    best_term, best_cv = None, const_cv if np.isfinite(const_cv) else math.inf
    candidates = np.flatnonzero(ok)
    if dof >= 1 and len(candidates):  # the slopes' two-sided p-values, every candidate at once
        from scipy.stats import t as student

        p_two = np.ones(len(terms))
        p_two[candidates] = 2.0 * student.sf(tstat[candidates], dof)
    for k in candidates:  # simplest first: a later hypothesis must be strictly better
        significant = dof < 1 or rss[k] <= 0 or p_two[k] < limit
        if significant and cv[k] < best_cv:
            best_term, best_cv = terms[k], float(cv[k])
    return best_term, (best_cv if np.isfinite(best_cv) else math.nan)


def fit(p: np.ndarray, y: np.ndarray) -> Fit:
    """The best hypothesis for samples ``y`` at scales ``p`` (several samples per scale allowed)."""
    p, y = np.asarray(p, dtype="float64"), np.asarray(y, dtype="float64")
    keep = np.isfinite(p) & np.isfinite(y) & (p > 0)
    p, y = p[keep], y[keep]
    scales = np.unique(p)
    if len(scales) < 1:
        raise ValueError("no finite samples at a positive scale to fit")
    order = np.lexsort((y, p))  # by scale, then value: every scale's median by index (one sort, not a scan per scale)
    start = np.searchsorted(p[order], scales)
    count = np.diff(np.append(start, len(p)))
    ys = y[order]
    medians = 0.5 * (ys[start + (count - 1) // 2] + ys[start + count // 2])
    term, cv = _select(p, y, scales, medians)
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
