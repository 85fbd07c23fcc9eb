"""The scorecard: which model to trust, for which workload and machine, with intervals.

One row per (model, case, platform, workload class), built from the validation tables the cases wrote:

* **Workload classes.** A two-processor run (SA, LA) or a PEACH workload is *memory-bound* when its
  intensity (flops per byte of its counted traffic) lies below its platform's host balance ``t_b / t_f``
  (flops per byte at which the two times are equal), else *compute-bound*. An FDM run falls in a scale band
  by its rank count (1; 2-4; 5-16; 17-64; more).
* **Bounds.** The runs' tightness (measured / predicted performance): its median and a percentile
  bootstrap interval of the median over the runs (``scipy.stats.bootstrap``, the study's ``uncertainty``
  settings; for rows of more than about 1.7x10^4 runs at 1000 resamples, the same bootstrap drawing only the order statistics a
  resample's median is made of, :func:`bootstrap_medians`).
* **Ranking.** Over the class's groups of alternatives: how many were scored and how many the
  measurements can tell apart (``distinguishable``); over those, the median Kendall tau with an interval
  (the bootstrap of the median over groups with three or more groups; with fewer, the lowest and highest
  end of the groups' own intervals) and the noise-aware top-1 rate with its Clopper-Pearson interval.
* **Held-out scale error** where a scaling fit exists: the median relative error of the analytical model at
  the held-out largest scale (``scaling_fits``).
* **Verdict** (``docs/scorecard.md``), by thresholds on the intervals, never on the medians:
  bounds are trusted when at least :data:`MIN_RUNS` runs were scored and the whole tightness interval lies
  in ``[BOUND_LO, BOUND_HI]``; ranking is trusted when at least :data:`MIN_GROUPS` distinguishable groups
  were scored, the tau interval lies above :data:`TAU_LO` and the top-1 interval's lower end reaches
  :data:`TOP1_LO`. ``both``, ``trust for bounds``, ``trust for ranking`` or ``neither``; ``not enough
  data`` when neither aspect has enough to be judged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.scoring.uncertainty import Settings

#: Fewest runs whose tightness interval is judged.
MIN_RUNS = 3
#: Fewest distinguishable groups whose ranking is judged.
MIN_GROUPS = 2
#: A trusted bound: the tightness interval within [BOUND_LO, BOUND_HI] (within 2x of what the runs reach,
#: and not beaten by more than the noise).
BOUND_LO, BOUND_HI = 0.5, 1.1
#: A trusted ranking: the tau interval's lower end above TAU_LO and the top-1 interval's lower end at least TOP1_LO.
TAU_LO, TOP1_LO = 0.0, 0.5
VERDICTS = ("both", "trust for bounds", "trust for ranking", "neither", "not enough data")
#: Above this many resampled values (runs x resamples) a median's interval draws only its order statistics
#: (:func:`bootstrap_medians`) instead of calling ``scipy.stats.bootstrap``.
SCIPY_BOOTSTRAP_ELEMENTS = 2**24
#: FDM scale bands: (upper rank count, label).
SCALE_BANDS = ((1, "1 rank"), (4, "2-4 ranks"), (16, "5-16 ranks"), (64, "17-64 ranks"), (math.inf, "over 64 ranks"))

COLUMNS = ["study", "platform", "fingerprint", "case", "model", "workload_class", "runs", "tightness_median", "tightness_lo",
           "tightness_hi", "groups", "distinguishable_groups", "kendall_tau_median", "kendall_tau_lo",
           "kendall_tau_hi", "top1_noise_aware_rate", "top1_noise_aware_lo", "top1_noise_aware_hi",
           "heldout_error", "bounds_verdict", "ranking_verdict", "verdict", "evidence"]


def scale_band(ranks: Any) -> str:
    """The scale band of a run on ``ranks`` ranks."""
    r = float(ranks) if ranks is not None and not pd.isna(ranks) else math.nan
    if math.isnan(r):
        return "all scales"
    return next(label for top, label in SCALE_BANDS if r <= top)


def _each(values: pd.Series, how: Any) -> pd.Series:
    """``how`` of every value (``how(None)`` for a missing one), computed once per distinct value (a million runs
    have a handful)."""
    codes, distinct = pd.factorize(values, use_na_sentinel=True)
    mapped = np.array([*map(how, distinct), how(None)], dtype=object)  # code -1 (missing) takes the last
    return pd.Series(mapped[codes], index=values.index)


def _bound_class(intensity: pd.Series, balance: pd.Series) -> pd.Series:
    memory = intensity.to_numpy(dtype=float) < balance.to_numpy(dtype=float)
    known = np.isfinite(intensity.to_numpy(dtype=float)) & np.isfinite(balance.to_numpy(dtype=float))
    return pd.Series(np.where(~known, "unknown intensity", np.where(memory, "memory-bound", "compute-bound")),
                     index=intensity.index)


def _balances(processors: pd.DataFrame | None) -> dict[str, float]:
    """Each platform's host balance t_b / t_f (flop per byte)."""
    if processors is None or not len(processors) or not {"t_b_host", "t_f_host"} <= set(processors.columns):
        return {}
    return {str(p): float(b) / float(f) for p, b, f in
            zip(processors["platform"], processors["t_b_host"], processors["t_f_host"], strict=True)
            if f and not pd.isna(f) and not pd.isna(b)}


