"""Regressions and machine drift in the model-accuracy history (``hetval track``), and snapshot comparison.

A *series* is one figure over time: the snapshots of one study on one
machine fingerprint, for one (kind, case, platform, group, model, metric).
``track`` judges the latest snapshot of every series against the series'
own past with one rule, documented here and in ``docs/tracking.md``:

0. **What is judged.** Kendall tau, pairwise agreement, median tightness and
   PEACH's interior error (:data:`JUDGED`) of every group, and every machine parameter
   (a scorecard row's figures are pooled over nights, :mod:`analysis.tracking.pooled`, not judged).
1. **Badness.** Each metric is mapped to a scale where larger is worse:
   ``-x`` for the metrics where higher is better (Kendall tau, pairwise
   agreement, top-1), ``x`` for the penalties and errors, ``|log x|`` for
   median tightness (1 = the bound is met exactly) and ``log x`` for a
   machine parameter, which may drift either way. Intervals are mapped the
   same way.
2. **Step.** Over the last ``window`` snapshots the series is split where a
   two-segment piecewise-constant fit (segment medians, least absolute
   deviations) fits best, the later segment ending at the latest snapshot and
   holding at least 3 (one or two bad nights are noise, not a step) and the
   earlier holding at least ``min_history`` snapshots (5: fewer cannot show
   the invocation-to-invocation noise, see docs/tracking.md). The step is
   how far the *least* changed snapshot of the later segment lies from the
   earlier segment's median, when every later snapshot lies on the same side
   of it (else there is no step): one extreme night cannot make a step (a
   median of few nights follows it), and a step that is over is not flagged;
   the first snapshot of the later segment is where it *began*.
3. **Noise.** One noise unit is the larger of the scatter about the
   two-segment fit (the root mean square of the residuals from each
   segment's median, ``n - 2`` degrees of freedom: the invocation-to-
   invocation noise, which on a shared machine exceeds what one
   invocation's repetitions show) and the typical measurement uncertainty of the window (the median
   half-width of the snapshots' bootstrap intervals / 1.96), and never
   less than ``min_change`` (on the metric's scale) nor, for Kendall tau and
   pairwise agreement, than one pair's worth (2 / pairs, 1 / pairs): a
   series that was constant so far has not shown its noise, and a rank
   metric cannot move by less than one pair. The step's standard error is that unit
   times 1.2533 (the efficiency of a median) over the segments' sizes,
   ``sqrt(1/n_before + 1/n_after)``.
4. **Finding.** A model figure *regressed* when the step makes it worse,
   its z = step / standard error is at least ``z``, and the step is at least
   ``min_change`` (relative for tightness and machine parameters). A
   machine parameter *drifted* under the same test in either direction.
   A regression is reported with ``machine unchanged`` or with the drift
   that began at the same snapshot on the same platform (the model may be
   fine and its inputs wrong).

5. **Large change, from the second snapshot.** A series with too little history
   for the step test (fewer than ``min_history`` + 3 snapshots), or whose step
   test does not flag, is still judged for a change far outside any noise: a
   median tightness or a machine parameter whose later segment (best split, at
   least 1 earlier snapshot) lies at least a factor ``1 + large_change`` (2.5×) from
   the earlier one, with the intervals apart (the latest snapshot's bootstrap
   interval, or a parameter's characterisation spread, does not overlap the earlier
   segment's) and the factor at least the study's drift floor squared (the case's
   run-to-run drift recorded with each snapshot, ``kind = "noise"``). The factor sits
   above what one invocation on a loaded machine shows (an FDM 24³ run twice as slow
   while another job shared the 2 cores); a rank metric is never judged this way
   (a group of two alternatives flips its tau from 1 to -1 on noise).

6. **Replicates, from the second snapshot.** A machine parameter characterised in several replicates
   carries their range (``lo``-``hi``: the lowest and highest replicate's value). When every replicate of the
   latest snapshot lies beyond every replicate of the earlier ones (the latest range apart from the envelope of
   the earlier ranges) and the value moved by at least ``min_change``, the machine drifted: what the replicates
   of one study rule out is not noise (``test = "replicates"``).

The false-alarm rate and detection power of this rule on this machine's
noise are measured by ``benchmarks/bench_track.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

#: Metrics a regression is judged on. Top-1 and the selection penalties (strict or noise-aware) and the profile
#: error depend on which alternative was measured fastest: where two alternatives lie within noise of each other
#: they jump between two values from one invocation to the next with nothing changed (on this machine's noise
#: they made most of a 2-6 %-per-night false-alarm rate). They are kept in the history and drawn; a ranking
#: regression is judged on Kendall tau and pairwise agreement.
JUDGED = {"kendall_tau", "pairwise_agreement", "tightness_median", "error_median"}
#: Metrics where a larger value is better.
HIGHER_BETTER = {"kendall_tau", "pairwise_agreement", "top1_agreement", "top1_noise_aware"}
#: Metrics judged on |log x| (1 is ideal).
TOWARD_ONE = {"tightness_median"}
SERIES_KEYS = ["study", "fingerprint", "kind", "case", "platform", "group", "model", "metric"]
_Z90 = 1.959963984540054
#: Snapshots the step test's later segment holds at least. Two bad nights in a row are noise here often enough
#: to break a 1 % false-alarm rate over a study's ~40 judged series (benchmarks/bench_track.py); a large change is
#: the large-change test's to judge from one night.
MIN_AFTER = 3
_MEDIAN_EFFICIENCY = 1.2533141373155001


@dataclass(frozen=True)
class Rule:
    """The thresholds of the regression test: the config's ``history`` section, whose defaults live only in
    the schema (:meth:`from_config`; :func:`history_rule` without a whole study)."""

    window: int
    min_history: int
    z: float
    min_change: float
    large_change: float

    @classmethod
    def from_config(cls, section: dict[str, Any]) -> Rule:
        """The rule from a validated config's ``history`` section."""
        return cls(int(section["window"]), int(section["min_history"]), float(section["z"]),
                   float(section["min_change"]), float(section["large_change"]))


