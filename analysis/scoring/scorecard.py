"""The scorecard: which model to trust, for which workload and machine, with intervals.

One row per (model, case, platform, workload class), built from the validation tables the cases wrote:

* **Workload classes.** Each case names its runs' classes (:meth:`analysis.registry.Case.scored`, with the
  classes of :mod:`analysis.scoring.classes`): a two-processor run (SA, LA) or a PEACH workload is
  *memory-bound* when its intensity (flops per byte of its counted traffic) lies below its platform's host
  balance ``t_b / t_f`` (flops per byte at which the two times are equal), else *compute-bound*; an FDM run
  falls in a scale band by its rank count (1; 2-4; 5-16; 17-64; more) and its backend (``1 rank (numba)``).
* **Tightness.** The runs' tightness (measured / predicted performance): its median and an interval that covers
  what the study shares as well as what its runs do - a three-level bootstrap (:func:`hierarchical`) that
  resamples the characterisation replicates (each run's tightness as each replicate's platform file predicts
  it), then the runs, then each run's repetitions. ``interval_level`` names the level whose own interval is the
  widest (``characterisation``, ``runs`` or ``repetitions``), and ``width_<level>`` holds each level's.
* **Ranking.** Over the class's groups of alternatives: how many were scored and how many the
  measurements can tell apart (``distinguishable``); over those, the median Kendall tau with an interval
  (the bootstrap of the median over groups with three or more groups; with fewer, the lowest and highest
  end of the groups' own intervals) and the noise-aware top-1 rate with its Clopper-Pearson interval, each
  widened to what every characterisation replicate's predictions give.
* **Held-out scale error** where a scaling fit exists: the median relative error of the analytical model at
  the held-out largest scale (``scaling_fits``).
* **Verdicts** (``docs/scorecard.md``), by the intervals, never the medians: each aspect is *trusted* when its
  interval lies inside its band, *not trusted* when it lies outside, *undecided* when it straddles an edge (and
  ``decide`` says what would settle it), *not enough data* below :data:`MIN_RUNS` runs or :data:`MIN_GROUPS`
  distinguishable groups. A model is a *bound* (tightness at most 1 expected: band ``[BOUND_LO, BOUND_HI]``) or
  a *predictor* (tightness near 1 expected: band ``[PREDICTOR_LO, PREDICTOR_HI]``); ranking's band is a tau
  above :data:`TAU_LO` with a top-1 rate of at least :data:`TOP1_LO`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.registry import GROUP_COLUMNS, SCORED_COLUMNS
from analysis.resources.spreads import shipped_spread
from analysis.scoring.classes import balances, scale_band  # noqa: F401 - scale_band: re-exported
from analysis.scoring.intervals import (  # noqa: F401 - SCIPY_BOOTSTRAP_ELEMENTS, bootstrap_medians: re-exported
    LEVELS,
    MIN_RUNS,
    SCIPY_BOOTSTRAP_ELEMENTS,
    bootstrap_medians,
    hierarchical,
    median_interval,
)
from analysis.scoring.uncertainty import Settings

#: Fewest distinguishable groups whose ranking is judged.
MIN_GROUPS = 2
#: A bound's band: its tightness interval within [BOUND_LO, BOUND_HI] (the runs reach at least half of it and do
#: not beat it by more than the noise).
BOUND_LO, BOUND_HI = 0.5, 1.1
#: A predictor's band: its tightness interval within [PREDICTOR_LO, PREDICTOR_HI] (within a quarter of the runs).
PREDICTOR_LO, PREDICTOR_HI = 0.8, 1.25
#: Each model kind's tightness band (:attr:`analysis.registry.Model.kind`).
BANDS = {"bound": (BOUND_LO, BOUND_HI), "predictor": (PREDICTOR_LO, PREDICTOR_HI)}
#: Ranking's band: the tau interval above TAU_LO and the top-1 interval reaching TOP1_LO.
TAU_LO, TOP1_LO = 0.0, 0.5
#: An aspect's verdicts, and a row's.
JUDGED = ("trusted", "not trusted", "undecided", "not enough data")
VERDICTS = ("both", "trust for bounds", "trust for predictions", "trust for ranking", "undecided", "neither",
            "not enough data")

COLUMNS = ["study", "platform", "fingerprint", "case", "model", "model_kind", "workload_class", "runs",
           "tightness_median", "tightness_lo", "tightness_hi", "interval_level", "width_characterisation",
           "width_runs", "width_repetitions", "width_study", "replicates", "groups", "distinguishable_groups", "kendall_tau_median",
           "kendall_tau_lo", "kendall_tau_hi", "top1_noise_aware_rate", "top1_noise_aware_lo", "top1_noise_aware_hi",
           "heldout_error", "bounds_verdict", "ranking_verdict", "verdict", "decide", "evidence"]


def model_kind(name: Any) -> str:
    """``bound`` or ``predictor``: the registered model's kind (a bound when the model is not registered)."""
    from analysis.registry import RegistryError, models

    try:
        return str(getattr(models().get(str(name)), "kind", "bound") or "bound")
    except RegistryError:
        return "bound"