def _median_interval(values: np.ndarray, settings: Settings) -> tuple[float, float, float]:
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
    if len(v) * settings.resamples > SCIPY_BOOTSTRAP_ELEMENTS:
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
    ``resamples`` draws). Used above :data:`SCIPY_BOOTSTRAP_ELEMENTS`, where SciPy's resamples-by-n draws
    cannot hold the million-run validation (a scorecard row of 4x10^5 runs is 4x10^8 draws, gigabytes and
    tens of seconds per row; ``benchmarks/bench_validate.py``)."""
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


def _ranking(groups: pd.DataFrame, settings: Settings) -> dict[str, Any]:
    out: dict[str, Any] = {"groups": len(groups), "distinguishable_groups": 0}
    nan = {k: math.nan for k in ("kendall_tau_median", "kendall_tau_lo", "kendall_tau_hi", "top1_noise_aware_rate",
                                 "top1_noise_aware_lo", "top1_noise_aware_hi")}
    out.update(nan)
    if not len(groups):
        return out
    dist = groups[groups["distinguishable"].fillna(False).astype(bool)] if "distinguishable" in groups else groups
    out["distinguishable_groups"] = len(dist)
    tau = dist["kendall_tau"].to_numpy(dtype=float) if len(dist) else np.empty(0)
    tau = tau[np.isfinite(tau)]
    if len(tau):
        if len(tau) >= 3:
            mid, lo, hi = _median_interval(tau, settings)
        else:
            mid = float(np.median(tau))
            lo = float(np.nanmin(dist["kendall_tau_lo"])) if "kendall_tau_lo" in dist else math.nan
            hi = float(np.nanmax(dist["kendall_tau_hi"])) if "kendall_tau_hi" in dist else math.nan
        out.update(kendall_tau_median=mid, kendall_tau_lo=lo, kendall_tau_hi=hi)
    top1 = dist["top1_noise_aware"].to_numpy(dtype=float) if "top1_noise_aware" in dist and len(dist) else np.empty(0)
    top1 = top1[np.isfinite(top1)]
    if len(top1):
        hits = int(round(float(top1.sum())))
        from scipy import stats

        ci = stats.binomtest(hits, len(top1)).proportion_ci(confidence_level=settings.level, method="exact")
        out.update(top1_noise_aware_rate=float(top1.mean()), top1_noise_aware_lo=float(ci.low),
                   top1_noise_aware_hi=float(ci.high))
    return out


def verdicts(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(bounds, ranking, overall)`` of one scorecard row by the rule of the module notes."""
    def judged(ok: bool, enough: bool) -> str:
        return "not enough data" if not enough else ("trusted" if ok else "not trusted")

    lo, hi = row["tightness_lo"], row["tightness_hi"]
    bounds = judged(bool(np.isfinite(lo) and np.isfinite(hi) and lo >= BOUND_LO and hi <= BOUND_HI),
                    row["runs"] >= MIN_RUNS and bool(np.isfinite(lo) and np.isfinite(hi)))
    t_lo, p_lo = row["kendall_tau_lo"], row["top1_noise_aware_lo"]
    ranking = judged(bool(np.isfinite(t_lo) and t_lo > TAU_LO and np.isfinite(p_lo) and p_lo >= TOP1_LO),
                     row["distinguishable_groups"] >= MIN_GROUPS)
    if bounds == ranking == "not enough data":
        overall = "not enough data"
    elif bounds == "trusted" and ranking == "trusted":
        overall = "both"
    elif bounds == "trusted":
        overall = "trust for bounds"
    elif ranking == "trusted":
        overall = "trust for ranking"
    else:
        overall = "neither"
    return bounds, ranking, overall