def history_rule(**given: Any) -> Rule:
    """The rule of the schema's ``history`` defaults with the ``given`` keys set, validated like a config's."""
    from analysis.planning.config import section

    return Rule.from_config(section("history", given))


@dataclass(frozen=True)
class Finding:
    """One regression or drift."""

    kind: str  # "regression" | "drift"
    series: dict[str, Any]
    before: tuple[float, float, float]  # the earlier segment's median value and median interval
    after: tuple[float, float, float]  # the latest snapshot's value and interval
    z: float  # the step test's z (NaN when the series was too short for it)
    began: str  # snapshot id where the later segment starts
    began_time: Any
    note: str = ""
    test: str = "step"  # "step" (the step test), "large" (a large change) or "replicates" (rule 6), from 1 earlier snapshot

    def as_dict(self) -> dict[str, Any]:
        """The finding as plain JSON values (``hetval track --json`` prints one per line)."""
        def interval(v: tuple[float, float, float]) -> dict[str, float | None]:
            return {k: (None if x is None or not np.isfinite(x) else float(x)) for k, x in zip(("value", "lo", "hi"), v,
                                                                                               strict=True)}

        began = self.began_time
        return {"kind": self.kind, "series": {k: (v.item() if hasattr(v, "item") else v) for k, v in self.series.items()},
                "before": interval(self.before), "after": interval(self.after),
                "z": float(self.z) if math.isfinite(self.z) else None, "test": self.test, "began": self.began, "began_time": None if began is None else str(began), "note": self.note,
                "line": self.line()}

    def line(self) -> str:
        s = self.series
        what = (f"{s['platform']} {s['group']} {s['metric']}" if s["kind"] == "machine" else
                f"{s['model']} [{s['case']} {s['platform']} {s['group']}] {s['metric']}")
        fmt = _fmt_machine if s["kind"] == "machine" else _fmt
        how = (f"z = {self.z:.1f}" if self.test == "step" else
               f"a {_factor(self.before[0], self.after[0])} change, beyond the large-change threshold")
        return (f"{self.kind.upper()}: {what}: {fmt(*self.before)} -> {fmt(*self.after)} "
                f"({how}; began at snapshot {self.began}){' ' + self.note if self.note else ''}")


def _factor(a: float, b: float) -> str:
    if a > 0 and b > 0:
        return f"{max(a, b) / min(a, b):.3g}x"
    return "large"


def _fmt(v: float, lo: float, hi: float) -> str:
    if not math.isfinite(v):
        return "n/a"
    if math.isfinite(lo) and math.isfinite(hi):
        return f"{v:.3g} [{lo:.3g}, {hi:.3g}]"
    return f"{v:.3g}"


_fmt_machine = _fmt


def badness(metric: str, kind: str, values: np.ndarray) -> np.ndarray:
    """The metric on the scale where larger is worse (see the module notes)."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "machine":
            return np.where(v > 0, np.log(v), np.nan)
        if metric in TOWARD_ONE:
            return np.where(v > 0, np.abs(np.log(v)), np.nan)
        if metric in HIGHER_BETTER:
            return -v
        return v


def _half_widths(metric: str, kind: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Half the width of each interval on the badness scale (NaN where there is no interval)."""
    if kind == "machine" or metric in TOWARD_ONE:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((lo > 0) & (hi > 0), (np.log(hi) - np.log(lo)) / 2.0, np.nan)
    return (hi - lo) / 2.0


