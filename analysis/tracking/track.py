"""Regressions and machine drift in the model-accuracy history (``hetval track``), and snapshot comparison.

A *series* is one figure over time: the snapshots of one study on one
machine fingerprint, for one (kind, case, platform, group, model, metric).
``track`` judges the latest snapshot of every series against the series'
own past with one rule, documented here and in ``docs/tracking.md``:

0. **What is judged.** Kendall tau, pairwise agreement, median tightness and
   PEACH's interior error (:data:`JUDGED`) of every group, and every machine parameter
   (a scorecard row's figures are pooled over nights, :mod:`analysis.tracking.pooled`, not judged).
1. **Scale.** A median tightness and a machine parameter are judged on
   ``log x`` (a relative change), the others on ``x``. *Worse* means further from 1 for tightness
   (``|log x|`` grows), lower for tau and pairwise agreement, higher for an error.
2. **Between-study spread.** Two studies of the same code on the same machine differ far more than one study's
   repetitions or characterisation replicates show (each study has its own characterisation and its own
   moments, shared by all its runs). A figure's noise is therefore its spread *between snapshots*: the root mean
   square deviation from their median of the series' snapshots before the change (:func:`own_spread`),
   pooled with the between-study spread measured on machines of this kind and shipped with hetval
   (``analysis/resources/between_studies.json``, written by ``benchmarks/bench_nights.py``), which counts as
   ``min_history`` snapshots: a short history is judged against the shipped spread, a long one against its own.
3. **Noisy.** A relative figure whose between-study spread is at least ``noisy`` (0.25: a quarter of its
   value) cannot be measured to within the band a model needs: it is reported as *noisy* with its spread and
   judged only once the series has ``min_history`` earlier snapshots of its own.
4. **Step.** The series is split where a two-segment piecewise-constant fit (segment medians, least absolute
   deviations) fits best, the later segment ending at the latest snapshot and holding at least ``after`` (2)
   snapshots: one night is never a step. Every later snapshot must lie beyond the earlier segment's median on the
   same side, the *least* changed one by at least ``z`` spreads (times ``sqrt(1 + pi / (2 n))``, the
   uncertainty of a median of ``n`` earlier snapshots) and by at least ``min_change`` (relative for tightness
   and machine parameters; one pair's worth for tau and pairwise agreement, whose spread is never taken below
   a pair either: they move a pair at a time). A change that is over (a later
   night back at the earlier level) is not flagged. The first later snapshot is where the change *began*.
5. **Large change, from one night.** A median tightness or machine parameter whose latest snapshot lies at least
   a factor ``1 + large_change`` (2.5x) and twice the step test's bar from the earlier median, with the
   intervals apart (the latest bootstrap interval, or a parameter's replicates, not overlapping the earlier
   median's), is flagged the night it happens: a characterisation 20x off is not left standing for a night.
   Never for a noisy figure, nor a rank metric.
6. **Findings.** A model figure that got worse *regressed*; one that got better *improved* (printed, exit 0).
   A machine parameter that moved either way *drifted*. A model figure that changed at or after the snapshot
   where a parameter of its platform drifted *follows the drift*: the machine changed, and the models whose
   predictions used it moved with it - reported under the drift, not as a regression.
7. **A model's code changed.** Every snapshot keeps each model's median tightness on the reference runs, fixed
   measurements shipped with hetval (``kind = "reference"``, :mod:`analysis.scoring.reference`): it moves only
   when the model's code does. Where it stands, since snapshot ``c``, at least ``min_change`` away from its usual
   level in the window (the earlier snapshots' median level; a change undone is back at it) the model changed
   there by that factor, and each of its median tightness figures on this study is judged by it from ``c`` on:
   worse when its level on the usual code times the factor lies further from 1, better when nearer, flagged
   when the snapshots from ``c`` on moved that way by at least ``min_change``. No spread is needed to know that
   a model changed, so it is named on the night it happens; nothing shared by a study (the machine, its
   characterisation, the night) moves the reference, so this never fires on unchanged code. A figure with no
   reference (a case without reference runs, a history older than the reference rows), or one the change did
   not move, is judged by 2-6.

Its false alarms and detections on real nights are measured by ``benchmarks/bench_nights.py``; on
synthetic noise by ``benchmarks/bench_track.py``.

Why this module is long: the rule's parts share one judged scale, one between-study spread and one
:class:`Finding`, and rule 7 replaces rules 2-6 series by series; split apart, each part would import the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.resources.spreads import shipped_spread

#: Metrics a regression is judged on. Top-1 and the selection penalties (strict or noise-aware) and the profile
#: error depend on which alternative was measured fastest: where two alternatives lie within noise of each other
#: they jump between two values from one invocation to the next with nothing changed. They are kept in the history
#: and drawn; a ranking regression is judged on Kendall tau and pairwise agreement.
JUDGED = {"kendall_tau", "pairwise_agreement", "tightness_median", "error_median"}
#: Metrics where a larger value is better.
HIGHER_BETTER = {"kendall_tau", "pairwise_agreement", "top1_agreement", "top1_noise_aware"}
#: Metrics judged on log x, whose ideal is 1.
TOWARD_ONE = {"tightness_median"}
SERIES_KEYS = ["study", "fingerprint", "kind", "case", "platform", "group", "model", "metric"]
#: how close (log units) two reference figures are to be the same code's: a last bit may differ between library
#: versions or processors
_SAME = 1e-6
#: the variance of a median of n normal values is pi / (2 n) times the values' variance
_MEDIAN_VARIANCE = math.pi / 2.0


@dataclass(frozen=True)
class Rule:
    """The thresholds of the rule: the config's ``history`` section, whose defaults live only in the schema
    (:meth:`from_config`; :func:`history_rule` without a whole study)."""

    window: int
    min_history: int
    z: float
    min_change: float
    large_change: float
    after: int
    noisy: float

    @classmethod
    def from_config(cls, section: dict[str, Any]) -> Rule:
        """The rule from a validated config's ``history`` section."""
        return cls(int(section["window"]), int(section["min_history"]), float(section["z"]),
                   float(section["min_change"]), float(section["large_change"]), int(section["after"]),
                   float(section["noisy"]))


