"""The FDM case's section: scaling curves, per-phase stacked bars (measured beside the model's parts), the runs
and the ranking-fidelity tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.report.common import (
    TABLE_ROWS,
    FigureEntry,
    Inputs,
    degenerate,
    fmt_interval,
    fmt_sig,
    new_figure,
    not_distinguishable,
    save_figure,
)
from analysis.report.section import Section, SectionOutput
from sims.fdm.spec import grid_label
from sims.vocab import FDM_MODEL_PARTS, FDM_PHASES

#: Lines (grid x design) one scaling figure draws, and runs one phase figure draws: past them the figure says
#: how many it left out (every run is in the table and in fdm_runs.parquet).
SERIES = 10
PHASE_BARS = 40


def _fidelity_row(r: Any) -> list[str]:
    """One FDM fidelity table row: a degenerate ranking's label in place of every ranking score."""
    label = degenerate(r)
    scores = [label or fmt_interval(r, m) for m in ("kendall_tau", "pairwise_agreement", "top1_agreement")]
    return [grid_label(r.grid), str(r.ranks), str(r.order), r.boundary, r.axis, r.fixed, str(r.n_alternatives),
            *scores, label or fmt_sig(getattr(r, "top1_noise_aware", None)),
            label or fmt_interval(r, "selection_penalty"), fmt_interval(r, "tightness_median"), r.best_measured,
            ("not distinguishable: " if not_distinguishable(r) else "") + str(getattr(r, "best_measured_noise_aware", "")),
            r.best_predicted]


def scaling_figure(runs, order: int, boundary: str):
    """Time per step against ranks, measured (median, min-max bars) and predicted (dashed), per grid and design."""
    from matplotlib import colormaps

    sub = runs[(runs["order"] == order) & (runs["boundary"] == boundary)]
    if sub.empty:
        return None
    fig = new_figure(11, 4.2)
    axes = fig.subplots(1, 2)
    cmap = colormaps["tab10"]
    series = sub.groupby(["grid", "marshaling"], sort=True)
    for n, ((grid, design), g) in enumerate(series):
        if n >= SERIES:
            break
        # at each rank count the fastest decomposition measured, and the model's value for that same run
        best = g.loc[g.groupby("ranks")["time_median_s"].idxmin()].sort_values("ranks")
        steps = best["steps"].to_numpy(dtype=float)
        color = cmap(n % 10)
        label = f"{grid_label(grid)} {design}"
        y = best["time_median_s"].to_numpy() / steps
        err = [y - best["time_min_s"].to_numpy() / steps, best["time_max_s"].to_numpy() / steps - y]
        axes[0].errorbar(best["ranks"], y, yerr=err, marker="o", color=color, label=label, capsize=3)
        axes[0].plot(best["ranks"], best["time_predicted_s"] / steps, "--", color=color, marker="x")
        axes[1].plot(best["ranks"], best["mlups_measured"], marker="o", color=color, label=label)
        axes[1].plot(best["ranks"], best["mlups_predicted"], "--", marker="x", color=color)
    axes[0].set(xlabel="MPI ranks", ylabel="seconds per step (slowest rank)", yscale="log",
                title=f"order {order}, {boundary}: time per step")
    axes[1].set(xlabel="MPI ranks", ylabel="MLUP/s (whole grid)", title="throughput")
    for ax in axes:
        ax.set_xticks(sorted(sub["ranks"].unique()))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    more = f"; the first {SERIES} of {series.ngroups} grid x design lines" if series.ngroups > SERIES else ""
    fig.text(0.5, -0.02, f"solid: measured (median, bars: min-max over repetitions); dashed: FDM model{more}",
             ha="center", fontsize=8)
    return fig


def phase_figure(runs, order: int, boundary: str):
    """Per run, measured per-phase seconds per step stacked (slowest rank per phase) beside the model's parts."""
    import numpy as np
    from matplotlib import colormaps

    sub = runs[(runs["order"] == order) & (runs["boundary"] == boundary)].sort_values(
        ["grid", "ranks", "decomposition", "marshaling"])
    if sub.empty:
        return None
    total = len(sub)
    sub = sub.head(PHASE_BARS)
    fig = new_figure(max(7.0, 0.55 * len(sub) + 2), 4.6)
    ax = fig.subplots()
    x = np.arange(len(sub))
    steps = sub["steps"].to_numpy(dtype=float)
    cmap = colormaps["tab10"]
    bottom = np.zeros(len(sub))
    for n, p in enumerate(FDM_PHASES):
        v = np.nan_to_num(sub[f"{p}_median_s"].to_numpy(dtype=float)) / steps
        ax.bar(x - 0.2, v, 0.38, bottom=bottom, color=cmap(n), label=f"measured {p}")
        bottom += v
    bottom = np.zeros(len(sub))
    colors = {"compute": "0.35", "pack": cmap(2), "unpack": cmap(3), "halo": cmap(4), "h2d": cmap(5)}
    for p in FDM_MODEL_PARTS:
        v = np.nan_to_num(sub[f"{p}_pred_s"].to_numpy(dtype=float)) / steps
        ax.bar(x + 0.2, v, 0.38, bottom=bottom, color=colors[p], hatch="//", alpha=0.6, label=f"model {p}")
        bottom += v
    labels = [f"{grid_label(r.grid)}\n{r.ranks}r {r.decomposition}\n{r.marshaling}" for r in sub.itertuples()]
    ax.set_xticks(x, labels, fontsize=6, rotation=90)
    shown = f" - the first {len(sub)} of {total} runs" if total > len(sub) else ""
    ax.set(ylabel="seconds per step",
           title=f"order {order}, {boundary}: phases (left: measured, right: model){shown}")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    return fig


