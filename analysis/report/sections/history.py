"""The history section: each model's accuracy over the snapshots, with interval bands and regression markers,
the characterised machine parameters over time, and what ``hetval track`` finds in the latest snapshot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.report.common import FigureEntry, Inputs
from analysis.report.drawing import new_figure, save_figure
from analysis.report.section import Section, SectionOutput

#: The figures drawn per model, in panel order.
PANELS = (("kendall_tau", "Kendall tau"), ("top1_agreement", "top-1 (strict)"),
          ("selection_penalty", "selection penalty"), ("tightness_median", "median tightness"))
#: Snapshots drawn at most (the newest).
MAX_SNAPSHOTS = 200


def load_history(inputs: Inputs) -> tuple[pd.DataFrame | None, str]:
    """The study's history named by the validation summary's provenance, and a status line."""
    from analysis.tracking import history

    prov = (inputs.summary or {}).get("provenance") or {}
    path, study = prov.get("history"), prov.get("study")
    if not path:
        return None, "no history is kept (history.path is null), so there is nothing to show over time"
    try:
        frame = history.read(path, study)
    except (OSError, ValueError) as exc:
        return None, f"the history at {path} could not be read ({exc})"
    if not len(frame):
        return None, f"the history at {path} holds no snapshot of study {study!r} yet"
    latest = frame["fingerprint"].iloc[-1]
    return frame[frame["fingerprint"] == latest], f"{path}, study {study}"


def model_series(frame: pd.DataFrame, model: str, metric: str) -> pd.DataFrame:
    """Per snapshot: the median over the model's groups of the metric, its ``lo`` and its ``hi``."""
    sub = frame[(frame["kind"] == "model") & (frame["model"] == model) & (frame["metric"] == metric)]
    return (sub.groupby(["time", "snapshot"], sort=True)[["value", "lo", "hi"]].median().reset_index())


