"""The bootstrap intervals of many-alternative groups in one compiled pass per group.

The NumPy path of :func:`analysis.scoring.uncertainty.uncertainty_rows` builds whole planes: the resampled
medians ``(alternatives, groups, resamples)``, one plane per *pair* of alternatives, then every metric's
plane, then a partition of each metric's resamples: about ten passes over memory per group and resample,
and a group of 11 alternatives has 55 pairs. At a million runs these planes were the largest share of the
validation's work (``benchmarks/bench_validate.py``). This kernel walks each group once: a resample's medians and its six
metrics in scalars, and of each metric's resamples only the few order statistics the interval's two ends
are interpolated from (kept in two short sorted buffers instead of a partition of all of them).

A resample's median of an alternative lies between that alternative's smallest and largest repetition.
So before its resamples, each group settles what no resample can change: the order of two alternatives
whose repetitions do not overlap (only the overlapping pairs are compared per resample), and which
alternatives' tightness lies below or above the median's ranks in every resample (only the others are
sorted per resample). Both are exact: the same comparisons come out the same way, and the same values
reach the same sums and the same median.

It computes what the NumPy path computes, operation for operation (the same sums in the same order,
NumPy's percentile interpolation, the NaN and tie rules), so the two agree to the last bit; the tests hold
them to that on hostile inputs. It is used for chunks of at least
:data:`analysis.scoring.uncertainty.JIT_MIN_ELEMENTS` pair-resamples, where its compilation (once per
installation: the machine code is cached beside this file) is repaid.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

#: Order of the metrics in the kernel's output (:data:`analysis.scoring.uncertainty.INTERVAL_METRICS`).
METRICS = ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error",
           "tightness_median")
#: Above this many order statistics kept per end, the interval sorts all of a metric's resamples instead.
BUFFER_LIMIT = 64

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@numba.njit(**_JIT)
def _lerp(a: float, b: float, t: float) -> float:
    d = b - a
    return b - d * (1.0 - t) if t >= 0.5 else a + d * t


@numba.njit(**_JIT)
def _interval(values: NDArray[np.float64], low: NDArray[np.float64], high: NDArray[np.float64], q_lo: float,
              q_hi: float) -> tuple[float, float]:
    """The percentile interval of the finite ``values`` (as ``interval_rows``): the order statistics at the
    two ends from the smallest and the largest few values, kept sorted as ``values`` is read once."""
    count = 0
    for v in values:
        if math.isfinite(v):
            count += 1
    if count == 0:
        return np.nan, np.nan
    top = count - 1
    pos_lo, pos_hi = q_lo * top, q_hi * top
    f_lo, f_hi = int(math.floor(pos_lo)), int(math.floor(pos_hi))
    c_lo, c_hi = min(f_lo + 1, top), min(f_hi + 1, top)
    n_low, n_high = c_lo + 1, count - f_hi  # the n_low smallest and the n_high largest values
    if n_low + n_high > BUFFER_LIMIT:
        s = np.sort(values[np.isfinite(values)])
        return (_lerp(s[f_lo], s[c_lo], pos_lo - f_lo), _lerp(s[f_hi], s[c_hi], pos_hi - f_hi))
    kept_low = 0
    kept_high = 0
    for v in values:
        if not math.isfinite(v):
            continue
        if kept_low < n_low or v < low[kept_low - 1]:  # insert into the ascending smallest values
            i = kept_low if kept_low < n_low else n_low - 1
            while i > 0 and low[i - 1] > v:
                low[i] = low[i - 1]
                i -= 1
            low[i] = v
            if kept_low < n_low:
                kept_low += 1
        if kept_high < n_high or v > high[kept_high - 1]:  # insert into the descending largest values
            i = kept_high if kept_high < n_high else n_high - 1
            while i > 0 and high[i - 1] < v:
                high[i] = high[i - 1]
                i -= 1
            high[i] = v
            if kept_high < n_high:
                kept_high += 1
    # ascending position j from the top is high[top - j]
    return (_lerp(low[f_lo], low[c_lo], pos_lo - f_lo), _lerp(high[top - f_hi], high[top - c_hi], pos_hi - f_hi))


@numba.njit(**_JIT)
def _extremes(xs: NDArray[np.float64], size: int, median: float) -> tuple[float, float]:
    """The smallest and the largest median a resample of these ``size`` sorted repetitions can have (an
    alternative with fewer than two keeps its ``median``), computed as a resample's median is (a sum that
    overflows is infinite here too)."""
    if size < 2:
        return median, median
    return 0.5 * (xs[0] + xs[0]), 0.5 * (xs[size - 1] + xs[size - 1])


@numba.njit(**_JIT)
def _resample_medians(M: NDArray[np.float64], xs: NDArray[np.float64], n: NDArray[np.int64],
                      median: NDArray[np.float64], lo_pos: NDArray[np.int64], hi_pos: NDArray[np.int64],
                      r: int) -> None:
    """Resample ``r``'s median of each of a group's alternatives into ``M``: the mean of its two middle values
    (positions ``lo_pos``/``hi_pos``, by slot and repetition count), or its ``median`` with fewer than two."""
    for a in range(len(M)):
        size = n[a]
        if size < 2:
            M[a] = median[a]
        else:
            M[a] = 0.5 * (xs[a, lo_pos[a, size, r]] + xs[a, hi_pos[a, size, r]])


@numba.njit(**_JIT)
def _nan_min(values: NDArray[np.float64]) -> float:
    """NumPy's ``min``: the smallest value, or NaN if there is one."""
    low = values[0]
    for v in values:
        if math.isnan(v) or v < low:
            low = v
        if math.isnan(low):
            break
    return low