def _replicate_values(frame: pd.DataFrame, figure: str) -> list[np.ndarray]:
    """Each replicate's ``figure`` over the rows of ``frame`` (from ``<figure>_replicates``; empty without it)."""
    col = f"{figure}_replicates"
    if col not in frame or not len(frame):
        return []
    lists = [list(v) if isinstance(v, (list, tuple, np.ndarray)) else [] for v in frame[col]]
    count = max((len(v) for v in lists), default=0)
    return [np.array([v[k] if k < len(v) and v[k] is not None else np.nan for v in lists], dtype=float)
            for k in range(count)]


def _tau_interval(tau: np.ndarray, dist: pd.DataFrame, settings: Settings) -> tuple[float, float, float]:
    if len(tau) >= 3:
        return median_interval(tau, settings)
    lo = float(np.nanmin(dist["kendall_tau_lo"])) if "kendall_tau_lo" in dist and dist["kendall_tau_lo"].notna().any() \
        else math.nan
    hi = float(np.nanmax(dist["kendall_tau_hi"])) if "kendall_tau_hi" in dist and dist["kendall_tau_hi"].notna().any() \
        else math.nan
    return float(np.median(tau)), lo, hi


def _ranking(groups: pd.DataFrame, settings: Settings) -> dict[str, Any]:
    """Tau and top-1 over the distinguishable groups, each interval widened to span every characterisation
    replicate's (the same interval computed from each replicate's figures, where the groups carry them)."""
    out: dict[str, Any] = {"groups": len(groups), "distinguishable_groups": 0}
    nan = {k: math.nan for k in ("kendall_tau_median", "kendall_tau_lo", "kendall_tau_hi", "top1_noise_aware_rate",
                                 "top1_noise_aware_lo", "top1_noise_aware_hi")}
    out.update(nan)
    if not len(groups):
        return out
    dist = groups[groups["distinguishable"].fillna(False).astype(bool)] if "distinguishable" in groups else groups
    out["distinguishable_groups"] = len(dist)
    tau = dist["kendall_tau"].to_numpy(dtype=float) if len(dist) else np.empty(0)
    finite = np.isfinite(tau)
    if finite.any():
        mid, lo, hi = _tau_interval(tau[finite], dist[finite], settings)
        for alone in _replicate_values(dist, "kendall_tau"):
            alone = alone[finite & np.isfinite(alone)]
            if len(alone):
                _, r_lo, r_hi = _tau_interval(alone, dist.iloc[:0], settings) if len(alone) >= 3 else (
                    math.nan, float(np.min(alone)), float(np.max(alone)))
                lo = float(np.nanmin([lo, r_lo])) if np.isfinite([lo, r_lo]).any() else lo
                hi = float(np.nanmax([hi, r_hi])) if np.isfinite([hi, r_hi]).any() else hi
        out.update(kendall_tau_median=mid, kendall_tau_lo=lo, kendall_tau_hi=hi)
    top1 = dist["top1_noise_aware"].to_numpy(dtype=float) if "top1_noise_aware" in dist and len(dist) else np.empty(0)
    finite = np.isfinite(top1)
    if finite.any():
        from scipy import stats

        def interval(hits: np.ndarray) -> tuple[float, float]:
            ci = stats.binomtest(int(round(float(hits.sum()))), len(hits)).proportion_ci(
                confidence_level=settings.level, method="exact")
            return float(ci.low), float(ci.high)

        lo, hi = interval(top1[finite])
        for alone in _replicate_values(dist, "top1_noise_aware"):
            alone = alone[finite]
            if len(alone) and np.isfinite(alone).all():
                r_lo, r_hi = interval(alone)
                lo, hi = min(lo, r_lo), max(hi, r_hi)
        out.update(top1_noise_aware_rate=float(top1[finite].mean()), top1_noise_aware_lo=lo, top1_noise_aware_hi=hi)
    return out