def history_rule(**given: Any) -> Rule:
    """The rule of the schema's ``history`` defaults with the ``given`` keys set, validated like a config's."""
    from analysis.planning.config import section

    return Rule.from_config(section("history", given))


def spread_key(kind: str, case: str, group: str) -> str:
    """What a series' shipped spread is looked up by besides its kind and metric: the case of a model figure, the
    processor role (or ``network``) of a machine parameter."""
    return group if kind == "machine" else case


@dataclass(frozen=True)
class Finding:
    """One regression, improvement, drift, or model change that follows a drift."""

    kind: str  # "regression" | "improvement" | "drift" | "follows"
    series: dict[str, Any]
    before: tuple[float, float, float]  # the earlier segment's median value and median interval
    after: tuple[float, float, float]  # the latest snapshot's value and interval
    z: float  # how many between-study spreads the least changed later snapshot lies from the earlier median
    began: str  # snapshot id where the later segment starts
    began_time: Any
    note: str = ""
    test: str = "step"  # "step" (held ``after`` nights) or "large" (one night)
    spread: float = math.nan  # the between-study spread it was judged against (judged scale)

    def as_dict(self) -> dict[str, Any]:
        """The finding as plain JSON values (``hetval track --json`` prints one per line)."""
        def interval(v: tuple[float, float, float]) -> dict[str, float | None]:
            return {k: (None if x is None or not np.isfinite(x) else float(x)) for k, x in zip(("value", "lo", "hi"), v,
                                                                                               strict=True)}

        began = self.began_time
        return {"kind": self.kind, "series": {k: (v.item() if hasattr(v, "item") else v) for k, v in self.series.items()},
                "before": interval(self.before), "after": interval(self.after),
                "z": float(self.z) if math.isfinite(self.z) else None, "test": self.test, "began": self.began,
                "began_time": None if began is None else str(began), "note": self.note,
                "spread": float(self.spread) if math.isfinite(self.spread) else None, "line": self.line()}

    def line(self) -> str:
        s = self.series
        what = (f"{s['platform']} {s['group']} {s['metric']}" if s["kind"] == "machine" else
                f"{s['model']} [{s['case']} {s['platform']} {s['group']}] {s['metric']}")
        how = f"{self.z:.1f} between-study spreads" if math.isfinite(self.z) else "beyond its spread"
        if self.test == "large":
            how = f"a {_factor(self.before[0], self.after[0])} change in one night, {how}"
        elif self.test == "model":
            how = f"moved {how} the way the model's change says"
        label = {"follows": "FOLLOWS DRIFT"}.get(self.kind, self.kind.upper())
        return (f"{label}: {what}: {_fmt(*self.before)} -> {_fmt(*self.after)} "
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


def relative(metric: str, kind: str) -> bool:
    """Whether a figure is judged on ``log x`` (tightness, machine parameters) rather than on ``x``."""
    return kind == "machine" or metric in TOWARD_ONE


def scale(metric: str, kind: str, values: Any) -> np.ndarray:
    """The figure on the scale it is judged on: ``log x`` for a relative one (NaN where not positive), else ``x``."""
    v = np.asarray(values, dtype=np.float64)
    if not relative(metric, kind):
        return v
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log(v), np.nan)


