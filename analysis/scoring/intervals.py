"""The scorecard's intervals: the median of a row's runs and where the next study's median falls.

:func:`hierarchical` resamples a study's characterisation replicates, then its runs, then its rounds of
repetitions, and gives the interval of the next study's median (``docs/scorecard.md``); :func:`bootstrap_medians` draws a median's bootstrap by its order statistics for rows
too large to resample; :func:`median_interval` is the plain percentile bootstrap of a median (tau over groups).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from analysis.scoring.uncertainty import Settings

#: Fewest runs whose tightness interval is judged.
MIN_RUNS = 3
#: The levels of the tightness interval, top down (:func:`hierarchical`).
LEVELS = ("characterisation", "runs", "repetitions", "study")
#: Above this many resampled values (runs x resamples) a median's interval draws only its order statistics
#: (:func:`bootstrap_medians`) and its repetitions are not resampled.
SCIPY_BOOTSTRAP_ELEMENTS = 2**24
#: Above this many resampled values a plain median's interval (:func:`median_interval`, e.g. a ranking row's tau
#: over its groups) draws only its order statistics: SciPy's medians of a thousand resamples of 10^3-10^4 values
#: were seconds per row at a million runs, for the same distribution.
MEDIAN_SCIPY_ELEMENTS = 2**20


def median_interval(values: np.ndarray, settings: Settings) -> tuple[float, float, float]:
    v = values[np.isfinite(values)]
    if not len(v):
        return math.nan, math.nan, math.nan
    mid = float(np.median(v))
    if len(v) < 2 or settings.resamples <= 0:
        return mid, math.nan, math.nan
    if np.all(v == v[0]):  # no spread at all: the interval is the point
        return mid, mid, mid
    if len(v) < MIN_RUNS:
        return mid, math.nan, math.nan
    if len(v) * settings.resamples > MEDIAN_SCIPY_ELEMENTS:
        alpha = (1.0 - settings.level) / 2.0
        lo, hi = np.percentile(bootstrap_medians(v, settings.resamples, settings.seed), [100 * alpha, 100 * (1 - alpha)])
        return mid, float(lo), float(hi)
    from scipy import stats  # here, not at import: the workflow imports this module to plan every job

    res = stats.bootstrap((v,), np.median, confidence_level=settings.level, n_resamples=settings.resamples,
                          method="percentile", random_state=settings.seed)
    return mid, float(res.confidence_interval.low), float(res.confidence_interval.high)



def bootstrap_medians(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The medians of ``resamples`` bootstrap resamples of ``values``, drawing only the order statistics a
    resample's median is made of, never the resample (the percentile interval is taken of these).

    A resample of n values draws n positions of the sorted values uniformly with replacement; its median is
    the value at the k-th smallest drawn position (odd n, k = (n+1)/2) or the mean of the values at the
    k-th and (k+1)-th (even n, k = n/2). The j-th smallest drawn position is ``floor(n U_(j))`` with
    ``U_(j)`` the j-th order statistic of n uniforms: ``U_(k) ~ Beta(k, n-k+1)``, and given it,
    ``U_(k+1) = U_(k) + (1 - U_(k)) B`` with ``B ~ Beta(1, n-k)`` (the least of the n-k uniforms above it).
    So each resample costs two draws instead of n: the same bootstrap distribution as
    ``scipy.stats.bootstrap`` (other random numbers, so intervals differ by the Monte Carlo error of
    ``resamples`` draws). Used above :data:`SCIPY_BOOTSTRAP_ELEMENTS` (:data:`MEDIAN_SCIPY_ELEMENTS` for a plain
    median), where SciPy's resamples-by-n draws cannot hold the million-run validation (a scorecard row of 4x10^5
    runs is 4x10^8 draws, gigabytes and tens of seconds per row; ``benchmarks/bench_validate.py``)."""
    xs = np.sort(np.asarray(values, dtype=np.float64))
    n = len(xs)
    rng = np.random.default_rng(seed)
    k = (n + 1) // 2
    u_k = rng.beta(k, n - k + 1, size=resamples)
    lower = xs[np.minimum((n * u_k).astype(np.int64), n - 1)]
    if n % 2:
        medians = lower
    else:
        u_next = u_k + (1.0 - u_k) * rng.beta(1, n - k, size=resamples)
        medians = 0.5 * (lower + xs[np.minimum((n * u_next).astype(np.int64), n - 1)])
    return medians



