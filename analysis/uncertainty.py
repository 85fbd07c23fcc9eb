"""Uncertainty of every fidelity figure: bootstrap intervals and the noise-aware best.

The measured side of a group is not one number per alternative but the
alternative's repetitions. Two things follow from them:

* **Intervals.** Each alternative's repetitions are resampled with
  replacement (``resamples`` times, a seeded generator per group so a group's
  interval does not depend on what else was validated); the medians of the
  resamples are ranked against the (fixed) prediction, and every ranking
  metric and the group's median tightness is recomputed on each resample. The
  interval is the central ``level`` percentile range of those values
  (percentile bootstrap). Predictions are deterministic given the platform
  file, so only the measurement is resampled.
* **The noise-aware best.** The alternatives the measurements cannot tell
  apart from the fastest: the fastest is the one with the smallest median,
  and an alternative belongs to the set unless a one-sided Mann-Whitney U test
  on the two sets of repetitions says it is slower at significance
  ``noise_alpha`` (:func:`mann_whitney_greater`). ``top1_noise_aware`` and
  ``selection_penalty_noise_aware`` score the model's pick against this set
  (a pick inside it is right, with no penalty); ``distinguishable`` says
  whether any alternative is slower beyond noise at all - when none is, the
  group's ranking is "not distinguishable" and its strict ranking scores are
  scores of noise.

Everything here is pure NumPy on small arrays (groups have a handful of
alternatives, runs a handful of repetitions), vectorised over resamples.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Ranking metrics of :mod:`analysis.metrics` whose intervals are computed, in table order.
INTERVAL_METRICS = ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error",
                    "tightness_median")
#: Columns :func:`group_uncertainty` adds to a fidelity row.
UNCERTAINTY_COLUMNS = [*(f"{m}_{end}" for m in INTERVAL_METRICS for end in ("lo", "hi")),
                       "n_reps_min", "distinguishable", "best_measured_noise_aware", "top1_noise_aware",
                       "selection_penalty_noise_aware"]
#: Above this many arrangements the U test uses the normal approximation instead of exact enumeration.
EXACT_LIMIT = 20_000


@dataclass(frozen=True)
class Settings:
    """How intervals and the noise-aware best are computed (config ``uncertainty``)."""

    resamples: int = 1000
    seed: int = 0
    level: float = 0.95
    noise_alpha: float = 0.05

    def as_dict(self) -> dict[str, Any]:
        return {"resamples": self.resamples, "seed": self.seed, "level": self.level,
                "noise_alpha": self.noise_alpha}


def _clean(values: Any) -> NDArray[np.float64]:
    """Finite repetitions as a float array (None, a scalar or a list all accepted)."""
    if values is None:
        return np.empty(0)
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64)).ravel()
    return arr[np.isfinite(arr)]


def _avg_ranks(pooled: NDArray[np.float64]) -> NDArray[np.float64]:
    """1-based ranks with ties sharing their average rank."""
    order = np.argsort(pooled, kind="stable")
    ranks = np.empty(len(pooled))
    ranks[order] = np.arange(1, len(pooled) + 1, dtype=np.float64)
    uniq, inv = np.unique(pooled, return_inverse=True)
    if len(uniq) < len(pooled):
        sums = np.bincount(inv, weights=ranks)
        counts = np.bincount(inv)
        ranks = (sums / counts)[inv]
    return ranks


@lru_cache(maxsize=64)
def _arrangements(total: int, n: int) -> NDArray[np.int_]:
    """Every way to choose which ``n`` of ``total`` pooled positions belong to the first sample."""
    return np.array(list(combinations(range(total), n)), dtype=np.int_)


def mann_whitney_greater(x: Any, y: Any) -> float:
    """One-sided p-value of the Mann-Whitney U test that ``x`` tends to be larger (slower) than ``y``.

    The statistic is the rank sum of ``x`` in the pooled sample (average ranks
    for ties). With at most :data:`EXACT_LIMIT` arrangements the p-value is
    exact: the fraction of all assignments of the pooled ranks to ``x`` whose
    rank sum is at least the observed one (ties handled exactly, as a
    permutation test on the ranks). Beyond that, the normal approximation with
    tie correction and continuity correction. NaN when either sample is empty.

    >>> round(mann_whitney_greater([4, 5, 6], [1, 2, 3]), 4)   # the smallest p with 3 vs 3
    0.05
    """
    a, b = _clean(x), _clean(y)
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return math.nan
    pooled = np.concatenate([a, b])
    ranks = _avg_ranks(pooled)
    observed = ranks[:n].sum()
    if math.comb(n + m, n) <= EXACT_LIMIT:
        sums = ranks[_arrangements(n + m, n)].sum(axis=1)
        return float(np.mean(sums >= observed - 1e-9))
    u = observed - n * (n + 1) / 2.0
    mean = n * m / 2.0
    _, counts = np.unique(pooled, return_counts=True)
    tie = float(np.sum(counts**3 - counts))
    var = n * m / 12.0 * ((n + m + 1) - tie / ((n + m) * (n + m - 1)))
    if var <= 0:
        return 1.0
    z = (u - mean - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def noise_aware_best(samples: list[Any], alpha: float) -> NDArray[np.bool_]:
    """Mask of the alternatives whose repetitions cannot be told apart from the fastest's (see the module notes).

    An alternative without repetitions can only be judged by its median: it is
    in the set only if it is the fastest.
    """
    reps = [_clean(s) for s in samples]
    med = np.array([np.median(r) if len(r) else np.inf for r in reps])
    fastest = int(np.argmin(med))
    out = np.zeros(len(reps), dtype=bool)
    for i, r in enumerate(reps):
        if i == fastest:
            out[i] = True
        elif len(r) and len(reps[fastest]):
            out[i] = not (mann_whitney_greater(r, reps[fastest]) <= alpha)
    return out


def group_rng(settings: Settings, key: Any) -> np.random.Generator:
    """The group's own generator: the configured seed mixed with a stable hash of the group's keys."""
    return np.random.default_rng([settings.seed, zlib.crc32(repr(key).encode())])


def bootstrap_medians(samples: list[Any], resamples: int, rng: np.random.Generator,
                      fallback: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(resamples, k)`` medians of each alternative's repetitions resampled with replacement.

    An alternative with no usable repetitions keeps its ``fallback`` value (its median) in every resample.
    """
    out = np.empty((resamples, len(samples)))
    for j, s in enumerate(samples):
        r = _clean(s)
        if len(r) < 2:
            out[:, j] = fallback[j]
            continue
        idx = rng.integers(0, len(r), size=(resamples, len(r)))
        out[:, j] = np.median(r[idx], axis=1)
    return out