def _floor(metric: str, kind: str, s: pd.DataFrame, rule: Rule) -> float:
    """The smallest noise unit: the smallest change that counts, and a rank metric's resolution (one pair)."""
    floor = math.log1p(rule.min_change) if (kind == "machine" or metric in TOWARD_ONE) else rule.min_change
    if metric in ("kendall_tau", "pairwise_agreement") and "n_alternatives" in s:
        k = pd.to_numeric(s["n_alternatives"], errors="coerce").max()
        if pd.notna(k) and k >= 2:
            pairs = k * (k - 1) / 2.0
            floor = max(floor, (2.0 if metric == "kendall_tau" else 1.0) / pairs)
    return floor


def best_step(x: np.ndarray, min_before: int, min_after: int = 1) -> int | None:
    """Index where the later segment starts in the best two-segment L1 fit (None if no split is allowed)."""
    n = len(x)
    best, where = math.inf, None
    for m in range(min_before, n - min_after + 1):
        a, b = x[:m], x[m:]
        cost = np.abs(a - np.median(a)).sum() + np.abs(b - np.median(b)).sum()
        if cost < best - 1e-12:
            best, where = cost, m
    return where


def judge(series: pd.DataFrame, rule: Rule, drift_floor: float = 0.0) -> dict[str, Any] | None:
    """The tests of one series (rows oldest first; columns value, lo, hi, snapshot, time, kind, metric).

    Returns the figures of the test that flagged (``test``, ``z``, ``step``, ``worse``, ``flag``, ``m`` - where
    the later segment starts - ...), else of the step test, else of the large-change test; None when the
    series is not judged (a metric that is not, or no earlier snapshot). ``drift_floor`` is the study's
    run-to-run drift (a fraction) the large-change test holds the change against.
    """
    s = series.tail(rule.window)
    kind, metric = str(s["kind"].iloc[0]), str(s["metric"].iloc[0])
    if kind == "scorecard" or (kind != "machine" and metric not in JUDGED):  # a scorecard row is pooled, not judged
        return None
    x = badness(metric, kind, s["value"].to_numpy(dtype=np.float64))
    ok = np.isfinite(x)
    if ok.sum() < 2 or not ok[-1]:
        return None
    s, x = s[ok], x[ok]
    step = _step_test(s, x, kind, metric, rule) if len(x) >= rule.min_history + MIN_AFTER else None
    if step is not None and step["flag"]:
        return step
    if kind == "machine":
        moved = _replicate_test(s, x, rule)
        if moved is not None and moved["flag"]:
            return moved
    large = _large_test(s, x, kind, metric, rule, drift_floor)
    if large is not None and (large["flag"] or step is None):
        return large
    return step


def _step_test(s: pd.DataFrame, x: np.ndarray, kind: str, metric: str, rule: Rule) -> dict[str, Any] | None:
    """Rules 2-4 of the module notes: the best split with ``min_history`` before it, against the noise unit."""
    m = best_step(x, rule.min_history, MIN_AFTER)
    if m is None:
        return None
    before, after = x[:m], x[m:]
    # every night of the later segment beyond the earlier median, the step measured at the least changed of them:
    # one extreme night is not a step (a median of few nights follows it), and a step that is over is not flagged
    base = float(np.median(before))
    least_worse, least_better = float(after.min()) - base, float(after.max()) - base
    step = least_worse if least_worse > 0 else least_better if least_better < 0 else 0.0
    resid = np.r_[before - np.median(before), after - np.median(after)]
    scatter = float(np.sqrt(np.sum(resid**2) / (len(resid) - 2))) if len(resid) >= 4 else 0.0
    widths = _half_widths(metric, kind, s["lo"].to_numpy(dtype=np.float64), s["hi"].to_numpy(dtype=np.float64))
    widths = widths[np.isfinite(widths)]
    measured = float(np.median(widths)) / _Z90 if len(widths) else 0.0
    unit = max(scatter, measured, _floor(metric, kind, s, rule))
    se = unit * _MEDIAN_EFFICIENCY * math.sqrt(1.0 / len(before) + 1.0 / len(after))
    relative = kind == "machine" or metric in TOWARD_ONE
    threshold = math.log1p(rule.min_change) if relative else rule.min_change
    if se > 0:
        z = abs(step) / se
    else:
        z = math.inf if abs(step) > 0 else 0.0
    big = abs(step) >= threshold and z >= rule.z
    return {"test": "step", "z": z, "step": step, "worse": step > 0, "flag": big and (kind == "machine" or step > 0),
            "m": m, "before_values": s["value"].to_numpy()[:m], "rows": s}


