"""The PEACH case's section: measured vs predicted rate (and efficiency) over each curve's alpha grid, with the
optima, and the per-curve fidelity table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from analysis.models.peach import CURVE_KEYS, MODEL
from analysis.report.common import (
    TABLE_ROWS,
    FigureEntry,
    Inputs,
    capped_note,
    finite,
    first_groups,
    fmt_interval,
    fmt_sig,
)
from analysis.report.drawing import new_figure, save_figure
from analysis.report.section import Section, SectionOutput


def peach_figure(runs: Any, fid: Any) -> Any:
    """Measured vs predicted rate (and eta, when measured) against alpha, with the optima marked."""
    has_eta = runs["eta_measured"].notna().any()
    fig = new_figure(10 if has_eta else 6, 3.8)
    axes = fig.subplots(1, 2 if has_eta else 1, squeeze=False)
    every = runs.sort_values("alpha")
    own = every["model"].astype(str) == MODEL if "model" in every else np.ones(len(every), dtype=bool)
    r = every[own] if own.any() else every.drop_duplicates("alpha")
    unit = str(r["work_unit"].iloc[0])
    scale, label = (1e9, f"G{unit}/s")
    ax = axes[0][0]
    ax.plot(r["alpha"], r["rate_measured"] / scale, "o-", label="measured (median)")
    ax.plot(r["alpha"], r["rate_predicted"] / scale, "s--", label="PEACH eq. 7")
    for k, (name, other) in enumerate(every[~own].groupby("model", sort=True) if "model" in every else []):
        ax.plot(other["alpha"], other["rate_predicted"] / scale, ("^:", "v-.", "x:")[k % 3], label=str(name))
    fid = fid[fid["model"].astype(str) == MODEL] if "model" in fid else fid
    for q, style in (("time", ":"),):
        f = fid[fid["quantity"] == q]
        if len(f):
            ax.axvline(float(f["alpha_best_measured"].iloc[0]), color="C0", ls=style, lw=1, label="best measured α")
            ax.axvline(float(f["alpha_continuous"].iloc[0]), color="C1", ls=style, lw=1, label="α_perf (eq. 13)")
    ax.set_xlabel("alpha (fraction of W on the accel)")
    ax.set_ylabel(f"rate, {label}")
    ax.legend(fontsize=7)
    if has_eta:
        ax = axes[0][1]
        ax.plot(r["alpha"], r["eta_measured"] / scale, "o-", label="measured")
        ax.plot(r["alpha"], r["eta_predicted"] / scale, "s--", label="PEACH eq. 12")
        f = fid[fid["quantity"] == "energy"]
        if len(f):
            ax.axvline(float(f["alpha_best_measured"].iloc[0]), color="C0", ls=":", lw=1, label="best measured α")
            ax.axvline(float(f["alpha_continuous"].iloc[0]), color="C1", ls=":", lw=1, label="α_eff (eq. 15)")
        ax.set_xlabel("alpha")
        ax.set_ylabel(f"efficiency η, G{unit}/J")
        ax.legend(fontsize=7)
    return fig


def error_overview(fid: Any) -> Any:
    """Every curve's median interior relative error, by time and by energy (the figure past the cap)."""
    if fid is None or "error_median" not in fid or not fid["error_median"].notna().any():
        return None
    fig = new_figure(7.5, 3.6)
    ax = fig.add_subplot(111)
    for q, sub in fid.groupby("quantity", sort=True):
        e = sub["error_median"].dropna()
        if len(e):
            ax.hist(e, bins=50, histtype="step", linewidth=1.6, label=f"by {q} ({len(e)} curves)")
    ax.set_xlabel("median relative error at the interior alphas")
    ax.set_ylabel("curves")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def _frequency_note(runs: Any) -> str:
    freqs = sorted(set(runs["frequency"].astype(str)))
    if freqs == ["default"]:
        return ("All PEACH runs used the processors' default frequencies (no (f_C, f_G) pairs configured; a pair this "
                "platform cannot set is recorded as a skipped run, listed with the failed runs).")
    return ""