@numba.njit(**_JIT)
def interval_kernel(XS: NDArray[np.float64], n: NDArray[np.int64], m: NDArray[np.float64],
                    p: NDArray[np.float64], unit_p: NDArray[np.float64], t: NDArray[np.float64], has_t: bool,
                    lo_pos: NDArray[np.int64], hi_pos: NDArray[np.int64], level: float) -> NDArray[np.float64]:
    """``(6, 2, G)``: each metric's interval (lo, hi) for ``G`` groups of ``k`` alternatives.

    ``XS``/``n`` are the sorted padded repetitions ``(G, k, w)`` and their counts; ``m``/``p``/``t`` the
    medians, predictions and tightness ``(G, k)``; ``unit_p`` the predictions scaled to unit length, from
    the NumPy path's own expression (NumPy sums 8 or more values pairwise, not in order); ``lo_pos`` and
    ``hi_pos`` ``(k, sizes, B)`` the positions of each resample's two middle values for an alternative in a
    slot with that many repetitions (``_median_positions``). An alternative with fewer than two repetitions
    keeps its median.
    """
    G, k = m.shape
    B = lo_pos.shape[2]
    out = np.full((6, 2, G), np.nan)
    M = np.empty(k)
    vals = np.empty((6, B))
    low = np.empty(BUFFER_LIMIT)
    high = np.empty(BUFFER_LIMIT)
    sp = np.empty((k, k), dtype=np.int64)
    tk = np.empty(k)
    pair_a = np.empty(k * k, dtype=np.int64)  # the pairs compared per resample
    pair_b = np.empty(k * k, dtype=np.int64)
    ext_lo = np.empty(k)
    ext_hi = np.empty(k)
    t_lo = np.empty(k)
    t_hi = np.empty(k)
    t_open = np.empty(k, dtype=np.int64)  # the alternatives whose tightness is sorted per resample
    r1, r2 = (k - 1) // 2, k // 2  # the ranks the median of k values is taken from
    q_lo, q_hi = 0.5 * (1.0 - level), 0.5 * (1.0 + level)
    root2 = math.sqrt(2.0)
    for g in range(G):
        # the prediction's side, the same in every resample
        pmin = p[g, 0]
        for a in range(k):
            if math.isnan(p[g, a]) or p[g, a] < pmin:
                pmin = p[g, a]
            if math.isnan(pmin):
                break
        untied_p = 0
        for a in range(k):
            for b in range(a + 1, k):
                d = p[g, a] - p[g, b]
                sp[a, b] = 1 if d > 0 else (-1 if d < 0 else 0)  # NaN: 0, as NumPy's cast of sign(NaN)
                if sp[a, b] != 0:
                    untied_p += 1
        n_pick = 0
        for a in range(k):
            if p[g, a] == pmin:
                n_pick += 1
        for a in range(k):
            ext_lo[a], ext_hi[a] = _extremes(XS[g, a], n[g, a], m[g, a])
        # pairs that do not overlap: the same sign in every resample (NaN extremes compare false: overlapping)
        fixed_untied = 0
        fixed_agree = 0
        fixed_both = 0
        n_pairs = 0
        for a in range(k):
            for b in range(a + 1, k):
                if ext_hi[a] < ext_lo[b] or ext_hi[b] < ext_lo[a]:
                    s = sp[a, b]
                    fixed_untied += 1
                    fixed_agree += s if ext_lo[a] > ext_hi[b] else -s
                    fixed_both += s * s
                else:
                    pair_a[n_pairs] = a
                    pair_b[n_pairs] = b
                    n_pairs += 1
        # tightness t * (m / M) falls as M rises where all is positive and finite; an alternative whose range
        # lies wholly below (above) enough others' ranges is below rank r1 (above r2) in every resample
        n_below = 0
        n_open = 0
        settled = has_t
        for a in range(k):
            c = t[g, a] * m[g, a]
            if not (c > 0.0 and ext_lo[a] > 0.0 and math.isfinite(c) and math.isfinite(ext_hi[a])):
                settled = False
                break
            t_lo[a] = t[g, a] * (m[g, a] / ext_hi[a])
            t_hi[a] = t[g, a] * (m[g, a] / ext_lo[a])
            if not math.isfinite(t_hi[a]):
                settled = False
                break
        if settled:
            for a in range(k):
                above = 0
                below = 0
                for b in range(k):
                    above += t_lo[b] > t_hi[a]
                    below += t_hi[b] < t_lo[a]
                if above >= k - r1:
                    n_below += 1
                elif below < r2 + 1:
                    t_open[n_open] = a
                    n_open += 1
        for r in range(B):
            _resample_medians(M, XS[g], n[g], m[g], lo_pos, hi_pos, r)
            # over the pairs, with sm, s in {-1, 0, 1}: untied = sum sm^2, agree = sum sm s, and of the untied
            # pairs, those the prediction also orders (both = sum sm^2 s^2) split into same = (both + agree) / 2
            # and opposite; the rest are undecided (without branches: the signs of random data mispredict)
            untied_m = fixed_untied
            agree = fixed_agree
            both = fixed_both
            for q in range(n_pairs):
                a = pair_a[q]
                b = pair_b[q]
                sm = np.int64(M[a] > M[b]) - np.int64(M[a] < M[b])
                s = sp[a, b]
                untied_m += sm * sm
                agree += sm * s
                both += sm * sm * s * s
            same = (both + agree) // 2
            undecided = untied_m - both
            vals[0, r] = agree / math.sqrt(float(untied_m * untied_p)) if untied_m > 0 and untied_p > 0 else np.nan
            vals[1, r] = (same + 0.5 * undecided) / untied_m if untied_m > 0 else np.nan
            mmin = _nan_min(M)
            hits = 0
            pen = 0.0
            norm = 0.0
            for a in range(k):
                if p[g, a] == pmin:
                    if M[a] == mmin:
                        hits += 1
                    pen += M[a] / mmin
                norm += M[a] * M[a]
            vals[2, r] = hits / n_pick
            vals[3, r] = pen / n_pick - 1.0
            norm_m = math.sqrt(norm)
            err = 0.0
            for a in range(k):
                d = M[a] / norm_m - unit_p[g, a]
                err += d * d
            vals[4, r] = math.sqrt(err) / root2
            if settled:  # the median's ranks lie among the open alternatives, sorted here
                for i in range(n_open):
                    a = t_open[i]
                    v = t[g, a] * (m[g, a] / M[a])
                    j = i
                    while j > 0 and tk[j - 1] > v:
                        tk[j] = tk[j - 1]
                        j -= 1
                    tk[j] = v
                vals[5, r] = tk[r1 - n_below] if k % 2 else (tk[r1 - n_below] + tk[r2 - n_below]) / 2.0
            elif has_t:
                nan_seen = False
                for a in range(k):
                    tk[a] = t[g, a] * (m[g, a] / M[a])
                    nan_seen = nan_seen or math.isnan(tk[a])
                if nan_seen:  # NumPy's median of values with a NaN
                    vals[5, r] = np.nan
                else:
                    for a in range(1, k):  # insertion sort: a handful of values
                        v = tk[a]
                        i = a
                        while i > 0 and tk[i - 1] > v:
                            tk[i] = tk[i - 1]
                            i -= 1
                        tk[i] = v
                    half = k // 2
                    vals[5, r] = tk[half] if k % 2 else (tk[half - 1] + tk[half]) / 2.0
        for j in range(6 if has_t else 5):
            out[j, 0, g], out[j, 1, g] = _interval(vals[j], low, high, q_lo, q_hi)
    return out