def _large_test(s: pd.DataFrame, x: np.ndarray, kind: str, metric: str, rule: Rule,
                drift_floor: float) -> dict[str, Any] | None:
    """Rule 5 of the module notes: a change of at least the large-change factor (and the drift floor squared) whose
    intervals do not overlap, from as little as 1 earlier snapshot. Tightness and machine parameters only."""
    if not (kind == "machine" or metric in TOWARD_ONE):
        return None
    m = best_step(x, 1)
    if m is None:
        return None
    values = s["value"].to_numpy(dtype=np.float64)
    lo, hi = s["lo"].to_numpy(dtype=np.float64), s["hi"].to_numpy(dtype=np.float64)
    v_before, v_after = float(np.median(values[:m])), float(np.median(values[m:]))
    if not (v_before > 0 and v_after > 0):
        return None
    change = abs(math.log(v_after / v_before))  # the change of the value itself, in log units
    threshold = max(math.log1p(rule.large_change), 2.0 * math.log1p(max(drift_floor, 0.0)))
    # the intervals must stand apart: the latest snapshot's against the earlier segment's (where both have one)
    b_lo, b_hi, a_lo, a_hi = _finite_median(lo[:m]), _finite_median(hi[:m]), lo[-1], hi[-1]
    have = all(math.isfinite(v) for v in (b_lo, b_hi, a_lo, a_hi))
    apart = not have or a_lo > b_hi or a_hi < b_lo
    step = float(np.median(x[m:]) - np.median(x[:m]))
    worse = step > 0
    flag = change >= threshold and apart and (kind == "machine" or worse)
    return {"test": "large", "z": math.nan, "step": step, "worse": worse, "flag": flag, "m": m,
            "change": change, "threshold": threshold, "before_values": values[:m], "rows": s}


def _replicate_test(s: pd.DataFrame, x: np.ndarray, rule: Rule) -> dict[str, Any] | None:
    """Rule 6 of the module notes: a machine parameter whose latest replicates all lie beyond every replicate of
    the earlier snapshots (their ``lo``-``hi`` ranges apart), by at least ``min_change``, from 1 earlier snapshot."""
    lo, hi = s["lo"].to_numpy(dtype=np.float64), s["hi"].to_numpy(dtype=np.float64)
    values = s["value"].to_numpy(dtype=np.float64)
    if len(values) < 2 or not (math.isfinite(lo[-1]) and math.isfinite(hi[-1])):
        return None
    earlier = np.isfinite(lo[:-1]) & np.isfinite(hi[:-1])
    if not earlier.any():
        return None
    b_lo, b_hi = float(lo[:-1][earlier].min()), float(hi[:-1][earlier].max())
    v_before, v_after = float(np.median(values[:-1])), float(values[-1])
    if not (v_before > 0 and v_after > 0):
        return None
    apart = lo[-1] > b_hi or hi[-1] < b_lo
    change = abs(math.log(v_after / v_before))
    step = float(x[-1] - np.median(x[:-1]))
    return {"test": "replicates", "z": math.nan, "step": step, "worse": step > 0,
            "flag": apart and change >= math.log1p(rule.min_change), "m": len(values) - 1, "change": change,
            "before_values": values[:-1], "rows": s}


def _finite_median(a: np.ndarray) -> float:
    """The median of the finite values of ``a`` (NaN when there are none)."""
    a = a[np.isfinite(a)]
    return float(np.median(a)) if len(a) else math.nan


