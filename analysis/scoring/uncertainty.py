"""Uncertainty of every fidelity figure: bootstrap intervals and the noise-aware best.

The measured side of a group is not one number per alternative but the
alternative's repetitions. Two things follow from them:

* **Intervals.** Each alternative's repetitions are resampled with
  replacement (``resamples`` times, from the configured seed only, so a group's
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

Everything here is NumPy, vectorised over resamples and over groups:
groups of the same number of alternatives are scored together in bounded
chunks (:func:`uncertainty_rows`, :func:`run_intervals`), so scoring a
million runs costs array operations, not a million Python calls; large
batches of many-alternative groups go to the compiled kernel of
:mod:`analysis.scoring.bootstrap_jit`, which gives the same values.

Why this module is long: the intervals have one definition (the percentile
bootstrap above) and three exact ways to compute it at scale - every resample
as planes, the distinct resamples of groups of one shape weighted, the compiled
kernel - which must stay beside that definition and each other, as the tests
hold them equal to the last bit. The
one-sided test of one pair is SciPy's (:func:`mann_whitney_greater`); the batched one
(:func:`mann_whitney_rows`) is held to it by the tests. :func:`group_uncertainty` is the batch for one
group.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Ranking metrics of :mod:`analysis.scoring.metrics` whose intervals are computed, in table order.
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
    """How intervals and the noise-aware best are computed: the config's ``uncertainty`` section, whose
    defaults live only in the schema (:meth:`from_config`;
    :func:`analysis.planning.config.uncertainty_settings` where there is no whole study)."""

    resamples: int
    seed: int
    level: float
    noise_alpha: float
    #: relative gap to the fastest below which an alternative ties with it (run-to-run drift; 0 = none).
    #: Not a config key: a case sets it per group from the study's own repeated runs.
    noise_floor: float = 0.0

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> Settings:
        """From a validated config's ``uncertainty`` section."""
        return cls(int(section["resamples"]), int(section["seed"]), float(section["level"]),
                   float(section["noise_alpha"]))

    def as_dict(self) -> dict[str, Any]:
        return {"resamples": self.resamples, "seed": self.seed, "level": self.level,
                "noise_alpha": self.noise_alpha}


def finite_values(values: Any) -> NDArray[np.float64]:
    """Finite repetitions as a float array (None, a scalar or a list all accepted)."""
    if values is None:
        return np.empty(0)
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64)).ravel()
    return arr[np.isfinite(arr)]


@lru_cache(maxsize=64)
def _arrangements(total: int, n: int) -> NDArray[np.int_]:
    """Every way to choose which ``n`` of ``total`` pooled positions belong to the first sample."""
    return np.array(list(combinations(range(total), n)), dtype=np.int_)


def mann_whitney_greater(x: Any, y: Any) -> float:
    """One-sided p-value of the Mann-Whitney U test that ``x`` tends to be larger (slower) than ``y``
    (``scipy.stats.mannwhitneyu``).

    With at most :data:`EXACT_LIMIT` arrangements of the pooled sample the p-value is exact, ties included
    (SciPy's permutation method over every arrangement: its ``"exact"`` method assumes no ties, which
    repetitions rounded by a timer have); beyond that, the normal approximation with tie and continuity
    corrections. NaN when either sample is empty; 1 when every value ties.

    >>> round(mann_whitney_greater([4, 5, 6], [1, 2, 3]), 4)   # the smallest p with 3 vs 3
    0.05
    """
    a, b = finite_values(x), finite_values(y)
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return math.nan
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0
    # imported here, not with the module: scipy.stats costs most of a second and every CLI command loads this
    from scipy import stats

    method: Any = (stats.PermutationMethod(n_resamples=np.inf) if math.comb(n + m, n) <= EXACT_LIMIT
                   else "asymptotic")
    return float(stats.mannwhitneyu(a, b, alternative="greater", method=method, use_continuity=True).pvalue)