def judge(lo: float, hi: float, band: tuple[float, float], enough: bool) -> str:
    """An aspect's verdict: its interval ``[lo, hi]`` inside ``band`` (trusted), clear of it (not trusted), across
    one of its edges (undecided); not enough data when ``enough`` is false or there is no interval."""
    if not enough or not (np.isfinite(lo) and np.isfinite(hi)):
        return "not enough data"
    if band[0] <= lo and hi <= band[1]:
        return "trusted"
    if hi < band[0] or lo > band[1]:
        return "not trusted"
    return "undecided"


def verdicts(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(tightness, ranking, overall)`` verdicts of one scorecard row by the rule of the module notes."""
    kind = str(row.get("model_kind") or "bound")
    bounds = judge(row["tightness_lo"], row["tightness_hi"], BANDS.get(kind, BANDS["bound"]), row["runs"] >= MIN_RUNS)
    enough = row["distinguishable_groups"] >= MIN_GROUPS
    t_lo, t_hi, p_lo, p_hi = (row["kendall_tau_lo"], row["kendall_tau_hi"], row["top1_noise_aware_lo"],
                              row["top1_noise_aware_hi"])
    if not enough or not np.isfinite([t_lo, t_hi, p_lo, p_hi]).all():
        ranking = "not enough data"
    elif t_lo > TAU_LO and p_lo >= TOP1_LO:
        ranking = "trusted"
    elif t_hi <= TAU_LO or p_hi < TOP1_LO:
        ranking = "not trusted"
    else:
        ranking = "undecided"
    aspects = (bounds, ranking)
    if bounds == "trusted" and ranking == "trusted":
        overall = "both"
    elif bounds == "trusted":
        overall = "trust for predictions" if kind == "predictor" else "trust for bounds"
    elif ranking == "trusted":
        overall = "trust for ranking"
    elif "undecided" in aspects:
        overall = "undecided"
    elif "not trusted" in aspects:
        overall = "neither"
    else:
        overall = "not enough data"
    return bounds, ranking, overall


#: what would settle an undecided tightness, by the level whose interval is the widest
_SETTLE = {"characterisation": "more characterisation replicates (characterize.replicates) or more studies (the "
                               "pooled verdict of the history)",
           "runs": "more runs in the class (more sizes or alternatives); more studies repeat these runs and do not "
                   "narrow it",
           "repetitions": "more repetitions per run (runs.repetitions) or more studies (the pooled verdict)",
           "study": "more studies (the pooled verdict of the history): what studies differ by beyond their replicates "
                    "and rounds shrinks only by pooling them"}


def decide(row: Mapping[str, Any]) -> str:
    """For an undecided aspect: which edge its interval straddles and what would settle it ("" otherwise)."""
    out = []
    if row["bounds_verdict"] == "undecided":
        band = BANDS.get(str(row.get("model_kind") or "bound"), BANDS["bound"])
        edge = next((e for e in band if row["tightness_lo"] < e < row["tightness_hi"]), band[0])
        out.append(f"tightness [{row['tightness_lo']:.2f}, {row['tightness_hi']:.2f}] straddles {edge:g}; widest "
                   f"level: {row['interval_level'] or 'runs'}: {_SETTLE.get(row['interval_level'], _SETTLE['runs'])}")
    if row["ranking_verdict"] == "undecided":
        out.append(f"ranking over {row['distinguishable_groups']} distinguishable group(s) (tau "
                   f"[{row['kendall_tau_lo']:.2f}, {row['kendall_tau_hi']:.2f}], top-1 [{row['top1_noise_aware_lo']:.2f}, "
                   f"{row['top1_noise_aware_hi']:.2f}]): more groups of alternatives (more studies rank the same groups)")
    return "; ".join(out)


def _rows(runs: pd.DataFrame, groups: pd.DataFrame, keys: list[str], evidence: str, settings: Settings,
          heldout: Mapping[tuple[str, str], float]) -> list[dict[str, Any]]:
    out = []
    if not len(runs):
        return out
    extra = [c for c in ("time_reps_s", "rounds_reps", "tightness_replicates") if c in runs]
    for key, sub in runs[[*keys, "tightness", *extra]].groupby(keys, sort=True, dropna=False):
        study, platform, case, model, wclass = key
        mine = groups
        for k, v in zip(keys, key, strict=True):
            mine = mine[mine[k] == v] if k in mine else mine
        # a replicate that could not predict every run would stand for the pooled figure where it is missing
        finite = np.isfinite(sub["tightness"].to_numpy(dtype=float))
        alone = [a for a in _replicate_values(sub, "tightness") if np.isfinite(a[finite]).all()]
        replicates = np.column_stack(alone) if len(alone) >= 2 else None
        interval = hierarchical(sub["tightness"].to_numpy(dtype=float),
                                sub["time_reps_s"].tolist() if "time_reps_s" in sub else None, replicates, settings,
                                sub["rounds_reps"].tolist() if "rounds_reps" in sub else None,
                                shipped_spread("scorecard", str(case), "tightness_median"))
        row = {"study": study, "platform": platform, "case": case, "model": model, "model_kind": model_kind(model),
               "workload_class": wclass, "runs": int(np.isfinite(sub["tightness"].to_numpy(dtype=float)).sum()),
               **interval, "replicates": len(alone), **_ranking(mine, settings),
               "heldout_error": heldout.get((case, model), math.nan), "evidence": evidence}
        row["bounds_verdict"], row["ranking_verdict"], row["verdict"] = verdicts(row)
        row["decide"] = decide(row)
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
    which says which machine a row speaks for when scorecards of several machines are compared.

    Each registered case says what of the tables it is judged by (:meth:`analysis.registry.Case.scored`); the
    rows come case by case in listing order."""
    from analysis.registry import cases

    balance = balances(processors)
    heldout = _heldout(tables.get("scaling_fits"))
    keys = ["study", "platform", "case", "model", "workload_class"]
    rows: list[dict[str, Any]] = []
    for case in cases().values():
        got = case.scored(tables, balance)
        if got is None or not len(got.runs):
            continue
        missing = [c for c in SCORED_COLUMNS if c not in got.runs]
        missing += [f"groups' {c}" for c in GROUP_COLUMNS if len(got.groups) and c not in got.groups]
        if missing:
            raise ValueError(f"case {case.name!r}: its scored frame lacks {', '.join(missing)} "
                             "(analysis.registry.Case.scored)")
        rows += _rows(got.runs, got.groups, keys, got.evidence, settings, heldout)

    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["fingerprint"] = frame["platform"].astype(str).map(dict(fingerprints or {})).astype("string")
    return frame.astype({"runs": "int64", "groups": "int64", "distinguishable_groups": "int64", "replicates": "int64",
                         **{c: "string" for c in ("model_kind", "interval_level", "decide")}})