def _pair_index(k: int) -> tuple[NDArray[np.int_], NDArray[np.int_]]:
    return np.triu_indices(k, k=1)


def batch_ranking(M: NDArray[np.float64], p: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """The five ranking metrics of :mod:`analysis.metrics` for every row of ``M`` against ``p``.

    ``M`` is ``(B, k)`` measured times (one resample per row), ``p`` the ``k``
    predicted times. Same definitions and tie rules as the scalar functions.
    """
    i, j = _pair_index(M.shape[1])
    sm = np.sign(M[:, i] - M[:, j])
    sp = np.sign(p[i] - p[j])
    untied_m = np.count_nonzero(sm, axis=1)
    untied_p = np.count_nonzero(sp)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where((untied_m > 0) & (untied_p > 0), (sm * sp).sum(axis=1) / np.sqrt(untied_m * untied_p),
                       np.nan)
        ordered = sm != 0
        same = np.count_nonzero(ordered & (sm == sp), axis=1)
        undecided = np.count_nonzero(ordered & (sp == 0), axis=1)
        pairwise = np.where(untied_m > 0, (same + 0.5 * undecided) / untied_m, np.nan)
    pick = p == p.min()
    mmin = M.min(axis=1, keepdims=True)
    best = M == mmin
    top1 = np.count_nonzero(best & pick, axis=1) / np.count_nonzero(pick)
    penalty = np.mean(M[:, pick] / mmin, axis=1) - 1.0
    unit_m = M / np.linalg.norm(M, axis=1, keepdims=True)
    unit_p = p / np.linalg.norm(p)
    profile = np.linalg.norm(unit_m - unit_p, axis=1) / math.sqrt(2.0)
    return {"kendall_tau": tau, "pairwise_agreement": pairwise, "top1_agreement": top1,
            "selection_penalty": penalty, "profile_error": profile}


def interval(values: NDArray[np.float64], level: float) -> tuple[float, float]:
    """The central ``level`` percentile interval of the finite ``values`` (NaN, NaN when there are none)."""
    v = values[np.isfinite(values)]
    if not len(v):
        return math.nan, math.nan
    lo, hi = np.percentile(v, [50.0 * (1.0 - level), 50.0 * (1.0 + level)])
    return float(lo), float(hi)


def group_uncertainty(key: Any, measured: Any, predicted: Any, names: list[str], samples: list[Any] | None,
                      settings: Settings, tightness: Any = None) -> dict[str, Any]:
    """The uncertainty columns (:data:`UNCERTAINTY_COLUMNS`) of one group.

    ``measured``/``predicted`` are the alternatives' median and predicted
    times (or energies); ``samples`` their repetitions, in the same order;
    ``tightness`` the per-alternative tightness (a fraction of the bound that
    scales as 1 / measured), if the group has one. Without samples every
    interval is NaN and the noise-aware best is the strict best.
    """
    m = np.asarray(measured, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    reps = [_clean(s) for s in samples] if samples is not None else [np.empty(0) for _ in names]
    out: dict[str, Any] = {"n_reps_min": int(min(len(r) for r in reps)) if reps else 0}
    if any(len(r) >= 2 for r in reps) and settings.resamples > 0:
        M = bootstrap_medians(reps, settings.resamples, group_rng(settings, key), m)
        boot = batch_ranking(M, p)
        if tightness is not None:
            t = np.asarray(tightness, dtype=np.float64)
            boot["tightness_median"] = np.median(t[None, :] * (m[None, :] / M), axis=1)
        for metric in INTERVAL_METRICS:
            lo, hi = interval(boot[metric], settings.level) if metric in boot else (math.nan, math.nan)
            out[f"{metric}_lo"], out[f"{metric}_hi"] = lo, hi
    else:
        for metric in INTERVAL_METRICS:
            out[f"{metric}_lo"] = out[f"{metric}_hi"] = math.nan
    best = noise_aware_best(reps, settings.noise_alpha) if all(len(r) for r in reps) else (m == m.min())
    pick = p == p.min()
    out["distinguishable"] = bool(not best.all())
    out["best_measured_noise_aware"] = ", ".join(n for n, b in zip(names, best, strict=True) if b)
    out["top1_noise_aware"] = float(np.count_nonzero(pick & best)) / float(np.count_nonzero(pick))
    penalty = np.where(best, 0.0, m / m.min() - 1.0)
    out["selection_penalty_noise_aware"] = float(np.mean(penalty[pick]))
    return out


def run_interval(tightness: Any, median: Any, samples: Any, settings: Settings, key: Any) -> tuple[float, float]:
    """Interval of one run's tightness from its repetitions (tightness scales as 1 / the measured median)."""
    r = _clean(samples)
    t, med = float(tightness), float(median)
    if len(r) < 2 or not (math.isfinite(t) and math.isfinite(med)) or settings.resamples <= 0:
        return math.nan, math.nan
    idx = group_rng(settings, key).integers(0, len(r), size=(settings.resamples, len(r)))
    return interval(t * med / np.median(r[idx], axis=1), settings.level)


def format_interval(value: float, lo: float, hi: float, digits: int = 2) -> str:
    """``"0.80 [0.60, 0.93]"``; the bare value when the interval is unknown; ``"n/a"`` for NaN."""
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    text = f"{float(value):.{digits}f}"
    if lo is None or hi is None or not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        return text
    return f"{text} [{float(lo):.{digits}f}, {float(hi):.{digits}f}]"