# --------------------------------------------------------------------------------------------------------------
# Batched scoring: many groups at once.
#
# A bootstrap resample of n repetitions draws n positions with replacement; its median is the mean of the
# ((n-1)//2)-th and (n//2)-th smallest drawn values. Drawn from the *sorted* repetitions, those are the values
# at the ((n-1)//2)-th and (n//2)-th smallest drawn positions, so the positions alone (not the values) decide
# which repetitions a resample's median is made of. :func:`_median_positions` draws them once per
# (seed, resamples, n, slot) and every alternative with n repetitions in that slot of its group (slot = the
# alternative's place in the group; the runs' own intervals use slot 0) reuses them: the same percentile
# bootstrap as resampling each alternative afresh, at the cost of one gather instead of ``resamples x n``
# draws and a median. A group's intervals depend only on its own repetitions and the seed, never on what
# else was validated; groups of the same shape share resampling patterns (common random numbers), so two
# models scored on the same group are scored on the same resamples. The same sharing lets groups of one shape
# be scored on their *distinct* resamples only, each weighted by how many it stands for (a median of 5 takes
# at most 5 values, so two alternatives of 5 repetitions have at most 25 distinct resamples among 1000):
# :func:`_intervals` takes that path where it saves work, with exactly the same order statistics.
# --------------------------------------------------------------------------------------------------------------

#: Bootstrap work per chunk of groups (groups x resamples x pairs of alternatives), bounding peak memory.
CHUNK_ELEMENTS = 4_000_000
#: Groups of one shape (numbers of repetitions) from which their distinct resamples are scored once each.
SUPPORT_MIN_GROUPS = 16
#: From this much work (groups x resamples x (pairs + alternatives)) on, every resample is scored by the
#: compiled kernel of :mod:`analysis.scoring.bootstrap_jit` (the same values): about where NumPy's time on
#: it matches the kernel's compilation, paid once per installation.
JIT_MIN_ELEMENTS = 50_000_000


def _pair_index(k: int) -> tuple[NDArray[np.int_], NDArray[np.int_]]:
    return np.triu_indices(k, k=1)