class PEACHSection(Section):
    title = "PEACH"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        out.heading("PEACH: splitting a workload by alpha", anchor="peach")
        peach_runs, peach_fid = inputs.frame("peach_runs"), inputs.frame("peach_fidelity")
        if peach_runs is None:
            out.para("No PEACH runs with both end points (alpha = 0 and 1) to calibrate from.", "missing")
            return out
        entries = []
        curves, total = first_groups(peach_runs, CURVE_KEYS)
        note = capped_note("PEACH curves", total, overview=True)
        if note:
            out.notes.append(note)
            fig = error_overview(peach_fid)
            if fig is not None:
                save_figure(fig, out_dir, "peach-every-curve.png")
                entries.append(FigureEntry("peach-every-curve.png", f"every curve ({total})", (
                    "PEACH's median relative error at the interior points of every curve, by time and by energy: "
                    "the figure past the per-curve cap.")))
        for n, (k, g) in enumerate(curves):
            f = peach_fid if peach_fid is not None else g.iloc[:0]
            for key, val in zip(CURVE_KEYS, k, strict=True):
                f = f[f[key] == val] if key in f else f
            name = f"peach-{n}.png"
            save_figure(peach_figure(g, f), out_dir, name)
            entries.append(FigureEntry(name, f"{k[0]} / {k[1]} / {k[2]} n={int(k[3])} / frequency {k[4]}", (
                "the measured rate over the alpha grid against PEACH's eq. 7 with R_C and R_G from the alpha = 0 and "
                "1 runs; the vertical lines are the measured best alpha and the model's continuous optimum "
                "(alpha_perf, and alpha_eff when energy was measured).")))
        out.figures_block(entries, "No PEACH curves.")
        rows = []
        for r in (peach_fid.head(TABLE_ROWS).itertuples() if peach_fid is not None else []):
            rows.append([r.workload, str(int(r.size)) if finite(r.size) else "n/a", r.frequency, r.model, r.quantity,
                         str(r.n_alternatives),
                         fmt_interval(r, "kendall_tau"), fmt_interval(r, "top1_agreement"),
                         fmt_interval(r, "selection_penalty"),
                         r.best_measured, r.best_predicted, fmt_sig(r.alpha_continuous), fmt_sig(r.error_median),
                         fmt_sig(r.error_max), fmt_sig(r.R_C), fmt_sig(r.R_G)])
            out.lines.append(f"PEACH {r.study} {r.workload} n={int(r.size)} ({r.frequency}), {r.model} by {r.quantity}: "
                             "kendall "
                             f"tau {fmt_interval(r, 'kendall_tau')}, top-1 {fmt_interval(r, 'top1_agreement')}, "
                             "best measured "
                             f"{r.best_measured} vs predicted {r.best_predicted} (continuous "
                             f"{fmt_sig(r.alpha_continuous)}), interior error median {fmt_sig(r.error_median)}")
        out.heading("PEACH fidelity per curve", 3)
        out.table(["workload", "n", "frequency", "model", "by", "n", "kendall tau", "top-1", "selection penalty",
                   "best measured", "best predicted", "α continuous", "rel. error median (interior)", "max", "R_C",
                   "R_G"], rows, "PEACH fidelity", total=len(peach_fid) if peach_fid is not None else 0,
                  source="peach_fidelity.parquet")
        out.para("What this shows: how well PEACH orders the alpha grid by time (and by energy where it was "
                 "measured), whether it picks the measured best alpha, and the relative error of its predictions at "
                 "the interior points (the end points calibrate the model and reproduce themselves). PerDome/PeaPaw's bound for "
                 "each run's split and Panwar's projection score the same curves from the runs' counted work per "
                 "processor (every point is a prediction for them). Rates are W/s: "
                 "flop/s for MatrixMultiply, byte/s for MatrixTranspose.", "what")
        note = _frequency_note(peach_runs)
        if note:
            out.para(note)
        return out