def _rows(runs: pd.DataFrame, groups: pd.DataFrame, keys: list[str], evidence: str, settings: Settings,
          heldout: Mapping[tuple[str, str], float]) -> list[dict[str, Any]]:
    out = []
    if not len(runs):
        return out
    for key, sub in runs[[*keys, "tightness"]].groupby(keys, sort=True, dropna=False):  # no other column copied
        study, platform, case, model, wclass = key
        mine = groups
        for k, v in zip(keys, key, strict=True):
            mine = mine[mine[k] == v] if k in mine else mine
        mid, lo, hi = _median_interval(sub["tightness"].to_numpy(dtype=float), settings)
        row = {"study": study, "platform": platform, "case": case, "model": model, "workload_class": wclass,
               "runs": int(np.isfinite(sub["tightness"].to_numpy(dtype=float)).sum()),
               "tightness_median": mid, "tightness_lo": lo, "tightness_hi": hi, **_ranking(mine, settings),
               "heldout_error": heldout.get((case, model), math.nan), "evidence": evidence}
        row["bounds_verdict"], row["ranking_verdict"], row["verdict"] = verdicts(row)
        out.append(row)
    return out


def _heldout(fits: pd.DataFrame | None) -> dict[tuple[str, str], float]:
    if fits is None or not len(fits) or "heldout_analytical_error" not in fits:
        return {}
    ok = fits.dropna(subset=["heldout_analytical_error"])
    return {(str(c), str(m)): float(np.median(np.abs(g["heldout_analytical_error"].to_numpy(dtype=float))))
            for (c, m), g in ok.groupby(["case", "analytical_model"])}