def resolution(metric: str, s: pd.DataFrame) -> float:
    """How little a rank metric can move: one pair's worth (2 / pairs for tau, 1 / pairs for pairwise agreement)
    of the series' largest group; 0 for any other figure."""
    if metric not in ("kendall_tau", "pairwise_agreement") or "n_alternatives" not in s:
        return 0.0
    k = pd.to_numeric(s["n_alternatives"], errors="coerce").max()
    if pd.isna(k) or k < 2:
        return 0.0
    return (2.0 if metric == "kendall_tau" else 1.0) / (k * (k - 1) / 2.0)


def _smallest_step(metric: str, kind: str, s: pd.DataFrame, rule: Rule) -> float:
    """The smallest change that counts: ``min_change`` (relative or absolute), and a rank metric's resolution."""
    floor = math.log1p(rule.min_change) if relative(metric, kind) else rule.min_change
    return max(floor, resolution(metric, s))


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


def own_spread(y: np.ndarray) -> float:
    """A series' own between-snapshot spread: the root mean square deviation of its snapshots from their median
    (``n - 1`` degrees of freedom; NaN below two). Not a median absolute deviation: nights here have heavy tails
    (a study an hour apart from the last can differ far more than most), and a spread that ignores them
    flags them."""
    if len(y) < 2:
        return math.nan
    return float(np.sqrt(np.sum((y - np.median(y)) ** 2) / (len(y) - 1)))


def between_spread(y_before: np.ndarray, shipped: float, weight: int) -> float:
    """The between-study spread of a series: the robust spread of its earlier snapshots pooled with the shipped
    one, which counts as ``weight`` snapshots (rule 2); NaN when neither is known."""
    own = own_spread(y_before)
    dof = len(y_before) - 1
    parts = [(weight, shipped)] if math.isfinite(shipped) else []
    if math.isfinite(own) and dof > 0:
        parts.append((dof, own))
    if not parts:
        return math.nan
    return math.sqrt(sum(w * v * v for w, v in parts) / sum(w for w, _ in parts))


def judge(series: pd.DataFrame, rule: Rule, shipped: float = math.nan) -> dict[str, Any] | None:
    """The rule on one series (rows oldest first; columns value, lo, hi, snapshot, time, kind, metric), with the
    ``shipped`` between-study spread of its kind of figure.

    Returns the figures of the test that flagged, else of the step test (``test``, ``z``, ``step``, ``worse``,
    ``flag``, ``m`` - where the later segment starts -, ``spread``, ``noisy``...); None when the series is not
    judged (a metric that is not, no earlier snapshot, or a noisy figure with a short history).
    """
    s = series.tail(rule.window)
    kind, metric = str(s["kind"].iloc[0]), str(s["metric"].iloc[0])
    if kind in ("scorecard", "reference") or (kind != "machine" and metric not in JUDGED):  # pooled, or rule 7
        return None
    y = scale(metric, kind, s["value"].to_numpy(dtype=np.float64))
    ok = np.isfinite(y)
    if ok.sum() < 2 or not ok[-1]:
        return None
    s, y = s[ok], y[ok]
    step = _step_test(s, y, kind, metric, rule, shipped)
    if step is None:
        return None
    if step["flag"] or step["noisy"]:
        return step
    # one night against every earlier one (the step's split may leave fewer before it)
    whole = max(between_spread(y[:-1], shipped, rule.min_history), resolution(metric, s))
    large = _large_test(s, y, kind, metric, rule, whole)
    return large if large is not None and large["flag"] else step


