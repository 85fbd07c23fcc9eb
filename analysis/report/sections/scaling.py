"""Empirical scaling fits (Extra-P's normal form) beside the analytical models, with the held-out test."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.report.common import TABLE_ROWS, FigureEntry, Inputs, cell_text, fmt_fraction, fmt_sig
from analysis.report.drawing import new_figure, save_figure
from analysis.report.section import Section, SectionOutput

#: series one figure draws (every series is in the table and in scaling_fits.parquet)
PANELS = 6


def fits_figure(fits: pd.DataFrame):
    """One panel per series (the first :data:`PANELS`): measured medians, the fit with its interval, the
    analytical models' predictions; one line style per analytical model."""
    import numpy as np

    have = fits[[isinstance(c, (list, np.ndarray)) and len(c) > 0 for c in fits["curve_p"]]] \
        if "curve_p" in fits else fits.iloc[:0]
    if have.empty:
        return None
    series = list(dict.fromkeys(have["series"].astype(str)))[:PANELS]
    cols = min(3, len(series))
    rows = -(-len(series) // cols)
    fig = new_figure(4.2 * cols, 3.4 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax, name in zip(axes, series, strict=False):
        g = have[have["series"].astype(str) == name]
        first = g.iloc[0]
        ax.fill_between(first["curve_p"], first["curve_lo_s"], first["curve_hi_s"], color="C0", alpha=0.2,
                        label="fit 95 % PI")
        ax.plot(first["curve_p"], first["curve_s"], color="C0", label=f"fit {first['hypothesis']}")
        ax.plot(first["scale_values"], first["measured_medians_s"], "o", color="k", label="measured median")
        for k, r in enumerate(g.itertuples(index=False)):
            ax.plot(r.scale_values, r.analytical_s, "x--", color=f"C{k + 1}", label=str(r.analytical_model))
        ax.set(xscale="log", xlabel=str(first["parameter"]), ylabel="seconds", title=name[:60])
        ax.title.set_fontsize(7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in axes[len(series):]:
        ax.set_visible(False)
    return fig


class ScalingSection(Section):
    title = "Empirical scaling models"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        out.heading("Empirical scaling models beside the analytical ones", anchor="scaling-fits")
        loaded = inputs.table("scaling_fits")
        if not loaded.usable:
            out.para("No series measured at three or more scales (scaling_fits.parquet is "
                     f"{loaded.status}): a one-term fit needs two scales to fit and one to leave out.", "missing")
            return out
        f = loaded.frame
        out.para("What this shows: each series (one configuration at several scales: the FDM code over ranks, a "
                 "two-processor variant over size) fitted with Extra-P's normal form c0 + c1 p^i log2(p)^j, the "
                 "hypothesis chosen by leave-one-scale-out cross-validation (SMAPE); its extrapolation to 2x and 4x "
                 "the largest scale with a 95 % prediction interval; and the held-out test - fitted on the smaller "
                 "scales, predicting the largest - beside the analytical model's error on the same run (for a bound "
                 "that error is how far the run stays from it). Only series measured at three or more scales are "
                 "fitted (two to fit, one to leave out); the held-out fit has one scale fewer, so with three it is the "
                 "constant and flagged.", "what")
        poor = int(f["poor_fit"].fillna(True).sum())
        if poor:
            out.para(f"{poor} of {len(f)} fits are flagged (fewer than 3 scales, or adjusted R² < 0.9): their "
                     "extrapolations say little.", "alert")
        header = ["case", "series", "p", "scales", "analytical model", "fit f(p) [s]", "adj. R²", "CV SMAPE",
                  "flag", "extrapolated (95 % PI)", "held-out measured [s]", "empirical [s] (95 % PI)",
                  "empirical error", "analytical error"]
        rows = []
        for r in f.head(TABLE_ROWS).itertuples(index=False):
            d = r._asdict()
            pi = (f" [{fmt_sig(d['heldout_empirical_lo_s'])}, {fmt_sig(d['heldout_empirical_hi_s'])}]"
                  if pd.notna(d.get("heldout_empirical_lo_s")) else "")
            rows.append([cell_text(d["case"]), cell_text(d["series"]), cell_text(d["parameter"]), cell_text(d["scales"]),
                         cell_text(d["analytical_model"]), cell_text(d["hypothesis"]), fmt_sig(d["adj_r2"]),
                         fmt_fraction(d["cv_smape"]), cell_text(d["fit_note"]), cell_text(d["extrapolated"]),
                         fmt_sig(d["heldout_measured_s"]), fmt_sig(d["heldout_empirical_s"]) + pi,
                         fmt_fraction(d["heldout_empirical_error"]), fmt_fraction(d["heldout_analytical_error"])])
        out.table(header, rows, "empirical fits and held-out errors", total=len(f), source="scaling_fits.parquet")
        entries = []
        for n, (case, g) in enumerate(f.groupby("case", sort=True)):
            fig = fits_figure(g)
            if fig is None:
                continue
            name = f"scaling-fits-{n}.png"
            save_figure(fig, out_dir, name)
            entries.append(FigureEntry(name, f"{case}: empirical fits beside the analytical models",
                                       "Per series: measured medians (points), the Extra-P fit over every scale "
                                       "extrapolated to 4x the largest scale (line) with its 95 % prediction interval "
                                       "(band), and each analytical model's time at the measured scales (crosses).",
                                       wide=True))
        out.figures_block(entries, "No fit to draw.")
        out.lines.append(f"empirical scaling fits: {len(f)} series, {poor} flagged")
        return out
