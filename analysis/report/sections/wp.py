"""The WP cases' section (SA, LA and plugin cases of that kind): measured vs predicted per WP, tightness per
run, alpha sweeps and the ranking-fidelity table; their lines in the summary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.report.common import (
    FIGURE_CAP,
    GIGA,
    GROUP_KEYS,
    NA,
    NA_FOOTNOTE,
    RANKING_CELLS,
    TABLE_ROWS,
    FigureEntry,
    Inputs,
    capped_note,
    cell_text,
    degenerate,
    finite,
    first_groups,
    fmt_fraction,
    fmt_interval,
    group_label,
    groupby,
    missing_columns,
    models_in,
    mpl_text,
    not_distinguishable,
    ordered,
    size_label_of,
    slug,
    truthy,
)
from analysis.report.drawing import new_figure, save_figure
from analysis.report.section import Section, SectionOutput
from analysis.report.sections.projection import projection_block

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

_WP_COLUMNS = ("variant", "perf_measured", "perf_predicted")
_ALPHA_COLUMNS = ("variant", "alpha", "perf_measured", "perf_predicted")


def _perf_bounds(sub: pd.DataFrame) -> tuple[list[float], list[float]]:
    """Lower and upper error-bar lengths of the measured perf from time_max_s / time_min_s."""
    lows, highs = [], []
    for row in sub.itertuples():
        perf = float(row.perf_measured)
        flops = float(getattr(row, "flops", float("nan")))
        t_min = float(getattr(row, "time_min_s", float("nan")))
        t_max = float(getattr(row, "time_max_s", float("nan")))
        low = perf - flops / t_max if finite(flops) and finite(t_max) and t_max > 0 else 0.0
        high = flops / t_min - perf if finite(flops) and finite(t_min) and t_min > 0 else 0.0
        lows.append(max(low, 0.0) / GIGA)
        highs.append(max(high, 0.0) / GIGA)
    return lows, highs


def wp_figure(keys: Sequence[Any], sub: pd.DataFrame) -> Figure:
    """Grouped bars, per WP: measured perf (with min/max error bars) next to each model's prediction."""
    import numpy as np

    measured = ordered(sub.drop_duplicates("variant"))
    variants = [str(v) for v in measured["variant"]]
    models = models_in(sub)
    n_bars = 1 + len(models)
    width = 0.8 / n_bars
    x = np.arange(len(variants))
    fig = new_figure()
    ax = fig.add_subplot()
    ax.bar(
        x - 0.4 + width / 2,
        measured["perf_measured"].astype(float) / GIGA,
        width,
        yerr=_perf_bounds(measured),
        capsize=3,
        color="tab:blue",
        label="measured (median, min–max)",
    )
    for i, model in enumerate(models):
        pred = sub[sub["model"] == model].drop_duplicates("variant").set_index("variant")["perf_predicted"]
        values = [float(pred.get(v, float("nan"))) / GIGA for v in variants]
        ax.bar(
            x - 0.4 + width * (i + 1.5),
            values,
            width,
            color=f"C{i + 1}",
            alpha=0.85,
            label=mpl_text(f"predicted: {model}"),
        )
    ax.set_xticks(x, [mpl_text(v) for v in variants], rotation=30 if len(variants) > 6 else 0)
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_title(mpl_text(f"measured vs predicted per WP — {group_label(keys, size_label_of(sub))}"), fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def tightness_figure(keys: Sequence[Any], sub: pd.DataFrame) -> Figure:
    """Tightness (the fraction of the bound reached) per run: one row of bars per model, the runs along a shared
    x axis and one y scale, with the 1.0 line. A row per model keeps the figure as wide as its runs, not runs x
    models (17 runs x 4 models side by side made a figure the page shrank past reading)."""
    import numpy as np

    variants_frame = ordered(sub.drop_duplicates("variant"))
    variants = [str(v) for v in variants_frame["variant"]]
    models = models_in(sub) or [None]
    x = np.arange(len(variants))
    top = np.nanmax(np.append(sub["tightness"].astype(float).to_numpy(), 1.0))
    fig = new_figure(max(7.5, 0.55 * len(variants) + 2.5), 1.0 + 1.9 * len(models))
    axes = fig.subplots(len(models), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    for i, (ax, model) in enumerate(zip(axes, models, strict=True)):
        rows = sub if model is None else sub[sub["model"] == model]
        by_variant = rows.drop_duplicates("variant").set_index("variant")["tightness"]
        values = np.array([float(by_variant.get(v, float("nan"))) for v in variants])
        bars = ax.bar(x, values, 0.7, color=f"C{i}")
        for bar, value in zip(bars, values, strict=True):
            if value > 1.0:  # the "bound" was beaten: the model or its parameters are wrong
                bar.set_edgecolor("red")
                bar.set_linewidth(2)
        ax.bar_label(bars, labels=[f"{v:.2f}" if finite(v) else NA for v in values], fontsize=7, padding=2)
        ax.axhline(1.0, color="black", ls="--", lw=1)
        ax.set_ylim(0, max(1.35, top * 1.25))  # room above the 1.0 line for the bars' labels
        ax.set_title(mpl_text(str(model or "tightness")), fontsize=9, loc="left")
        ax.grid(True, axis="y", alpha=0.3)
    axes[-1].set_xticks(x, [mpl_text(v) for v in variants], rotation=30 if len(variants) > 6 else 0)
    fig.supylabel("tightness (fraction of the bound; dashed: 1.0)", fontsize=9)
    fig.suptitle(mpl_text(f"tightness per run — {group_label(keys, size_label_of(sub))}"), fontsize=10)
    return fig


def _pdp_point(group_rows: pd.DataFrame) -> tuple[float, float] | None:
    """(alpha, measured flop/s) of the group's p-DP run, if it has one with a known alpha."""
    if missing_columns(group_rows, ("variant", "alpha", "perf_measured")):
        return None
    pdp = group_rows[group_rows["variant"] == "p-DP"]
    if not len(pdp) or not finite(pdp["alpha"].iloc[0]):
        return None
    return float(pdp["alpha"].iloc[0]), float(pdp["perf_measured"].iloc[0])


def alpha_figure(keys: Sequence[Any], sweep: pd.DataFrame, pdp: tuple[float, float] | None) -> Figure:
    """Measured and predicted perf vs alpha with the measured optimum, the model's optimum and p-DP."""
    sweep = sweep.sort_values("alpha")
    measured = sweep.drop_duplicates("alpha")
    fig = new_figure()
    ax = fig.add_subplot()
    ax.plot(measured["alpha"], measured["perf_measured"] / GIGA, "o-", color="tab:blue", label="measured")
    best = measured.loc[measured["perf_measured"].astype(float).idxmax()]
    ax.plot(
        [best["alpha"]],
        [best["perf_measured"] / GIGA],
        "*",
        color="tab:blue",
        ms=16,
        mec="black",
        label=f"measured best α = {best['alpha']:.3g}",
    )
    for i, model in enumerate(models_in(sweep) or [None]):
        rows = sweep if model is None else sweep[sweep["model"] == model]
        rows = rows.drop_duplicates("alpha")
        perf = rows["perf_predicted"].astype(float)
        name = mpl_text(str(model or "predicted"))
        ax.plot(rows["alpha"], perf / GIGA, "s--", color=f"C{i + 1}", label=f"predicted: {name}")
        if perf.notna().any():
            pick = rows.loc[perf.idxmax()]
            ax.plot(
                [pick["alpha"]],
                [pick["perf_predicted"] / GIGA],
                "D",
                color=f"C{i + 1}",
                ms=11,
                mec="black",
                label=f"model's best α = {pick['alpha']:.3g}",
            )
    if pdp is not None:
        ax.axvline(pdp[0], color="tab:green", ls=":", lw=1.5)
        ax.plot(
            [pdp[0]],
            [pdp[1] / GIGA],
            "P",
            color="tab:green",
            ms=11,
            mec="black",
            label=f"p-DP run (α = {pdp[0]:.3g}), measured",
        )
    ax.set_xlabel("α (fraction of the data on accel)")
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(bottom=0)
    ax.set_title(mpl_text(f"alpha sweep — {group_label(keys, size_label_of(sweep))}"), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _note(notes: list[str], note: str | None) -> None:
    if note:
        notes.append(note)


def tightness_overview(runs: pd.DataFrame) -> Figure | None:
    """Every run's tightness, one histogram per model (log-spaced bins): the figure past the per-group cap."""
    import numpy as np

    t = runs[["model", "tightness"]].dropna() if "model" in runs else None
    t = t[t["tightness"] > 0] if t is not None else None
    if t is None or not len(t):
        return None
    fig = new_figure(9.0, 4.0)
    ax = fig.add_subplot(111)
    lo, hi = float(t["tightness"].min()), float(t["tightness"].max())
    bins = np.geomspace(min(lo, 0.9), max(hi, 1.1), 60)
    for model, sub in t.groupby("model", sort=True):
        ax.hist(sub["tightness"], bins=bins, histtype="step", linewidth=1.6, label=f"{model} ({len(sub)} runs)")
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("tightness (fraction of the bound reached)")
    ax.set_ylabel("runs")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def _emit(fig: Figure | None, out_dir: Path, name: str, title: str, caption: str, entries: list[FigureEntry],
          wide: bool = False) -> None:
    if fig is None:
        return
    save_figure(fig, out_dir, name)
    entries.append(FigureEntry(name, title, caption, wide))


def _wp_figures(runs: pd.DataFrame, out_dir: Path, entries: list[FigureEntry], notes: list[str]) -> None:
    missing = missing_columns(runs, (*_WP_COLUMNS, "axis_wp"))
    if missing:
        notes.append(f"runs.parquet lacks {', '.join(missing)}: no WP figures.")
        return
    wp = runs[truthy(runs["axis_wp"])]
    groups, total = first_groups(wp, GROUP_KEYS)
    _note(notes, capped_note("WP figures", total))
    for keys, sub in groups:
        caption = (
            "Measured performance of each workload partition (median; error bar: fastest and "
            "slowest repetition) next to the model's predicted bound."
        )
        _emit(wp_figure(keys, sub), out_dir, f"wp-{slug(*keys)}.png", group_label(keys, size_label_of(sub)), caption,
              entries)


def _tightness_figures(
    runs: pd.DataFrame, out_dir: Path, entries: list[FigureEntry], notes: list[str]
) -> None:
    missing = missing_columns(runs, ("variant", "tightness"))
    if missing:
        notes.append(f"runs.parquet lacks {', '.join(missing)}: no tightness figures.")
        return
    groups, total = first_groups(runs, GROUP_KEYS)
    _note(notes, capped_note("tightness figures", total, overview=True))
    if total > FIGURE_CAP:
        _emit(tightness_overview(runs), out_dir, "tightness-every-group.png", f"every group ({total})",
              "Tightness of every run of every group, per model: how many runs reach which fraction of their "
              "bound (log scale; past 1.0 the run beat the bound).", entries)
    for keys, sub in groups:
        caption = (
            "Tightness = the fraction of the bound each run reached (measured / predicted performance). 1.0 means the "
            "bound is reached; bars outlined in red exceed 1.0, i.e. the run beat the model's 'upper bound'. One row per "
            "model; a gap is a run the model does not predict."
        )
        _emit(
            tightness_figure(keys, sub),
            out_dir,
            f"tightness-{slug(*keys)}.png",
            group_label(keys, size_label_of(sub)),
            caption,
            entries,
            wide=True,
        )


def _alpha_figures(runs: pd.DataFrame, out_dir: Path, entries: list[FigureEntry], notes: list[str]) -> None:
    missing = missing_columns(runs, (*_ALPHA_COLUMNS, "axis_alpha"))
    if missing:
        notes.append(f"runs.parquet lacks {', '.join(missing)}: no alpha-sweep figures.")
        return
    sweep_rows = runs[truthy(runs["axis_alpha"])]
    sweeps, total = first_groups(sweep_rows, GROUP_KEYS)
    _note(notes, capped_note("alpha-sweep figures", total))
    for keys, sweep in sweeps:
        sweep = sweep[sweep["alpha"].notna() & sweep["perf_measured"].notna()]
        if not len(sweep):
            continue
        # the group's other runs (its p-DP point); keyed by slug: group keys may hold NaN
        group = next((sub for k, sub in groupby(runs[runs["size"] == keys[3]] if finite(keys[3]) else runs,
                                                 GROUP_KEYS) if slug(*k) == slug(*keys)), sweep[:0])
        pdp = _pdp_point(group)
        caption = (
            "Measured (blue) and predicted performance over the swept data fractions α; the star is "
            "the measured best α, the diamond the model's pick among the swept values, and the green "
            "cross and dotted line the p-DP run at its α (if any). Ranking fidelity asks whether "
            "they coincide."
        )
        _emit(
            alpha_figure(keys, sweep, pdp),
            out_dir,
            f"alpha-{slug(*keys)}.png",
            group_label(keys, size_label_of(sweep)),
            caption,
            entries,
        )


FIDELITY_COLUMNS: tuple[str, ...] = (
    "study",
    "case",
    "platform",
    "size",
    "size_label",
    "axis",
    "quantity",
    "model",
    "n_alternatives",
    "kendall_tau",
    "pairwise_agreement",
    "top1_agreement",
    "selection_penalty",
    "profile_error",
    "best_measured",
    "best_measured_noise_aware",
    "best_predicted",
    "top1_noise_aware",
    "selection_penalty_noise_aware",
    "tightness_median",
    "tightness_min",
    "tightness_max",
)


_FRACTION_COLUMNS = frozenset(
    {
        "kendall_tau",
        "pairwise_agreement",
        "top1_agreement",
        "selection_penalty",
        "profile_error",
        "tightness_median",
        "tightness_min",
        "tightness_max",
        "top1_noise_aware",
        "selection_penalty_noise_aware",
    }
)


def _cell(column: str, value: Any, row: Any = None) -> str:
    label = degenerate(row) if row is not None and column in RANKING_CELLS else None
    if label:
        return label
    if row is not None and f"{column}_lo" in row:
        return fmt_interval(row, column)
    if column == "best_measured_noise_aware" and row is not None and not_distinguishable(row):
        return f"not distinguishable ({cell_text(value)})"
    if column in _FRACTION_COLUMNS:
        return fmt_fraction(value)
    if column in ("size", "n_alternatives") and finite(value):
        return str(int(value))
    return cell_text(value)


#: Column headers a reader reads (the Parquet file keeps the column names).
HEADERS = {"size_label": "size", "n_alternatives": "n", "kendall_tau": "Kendall τ", "pairwise_agreement": "pairwise",
           "top1_agreement": "top-1", "selection_penalty": "selection penalty", "profile_error": "profile error",
           "best_measured": "best measured", "best_measured_noise_aware": "best within noise",
           "best_predicted": "model's pick", "top1_noise_aware": "top-1 within noise",
           "selection_penalty_noise_aware": "penalty within noise", "tightness_median": "tightness median",
           "tightness_min": "tightness min", "tightness_max": "tightness max"}


def fidelity_rows(fidelity: pd.DataFrame, limit: int = TABLE_ROWS) -> tuple[list[str], list[list[str]]]:
    """Header and formatted rows of the fidelity table (columns absent from the file are left out; the size as
    its label where there is one; the first ``limit`` rows in key order)."""
    columns = [c for c in FIDELITY_COLUMNS if c in fidelity.columns
               and not (c == "size" and "size_label" in fidelity.columns)]
    present_keys = [c for c in (*GROUP_KEYS, "axis", "model") if c in fidelity.columns]
    ordered = fidelity.sort_values(present_keys, na_position="last") if present_keys else fidelity
    rows = [[_cell(c, row[c], row) for c in columns] for _, row in ordered.head(limit).iterrows()]
    return [HEADERS.get(c, c) for c in columns], rows


def _tightness_lines(runs: pd.DataFrame | None) -> list[str]:
    if runs is None or missing_columns(runs, ("tightness",)):
        return ["  (no tightness data)"]
    lines = []
    groups, total = first_groups(runs, GROUP_KEYS, TABLE_ROWS)
    for keys, sub in groups:
        for model in models_in(sub) or [None]:
            values = (
                (sub if model is None else sub[sub["model"] == model])["tightness"].astype(float).dropna()
            )
            if not len(values):
                lines.append(f"  {group_label(keys, size_label_of(sub))} [{model}]: {NA}")
                continue
            lines.append(
                f"  {group_label(keys, size_label_of(sub))} [{model}]: {values.median():.3f} "
                f"[{values.min():.3f}–{values.max():.3f}] over {len(values)} runs"
            )
    if total > TABLE_ROWS:
        lines.append(f"  ... and {total - TABLE_ROWS} more groups (runs.parquet)")
    return lines or ["  (no runs)"]


def _fidelity_lines(fidelity: pd.DataFrame | None) -> list[str]:
    if fidelity is None or not len(fidelity):
        return ["  (no fidelity data)"]
    lines = []
    for _, row in fidelity.sort_values(
        [c for c in (*GROUP_KEYS, "axis", "model") if c in fidelity.columns]
    ).head(TABLE_ROWS).iterrows():
        keys = [row.get(k) for k in GROUP_KEYS]
        lines.append(
            f"  {group_label(keys, row.get('size_label'))} | axis {cell_text(row.get('axis'))} | "
            f"{cell_text(row.get('model'))}: "
            f"kendall tau {fmt_interval(row, 'kendall_tau')}, "
            f"top-1 {fmt_interval(row, 'top1_agreement')} (noise-aware {fmt_fraction(row.get('top1_noise_aware'))}), "
            f"selection penalty {fmt_interval(row, 'selection_penalty')}, "
            f"best measured {cell_text(row.get('best_measured'))} vs predicted {cell_text(row.get('best_predicted'))}"
            + (" (alternatives not distinguishable)" if not_distinguishable(row) else "")
        )
    if len(fidelity) > TABLE_ROWS:
        lines.append(f"  ... and {len(fidelity) - TABLE_ROWS} more rows (fidelity.parquet)")
    return lines


class WPSection(Section):
    """Per group (study, case, platform, size): WP bars, tightness bars, the alpha sweep; the fidelity table."""

    title = "Workload partitions"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        runs = inputs.frame("runs")
        figs: dict[str, list[FigureEntry]] = {"wp": [], "tightness": [], "alpha": []}
        if runs is None:
            out.notes.append(f"runs.parquet is {inputs.runs.status}: no per-run figures.")
        else:
            _wp_figures(runs, out_dir, figs["wp"], out.notes)
            _tightness_figures(runs, out_dir, figs["tightness"], out.notes)
            _alpha_figures(runs, out_dir, figs["alpha"], out.notes)
        out.heading("Measured vs predicted per WP", anchor="wp")
        out.figures_block(figs["wp"], "No WP runs to show.")
        out.heading("Tightness per run")
        out.figures_block(figs["tightness"], "No tightness data to show.")
        out.heading("Alpha sweeps")
        out.figures_block(figs["alpha"], "No alpha-sweep runs to show.")
        out.heading("Ranking fidelity")
        fidelity = inputs.fidelity
        if not fidelity.usable:
            out.para(f"fidelity.parquet is {fidelity.status}: no ranking-fidelity table.", "missing")
        else:
            header, rows = fidelity_rows(fidelity.frame)
            out.table(header, rows, "ranking fidelity per group, axis and model", total=len(fidelity.frame),
                      source="fidelity.parquet")
            out.para("What this shows: per group and axis, how well the model orders the alternatives (Kendall tau-b, "
                     "pairwise agreement, whether its top pick is the measured best, and the time lost by following "
                     "its pick), and how tight its bound is.", "what")
            out.para(NA_FOOTNOTE, "what", small=True)
        projection_block(out, inputs.frame("projection"))
        out.lines += ["", "tightness per group (median [min–max]):", *_tightness_lines(runs)]
        out.lines += ["", "ranking fidelity per group and axis:", *_fidelity_lines(inputs.frame("fidelity"))]
        return out