def _direction(metric: str, kind: str, before: float, after: float) -> bool:
    """Whether moving from ``before`` to ``after`` (judged scale) is worse."""
    if metric in TOWARD_ONE:
        return abs(after) > abs(before)
    if kind != "machine" and metric in HIGHER_BETTER:
        return after < before
    return after > before


def _step_test(s: pd.DataFrame, y: np.ndarray, kind: str, metric: str, rule: Rule,
               shipped: float) -> dict[str, Any] | None:
    """Rules 2-4 of the module notes."""
    n = len(y)
    m = best_step(y, 1, rule.after) if n > rule.after else None
    m_spread = m if m is not None else n - 1  # the spread of the snapshots before the latest, with no split yet
    # a rank metric steady so far has shown no spread, yet moves a pair at a time: its spread is at least a pair
    spread = max(between_spread(y[:m_spread], shipped, rule.min_history), resolution(metric, s))
    noisy = (relative(metric, kind) and math.isfinite(spread) and spread >= math.log1p(rule.noisy)
             and m_spread < rule.min_history)
    out = {"test": "step", "z": math.nan, "step": 0.0, "worse": False, "flag": False, "m": m, "spread": spread,
           "noisy": noisy, "rows": s, "before_values": s["value"].to_numpy()[:m_spread]}
    if not math.isfinite(spread):
        return None
    if m is None or noisy:
        return out
    base = float(np.median(y[:m]))
    d = y[m:] - base
    # every later night beyond the earlier median on one side, the step measured at the least changed of them
    change = float(d.min()) if (d > 0).all() else float(d.max()) if (d < 0).all() else 0.0
    bar = spread * math.sqrt(1.0 + _MEDIAN_VARIANCE / m)
    z = abs(change) / bar if bar > 0 else (math.inf if change else 0.0)
    big = abs(change) >= _smallest_step(metric, kind, s, rule) and z >= rule.z
    out.update(z=z, step=change, worse=_direction(metric, kind, base, base + change), flag=big,
               before_values=s["value"].to_numpy()[:m])
    return out


def _large_test(s: pd.DataFrame, y: np.ndarray, kind: str, metric: str, rule: Rule,
                spread: float) -> dict[str, Any] | None:
    """Rule 5 of the module notes: one night a factor ``1 + large_change`` and twice the step test's bar away."""
    if not relative(metric, kind) or not math.isfinite(spread):
        return None
    m = len(y) - 1
    base = float(np.median(y[:m]))
    change = float(y[-1] - base)
    bar = spread * math.sqrt(1.0 + _MEDIAN_VARIANCE / m)
    z = abs(change) / bar if bar > 0 else math.inf
    lo, hi = s["lo"].to_numpy(dtype=np.float64), s["hi"].to_numpy(dtype=np.float64)
    b_lo, b_hi = _finite_median(lo[:m]), _finite_median(hi[:m])
    apart = not all(math.isfinite(v) for v in (b_lo, b_hi, lo[-1], hi[-1])) or lo[-1] > b_hi or hi[-1] < b_lo
    flag = abs(change) >= math.log1p(rule.large_change) and z >= 2.0 * rule.z and apart
    return {"test": "large", "z": z, "step": change, "worse": _direction(metric, kind, base, y[-1]), "flag": flag,
            "m": m, "spread": spread, "noisy": False, "rows": s, "before_values": s["value"].to_numpy()[:m]}


