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
    not_distinguishable,
)
from analysis.report.drawing import new_figure, save_figure
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
    return [grid_label(r.grid), str(r.ranks), str(r.order), r.boundary, r.axis, r.fixed, str(r.model), str(r.n_alternatives),
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
    models = sorted(sub["model"].astype(str).unique())
    styles = {m: ("--", ":", "-.")[k % 3] for k, m in enumerate(models)}
    first = sub[sub["model"].astype(str) == models[0]]
    series = first.groupby(["grid", "marshaling"], sort=True)
    for n, ((grid, design), g) in enumerate(series):
        if n >= SERIES:
            break
        # at each rank count the fastest decomposition measured, and each model's value for that same run
        best = g.loc[g.groupby("ranks")["time_median_s"].idxmin()].sort_values("ranks")
        steps = best["steps"].to_numpy(dtype=float)
        color = cmap(n % 10)
        label = f"{grid_label(grid)} {design}"
        y = best["time_median_s"].to_numpy() / steps
        err = [y - best["time_min_s"].to_numpy() / steps, best["time_max_s"].to_numpy() / steps - y]
        axes[0].errorbar(best["ranks"], y, yerr=err, marker="o", color=color, label=label, capsize=3)
        axes[1].plot(best["ranks"], best["mlups_measured"], marker="o", color=color, label=label)
        for model in models:
            pred = sub[sub["model"].astype(str) == model].set_index("run_id").reindex(best["run_id"])
            axes[0].plot(best["ranks"], pred["time_predicted_s"].to_numpy() / steps, styles[model], color=color,
                         marker="x")
            axes[1].plot(best["ranks"], pred["mlups_predicted"].to_numpy(), styles[model], marker="x", color=color)
    axes[0].set(xlabel="MPI ranks", ylabel="seconds per step (slowest rank)", yscale="log",
                title=f"order {order}, {boundary}: time per step")
    axes[1].set(xlabel="MPI ranks", ylabel="MLUP/s (whole grid)", title="throughput")
    for ax in axes:
        ax.set_xticks(sorted(sub["ranks"].unique()))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    more = f"; the first {SERIES} of {series.ngroups} grid x design lines" if series.ngroups > SERIES else ""
    lines = "; ".join(f"{ {'--': 'dashed', ':': 'dotted', '-.': 'dash-dotted'}[styles[m]]}: {m}" for m in models)
    fig.text(0.5, -0.02, f"solid: measured (median, bars: min-max over repetitions); {lines}{more}",
             ha="center", fontsize=8)
    return fig


def phase_figure(runs, order: int, boundary: str):
    """Per run, measured per-phase seconds per step stacked (slowest rank per phase) beside the model's parts."""
    import numpy as np
    from matplotlib import colormaps

    sub = runs[(runs["order"] == order) & (runs["boundary"] == boundary)]
    model = phase_model(sub)
    sub = sub[sub["model"].astype(str) == model].sort_values(["grid", "ranks", "decomposition", "marshaling"])
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
    top = bottom.copy()
    bottom = np.zeros(len(sub))
    colors = {"compute": "0.35", **{p: cmap(n) for n, p in enumerate(FDM_PHASES)}}
    parts = FDM_PHASES if predicts_phases(sub) else FDM_MODEL_PARTS
    for p in parts:
        v = np.nan_to_num(sub[f"{p}_pred_s"].to_numpy(dtype=float)) / steps
        ax.bar(x + 0.2, v, 0.38, bottom=bottom, color=colors[p], hatch="//", alpha=0.6, label=f"{model} {p}")
        bottom += v
    ax.set_ylim(0, 1.08 * max(float(np.max(top)), float(np.max(bottom)), 1e-12))
    labels = [f"{grid_label(r.grid)}\n{r.ranks}r {r.decomposition}\n{r.marshaling}" for r in sub.itertuples()]
    ax.set_xticks(x, labels, fontsize=6, rotation=90)
    shown = f" - the first {len(sub)} of {total} runs" if total > len(sub) else ""
    ax.set(ylabel="seconds per step",
           title=f"order {order}, {boundary}: phases (left: measured, right: {model}){shown}")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    return fig


def predicts_phases(rows) -> bool:
    """True when these rows' model predicted every measured phase (velocity and stress apart) for some run."""
    import numpy as np

    return "velocity_pred_s" in rows and bool(np.isfinite(rows["velocity_pred_s"].to_numpy(dtype=float)).any())


def phase_model(runs) -> str:
    """The model whose parts the phase figure and table show: the one predicting every measured phase (the
    calibrated model) when it predicted anything, else the first."""
    models = sorted(runs["model"].astype(str).unique())
    return next((m for m in models if predicts_phases(runs[runs["model"].astype(str) == m])),
                models[0] if models else "")


FIGURES = (
    ("scaling", scaling_figure, "scaling", "Strong scaling (same grid, more ranks) and weak scaling (grids that grow "
     "with the ranks): measured time per step and throughput against the FDM model; at each rank count the fastest "
     "decomposition is shown."),
    ("phases", phase_figure, "per-phase time", "Where each run's time goes: measured per-phase seconds per step (each "
     "phase on its slowest rank) next to the calibrated model's phases (or the analytical model's compute, "
     "pack/unpack, halo and host-device terms when no calibration exists)."),
)


class FDMSection(Section):
    title = "FDM seismology"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        runs_in, fid_in = inputs.table("fdm_runs"), inputs.table("fdm_fidelity")
        runs, fid = runs_in.frame, fid_in.frame
        if runs is None or runs.empty:
            note = f"fdm_runs.parquet is {runs_in.status}: no FDM runs in this study."
            out.heading("FDM seismology", anchor="fdm")
            out.para(note, "missing")
            out.lines += ["", note]
            return out
        out.heading("FDM seismology: scaling, phases, model", anchor="fdm")
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
        out.table(["grid", "ranks", "decomposition", "design", "order", "boundary", "model",
                   "measured s (median [min–max])", "predicted s", "tightness", "MLUP/s measured", "MLUP/s predicted",
                   "worst phase (pred − meas s)", "reps"],
                  [[grid_label(r.grid), str(r.ranks), r.decomposition, r.marshaling, str(r.order), r.boundary, r.model,
                    f"{fmt_sig(r.time_median_s)} [{fmt_sig(r.time_min_s)}–{fmt_sig(r.time_max_s)}]",
                    fmt_sig(r.time_predicted_s), fmt_sig(r.tightness), fmt_sig(r.mlups_measured, 4),
                    fmt_sig(r.mlups_predicted, 4), _worst(r), str(r.n_reps)]
                   for r in runs.head(TABLE_ROWS).itertuples()],
                  "FDM runs", total=len(runs), source="fdm_runs.parquet")
        out.para("What this shows: every FDM run with its measured loop time (slowest rank) and each model's "
                 "prediction; tightness is predicted / measured time (below 1: the run was slower than the model says; "
                 "above 1: faster). The worst phase is the one whose prediction is furthest from its measured time: "
                 "the term to look at when the total is off.", "what")
        for model, g in runs.groupby("model", sort=True):
            t = g["tightness"]
            out.lines += ["", f"FDM ({model}): {len(g)} ok runs; tightness (predicted / measured time) median "
                              f"{fmt_sig(t.median())} [{fmt_sig(t.min())}–{fmt_sig(t.max())}]"]
        self._phase_table(out, runs)
        self._calibration_table(out, inputs.platforms)
        if fid is None or not len(fid):
            out.para(f"fdm_fidelity.parquet is {fid_in.status}: no FDM fidelity table.", "missing")
            return out
        out.heading("FDM ranking fidelity", 3)
        out.table(["grid", "ranks", "order", "boundary", "axis", "fixed", "model", "n", "kendall tau", "pairwise", "top-1",
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
        if "noise_floor" in fid and len(fid):
            floor, pairs = float(fid["noise_floor"].iloc[0]), int(fid["noise_floor_pairs"].iloc[0])
            text = (f"Run-to-run drift of this study: {fmt_sig(100 * floor)} % (0.9 quantile of the relative "
                    f"differences between {pairs} pairs of runs executing identical code: one rank, or device-pack "
                    "and gpu-aware on a CPU). Alternatives within it of the fastest count as tied: a group whose "
                    "alternatives all lie within it is not distinguishable." if pairs else
                    "No pairs of identical-code runs in this study: rankings are judged on each run's repetitions "
                    "only, which do not see the machine's drift between runs.")
            out.para(text, "what")
            out.lines.append(f"FDM run-to-run drift floor: {fmt_sig(100 * floor)} % from {pairs} identical-code pairs")
        if len(fid) > TABLE_ROWS:
            out.lines.append(f"  (the first {TABLE_ROWS} of {len(fid)} rows; all in fdm_fidelity.parquet)")
        for r in fid.head(TABLE_ROWS).itertuples():
            out.lines.append(f"  {grid_label(r.grid)} {r.ranks} ranks order {r.order} | {r.model} | axis {r.axis} ({r.fixed}): "
                             f"kendall tau {fmt_interval(r, 'kendall_tau')}, top-1 {fmt_interval(r, 'top1_agreement')},"
                             f" selection penalty {fmt_interval(r, 'selection_penalty')}, best measured "
                             f"{r.best_measured} vs predicted {r.best_predicted}"
                             + (" (not distinguishable)" if not_distinguishable(r) else ""))
        return out

    @staticmethod
    def _calibration_table(out: SectionOutput, platforms: list) -> None:
        """The FDM kernels' calibration per platform: each fit's R², largest relative residual and flag."""
        rows = []
        for plat in platforms:
            for backend, doc in (plat.data.get("fdm_calibration") or {}).items():
                for mode, fits in (doc.get("modes") or {}).items():
                    for order, phases in sorted((fits.get("half_steps") or {}).items()):
                        for phase, f in phases.items():
                            c = f["coefficients"]
                            worst = max((abs(x["relative_residual"]) for x in f["samples"]), default=float("nan"))
                            rows.append([plat.name, backend, mode, f"order {order} {phase}",
                                         f"{fmt_sig(c['bulk_points'] * 1e9)} / {fmt_sig(c['bulk_rows'] * 1e9)}",
                                         f"{fmt_sig(c['pml_points'] * 1e9)} / {fmt_sig(c['pml_rows'] * 1e9)} / "
                                         f"{fmt_sig(c['pml_layer_xy'] * 1e9)} / {fmt_sig(c['pml_layer_z'] * 1e9)}",
                                         fmt_sig(f["r2"]), fmt_sig(worst), str(len(f["samples"])),
                                         "poor fit" if f["poor_fit"] else ""])
                    marshal = [(o, impl, d, a, f) for o, by_impl in sorted((fits.get("marshal") or {}).items())
                               for impl, by_dir in by_impl.items() for d, axes in by_dir.items() for a, f in axes.items()]
                    for order, impl, direction, axis, f in marshal:
                        worst = max((abs(x["relative_residual"]) for x in f["samples"]), default=float("nan"))
                        rows.append([plat.name, backend, mode, f"order {order} {direction} {axis} face ({impl})",
                                     f"{fmt_sig(f['per_call_s'] * 1e9)} per call",
                                     f"{fmt_sig(f['per_element_s'] * 1e9)} per element", fmt_sig(f["r2"]),
                                     fmt_sig(worst), str(len(f["samples"])), "poor fit" if f["poor_fit"] else ""])
        if not rows:
            return
        out.heading("FDM kernel calibration", 3)
        out.table(["platform", "backend", "mode", "fit", "bulk ns per point / row", "C-PML ns per point / row / "
                   "xy layer point / z layer point", "R²", "max |rel. residual|", "samples", "flag"],
                  rows[:TABLE_ROWS], "the calibrated FDM model's parameters (samples and residuals in the platform "
                  "file's fdm_calibration)", total=len(rows), source="platforms/*.yaml")
        poor = sum(1 for r in rows if r[-1])
        out.para(f"What this shows: every fit the calibrated FDM model uses, from characterisation microbenchmarks of "
                 f"the solver's own kernels (never from the validation runs); {poor} of {len(rows)} are flagged (R² "
                 "below 0.9 or a relative residual above 0.25). The halo copies' fits span a narrow range of face "
                 "sizes, where single cold copies of a few microseconds scatter: their R² is low even where the "
                 "residuals stay small.", "what" if not poor else "alert")
        out.lines.append(f"FDM kernel calibration: {len(rows)} fits, {poor} flagged")

    @staticmethod
    def _phase_table(out: SectionOutput, runs: Any) -> None:
        """Per run, each measured phase beside the calibrated model's (ms per step, slowest rank)."""

        model = phase_model(runs)
        sub = runs[runs["model"].astype(str) == model]
        if not predicts_phases(sub):
            return
        out.heading("FDM phases: measured beside the calibrated model", 3)

        def cell(r: Any, p: str) -> str:
            m, q = getattr(r, f"{p}_median_s") / r.steps * 1e3, getattr(r, f"{p}_pred_s") / r.steps * 1e3
            return f"{fmt_sig(m)} / {fmt_sig(q)}"

        out.table(["grid", "ranks", "decomposition", "design", "order", *(f"{p} ms (meas / pred)" for p in FDM_PHASES),
                   "worst phase"],
                  [[grid_label(r.grid), str(r.ranks), r.decomposition, r.marshaling, str(r.order),
                    *(cell(r, p) for p in FDM_PHASES), _worst(r)] for r in sub.head(TABLE_ROWS).itertuples()],
                  f"FDM phases per step, measured / {model}", total=len(sub), source="fdm_runs.parquet")
        out.para("What this shows: each phase's measured milliseconds per step (median over the repetitions, slowest "
                 "rank) beside the calibrated model's. The model's halo phase is the time a rank waits for the "
                 "others (its messages, the imbalance, and on an oversubscribed node the cores' time sharing), as "
                 "the run's halo timer measures it.", "what")


def _worst(r: Any) -> str:
    import pandas as pd

    phase = getattr(r, "worst_phase", None)
    if phase is None or pd.isna(phase):
        return ""
    return f"{phase} ({fmt_sig(r.worst_phase_error_s)})"