def track(frame: pd.DataFrame, rule: Rule | None = None, study: str | None = None) -> tuple[list[Finding], dict]:
    """Findings for the latest snapshot of every series in the history ``frame`` (:func:`analysis.tracking.history.read`).

    Only series present in the latest snapshot of the study's latest fingerprint are judged (a model
    or group that is gone is not a regression). Returns the findings and counts of what was judged.
    """
    if rule is None:
        rule = history_rule()
    stats = {"series": 0, "judged": 0, "large_only": 0, "too_short": 0, "snapshots": 0}
    if not len(frame):
        return [], stats
    if study:
        frame = frame[frame["study"] == study]
    if not len(frame):
        return [], stats
    latest = frame.sort_values(["time", "snapshot"], kind="stable").iloc[-1]
    frame = frame[(frame["study"] == latest["study"]) & (frame["fingerprint"] == latest["fingerprint"])]
    stats["snapshots"] = int(frame["snapshot"].nunique())
    current = frame[frame["snapshot"] == latest["snapshot"]]
    keys = SERIES_KEYS
    wanted = set(map(tuple, current[keys].astype(str).to_numpy()))
    frame = frame.sort_values(["time", "snapshot"], kind="stable")
    recent = frame.groupby(keys, sort=False, dropna=False).tail(rule.window)
    floors = _drift_floors(frame, rule.window)
    found: list[Finding] = []
    drift_at: dict[tuple[str, str], list[Finding]] = {}
    judged = []
    for key, series in recent.groupby(keys, sort=True, dropna=False):
        if tuple(str(k) for k in key) not in wanted:
            continue
        if key[2] == "scorecard" or (key[2] != "machine" and key[-1] not in JUDGED):
            continue
        stats["series"] += 1
        res = judge(series, rule, floors.get((str(key[3]), str(key[4])), 0.0) if key[2] == "model" else 0.0)
        if res is None:
            stats["too_short"] += 1
            continue
        stats["judged" if len(series) >= rule.min_history + MIN_AFTER else "large_only"] += 1
        if not res["flag"]:
            continue
        rows = res["rows"]
        m = res["m"]
        first = rows.iloc[m]
        last = rows.iloc[-1]
        earlier = rows.iloc[:m]
        info = dict(zip(keys, key, strict=True))
        finding = Finding(
            kind="drift" if info["kind"] == "machine" else "regression", series=info,
            before=(float(np.median(res["before_values"])), float(earlier["lo"].median()),
                    float(earlier["hi"].median())),
            after=(float(last["value"]), float(last["lo"]), float(last["hi"])), z=float(res["z"]),
            began=str(first["snapshot"]), began_time=first["time"], test=res["test"])
        judged.append(finding)
        if finding.kind == "drift":
            drift_at.setdefault((info["platform"], finding.began), []).append(finding)
    for f in judged:
        if f.kind == "regression":
            drifts = drift_at.get((f.series["platform"], f.began), [])
            note = ("(machine drifted at the same snapshot: " + ", ".join(
                f"{d.series['group']} {d.series['metric']}" for d in drifts) + ")") if drifts else "(machine unchanged)"
            f = replace(f, note=note)
        found.append(f)
    found.sort(key=lambda f: (f.kind != "regression", f.test != "large", -f.z if math.isfinite(f.z) else 0.0))
    return found, stats


def _drift_floors(frame: pd.DataFrame, window: int) -> dict[tuple[str, str], float]:
    """The largest drift floor (``kind = "noise"`` rows) per (case, platform) over the last ``window`` snapshots."""
    noise = frame[frame["kind"] == "noise"] if "kind" in frame else frame.iloc[:0]
    if not len(noise):
        return {}
    last = noise.drop_duplicates("snapshot")["snapshot"].tail(window)
    noise = noise[noise["snapshot"].isin(last)]
    return {(str(c), str(p)): float(v) for (c, p), v in noise.groupby(["case", "platform"])["value"].max().items()}


def resolve(frame: pd.DataFrame, ref: str) -> str:
    """A snapshot id from an id, a unique prefix of one, ``latest``/``previous`` or a negative index (-1 = latest)."""
    order = frame.drop_duplicates("snapshot").sort_values(["time", "snapshot"])["snapshot"].tolist()
    if not order:
        raise KeyError("the history holds no snapshot")
    named = {"latest": -1, "previous": -2}
    if ref in named or (ref.startswith("-") and ref[1:].isdigit()):
        i = named[ref] if ref in named else int(ref)
        try:
            return order[i]
        except IndexError:
            raise KeyError(f"snapshot {ref}: the history holds only {len(order)} snapshot(s)") from None
    hits = [s for s in order if s.startswith(ref)]
    if len(hits) != 1:
        raise KeyError(f"snapshot {ref!r}: {'no' if not hits else 'more than one'} snapshot matches")
    return hits[0]


def compare(frame: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """The figures of snapshots ``a`` and ``b`` side by side (outer join on the series keys)."""
    keys = ["kind", "case", "platform", "group", "model", "metric"]
    left = frame[frame["snapshot"] == a][[*keys, "value", "lo", "hi"]]
    right = frame[frame["snapshot"] == b][[*keys, "value", "lo", "hi"]]
    out = left.merge(right, on=keys, how="outer", suffixes=("_a", "_b"))
    out["change"] = out["value_b"] - out["value_a"]
    return out.sort_values(keys, kind="stable").reset_index(drop=True)