def _finite_median(a: np.ndarray) -> float:
    """The median of the finite values of ``a`` (NaN when there are none)."""
    a = a[np.isfinite(a)]
    return float(np.median(a)) if len(a) else math.nan


@dataclass(frozen=True)
class Noisy:
    """A figure too noisy between studies to be judged yet (rule 3)."""

    series: dict[str, Any]
    spread: float  # the between-study spread, log units
    snapshots: int  # earlier snapshots the series has

    def line(self) -> str:
        s = self.series
        what = (f"{s['platform']} {s['group']} {s['metric']}" if s["kind"] == "machine" else
                f"{s['model']} [{s['case']} {s['platform']} {s['group']}] {s['metric']}")
        return (f"NOISY: {what}: varies by a factor {math.exp(self.spread):.2f} (one spread) between studies; not "
                f"judged until the history holds its own spread ({self.snapshots} earlier snapshot(s) so far)")


def track(frame: pd.DataFrame, rule: Rule | None = None, study: str | None = None,
          spreads: dict[str, float] | None = None) -> tuple[list[Finding], dict]:
    """Findings for the latest snapshot of every series in the history ``frame`` (:func:`analysis.tracking.history.read`).

    Only series present in the latest snapshot of the study's latest fingerprint are judged (a model
    or group that is gone is not a regression). ``spreads`` replaces the shipped between-study spreads. Returns the
    findings and counts of what was judged (``stats["noisy"]`` lists the :class:`Noisy` figures).
    """
    if rule is None:
        rule = history_rule()
    stats: dict[str, Any] = {"series": 0, "judged": 0, "shipped_only": 0, "too_short": 0, "snapshots": 0,
                             "noisy": [], "changed": [], "by_code": 0}
    if study:
        frame = frame[frame["study"] == study]
    if not len(frame):
        return [], stats
    latest = frame.sort_values(["time", "snapshot"], kind="stable").iloc[-1]
    frame = frame[(frame["study"] == latest["study"]) & (frame["fingerprint"] == latest["fingerprint"])]
    stats["snapshots"] = int(frame["snapshot"].nunique())
    order = {snap: i for i, snap in enumerate(frame.drop_duplicates("snapshot")
                                              .sort_values(["time", "snapshot"], kind="stable")["snapshot"])}
    current = frame[frame["snapshot"] == latest["snapshot"]]
    keys = SERIES_KEYS
    wanted = set(map(tuple, current[keys].astype(str).to_numpy()))
    frame = frame.sort_values(["time", "snapshot"], kind="stable")
    recent = frame.groupby(keys, sort=False, dropna=False).tail(rule.window)
    found: list[Finding] = []
    live = set(map(tuple, current.loc[current["kind"] == "model", ["case", "model"]].astype(str).to_numpy()))
    changes = {k: c for k, c in model_changes(frame, rule).items() if k in live}  # models this study scores
    stats["changed"] = [c.line() for c in changes.values()]
    changed_found: list[Finding] = []
    for key, series in recent.groupby(keys, sort=True, dropna=False):
        if tuple(str(k) for k in key) not in wanted:
            continue
        if key[2] in ("scorecard", "reference") or (key[2] != "machine" and key[-1] not in JUDGED):
            continue  # a scorecard row is pooled; a reference figure is read by rule 7
        info = dict(zip(keys, key, strict=True))
        stats["series"] += 1
        shipped = shipped_spread(str(key[2]), spread_key(str(key[2]), str(key[3]), str(key[5])), str(key[-1]), spreads)
        change = changes.get((str(key[3]), str(key[6]))) if key[2] == "model" and key[-1] in TOWARD_ONE else None
        by_code = judge_change(series, change, rule, shipped) if change is not None else None
        if by_code is not None and by_code.kind != "none":
            stats["by_code"] += 1
            changed_found.append(replace(by_code, series=info))
            continue  # a figure the change did not move (or not the way it says) is left to rules 2-6
        res = judge(series, rule, shipped)
        if res is None:
            stats["too_short"] += 1
            continue
        if res["noisy"]:
            stats["noisy"].append(Noisy(info, res["spread"], len(res["before_values"])))
            continue
        stats["judged" if len(res["rows"]) - 1 >= rule.min_history else "shipped_only"] += 1  # earlier snapshots
        if not res["flag"]:
            continue
        rows, m = res["rows"], res["m"]
        first, last, earlier = rows.iloc[m], rows.iloc[-1], rows.iloc[:m]
        kind = "drift" if info["kind"] == "machine" else "regression" if res["worse"] else "improvement"
        found.append(Finding(
            kind=kind, series=info,
            before=(float(np.median(res["before_values"])), float(earlier["lo"].median()), float(earlier["hi"].median())),
            after=(float(last["value"]), float(last["lo"]), float(last["hi"])), z=float(res["z"]),
            began=str(first["snapshot"]), began_time=first["time"], test=res["test"], spread=float(res["spread"])))
    found = _attribute(found, order) + _beside_drifts(changed_found, found, order)
    rank = {"regression": 0, "drift": 1, "follows": 2, "improvement": 3}
    found.sort(key=lambda f: (rank[f.kind], f.test != "large", -f.z if math.isfinite(f.z) else 0.0))
    return found, stats