FIGURES = (
    ("scaling", scaling_figure, "scaling", "Strong scaling (same grid, more ranks) and weak scaling (grids that grow "
     "with the ranks): measured time per step and throughput against the FDM model; at each rank count the fastest "
     "decomposition is shown."),
    ("phases", phase_figure, "per-phase time", "Where each run's time goes: measured per-phase seconds per step (each "
     "phase on its slowest rank) next to the model's compute, pack/unpack, halo and host-device terms."),
)


class FDMSection(Section):
    title = "FDM seismology"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        runs_in, fid_in = inputs.table("fdm_runs"), inputs.table("fdm_fidelity")
        runs, fid = runs_in.frame, fid_in.frame
        if runs is None or runs.empty:
            note = f"fdm_runs.parquet is {runs_in.status}: no FDM runs in this study."
            out.heading("FDM seismology")
            out.para(note, "missing")
            out.lines += ["", note]
            return out
        out.heading("FDM seismology: scaling, phases, model")
        entries = []
        for (order, boundary), _ in runs.groupby(["order", "boundary"], sort=True):
            tag = f"o{order}-{str(boundary).replace('(', '').replace(')', '')}"
            for kind, make, title, caption in FIGURES:
                fig = make(runs, int(order), str(boundary))
                if fig is None:
                    continue
                name = f"fdm-{kind}-{tag}.png"
                save_figure(fig, out_dir, name)
                entries.append(FigureEntry(name, f"order {order}, {boundary}: {title}", caption, wide=True))
        out.figures_block(entries, "No FDM figures.")
        out.heading("FDM runs", 3)
        out.table(["grid", "ranks", "decomposition", "design", "order", "boundary", "measured s (median [min–max])",
                   "predicted s", "tightness", "MLUP/s measured", "MLUP/s predicted", "reps"],
                  [[grid_label(r.grid), str(r.ranks), r.decomposition, r.marshaling, str(r.order), r.boundary,
                    f"{fmt_sig(r.time_median_s)} [{fmt_sig(r.time_min_s)}–{fmt_sig(r.time_max_s)}]",
                    fmt_sig(r.time_predicted_s), fmt_sig(r.tightness), fmt_sig(r.mlups_measured, 4),
                    fmt_sig(r.mlups_predicted, 4), str(r.n_reps)] for r in runs.head(TABLE_ROWS).itertuples()],
                  "FDM runs", total=len(runs), source="fdm_runs.parquet")
        out.para("What this shows: every FDM run with its measured loop time (slowest rank) and the model's "
                 "prediction; tightness is the fraction of the model's time reached: predicted / measured time (below 1: the "
                 "run was slower than the model says).", "what")
        t = runs["tightness"]
        out.lines += ["", f"FDM: {len(runs)} ok runs; tightness (fraction of the bound reached) median {fmt_sig(t.median())} "
                          f"[{fmt_sig(t.min())}–{fmt_sig(t.max())}]"]
        if fid is None or not len(fid):
            out.para(f"fdm_fidelity.parquet is {fid_in.status}: no FDM fidelity table.", "missing")
            return out
        out.heading("FDM ranking fidelity", 3)
        out.table(["grid", "ranks", "order", "boundary", "axis", "fixed", "n", "kendall tau", "pairwise", "top-1",
                   "top-1 noise-aware", "selection penalty", "tightness median", "best measured",
                   "best within noise", "best predicted"],
                  [_fidelity_row(r) for r in fid.head(TABLE_ROWS).itertuples()],
                  "FDM ranking fidelity; intervals: 95 % bootstrap over the repetitions", total=len(fid),
                  source="fdm_fidelity.parquet")
        out.para("What this shows: at each scale, how well the model orders the marshaling designs (at a fixed "
                 "decomposition) and the decompositions (at a fixed design). A ranking is not scored where the measured "
                 "alternatives are not distinguishable beyond noise, or where the model gives them all the same time "
                 "(on a CPU backend it gives the three designs the same time: nothing lives on a device).",
                 "what")
        if len(fid) > TABLE_ROWS:
            out.lines.append(f"  (the first {TABLE_ROWS} of {len(fid)} rows; all in fdm_fidelity.parquet)")
        for r in fid.head(TABLE_ROWS).itertuples():
            out.lines.append(f"  {grid_label(r.grid)} {r.ranks} ranks order {r.order} | axis {r.axis} ({r.fixed}): "
                             f"kendall tau {fmt_interval(r, 'kendall_tau')}, top-1 {fmt_interval(r, 'top1_agreement')},"
                             f" selection penalty {fmt_interval(r, 'selection_penalty')}, best measured "
                             f"{r.best_measured} vs predicted {r.best_predicted}"
                             + (" (not distinguishable)" if not_distinguishable(r) else ""))
        return out