def scorecard(tables: Mapping[str, pd.DataFrame], processors: pd.DataFrame | None, settings: Settings,
              fingerprints: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The scorecard frame (:data:`COLUMNS`) from the validation ``tables`` (name -> frame), the platforms'
    processor frame (for the machine balance) and each platform's machine fingerprint (:mod:`sims.fingerprint`),
    which says which machine a row speaks for when scorecards of several machines are compared."""
    balance = _balances(processors)
    heldout = _heldout(tables.get("scaling_fits"))
    keys = ["study", "platform", "case", "model", "workload_class"]
    rows: list[dict[str, Any]] = []

    runs = tables.get("runs")
    if runs is not None and len(runs) and "tightness" in runs:
        if "quantity" in runs:
            runs = runs[runs["quantity"] == "time"]
        runs = runs.assign(workload_class=_bound_class(runs["intensity"],
                                                       _each(runs["platform"], lambda p: balance.get(str(p)))))
        # a group of alternatives (one size) takes the class of its size's first run: the alternatives split
        # the same work, so their intensities differ only by where the traffic is counted
        sizes = runs.drop_duplicates(["study", "platform", "case", "size"])[["study", "platform", "case", "size",
                                                                           "workload_class"]]
        fid = tables.get("fidelity")
        groups = pd.DataFrame(columns=keys)
        if fid is not None and len(fid):
            fid = fid[fid["quantity"] == "time"] if "quantity" in fid else fid
            groups = fid.merge(sizes, on=["study", "platform", "case", "size"], how="left")
        rows += _rows(runs, groups, keys, "wp", settings, heldout)

    peach = tables.get("peach_runs")
    if peach is not None and len(peach) and {"rate_measured", "rate_predicted"} <= set(peach.columns):
        width = 8.0  # the workloads' default float64 (the table does not carry the precision)
        n = pd.to_numeric(peach["size"], errors="coerce").astype(float)
        # a product's compulsory traffic is its three matrices: 2 n^3 flops over 3 n^2 words; a transpose has no flops
        intensity = np.where(peach["workload"].astype(str) == "MatrixMultiply", 2.0 * n / (3.0 * width), 0.0)
        p = peach.assign(case="peach", model="PEACH (end-point calibrated)",
                         tightness=peach["rate_measured"] / peach["rate_predicted"],
                         workload_class=_bound_class(pd.Series(intensity, index=peach.index),
                                                     _each(peach["platform"], lambda p: balance.get(str(p)))))
        p = p[~p["endpoint"].fillna(False).astype(bool)] if "endpoint" in p else p  # end points are the calibration
        fid = tables.get("peach_fidelity")
        groups = pd.DataFrame(columns=keys)
        if fid is not None and len(fid):
            fid = fid[fid["quantity"] == "time"] if "quantity" in fid else fid
            classes = p.drop_duplicates(["study", "platform", "workload", "size"])[
                ["study", "platform", "workload", "size", "workload_class"]]
            groups = fid.merge(classes, on=["study", "platform", "workload", "size"], how="left").assign(case="peach")
        rows += _rows(p, groups, keys, "peach", settings, heldout)

    fdm = tables.get("fdm_runs")
    if fdm is not None and len(fdm) and "tightness" in fdm:
        f = fdm.assign(case="fdm", workload_class=_each(fdm["ranks"], scale_band))
        fid = tables.get("fdm_fidelity")
        groups = pd.DataFrame(columns=keys)
        if fid is not None and len(fid):
            groups = fid.assign(case="fdm", workload_class=_each(fid["ranks"], scale_band))
        rows += _rows(f, groups, keys, "fdm", settings, heldout)

    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["fingerprint"] = frame["platform"].astype(str).map(dict(fingerprints or {})).astype("string")
    return frame.astype({"runs": "int64", "groups": "int64", "distinguishable_groups": "int64"})


#: The keys a row of one machine's scorecard is matched on with another's.
MATCH = ["case", "model", "workload_class"]


def compare_machines(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Two scorecards side by side (``_a``, ``_b``), matched on :data:`MATCH` (and the platform when both
    scorecards name the same platforms): each side's machine, verdict and intervals, and whether the
    verdicts agree. Rows one machine has and the other lacks are kept, with the missing side empty."""
    keys = [*MATCH, "platform"] if set(a["platform"]) == set(b["platform"]) else MATCH
    cols = ["fingerprint", "platform", "verdict", "runs", "tightness_median", "tightness_lo", "tightness_hi",
            "kendall_tau_median", "kendall_tau_lo", "kendall_tau_hi", "top1_noise_aware_rate"]
    keep = [c for c in cols if c not in keys]
    out = a[[*keys, *keep]].merge(b[[*keys, *keep]], on=keys, how="outer", suffixes=("_a", "_b"))
    out["same_verdict"] = out["verdict_a"] == out["verdict_b"]
    return out.sort_values(keys, kind="stable").reset_index(drop=True)