@dataclass(frozen=True)
class ModelChange:
    """A model whose tightness on the reference runs moved at snapshot ``began`` away from its usual level in the
    window (rule 7); ``usual`` are the snapshots at that level."""

    case: str
    model: str
    began: str
    usual: frozenset[str]
    before: float
    after: float

    @property
    def factor(self) -> float:
        return self.after / self.before

    def line(self) -> str:
        return (f"MODEL CHANGED: {self.model} [{self.case}]: its median tightness on the reference runs moved "
                f"{self.before:.4g} -> {self.after:.4g} (x{self.factor:.3g}) at snapshot {self.began}: its code changed "
                "there, and its figures on this study are judged by that factor from then on")


def model_changes(frame: pd.DataFrame, rule: Rule) -> dict[tuple[str, str], ModelChange]:
    """Rule 7: per (case, model), where its reference figure now differs by at least ``min_change`` from its usual
    level in the window (the earlier snapshots' median level); ``frame`` is one study's snapshots on one
    fingerprint, oldest first. A change that was undone (back at the usual level) is no change."""
    if "kind" not in frame or not (frame["kind"] == "reference").any():
        return {}
    ref = frame[(frame["kind"] == "reference") & (frame["metric"] == "tightness_median")]
    latest = frame["snapshot"].iloc[-1]
    out = {}
    for (case, model, _), s in ref.groupby(["case", "model", "group"], sort=True):  # group: the runs' digest
        s = s.drop_duplicates("snapshot", keep="last").tail(rule.window)
        s = s[np.isfinite(s["value"].to_numpy(dtype=np.float64)) & (s["value"].to_numpy(dtype=np.float64) > 0)]
        if not len(s) or s["snapshot"].iloc[-1] != latest:
            continue
        y = np.log(s["value"].to_numpy(dtype=np.float64))
        same = np.abs(y - y[-1]) <= _SAME  # deterministic: the same code gives the same figure
        start = len(y)
        while start > 0 and same[start - 1]:
            start -= 1
        if start == 0:
            continue
        earlier = y[:start]
        usual = earlier[np.argmin(np.abs(earlier - np.median(earlier)))]  # a level the code really had
        if abs(y[-1] - usual) < math.log1p(rule.min_change):
            continue
        snaps = s["snapshot"].astype(str).to_numpy()[:start]
        out[(str(case), str(model))] = ModelChange(
            str(case), str(model), str(s["snapshot"].iloc[start]),
            frozenset(snaps[np.abs(earlier - usual) <= _SAME]), float(np.exp(usual)), float(s["value"].iloc[-1]))
    return out