def history_figure(frame: pd.DataFrame, model: str, markers: dict[tuple[str, str], list[Any]]):
    fig = new_figure(11, 2.8)
    axes = fig.subplots(1, len(PANELS))
    for ax, (metric, label) in zip(axes, PANELS, strict=True):
        s = model_series(frame, model, metric)
        if s.empty:
            ax.set_axis_off()
            continue
        x = np.arange(len(s))
        ax.plot(x, s["value"], marker="o", ms=3)
        if s["lo"].notna().any():
            ax.fill_between(x, s["lo"], s["hi"], alpha=0.25, linewidth=0)
        for began in markers.get((model, metric), []):
            hit = np.flatnonzero(s["snapshot"].to_numpy() == began)
            if len(hit):
                ax.plot(x[hit], s["value"].to_numpy()[hit], "v", color="crimson", ms=10)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("snapshot", fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{model}: median over its groups (band: median of the groups' 95 % intervals; "
                 "red: a regression starts)", fontsize=9)
    return fig


#: Findings drawn one series each (the strongest first).
MAX_FINDINGS_DRAWN = 12


def findings_figure(frame: pd.DataFrame, findings: list[Any]):
    """One panel per finding, asv-style: the series' value and interval per snapshot, the earlier and later
    segments' levels as the step ``hetval track`` found, and where it began."""
    from analysis.tracking.track import SERIES_KEYS

    drawn = findings[:MAX_FINDINGS_DRAWN]
    if not drawn:
        return None
    cols = min(3, len(drawn))
    rows = -(-len(drawn) // cols)
    fig = new_figure(11, 2.6 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax in axes[len(drawn):]:
        ax.set_axis_off()
    for ax, f in zip(axes, drawn, strict=False):
        mask = np.ones(len(frame), dtype=bool)
        for k in SERIES_KEYS:
            if k in frame.columns and k in f.series:
                mask &= frame[k].astype(str).to_numpy() == str(f.series[k])
        s = frame[mask].sort_values(["time", "snapshot"])
        x = np.arange(len(s))
        ax.plot(x, s["value"], marker="o", ms=3, color="tab:blue")
        if s["lo"].notna().any():
            ax.fill_between(x, s["lo"], s["hi"], alpha=0.25, linewidth=0, color="tab:blue")
        at = np.flatnonzero(s["snapshot"].to_numpy() == f.began)
        if len(at):
            b = int(at[0])
            ax.hlines(f.before[0], -0.4, b - 0.6, colors="grey", linestyles="--", lw=1.2)
            ax.hlines(float(np.median(s["value"].to_numpy()[b:])), b - 0.4, len(s) - 0.6, colors="crimson", lw=2)
            ax.axvline(b - 0.5, color="crimson", alpha=0.4, lw=1)
        what = (f"{f.series['platform']} {f.series['group']}" if f.series["kind"] == "machine" else
                f"{f.series['model']} {f.series['case']}")
        ax.set_title(f"{f.kind}: {what} {f.series['metric']}"[:70], fontsize=7)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("snapshot", fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle("what hetval track found: each series with its interval (band), the earlier level (grey) and the "
                 "later one (red) from where the change began", fontsize=9)
    return fig


def machine_figure(frame: pd.DataFrame):
    sub = frame[frame["kind"] == "machine"]
    if sub.empty:
        return None
    params = sorted(sub["metric"].unique())
    fig = new_figure(11, 2.8)
    axes = np.atleast_1d(fig.subplots(1, len(params)))
    for ax, p in zip(axes, params, strict=True):
        for (platform, group), s in sub[sub["metric"] == p].groupby(["platform", "group"], sort=True):
            s = s.sort_values("time")
            x = np.arange(len(s))
            ax.plot(x, s["value"], marker="o", ms=3, label=f"{platform} {group}")
            if s["lo"].notna().any():
                ax.fill_between(x, s["lo"], s["hi"], alpha=0.2, linewidth=0)
        ax.set(title=p, yscale="log", xlabel="snapshot")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle("characterised machine parameters per snapshot (band: central 95 % of the samples)", fontsize=9)
    return fig


class HistorySection(Section):
    """Model accuracy and machine parameters over the history's snapshots."""

    title = "History"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        from analysis.tracking.track import track

        out = SectionOutput()
        out.heading("History: model accuracy over time", 2, "history")
        frame, status = load_history(inputs)
        if frame is None:
            out.para(status.capitalize() + ".", "missing")
            return out
        snaps = frame.drop_duplicates("snapshot")
        if snaps["snapshot"].nunique() < 2:
            out.para(f"One snapshot so far on this machine in {status}: nothing to draw over time until the study "
                     "runs again (each validation appends one; hetval track and the pooled verdict of several nights "
                     "start from the second).", "what")
            out.lines += ["", f"History: one snapshot so far ({status})."]
            return out
        keep = set(snaps["snapshot"].tail(MAX_SNAPSHOTS))
        frame = frame[frame["snapshot"].isin(keep)]
        out.para(f"{snaps['snapshot'].nunique()} snapshot(s) on this machine in {status}"
                 + (f"; the newest {MAX_SNAPSHOTS} are drawn" if len(snaps) > MAX_SNAPSHOTS else "") + ".")
        findings, stats = track(frame)
        markers: dict[tuple[str, str], list[Any]] = {}
        for f in findings:
            if f.kind == "regression":
                markers.setdefault((f.series["model"], f.series["metric"]), []).append(f.began)
        judged = stats["judged"] + stats["shipped_only"]
        if judged or stats["noisy"]:
            out.para(f"hetval track on the latest snapshot: {sum(f.kind == 'regression' for f in findings)} "
                     f"regression(s), {sum(f.kind == 'drift' for f in findings)} machine drift(s) "
                     f"({sum(f.kind == 'follows' for f in findings)} model figure(s) that moved with it) over "
                     f"{judged} series, each against the spread between studies ({stats['shipped_only']} of them "
                     "mostly against the spread shipped with hetval, their own history still short).",
                     "alert" if any(f.kind != "improvement" for f in findings) else "good")
            if findings:
                out.items([f.line() for f in findings[:50]])
            if stats["changed"]:
                out.para("Models whose code changed (their figures on the reference runs moved):", "what")
                out.items([line.removeprefix("MODEL CHANGED: ") for line in stats["changed"]])
            if stats["noisy"]:
                out.para("Noisy (too variable between studies to judge yet; each is judged once its history holds "
                         "its own spread):", "what")
                out.items([n.line().removeprefix("NOISY: ") for n in stats["noisy"][:50]])
        else:
            out.para("Too few snapshots to judge a regression yet (each series needs earlier snapshots).", "what")
        entries = []
        models = sorted(frame.loc[frame["kind"] == "model", "model"].unique())
        for model in models:
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-") or "unnamed"
            name = f"history-{slug}.png"
            save_figure(history_figure(frame, model, markers), out_dir, name)
            entries.append(FigureEntry(name, f"{model} over the snapshots",
                                       "Kendall tau, strict top-1, selection penalty and median tightness of the "
                                       "model per snapshot: the median over its groups, the band the median of "
                                       "their 95 % bootstrap intervals, a red marker where a regression starts."))
        fig = findings_figure(frame, findings)
        if fig is not None:
            save_figure(fig, out_dir, "history-findings.png")
            entries.append(FigureEntry("history-findings.png", "the series hetval track flagged",
                                       "Each flagged series on its own: value and interval per snapshot, the level "
                                       "before the change (grey, dashed) and after it (red); the vertical line is "
                                       "where the change began."))
        fig = machine_figure(frame)
        if fig is not None:
            save_figure(fig, out_dir, "history-machine.png")
            entries.append(FigureEntry("history-machine.png", "machine parameters over the snapshots",
                                       "t_f, t_b and the network parameters per platform and processor as "
                                       "characterised for each snapshot; a step here is the machine changing, "
                                       "not a model."))
        out.figures_block(entries, "No figures in the history.")
        out.lines += ["", f"History: {snaps['snapshot'].nunique()} snapshot(s); track: "
                      f"{sum(f.kind == 'regression' for f in findings)} regression(s), "
                      f"{sum(f.kind == 'drift' for f in findings)} drift(s), {len(stats['noisy'])} noisy"]
        out.lines += [f"  {f.line()}" for f in findings[:20]]
        return out