def _round_matrix(reps: list[Any], rounds: list[Any] | None) -> np.ndarray | None:
    """Runs x rounds x repetitions: each run's repetition times in each round (NaN-padded: a round holds a share
    of a run's repetitions, one or more), when the runs share two or more rounds; None otherwise."""
    if rounds is None:
        return None
    labels: set[int] = set()
    pairs = []
    for r, k in zip(reps, rounds, strict=True):
        r = np.asarray(r if r is not None else [], dtype=float)
        k = np.asarray(k if k is not None else [], dtype=float)
        if len(r) != len(k) or not len(r) or not np.isfinite(k).all():
            return None
        pairs.append((r, k.astype(int)))
        labels.update(k.astype(int).tolist())
    if len(labels) < 2:
        return None
    order = {lab: j for j, lab in enumerate(sorted(labels))}
    per = max(int(np.max(np.unique(k, return_counts=True)[1])) for _, k in pairs)
    out = np.full((len(pairs), len(order), per), np.nan)
    for i, (r, k) in enumerate(pairs):
        seen = dict.fromkeys(order.values(), 0)
        for value, lab in zip(r, k, strict=True):
            j = order[int(lab)]
            out[i, j, seen[j]] = value
            seen[j] += 1
    return out


def hierarchical(tightness: np.ndarray, reps: list[Any] | None, replicates: np.ndarray | None,
                 settings: Settings, rounds: list[Any] | None = None, study_spread: float = 0.0) -> dict[str, Any]:
    """The median of the runs' ``tightness`` and the interval that the median of the next study of the same code
    and machine falls in, with each level's share.

    One resample (of ``settings.resamples``, seeded by ``settings.seed``) draws, top down:

    1. **the characterisation replicates**, with replacement: a run's tightness moves by the geometric mean of
       its tightness under each drawn replicate over its pooled tightness (``replicates``: runs x replicates),
       each replicate's deviation scaled by ``sqrt(R / (R - 1))`` (the bootstrap of R values sees only
       ``(R - 1) / R`` of their variance: half of it with two replicates);
    2. **the runs**, with replacement;
    3. **the repetitions**: the study's rounds with replacement, the same rounds for every run (``rounds``: each
       repetition's round, one or more repetitions in a round; a round is a moment every run shares), a run's
       tightness moving by its median time over the median of its repetitions in the drawn rounds, scaled by
       ``sqrt(R / (R - 1))`` as the replicates are; without rounds, each run's repetitions alone;
    4. **the study**: a shift of every run's log tightness, normal with standard deviation ``study_spread``: the
       part of two studies' difference that neither their replicates nor their rounds show (what a study shares
       beyond them), measured on real nights and shipped (:mod:`analysis.resources.spreads`). Drawn from its own
       seeded generator, so that a zero spread leaves every other draw as it was.

    The interval is for the *next* study's median, not only for this one's: what a study shares (its replicates,
    its rounds) is drawn for two studies and differenced, so that both studies' noise counts and nominal 95 %
    means 95 % of the next studies' medians inside; the runs, which the next study repeats, are drawn once, as
    the class's other workloads would be. The interval is the median shifted by the central ``settings.level`` of
    those draws, their logs added. Each level resampled alone gives its own
    interval: ``width_<level>``, and ``interval_level`` names the widest (empty when none has width). A row of more
    than :data:`SCIPY_BOOTSTRAP_ELEMENTS` runs x resamples x repetitions draws the runs by their order statistics
    (:func:`bootstrap_medians`) and leaves its repetitions alone.
    """
    nan = {"tightness_median": math.nan, "tightness_lo": math.nan, "tightness_hi": math.nan, "interval_level": "",
           **{f"width_{lv}": math.nan for lv in LEVELS}}
    t = np.asarray(tightness, dtype=float)
    keep = np.isfinite(t) & (t > 0)
    t = t[keep]
    if not len(t):
        return nan
    out = {**nan, "tightness_median": float(np.median(t))}
    if len(t) < MIN_RUNS or settings.resamples <= 0:
        return out
    n, b = len(t), int(settings.resamples)
    rng = np.random.default_rng(settings.seed)
    study_rng = np.random.default_rng([settings.seed, 4])
    sigma = float(study_spread) if study_spread and math.isfinite(study_spread) and study_spread > 0 else 0.0
    large = n * b > SCIPY_BOOTSTRAP_ELEMENTS
    if not large and reps is not None:  # the repetitions counted only where runs x resamples do not settle it
        per_run = max((int(np.size(x)) for x, k in zip(reps, keep, strict=True) if k and x is not None), default=1)
        large = n * b * max(1, per_run) > SCIPY_BOOTSTRAP_ELEMENTS
    logf = None
    if replicates is not None and np.ndim(replicates) == 2 and np.shape(replicates)[1] >= 2:
        f = np.asarray(replicates, dtype=float)[keep]
        with np.errstate(divide="ignore", invalid="ignore"):
            logf = np.log(f / t[:, None])
        logf = np.where(np.isfinite(logf), logf, 0.0)
        r = logf.shape[1]
        logf = (logf - logf.mean(axis=1, keepdims=True)) * math.sqrt(r / (r - 1)) + logf.mean(axis=1, keepdims=True)
        if not np.any(logf):
            logf = None
    kept_reps = [x for x, k in zip(reps, keep, strict=True) if k] if reps is not None else None
    kept_rounds = [x for x, k in zip(rounds, keep, strict=True) if k] if rounds is not None and reps is not None else None
    by_round = _round_matrix(kept_reps, kept_rounds) if kept_reps is not None and not large else None

    def draw() -> dict[str, np.ndarray | None]:
        """One set of b resamples of each level: log shifts (b x n) and the runs drawn (b x n)."""
        got: dict[str, np.ndarray | None] = {"f": None, "runs": None, "reps": None,
                                             "study": study_rng.normal(0.0, sigma, size=b) if sigma else None}
        if logf is not None:
            k = logf.shape[1]
            counts = np.stack([np.bincount(rng.integers(0, k, size=k), minlength=k) for _ in range(b)]) / k
            got["f"] = counts @ (logf.T if not large else np.median(logf, axis=0)[:, None])
        got["runs"] = None if large else rng.integers(0, n, size=(b, n))
        if by_round is not None:
            runs_n, r, per = by_round.shape
            drawn = rng.integers(0, r, size=(b, r))
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a run with no repetition in the drawn rounds
                med = np.nanmedian(by_round[:, drawn, :].reshape(runs_n, b, r * per), axis=2).T  # b x n
                whole = np.nanmedian(by_round.reshape(runs_n, r * per), axis=1)
                # the bootstrap of r rounds sees (r - 1) / r of their variance, as with the replicates
                got["reps"] = np.where(np.isfinite(med), (np.log(whole)[None, :] - np.log(med))
                                       * math.sqrt(r / (r - 1)), 0.0)
        elif kept_reps is not None and not large:
            shift = np.zeros((b, n))
            for i, x in enumerate(kept_reps):
                x = np.asarray(x if x is not None else [], dtype=float)
                x = x[np.isfinite(x) & (x > 0)]
                if len(x) >= 2:
                    shift[:, i] = np.log(np.median(x) / np.median(x[rng.integers(0, len(x), size=(b, len(x)))], axis=1))
            got["reps"] = shift if np.any(shift) else None
        return got

    def medians(d: dict[str, np.ndarray | None], use: tuple[bool, ...]) -> np.ndarray:
        use_f, use_runs, use_reps = use[:3]
        if large:
            base = bootstrap_medians(t, b, int(rng.integers(2**31))) if use_runs else np.full(b, float(np.median(t)))
            return base * (np.exp(d["f"][:, 0]) if use_f and d["f"] is not None else 1.0)
        logt = np.broadcast_to(np.log(t), (b, n)).copy()
        if use_f and d["f"] is not None:
            logt += d["f"]
        if use_reps and d["reps"] is not None:
            logt += d["reps"]
        if use_runs:
            logt = np.take_along_axis(logt, d["runs"], axis=1)
        return np.exp(np.median(logt, axis=1))

    first, second = draw(), draw()
    mid = out["tightness_median"]
    alpha = (1.0 - settings.level) / 2.0
    base = float(np.log(np.median(t)))

    def shifts(use: tuple[bool, bool, bool, bool]) -> np.ndarray:
        """log of each resample's median over this one's: the runs drawn once (the class's other workloads), what a
        study shares drawn for two studies and differenced (the next study repeats these runs, not this noise)."""
        use_f, use_runs, use_reps, use_study = use
        runs = np.log(medians(first, (False, True, False))) - base if use_runs else 0.0
        if use_f or use_reps:
            noise = (np.log(medians(first, (use_f, False, use_reps)))
                     - np.log(medians(second, (use_f, False, use_reps))))
        else:
            noise = 0.0
        if use_study and sigma:
            noise = noise + first["study"] - second["study"]
        return np.broadcast_to(runs + noise, (b,))

    def interval(use: tuple[bool, bool, bool, bool]) -> tuple[float, float]:
        lo, hi = np.percentile(shifts(use), [100 * alpha, 100 * (1 - alpha)])
        return mid * math.exp(lo), mid * math.exp(hi)

    out["tightness_lo"], out["tightness_hi"] = interval((True, True, True, True))
    widths = {}
    alone = ((True, False, False, False), (False, True, False, False), (False, False, True, False),
             (False, False, False, True))
    for level, use in zip(LEVELS, alone, strict=True):
        lo, hi = interval(use)
        widths[level] = hi - lo
        out[f"width_{level}"] = hi - lo
    widest = max(LEVELS, key=lambda lv: widths[lv])
    out["interval_level"] = widest if widths[widest] > 0 else ""
    return out