def judge_change(series: pd.DataFrame, change: ModelChange, rule: Rule, shipped: float) -> Finding | None:
    """Rule 7 on one median tightness series of a model that changed (None when the series holds no snapshot at
    the model's usual level before the change: then rules 2-6 judge it). The finding's ``kind`` is ``"none"`` when
    the figure did not move the way the change says."""
    s = series.tail(rule.window)
    snaps = s["snapshot"].astype(str).to_numpy()
    at = np.flatnonzero(snaps == change.began)
    if not len(at):
        return None
    m = int(at[0])
    y = scale("tightness_median", "model", s["value"].to_numpy(dtype=np.float64))
    usual = np.array([x in change.usual for x in snaps[:m]], dtype=bool)
    earlier, later = y[:m][usual], y[m:]
    earlier, later = earlier[np.isfinite(earlier)], later[np.isfinite(later)]
    if not len(earlier) or not len(later):
        return None
    base, now, step = float(np.median(earlier)), float(np.median(later)), math.log(change.factor)
    moved = (now - base) * step > 0 and abs(now - base) >= math.log1p(rule.min_change)
    worse = abs(base + step) > abs(base)
    spread = between_spread(earlier, shipped, rule.min_history)
    bar = spread * math.sqrt(_MEDIAN_VARIANCE / len(later) + _MEDIAN_VARIANCE / len(earlier)) if len(later) > 1 \
        else spread * math.sqrt(1.0 + _MEDIAN_VARIANCE / len(earlier))
    rows = s.iloc[:m][usual]
    last = s.iloc[-1]
    return Finding(
        kind=("regression" if worse else "improvement") if moved else "none", series={},
        before=(float(np.exp(base)), float(rows["lo"].median()), float(rows["hi"].median())),
        after=(float(last["value"]), float(last["lo"]), float(last["hi"])),
        z=abs(now - base) / bar if bar > 0 else math.inf, began=change.began, began_time=s["time"].iloc[m],
        note=(f"(the model's code changed at snapshot {change.began}: its tightness on the reference runs moved "
              f"x{change.factor:.3g}; expected here {math.exp(base):.3g} -> {math.exp(base + step):.3g})"),
        test="model", spread=spread)


def judged_line(stats: dict[str, Any], rule: Rule) -> str:
    """What ``track`` judged, and by which rule, in one line."""
    return (f"{stats['judged']} series judged against their own spread, {stats['shipped_only']} mostly against the "
            f"shipped one, {len(stats['noisy'])} noisy, {stats['too_short']} not judged (no earlier snapshot), "
            f"{stats.get('by_code', 0)} by their model's code change (rule 7); rule: "
            f"a change held {rule.after} snapshots, each >= {rule.z:g} between-study spreads and >= "
            f"{rule.min_change:g} away, or a factor >= {1 + rule.large_change:g} in one night; window {rule.window}")


def _beside_drifts(by_code: list[Finding], found: list[Finding], order: dict[str, int]) -> list[Finding]:
    """Rule 7's findings, each noting a drift of its platform that began at or after the model's change: the
    model's code changed, and the machine moved too."""
    out = []
    for f in by_code:
        moved = [d for d in found if d.kind == "drift" and str(d.series["platform"]) == str(f.series["platform"])
                 and order.get(d.began, 0) >= order.get(f.began, 0)]
        out.append(replace(f, note=f.note + (" (the machine drifted too: " + ", ".join(
            f"{d.series['group']} {d.series['metric']}" for d in moved) + ")" if moved else " (machine unchanged)")))
    return out


def _attribute(found: list[Finding], order: dict[str, int]) -> list[Finding]:
    """Rule 6: a model figure that changed at or after the start of a drift on its platform follows the drift."""
    drifts: dict[str, list[Finding]] = {}
    for f in found:
        if f.kind == "drift":
            drifts.setdefault(str(f.series["platform"]), []).append(f)
    out = []
    for f in found:
        if f.kind in ("regression", "improvement"):
            moved = [d for d in drifts.get(str(f.series["platform"]), [])
                     if order.get(f.began, 0) >= order.get(d.began, 0)]
            if moved:
                f = replace(f, kind="follows", note="(with the machine's drift of " + ", ".join(
                    f"{d.series['group']} {d.series['metric']}" for d in moved) + f"; it was a {f.kind} of the model)")
            else:
                f = replace(f, note="(machine unchanged)")
        out.append(f)
    return out


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