@numba.njit(**_JIT)
def _argmin(values: NDArray[np.float64]) -> int:
    """``np.argmin`` of a row: the first smallest value, or the first NaN if there is one."""
    best = 0
    for i in range(len(values)):
        if math.isnan(values[i]):
            return i
        if values[i] < values[best]:
            best = i
    return best


@numba.njit(**_JIT)
def _nearest_position(grid: NDArray[np.float64], alpha: float) -> int:
    """:func:`analysis.scoring.splits._nearest` of one answer: the position of the swept alpha nearest ``alpha``,
    a rounding's worth per position added to break a tie towards the smaller; -1 where ``alpha`` is not finite."""
    if not math.isfinite(alpha):
        return -1
    best, best_d = 0, math.inf
    for j in range(len(grid)):
        d = abs(grid[j] - alpha) + 1e-12 * j
        if math.isnan(d):
            return j
        if d < best_d:
            best, best_d = j, d
    return best


@numba.njit(**_JIT)
def splits_kernel(XS: NDArray[np.float64], n: NDArray[np.int64], T: NDArray[np.float64], A: NDArray[np.float64],
                  W: NDArray[np.float64], i0: NDArray[np.int64], i1: NDArray[np.int64], fixed: NDArray[np.float64],
                  lo_pos: NDArray[np.int64], hi_pos: NDArray[np.int64],
                  level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The resampled answers of ``S`` alpha sweeps of ``k`` points (:mod:`analysis.scoring.splits`), each
    sweep walked once: ``(2, 2, S)`` intervals (lo, hi) of the measured best alpha and PEACH's eq. 13 alpha, and
    ``(2 + F, 2, S)`` intervals of the selection penalty of those two and of the ``F`` answers ``fixed``
    ``(F, S)`` that do not move with the repetitions (the models').

    ``XS``/``n`` are each point's sorted padded repetitions ``(S, k, w)`` and their counts, ``T`` the medians
    (kept by a point of fewer than two repetitions), ``A`` the swept alphas, ``W`` the work, ``i0``/``i1`` the
    positions of alpha 0 and 1 (-1: absent); ``lo_pos``/``hi_pos`` as :func:`interval_kernel`'s
    (:func:`analysis.scoring.uncertainty.median_position_tables`). The same
    operations as the NumPy path of :func:`analysis.scoring.splits._answers`, so the same bits.
    """
    S, k = T.shape
    F = fixed.shape[0]
    B = lo_pos.shape[2]
    alpha_out = np.full((2, 2, S), np.nan)
    pen_out = np.full((2 + F, 2, S), np.nan)
    M = np.empty(k)
    vals = np.empty((4 + F, B))  # the two alphas, then the 2 + F penalties
    fixed_near = np.empty(F, dtype=np.int64)
    low_buf = np.empty(BUFFER_LIMIT)
    high_buf = np.empty(BUFFER_LIMIT)
    q_lo, q_hi = 0.5 * (1.0 - level), 0.5 * (1.0 + level)
    for s in range(S):
        grid = A[s]
        for f in range(F):
            fixed_near[f] = _nearest_position(grid, fixed[f, s])
        ends = i0[s] >= 0 and i1[s] >= 0 and W[s] > 0
        for r in range(B):
            _resample_medians(M, XS[s], n[s], T[s], lo_pos, hi_pos, r)
            best = _argmin(M)
            low = M[best]  # NumPy's min: the first NaN where there is one, as argmin finds it
            a_best = grid[best]
            a_peach = np.nan
            if ends:
                t0 = M[i0[s]]
                t1 = M[i1[s]]
                if t0 > 0 and t1 > 0 and math.isfinite(t0) and math.isfinite(t1):
                    a_peach = t0 / (t0 + t1)
            vals[0, r] = a_best
            vals[1, r] = a_peach
            for j in range(2 + F):
                if j == 0:
                    near = _nearest_position(grid, a_best)
                elif j == 1:
                    near = _nearest_position(grid, a_peach)
                else:
                    near = fixed_near[j - 2]
                vals[2 + j, r] = M[near] / low - 1.0 if near >= 0 else np.nan
        for j in range(2):
            alpha_out[j, 0, s], alpha_out[j, 1, s] = _interval(vals[j], low_buf, high_buf, q_lo, q_hi)
        for j in range(2 + F):
            pen_out[j, 0, s], pen_out[j, 1, s] = _interval(vals[2 + j], low_buf, high_buf, q_lo, q_hi)
    return alpha_out, pen_out
