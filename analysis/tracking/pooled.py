"""The verdict of many nights: a scorecard row pooled over the history's snapshots of the same code and machine.

One study's intervals cover its own characterisation and runs; a second study on the same code and machine
measures the same things again, and how far the two differ is the between-study variance no single study shows.
Where the history holds two or more snapshots of one study with the same code (``git_sha`` and whether the tree
was dirty), configuration (``config_hash``) and machine (``fingerprint``), each scorecard row is pooled over them:

- **tightness**: a random-effects mean of the snapshots' median tightness on the log scale (DerSimonian and Laird:
  each snapshot weighted by its own noise's variance plus the between-snapshot variance ``tau^2`` the spread of
  the medians shows beyond that noise). A snapshot's interval is for the next study: the noise of two studies
  (its characterisation, its rounds), differenced, and the spread of the class's runs, which every night repeats.
  Pooling shrinks the first (one study's share is half the difference's variance) and keeps the second: the
  pooled interval is the mean's at the study's level widened by the snapshots' median runs-alone half-width;
- **Kendall tau**: the random-effects mean on tau's own scale, its interval over the groups kept (every night
  ranks the same groups) and widened by the spread between nights;
- **top-1**: the snapshots' mean rate, with the Clopper-Pearson interval of one snapshot's distinguishable groups
  (every night ranks the same groups: more nights are not more groups), never narrower than the snapshots' median
  interval (which also spans their characterisation replicates).

A snapshot whose figures of the row all repeat an earlier one's (the same study validated again) counts once, and only
snapshots with an interval count. With fewer than two, a row has no pooled verdict. With few nights the
between-night variance is poorly known (two nights estimate it from one difference): the pooled verdict is
judged by the scorecard's rule (:func:`analysis.scoring.scorecard.verdicts`) and grows firmer as nights add up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: The pooled columns a scorecard gains (:func:`pool`).
POOLED_COLUMNS = ["pooled_snapshots", "pooled_tightness_median", "pooled_tightness_lo", "pooled_tightness_hi",
                  "pooled_tau2", "pooled_kendall_tau_median", "pooled_kendall_tau_lo", "pooled_kendall_tau_hi",
                  "pooled_top1_rate", "pooled_top1_lo", "pooled_top1_hi", "pooled_bounds_verdict",
                  "pooled_ranking_verdict", "pooled_verdict"]
#: The history columns pooling reads.
COLUMNS = ["snapshot", "time", "study", "git_sha", "git_dirty", "config_hash", "fingerprint", "kind", "case",
           "platform", "group", "model", "metric", "value", "lo", "hi", "n_reps", "n_alternatives"]


def random_effects(y: np.ndarray, lo: np.ndarray, hi: np.ndarray, level: float,
                   shared: np.ndarray | None = None, differenced: bool = False) -> tuple[float, float, float, float]:
    """DerSimonian-Laird random-effects mean of estimates ``y`` whose ``level`` intervals are ``[lo, hi]``:
    ``(mean, lo, hi, tau^2)``.

    An estimate's variance ``v_i`` is its interval's longer side over z, squared, less the square of its
    ``shared`` half-width (what every estimate repeats, which pooling does not shrink), halved when the intervals
    are ``differenced`` (each the difference of two studies' noise). The interval is the mean +- the root of
    ``z^2 / sum of the weights 1 / (v_i + tau^2)`` plus the median shared half-width squared."""
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + level / 2.0))
    y, lo, hi = (np.asarray(a, dtype=float) for a in (y, lo, hi))
    half = np.maximum(hi - y, y - lo)  # the longer side of a skewed interval: conservative
    common = np.zeros_like(half) if shared is None else np.nan_to_num(np.asarray(shared, dtype=float), nan=0.0)
    common = np.minimum(np.abs(common), np.where(np.isfinite(half), half, np.inf))
    v = (half**2 - common**2) / z**2 / (2.0 if differenced else 1.0)
    known = np.isfinite(v) & (v > 0)
    # an estimate with no noise of its own weighs as the typical one (or a tiny variance when none has any)
    v = np.where(known, v, float(np.median(v[known])) if known.any() else 1e-12)
    w = 1.0 / v
    fixed = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - fixed) ** 2))
    c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (q - (len(y) - 1)) / c) if c > 0 else 0.0
    ws = 1.0 / (v + tau2)
    mean = float(np.sum(ws * y) / np.sum(ws))
    width = math.sqrt(z**2 / float(np.sum(ws)) + float(np.median(common)) ** 2)
    return mean, mean - width, mean + width, tau2


def same_nights(frame: pd.DataFrame, snapshot: str) -> pd.DataFrame:
    """The rows of every snapshot of ``snapshot``'s study, code, configuration and machine (it included)."""
    me = frame[frame["snapshot"] == snapshot]
    if not len(me):
        return frame.iloc[:0]
    first = me.iloc[0]
    same = frame["study"].astype(str) == str(first["study"])
    for key in ("git_sha", "git_dirty", "config_hash", "fingerprint"):
        if key in frame:
            same &= frame[key].astype(str) == str(first[key])
    return frame[same]


def pool(card: pd.DataFrame, nights: pd.DataFrame, level: float) -> pd.DataFrame:
    """``card`` with the :data:`POOLED_COLUMNS` from the ``kind = "scorecard"`` rows of ``nights`` (the snapshots
    :func:`same_nights` chose)."""
    from scipy import stats

    from analysis.scoring.scorecard import MIN_GROUPS, MIN_RUNS, model_kind, verdicts

    out = card.copy()
    rows = nights[nights["kind"] == "scorecard"] if len(nights) and "kind" in nights else nights.iloc[:0]
    pooled: list[dict[str, Any]] = []
    for rec in card.to_dict("records"):
        mine = rows[(rows["case"].astype(str) == str(rec["case"])) & (rows["platform"].astype(str) == str(rec["platform"]))
                    & (rows["group"].astype(str) == str(rec["workload_class"]))
                    & (rows["model"].astype(str) == str(rec["model"]))]
        got: dict[str, Any] = {c: math.nan for c in POOLED_COLUMNS}
        got.update(pooled_bounds_verdict="", pooled_ranking_verdict="", pooled_verdict="")
        tight = mine[(mine["metric"] == "tightness_median") & (mine["value"] > 0) & (mine["lo"] > 0)
                     & (mine["hi"] >= mine["value"])]
        nights_kept = _distinct_nights(mine[mine["snapshot"].isin(set(tight["snapshot"]))])
        tight = tight[tight["snapshot"].isin(nights_kept)].drop_duplicates("snapshot")
        mine = mine[mine["snapshot"].isin(nights_kept)]
        got["pooled_snapshots"] = len(nights_kept)
        if got["pooled_snapshots"] >= 2:
            width = mine[mine["metric"] == "width_runs"].set_index("snapshot")["value"]
            shared = (width.reindex(tight["snapshot"]).to_numpy(dtype=float) / 2.0) / tight["value"].to_numpy(dtype=float)
            if np.isfinite(shared).any():  # a night without the figure (older code) shares what the others share
                shared = np.where(np.isfinite(shared), shared, float(np.nanmedian(shared)))
            with np.errstate(divide="ignore", invalid="ignore"):
                m, lo, hi, tau2 = random_effects(np.log(tight["value"]), np.log(tight["lo"]), np.log(tight["hi"]),
                                                 level, shared=shared, differenced=True)
            got.update(pooled_tightness_median=math.exp(m), pooled_tightness_lo=math.exp(lo),
                       pooled_tightness_hi=math.exp(hi), pooled_tau2=tau2)
            tau = mine[(mine["metric"] == "kendall_tau_median") & mine["lo"].notna() & mine["hi"].notna()]
            if len(tau) >= 2:
                # its interval is over the groups, which every night repeats: all of it is shared
                half = np.maximum(tau["hi"] - tau["value"], tau["value"] - tau["lo"]).to_numpy(dtype=float)
                m, lo, hi, _ = random_effects(tau["value"], tau["lo"], tau["hi"], level, shared=half)
                got.update(pooled_kendall_tau_median=m, pooled_kendall_tau_lo=max(-1.0, lo),
                           pooled_kendall_tau_hi=min(1.0, hi))
            top = mine[mine["metric"] == "top1_noise_aware_rate"]
            groups = pd.to_numeric(top["n_alternatives"], errors="coerce").fillna(0).to_numpy(dtype=float)
            if len(top) and groups.sum() > 0:
                # every night ranks the same groups: the mean rate, the interval of one night's groups
                rate = float(np.sum(top["value"].to_numpy(dtype=float) * groups) / groups.sum())
                n = int(math.floor(float(np.median(groups[groups > 0])) + 0.5))
                ci = stats.binomtest(int(math.floor(rate * n + 0.5)), n).proportion_ci(confidence_level=level,
                                                                                       method="exact")
                # a night's own interval also spans its characterisation replicates: never narrower than theirs
                lo = np.nanmedian(top["lo"].to_numpy(dtype=float)) if top["lo"].notna().any() else math.nan
                hi = np.nanmedian(top["hi"].to_numpy(dtype=float)) if top["hi"].notna().any() else math.nan
                got.update(pooled_top1_rate=rate, pooled_top1_lo=float(np.nanmin([ci.low, lo])),
                           pooled_top1_hi=float(np.nanmax([ci.high, hi])))
            judged = verdicts({"model_kind": model_kind(rec["model"]), "tightness_lo": got["pooled_tightness_lo"],
                               "tightness_hi": got["pooled_tightness_hi"],
                               "runs": MIN_RUNS if int(tight["n_reps"].min()) >= MIN_RUNS else 0,
                               "distinguishable_groups": MIN_GROUPS if groups.sum() >= MIN_GROUPS * len(top) > 0 else 0,
                               "kendall_tau_lo": got["pooled_kendall_tau_lo"], "kendall_tau_hi": got["pooled_kendall_tau_hi"],
                               "top1_noise_aware_lo": got["pooled_top1_lo"], "top1_noise_aware_hi": got["pooled_top1_hi"]})
            got["pooled_bounds_verdict"], got["pooled_ranking_verdict"], got["pooled_verdict"] = judged
        pooled.append(got)
    frame = pd.DataFrame(pooled, columns=POOLED_COLUMNS, index=card.index)
    for c in POOLED_COLUMNS:
        out[c] = frame[c]
    return out.astype({"pooled_snapshots": "int64", **{c: "string" for c in POOLED_COLUMNS if "verdict" in c}})


def _distinct_nights(rows: pd.DataFrame) -> list[str]:
    """The snapshots of one scorecard row whose figures are not all an earlier snapshot's (the same study validated
    again is one night), in time order."""
    seen: set[tuple] = set()
    kept = []
    order = rows.sort_values("time", kind="stable") if "time" in rows else rows
    for snap, sub in order.groupby("snapshot", sort=False):
        figures = tuple(sorted((str(m), *(round(float(x), 12) if pd.notna(x) else None for x in (v, lo, hi)))
                               for m, v, lo, hi in sub[["metric", "value", "lo", "hi"]].itertuples(index=False)))
        if figures not in seen:
            seen.add(figures)
            kept.append(snap)
    return kept


def pooled_scorecard(card: pd.DataFrame, history_path: Any, study: str, snapshot: str | None,
                     level: float, tonight: Any = None) -> pd.DataFrame:
    """``card`` with its pooled columns from the history at ``history_path`` and ``tonight``'s snapshot (an
    Arrow table not yet appended; none pooled without a history or a snapshot)."""
    from analysis.tracking import history

    nights = pd.DataFrame(columns=COLUMNS)
    if history_path and snapshot:
        frame = history.read(history_path, study, columns=COLUMNS, extra=tonight, extra_study=study)
        nights = same_nights(frame, snapshot)
    return pool(card, nights, level)


def summary_line(card: Mapping[str, Any] | pd.DataFrame) -> str:
    """One line on what the pooled verdict rests on."""
    if not isinstance(card, pd.DataFrame) or "pooled_snapshots" not in card or not len(card):
        return "no pooled verdict"
    most = int(card["pooled_snapshots"].max())
    if most < 2:
        return ("one snapshot of this code, configuration and machine: no pooled verdict yet (run the study again, "
                "e.g. nightly, to pool the nights)")
    return f"pooled over the last {most} snapshots of this code, configuration and machine (between-study variance included)"