@lru_cache(maxsize=512)
def _median_positions(seed: int, resamples: int, n: int, slot: int) -> tuple[NDArray[np.int_], NDArray[np.int_]]:
    """Positions (into the sorted repetitions) of the two middle values of each resample of ``n`` repetitions."""
    rng = np.random.default_rng([int(seed), int(n), int(slot)])
    drawn = np.sort(rng.integers(0, n, size=(resamples, n)), axis=1)
    lo, hi = drawn[:, (n - 1) // 2].copy(), drawn[:, n // 2].copy()
    lo.setflags(write=False)
    hi.setflags(write=False)
    return lo, hi


def median_position_tables(n: NDArray[np.int_], settings: Settings) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The compiled kernels' :func:`_median_positions` of every slot and repetition count in ``n`` (groups x
    slots): ``(lo, hi)``, each ``(slots, largest count + 1, resamples)``, zero where unused."""
    k, B = n.shape[1], int(settings.resamples)
    lo = np.zeros((k, int(n.max()) + 1 if n.size else 1, B), dtype=np.int64)
    hi = np.zeros_like(lo)
    for slot in range(k):
        for size in np.unique(n[:, slot]).tolist():
            if size >= 2:
                lo[slot, size], hi[slot, size] = _median_positions(settings.seed, B, size, slot)
    return lo, hi


def flat_repetitions(samples: Sequence[Any]) -> tuple[NDArray[np.int_], NDArray[np.float64]]:
    """Every finite repetition of ``samples`` as one flat array, beside the index of the row it came from, in row
    order. Rows that are lists, tuples, flat arrays or None (the reductions' lists) take no NumPy call each; any
    other row (a scalar, an array of another shape) is read as :func:`finite_values` reads it."""
    kinds = set(map(type, samples))
    if not kinds <= {list, tuple, np.ndarray, type(None)} or (
            np.ndarray in kinds and any(type(x) is np.ndarray and x.ndim != 1 for x in samples)):
        samples = [finite_values(x) for x in samples]
    lengths = np.fromiter((0 if x is None else len(x) for x in samples), dtype=np.int_, count=len(samples))
    total = int(lengths.sum())
    try:
        flat = np.fromiter(itertools.chain.from_iterable(x for x in samples if x is not None), dtype=np.float64,
                           count=total)
    except TypeError:  # a None among the values
        flat = np.fromiter((np.nan if v is None else v for x in samples if x is not None for v in x),
                           dtype=np.float64, count=total)
    row = np.repeat(np.arange(len(samples)), lengths)
    keep = np.isfinite(flat)
    return row[keep], flat[keep]


def pad_sorted(samples: Sequence[Any]) -> tuple[NDArray[np.float64], NDArray[np.int_]]:
    """``(rows, n_max)`` sorted finite repetitions of each row (NaN-padded) and each row's count."""
    rows = len(samples)
    row, flat = flat_repetitions(samples)
    counts = np.bincount(row, minlength=rows).astype(np.int_)
    width = int(counts.max()) if rows else 0
    out = np.full((rows, max(width, 1)), np.nan)
    starts = np.r_[0, np.cumsum(counts)[:-1]] if rows else np.empty(0, dtype=np.int_)
    out[row, np.arange(len(flat)) - starts[row]] = flat
    return np.sort(out, axis=1), counts


def sorted_medians(XS: NDArray[np.float64], n: NDArray[np.int_]) -> NDArray[np.float64]:
    """Median of each row of :func:`pad_sorted`'s output (NaN for a row without repetitions)."""
    rows = np.arange(len(n))
    lo = np.clip((n - 1) // 2, 0, None)
    hi = np.clip(n // 2, 0, None)
    med = 0.5 * (XS[rows, np.minimum(lo, XS.shape[1] - 1)] + XS[rows, np.minimum(hi, XS.shape[1] - 1)])
    return np.where(n > 0, med, np.nan)


def _lerp(a: NDArray[np.float64], b: NDArray[np.float64], t: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a + (b - a) t`` computed as NumPy's percentile does (so the two agree to the last bit)."""
    with np.errstate(invalid="ignore"):
        d = b - a
        return np.where(t >= 0.5, b - d * (1.0 - t), a + d * t)


def interval_rows(values: NDArray[np.float64], level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`interval` of every row of ``values`` (finite values only; NaN where a row has none)."""
    V = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(V)
    count = finite.sum(axis=1)
    qs = (0.5 * (1.0 - level), 0.5 * (1.0 + level))
    if len(V) and V.shape[1] > 1 and (count == V.shape[1]).all():
        # every value finite: the positions are the same in every row, so a partition replaces the sort
        kth = sorted({int(math.floor(q * (V.shape[1] - 1))) + d for q in qs for d in (0, 1)} & set(
            range(V.shape[1])))
        S = np.partition(V, kth, axis=1)
    else:
        S = np.sort(np.where(finite, V, np.inf), axis=1)
    rows = np.arange(len(V))
    out = []
    for q in qs:
        pos = q * np.maximum(count - 1, 0)
        f = np.floor(pos).astype(np.int_)
        c = np.minimum(f + 1, np.maximum(count - 1, 0))
        val = _lerp(S[rows, f], S[rows, c], pos - f)
        out.append(np.where(count > 0, val, np.nan))
    return out[0], out[1]


def batch_ranking(M: NDArray[np.float64], p: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """The five ranking metrics of :mod:`analysis.scoring.metrics` for every row of ``M`` against ``p``.

    ``M`` is ``(B, k)`` measured times (one resample per row) and ``p`` the ``k``
    predicted times; or ``(G, B, k)`` and ``(G, k)`` for ``G`` groups at once
    (results ``(G, B)``). Same definitions and tie rules as the scalar functions.
    """
    M = np.asarray(M, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    single = M.ndim == 2
    if single:
        M, p = M[None], p[None]
    out = ranking_by_alternative(np.ascontiguousarray(np.moveaxis(M, -1, 0)), p)
    return {k: v[0] for k, v in out.items()} if single else out


def unit_predictions(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(k, G, 1)``: each group's ``k`` predictions (``p`` is ``(G, k)``) scaled to unit length."""
    pk = p.T[:, :, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # a group predicted all zero or with a NaN: NaN
        return pk / np.sqrt((pk * pk).sum(axis=0))


def ranking_by_alternative(Mk: NDArray[np.float64], p: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """:func:`batch_ranking` with the alternatives first: ``Mk`` is ``(k, G, B)``, ``p`` ``(G, k)``.

    Every operation is on whole ``(G, B)`` planes (contiguous), one per alternative or pair of them. A pair
    one of whose predictions is missing (NaN) is one the model does not order - a tie, as the compiled kernel
    (:mod:`analysis.scoring.bootstrap_jit`) counts it - so no NaN reaches an integer sign.
    """
    k = Mk.shape[0]
    pk = p.T[:, :, None]  # (k, G, 1)
    i, j = _pair_index(k)
    sm = np.empty((len(i), *Mk.shape[1:]), dtype=np.int8)
    for n, (a, b) in enumerate(zip(i.tolist(), j.tolist(), strict=True)):
        np.subtract((Mk[a] > Mk[b]).view(np.int8), (Mk[a] < Mk[b]).view(np.int8), out=sm[n])
    sp = np.subtract(pk[i] > pk[j], pk[i] < pk[j], dtype=np.int8)  # (P, G, 1): 0 for a tie or a missing one
    untied_m = np.count_nonzero(sm, axis=0)
    untied_p = np.count_nonzero(sp, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        agree = (sm * sp).sum(axis=0, dtype=np.int64)
        tau = np.where((untied_m > 0) & (untied_p > 0), agree / np.sqrt(untied_m * untied_p), np.nan)
        ordered = sm != 0
        same = np.count_nonzero(ordered & (sm == sp), axis=0)
        undecided = np.count_nonzero(ordered & (sp == 0), axis=0)
        pairwise = np.where(untied_m > 0, (same + 0.5 * undecided) / untied_m, np.nan)
        pick = pk == pk.min(axis=0, keepdims=True)  # (k, G, 1)
        n_pick = np.count_nonzero(pick, axis=0)
        mmin = Mk.min(axis=0)
        top1 = np.count_nonzero((Mk == mmin) & pick, axis=0) / n_pick
        penalty = np.where(pick, Mk / mmin, 0.0).sum(axis=0) / n_pick - 1.0
        norm_m = np.sqrt(np.einsum("kgb,kgb->gb", Mk, Mk))
        unit_p = unit_predictions(p)
        diff = Mk / norm_m - unit_p
        profile = np.sqrt(np.einsum("kgb,kgb->gb", diff, diff)) / math.sqrt(2.0)
    return {"kendall_tau": tau, "pairwise_agreement": pairwise, "top1_agreement": top1,
            "selection_penalty": penalty, "profile_error": profile}


def interval(values: NDArray[np.float64], level: float) -> tuple[float, float]:
    """The central ``level`` percentile interval of the finite ``values`` (NaN, NaN when there are none)."""
    v = values[np.isfinite(values)]
    if not len(v):
        return math.nan, math.nan
    lo, hi = np.percentile(v, [50.0 * (1.0 - level), 50.0 * (1.0 + level)])
    return float(lo), float(hi)


def mann_whitney_rows(X: NDArray[np.float64], Y: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`mann_whitney_greater` of each row pair (``X`` is ``(P, n)``, ``Y`` ``(P, m)``, no NaN), as arrays:
    average ranks from pairwise comparisons, then the exact permutation test over every arrangement (or the
    normal approximation with tie correction beyond :data:`EXACT_LIMIT`).

    Hand-written because SciPy cannot hold the million-run validation with it: its tie-exact permutation
    method costs a Python-level permutation loop per call, over an order of magnitude slower than these
    arrays (``benchmarks/bench_uncertainty.py`` prints the ratio); its ``"exact"`` method is as fast but
    ignores ties. The tests hold this function to SciPy's values."""
    n, m = X.shape[1], Y.shape[1]
    Z = np.concatenate([X, Y], axis=1)
    less = (Z[:, None, :] < Z[:, :, None]).sum(axis=2)
    equal = (Z[:, None, :] == Z[:, :, None]).sum(axis=2)  # counts itself
    ranks = less + 0.5 * (equal + 1)
    observed = ranks[:, :n].sum(axis=1)
    if math.comb(n + m, n) <= EXACT_LIMIT:
        arr = _arrangements(n + m, n)
        p = np.empty(len(Z))
        step = max(1, CHUNK_ELEMENTS // (len(arr) * n))
        for s in range(0, len(Z), step):
            sums = ranks[s:s + step][:, arr].sum(axis=2)
            p[s:s + step] = np.mean(sums >= observed[s:s + step, None] - 1e-9, axis=1)
        return p
    u = observed - n * (n + 1) / 2.0
    tie = (equal.astype(np.float64) ** 2 - 1.0).sum(axis=1)  # sum over tie groups of c^3 - c
    var = n * m / 12.0 * ((n + m + 1) - tie / ((n + m) * (n + m - 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (u - n * m / 2.0 - 0.5) / np.sqrt(var)
    p = 0.5 * np.vectorize(math.erfc)(z / math.sqrt(2.0))
    return np.where(var > 0, p, 1.0)


def noise_aware_best_rows(XS: NDArray[np.float64], n: NDArray[np.int_], alpha: float) -> NDArray[np.bool_]:
    """The noise-aware best (see the module notes) of ``G`` groups of ``k`` alternatives: ``XS`` ``(G, k, w)``
    sorted padded repetitions, ``n`` ``(G, k)`` their counts (every count >= 1)."""
    G, k, _ = XS.shape
    med = sorted_medians(XS.reshape(G * k, -1), n.reshape(-1)).reshape(G, k)
    fastest = np.argmin(med, axis=1)
    out = np.zeros((G, k), dtype=bool)
    out[np.arange(G), fastest] = True
    g_idx, a_idx = np.nonzero(~out)
    f_idx = fastest[g_idx]
    n1, n2 = n[g_idx, a_idx], n[g_idx, f_idx]
    for a, b in set(zip(n1.tolist(), n2.tolist(), strict=True)):
        sel = (n1 == a) & (n2 == b)
        pv = mann_whitney_rows(XS[g_idx[sel], a_idx[sel], :a], XS[g_idx[sel], f_idx[sel], :b])
        out[g_idx[sel], a_idx[sel]] = ~(pv <= alpha)
    return out


def bootstrap_rows(XS: NDArray[np.float64], n: NDArray[np.int_], fallback: NDArray[np.float64],
                   settings: Settings) -> NDArray[np.float64]:
    """``(k, G, resamples)`` bootstrap medians of ``G`` groups' ``k`` alternatives (see the notes above),
    alternatives first; an alternative with fewer than two repetitions keeps its ``fallback`` in every
    resample."""
    G, k, _ = XS.shape
    B = settings.resamples
    M = np.empty((k, G, B))
    for slot in range(k):
        counts = n[:, slot]
        for size in np.unique(counts).tolist():
            rows = np.flatnonzero(counts == size)
            if size < 2:
                M[slot, rows] = fallback[rows, slot][:, None]
                continue
            lo, hi = _median_positions(settings.seed, B, size, slot)
            X = XS[rows, slot]
            M[slot, rows] = 0.5 * (X[:, lo] + X[:, hi])
    return M


@lru_cache(maxsize=512)
def _resample_support(seed: int, resamples: int, sizes: tuple[int, ...]) -> tuple[NDArray[np.int_], ...]:
    """The distinct resamples of a group whose alternatives have ``sizes`` repetitions, and how many of the
    ``resamples`` each stands for: ``(lo, hi, counts)``, ``lo``/``hi`` ``(U, k)`` positions of each
    alternative's two middle values (-1 where it has fewer than two repetitions and keeps its median).

    A resample's medians, hence every metric of it, depend only on these positions; with few repetitions
    they repeat (an odd count's median is one of its n values, so two alternatives of 5 have at most 25
    distinct resamples among 1000)."""
    cols = []
    for slot, size in enumerate(sizes):
        lo, hi = (_median_positions(seed, resamples, size, slot) if size >= 2
                  else (np.full(resamples, -1), np.full(resamples, -1)))
        cols += [lo, hi]
    distinct, counts = np.unique(np.stack(cols, axis=1), axis=0, return_counts=True)
    out = (np.ascontiguousarray(distinct[:, 0::2]), np.ascontiguousarray(distinct[:, 1::2]), counts)
    for arr in out:
        arr.setflags(write=False)
    return out


def weighted_interval_rows(values: NDArray[np.float64], counts: NDArray[np.int_],
                           level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`interval_rows` of rows in which column ``u`` stands for ``counts[u]`` equal values: the same
    order statistics and interpolation as on the rows written out in full, from a sort of the distinct values."""
    V = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(V)
    count = (finite * counts).sum(axis=1)
    S = np.where(finite, V, np.inf)
    order = np.argsort(S, axis=1)
    S = np.take_along_axis(S, order, axis=1)
    cum = np.cumsum(counts[order], axis=1)
    rows = np.arange(len(V))
    out = []
    for q in (0.5 * (1.0 - level), 0.5 * (1.0 + level)):
        pos = q * np.maximum(count - 1, 0)
        f = np.floor(pos).astype(np.int_)
        c = np.minimum(f + 1, np.maximum(count - 1, 0))
        at_f = S[rows, (cum > f[:, None]).argmax(axis=1)]  # the value at sorted position f
        at_c = S[rows, (cum > c[:, None]).argmax(axis=1)]
        val = _lerp(at_f, at_c, pos - f)
        out.append(np.where(count > 0, val, np.nan))
    return out[0], out[1]


def _metric_planes(M: NDArray[np.float64], rows: NDArray[np.int_], m: NDArray[np.float64], p: NDArray[np.float64],
                   t: NDArray[np.float64] | None) -> dict[str, NDArray[np.float64]]:
    """Every interval metric of each resample ``(k, G, R)`` of medians ``M`` of the groups ``rows``."""
    values = ranking_by_alternative(M, p[rows])
    if t is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            values["tightness_median"] = np.median(t[rows].T[:, :, None] * (m[rows].T[:, :, None] / M), axis=0)
    return values


def _intervals(out: dict[str, Any], boot: NDArray[np.int_], m: NDArray[np.float64], p: NDArray[np.float64],
               t: NDArray[np.float64] | None, XS: NDArray[np.float64], n: NDArray[np.int_],
               settings: Settings) -> None:
    """The intervals of the ``boot`` groups, written into ``out``.

    Groups whose alternatives have the same numbers of repetitions share their resampling positions, so
    their distinct resamples (:func:`_resample_support`) are scored once each and weighted by how many
    resamples they stand for; where there are nearly as many distinct resamples as resamples, every
    resample is scored. Both give exactly the percentile bootstrap described in the notes above."""
    k = m.shape[1]
    B = settings.resamples
    width = max(k * (k - 1) // 2, 1) + k
    signatures, which = np.unique(n[boot], axis=0, return_inverse=True)
    which = which.ravel()
    everything = []
    for s_i, sizes in enumerate(signatures.tolist()):
        group = boot[which == s_i]
        if len(group) < SUPPORT_MIN_GROUPS:  # too few to repay finding the distinct resamples
            everything.append(group)
            continue
        lo, hi, counts = _resample_support(settings.seed, B, tuple(sizes))
        if 4 * len(counts) > B:
            everything.append(group)
            continue
        step = max(1, CHUNK_ELEMENTS // (len(counts) * width))
        for start in range(0, len(group), step):
            rows = group[start:start + step]
            M = np.empty((k, len(rows), len(counts)))
            for slot, size in enumerate(sizes):
                if size < 2:
                    M[slot] = m[rows, slot][:, None]
                else:
                    X = XS[rows, slot]
                    M[slot] = 0.5 * (X[:, lo[:, slot]] + X[:, hi[:, slot]])
            for metric, v in _metric_planes(M, rows, m, p, t).items():
                out[f"{metric}_lo"][rows], out[f"{metric}_hi"][rows] = weighted_interval_rows(v, counts, settings.level)
    if not everything:
        return
    rest = np.sort(np.concatenate(everything))
    if len(rest) * B * width >= JIT_MIN_ELEMENTS:
        _compiled_intervals(out, rest, m, p, t, XS, n, settings)
    else:
        step = max(1, CHUNK_ELEMENTS // (B * width))
        for start in range(0, len(rest), step):
            rows = rest[start:start + step]
            M = bootstrap_rows(XS[rows], n[rows], m[rows], settings)
            for metric, v in _metric_planes(M, rows, m, p, t).items():
                out[f"{metric}_lo"][rows], out[f"{metric}_hi"][rows] = interval_rows(v, settings.level)


def _compiled_intervals(out: dict[str, Any], rows: NDArray[np.int_], m: NDArray[np.float64], p: NDArray[np.float64],
                        t: NDArray[np.float64] | None, XS: NDArray[np.float64], n: NDArray[np.int_],
                        settings: Settings) -> None:
    """Every resample of the groups ``rows`` scored by :func:`analysis.scoring.bootstrap_jit.interval_kernel`,
    the intervals written into ``out``."""
    from analysis.scoring import bootstrap_jit

    lo_pos, hi_pos = median_position_tables(n[rows], settings)
    dense = np.ascontiguousarray
    res = bootstrap_jit.interval_kernel(
        dense(XS[rows], dtype=np.float64), dense(n[rows], dtype=np.int64), dense(m[rows], dtype=np.float64),
        dense(p[rows], dtype=np.float64), dense(unit_predictions(p[rows])[:, :, 0].T, dtype=np.float64),
        dense((m if t is None else t)[rows], dtype=np.float64), t is not None,
        lo_pos, hi_pos, float(settings.level))
    for j, metric in enumerate(bootstrap_jit.METRICS[:6 if t is not None else 5]):
        out[f"{metric}_lo"][rows], out[f"{metric}_hi"][rows] = res[j, 0], res[j, 1]


def uncertainty_rows(m: NDArray[np.float64], p: NDArray[np.float64], t: NDArray[np.float64] | None,
                     XS: NDArray[np.float64], n: NDArray[np.int_], names: Sequence[Sequence[str]],
                     settings: Settings) -> dict[str, Any]:
    """The uncertainty columns (:data:`UNCERTAINTY_COLUMNS`) of ``G`` groups of ``k`` alternatives at once.

    ``m``/``p``/``t`` are ``(G, k)`` medians, predictions and tightness (``t`` may be None); ``XS``/``n``
    the alternatives' sorted padded repetitions ``(G, k, w)`` and their counts ``(G, k)``; ``names`` the
    alternatives' names per group. Returns one array (or list) of length ``G`` per column.
    """
    G, k = m.shape
    out: dict[str, Any] = {"n_reps_min": n.min(axis=1).astype(np.int64)}
    for metric in INTERVAL_METRICS:
        out[f"{metric}_lo"] = np.full(G, np.nan)
        out[f"{metric}_hi"] = np.full(G, np.nan)
    boot = np.flatnonzero((n >= 2).any(axis=1)) if settings.resamples > 0 else np.empty(0, dtype=np.int_)
    _intervals(out, boot, m, p, t, XS, n, settings)
    best = m == m.min(axis=1, keepdims=True)
    judged = np.flatnonzero((n >= 1).all(axis=1))
    if len(judged):
        best[judged] = noise_aware_best_rows(XS[judged], n[judged], settings.noise_alpha)
    if settings.noise_floor > 0:
        best |= m <= m.min(axis=1, keepdims=True) * (1.0 + settings.noise_floor)
    pick = p == p.min(axis=1, keepdims=True)
    out["distinguishable"] = ~best.all(axis=1)
    out["best_measured_noise_aware"] = [", ".join(nm for nm, b in zip(row, bs, strict=True) if b)
                                        for row, bs in zip(names, best.tolist(), strict=True)]
    n_pick = np.count_nonzero(pick, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # a group whose predictions pick nothing (NaN): NaN
        out["top1_noise_aware"] = np.count_nonzero(pick & best, axis=1) / n_pick
        penalty = np.where(best, 0.0, m / m.min(axis=1, keepdims=True) - 1.0)
        out["selection_penalty_noise_aware"] = np.where(pick, penalty, 0.0).sum(axis=1) / n_pick
    return out


def group_uncertainty(key: Any, measured: Any, predicted: Any, names: list[str], samples: list[Any] | None,
                      settings: Settings, tightness: Any = None) -> dict[str, Any]:
    """The uncertainty columns (:data:`UNCERTAINTY_COLUMNS`) of one group (:func:`uncertainty_rows` for G = 1).

    ``measured``/``predicted`` are the alternatives' median and predicted
    times (or energies); ``samples`` their repetitions, in the same order;
    ``tightness`` the per-alternative tightness (a fraction of the bound that
    scales as 1 / measured), if the group has one. Without samples every
    interval is NaN and the noise-aware best is the strict best. ``key`` names
    the group (kept for callers; the resampling depends only on the seed and the group's shape).
    """
    m = np.asarray(measured, dtype=np.float64)[None]
    p = np.asarray(predicted, dtype=np.float64)[None]
    XS, n = pad_sorted(samples if samples is not None else [None] * len(names))
    t = None if tightness is None else np.asarray(tightness, dtype=np.float64)[None]
    cols = uncertainty_rows(m, p, t, XS[None], n[None], [names], settings)
    out: dict[str, Any] = {}
    for c in UNCERTAINTY_COLUMNS:
        v = cols[c][0]
        out[c] = v if isinstance(v, str) else (bool(v) if c == "distinguishable" else (
            int(v) if c == "n_reps_min" else float(v)))
    return out


def run_intervals(tightness: Any, median: Any, samples: Sequence[Any],
                  settings: Settings) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each run's tightness interval from its repetitions (tightness scales as 1 / the measured median).

    The percentile bootstrap of :func:`interval` over ``settings.resamples`` resamples, for every run at
    once: with an odd count the sorted resample medians are the sorted repetitions at the sorted drawn
    positions, so each run's interval needs four values, not a sort. NaN for runs with fewer than two
    repetitions or a non-finite tightness or median.
    """
    t = np.asarray(tightness, dtype=np.float64)
    med = np.asarray(median, dtype=np.float64)
    XS, n = pad_sorted(samples)
    lo, hi = np.full(len(t), np.nan), np.full(len(t), np.nan)
    B = settings.resamples
    if B <= 0:
        return lo, hi
    ok = (n >= 2) & np.isfinite(t) & np.isfinite(med)
    scale = t * med
    for size in np.unique(n[ok]).tolist():
        rows = np.flatnonzero(ok & (n == size))
        a, b = _median_positions(settings.seed, B, size, 0)
        if size % 2:
            order = np.sort(a)
            boot = None
        else:
            boot = np.sort(0.5 * (XS[rows][:, a] + XS[rows][:, b]), axis=1)
        for q, target in ((0.5 * (1.0 - settings.level), lo), (0.5 * (1.0 + settings.level), hi)):
            # position in the ascending tightness values, i.e. from the top of the ascending medians
            pos = q * (B - 1)
            f = math.floor(pos)
            c = min(f + 1, B - 1)
            if boot is None:
                lo_med, hi_med = XS[rows, order[B - 1 - f]], XS[rows, order[B - 1 - c]]
            else:
                lo_med, hi_med = boot[:, B - 1 - f], boot[:, B - 1 - c]
            with np.errstate(divide="ignore", invalid="ignore"):
                target[rows] = _lerp(scale[rows] / lo_med, scale[rows] / hi_med, np.full(len(rows), pos - f))
    return lo, hi


def format_interval(value: float, lo: float, hi: float, digits: int = 2) -> str:
    """``"0.80 [0.60, 0.93]"``; the bare value when the interval is unknown; ``"n/a"`` for NaN."""
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    text = f"{float(value):.{digits}f}"
    if lo is None or hi is None or not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        return text
    return f"{text} [{float(lo):.{digits}f}, {float(hi):.{digits}f}]"
