"""Platform parameters (as rates, with spread, samples and fit quality) and each processor's roofline."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.models.perop import TRUSTED_SPREAD
from analysis.report.common import (
    GIGA,
    NA,
    PROCESSORS,
    FigureEntry,
    Inputs,
    PlatformFile,
    cell_text,
    finite,
    fmt_sig,
    missing_columns,
    mpl_text,
    param_value,
    plain_log_ticks,
    rate_range,
    slug,
    variant_colors,
    variant_sort_key,
)
from analysis.report.drawing import new_figure, save_figure
from analysis.report.section import Section, SectionOutput
from sims.fit import POOR_R2

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

INTENSITY_RANGE = (2.0**-6, 2.0**8)  # flop/byte
HEADER = ["platform", "processor", "backend / placement", "peak 1/t_f (min–max)", "bandwidth 1/t_b (min–max)",
          "other ceilings (min–max)", "balance t_b/t_f", "how obtained", "n samples (t_f / t_b)", "e_f", "e_b", "p_s",
          "intensity-sweep roofline fit"]


def _n_samples(param: Any) -> str:
    if not isinstance(param, dict):
        return NA
    samples = param.get("samples")
    if isinstance(samples, list) and samples:
        return str(len(samples))
    reps = param.get("repetitions")
    return str(reps) if reps is not None else NA


def _rate_cell(param: Any, unit: str) -> str:
    """``52.0 (49.1–53.3) GFLOP/s``: 1/value, and the spread of the measured rates."""
    value = param_value(param)
    if not value:
        return NA
    text = f"{1.0 / value / GIGA:.3g}"
    spread = rate_range(param)
    if spread:
        text += f" ({spread[0] / GIGA:.3g}–{spread[1] / GIGA:.3g})"
    return f"{text} {unit}"


def _energy_cell(param: Any, unit: str) -> str:
    value = param_value(param)
    return "not measured (no meter)" if value is None else f"{value:.3g} {unit}"


def _obtained(param: Any) -> str:
    if not isinstance(param, dict):
        return NA if param is None else "given"
    shown = cell_text(param.get("obtained"))
    r2 = param.get("r2")
    return f"{shown} (R²={r2:.3f})" if finite(r2) else shown


def platform_rows(platforms: Sequence[PlatformFile]) -> list[list[str]]:
    """One table row per (platform, processor) with the machine parameters in readable units."""
    from analysis.storage.platforms import energy_fit_problem

    rows = []
    for plat in platforms:
        for proc_name, proc in sorted(plat.data["processors"].items(), key=lambda kv: _proc_order(kv[0])):
            proc = proc if isinstance(proc, dict) else {}
            t_f, t_b = param_value(proc.get("t_f")), param_value(proc.get("t_b"))
            placement = proc.get("cores", proc.get("device"))
            unused = " (unphysical fit: not used)" if energy_fit_problem(proc) else ""
            rows.append(
                [
                    plat.name,
                    str(proc_name),
                    f"{cell_text(proc.get('backend'))} {cell_text(placement)}",
                    _rate_cell(proc.get("t_f"), "GFLOP/s"),
                    _rate_cell(proc.get("t_b"), "GB/s"),
                    "; ".join([*(f"{label}: {_rate_cell(param, 'GFLOP/s')}" for label, param in _ceilings(proc)),
                               *(f"{label} bandwidth: {_rate_cell(param, 'GB/s')}"
                                 for label, param in _ceilings(proc, bandwidth=True))]) or NA,
                    f"{t_b / t_f:.3g} flop/B" if t_f and t_b else NA,
                    f"t_f: {_obtained(proc.get('t_f'))}; t_b: {_obtained(proc.get('t_b'))}",
                    f"{_n_samples(proc.get('t_f'))} / {_n_samples(proc.get('t_b'))}",
                    *(_energy_cell(proc.get(k), unit) + unused for k, unit in (("e_f", "J/flop"), ("e_b", "J/B"),
                                                                                 ("p_s", "W"))),
                    _sweep_fit_cell(proc.get("roofline_fit")),
                ]
            )
    return rows


def replicate_rows(plat: PlatformFile) -> tuple[list[list[str]], list[str]]:
    """The parameters a pooled platform file gives per replicate (:mod:`sims.bench.replicates`): one row each, in
    the file's order, and the names of those whose replicates disagree."""
    from sims.platform_file import parameters

    if not isinstance(plat.data.get("replicates"), dict):
        return [], []
    rows, flagged = [], []
    for path, param in parameters(plat.data):
        reps = param.get("replicates")
        if not isinstance(reps, list) or len(reps) < 2 or path[-1] in ("latency_inter", "t_net_inter"):
            continue
        name = ".".join(p for p in path if p not in ("processors", "ceilings"))
        spread = param.get("replicate_spread")
        bad = bool(param.get("replicates_disagree"))
        if bad:
            flagged.append(name)
        rows.append([name, fmt_sig(param.get("value")), ", ".join(fmt_sig(v) for v in reps),
                     f"{spread:.3f}" if isinstance(spread, (int, float)) else NA, "yes" if bad else ""])
    return rows, flagged


def _sweep_fit_cell(fit: Any) -> str:
    """The intensity sweep's fitted roofline: rates, balance, R², flagged when the fit is poor."""
    if not isinstance(fit, dict):
        return NA
    try:
        f_rate, b_rate = 1.0 / float(fit["t_f"]["value"]), 1.0 / float(fit["t_b"]["value"])
        r2 = float(fit["r2"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return NA
    text = (f"{f_rate / GIGA:.3g} GFLOP/s, {b_rate / GIGA:.3g} GB/s, balance {f_rate / b_rate:.3g} flop/B, "
            f"R²={r2:.3f} over {len(fit.get('samples') or [])} intensities")
    return ("POOR FIT: " + text) if fit.get("poor_fit") else text


def _proc_order(name: str) -> tuple[int, str]:
    return (PROCESSORS.index(name) if name in PROCESSORS else len(PROCESSORS), name)


def _roofline_points(runs: pd.DataFrame | None, platform: str, side: str) -> pd.DataFrame | None:
    """The run parts measured on one processor: columns variant, alpha, intensity, perf (flop/s)."""
    x_col, y_col = f"intensity_{side}", f"perf_{side}_measured"
    if runs is None or missing_columns(runs, ("platform", "variant", x_col, y_col)):
        return None
    sub = runs[runs["platform"] == platform]
    if "run_id" in sub.columns:
        sub = sub.drop_duplicates("run_id")
    points = sub.assign(intensity=sub[x_col].astype(float), perf=sub[y_col].astype(float))
    points = points[(points["intensity"] > 0) & (points["perf"] > 0)]
    if "alpha" not in points.columns:
        points = points.assign(alpha=float("nan"))
    return points[["variant", "alpha", "intensity", "perf"]]


def _ceilings(proc: dict[str, Any], bandwidth: bool = False) -> list[tuple[str, Any]]:
    """``("gemm float32", parameter)`` for every compute ceiling a processor's characterisation measured (with
    ``bandwidth``: every bandwidth ceiling of an access class, e.g. ``transpose float32``, instead)."""
    from sims.vocab import BANDWIDTH_CLASSES

    out = []
    for cls, by_dtype in (proc.get("ceilings") or {}).items():
        if (cls in BANDWIDTH_CLASSES) != bandwidth:
            continue
        for dt, param in (by_dtype or {}).items() if isinstance(by_dtype, dict) else ():
            if param_value(param):
                out.append((f"{cls} {dt}", param))
    return out


def _draw_ceiling(ax: Axes, t_f: float, t_b: float, proc: dict[str, Any]) -> None:
    import numpy as np

    intensity = np.logspace(math.log2(INTENSITY_RANGE[0]), math.log2(INTENSITY_RANGE[1]), 200, base=2.0)
    ceiling = np.minimum(1.0 / t_f, intensity / t_b) / GIGA
    ax.plot(intensity, ceiling, color="black", lw=2, label="ceiling min(1/t_f, I/t_b) (vector float32)")
    styles = ["--", "-.", ":", (0, (5, 1, 1, 1))]
    for k, (label, param) in enumerate(_ceilings(proc)):  # the other kernel classes' ceilings under the same bandwidth
        rate = 1.0 / param_value(param)
        ax.plot(intensity, np.minimum(rate, intensity / t_b) / GIGA, color="0.3", lw=1.2, ls=styles[k % len(styles)],
                label=f"{label} ceiling {rate / GIGA:.3g} GFLOP/s")
    for label, param in _ceilings(proc, bandwidth=True):  # strided access: a lower roof of its own
        rate = 1.0 / param_value(param)
        ax.plot(intensity, np.minimum(1.0 / t_f, intensity * rate) / GIGA, color="tab:red", lw=1, ls=":",
                label=f"{label} bandwidth {rate / GIGA:.3g} GB/s")
    f_range, b_range = rate_range(proc.get("t_f")), rate_range(proc.get("t_b"))
    if f_range and b_range:
        low = np.minimum(f_range[0], intensity * b_range[0]) / GIGA
        high = np.minimum(f_range[1], intensity * b_range[1]) / GIGA
        ax.fill_between(intensity, low, high, color="grey", alpha=0.25, label="spread of measured rates")
    ridge = t_b / t_f
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.plot([ridge], [1.0 / t_f / GIGA], "o", color="black", ms=6)
    ax.annotate(
        f"ridge I = {ridge:.3g} flop/B",
        (ridge, 1.0 / t_f / GIGA),
        textcoords="offset points",
        xytext=(6, 6),
        fontsize=8,
    )


def roofline_figure(plat: PlatformFile, side: str, runs: pd.DataFrame | None) -> Figure | None:
    """Log-log roofline of one processor with the measured points of the run parts mapped to it."""
    proc = plat.data["processors"].get(side)
    if not isinstance(proc, dict):
        return None
    t_f, t_b = param_value(proc.get("t_f")), param_value(proc.get("t_b"))
    if not t_f or not t_b:
        return None
    fig = new_figure()
    ax = fig.add_subplot()
    _draw_ceiling(ax, t_f, t_b, proc)
    fit = proc.get("roofline_fit")
    if isinstance(fit, dict) and fit.get("samples"):
        sweep_i = [float(s["intensity"]) for s in fit["samples"]]
        sweep_p = [float(s["flops"]) / float(s["time_median_s"]) / GIGA for s in fit["samples"]]
        ax.plot(sweep_i, sweep_p, "s", color="0.45", ms=4, zorder=2,
                label=mpl_text(f"intensity sweep (fit R²={float(fit['r2']):.3f})"))
    points = _roofline_points(runs, plat.name, side)
    if points is not None and len(points):
        order = sorted(
            points.drop_duplicates("variant").itertuples(), key=lambda r: variant_sort_key(r.variant, r.alpha)
        )
        variants = [str(r.variant) for r in order]
        colors = variant_colors(variants)
        for variant in variants:
            sel = points[points["variant"] == variant]
            ax.scatter(
                sel["intensity"],
                sel["perf"] / GIGA,
                color=colors[variant],
                s=30,
                edgecolor="black",
                lw=0.4,
                zorder=3,
                label=mpl_text(variant),
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plain_log_ticks(ax)
    ax.set_xlabel("operational intensity I (flop/byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    backend = cell_text(proc.get("backend"))
    ax.set_title(mpl_text(f"roofline: {plat.name} — {side} ({backend})"), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=2 if len(ax.get_legend_handles_labels()[0]) > 8 else 1)
    return fig


class PlatformsSection(Section):
    """The machine parameters the models use, and a roofline per processor with the runs' points on it."""

    title = "Platform parameters"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        out.heading("Platform parameters")
        if inputs.platforms:
            out.table(HEADER, platform_rows(inputs.platforms))
        for problem in inputs.platform_problems:
            out.para(problem, "missing")
        for plat in inputs.platforms:
            rows, flagged = replicate_rows(plat)
            if not rows:
                continue
            count = (plat.data.get("replicates") or {}).get("count")
            if flagged:
                out.para(f"{plat.name}: the characterisation replicates disagree beyond their own noise on "
                         f"{', '.join(flagged)} (every sample of one replicate lies farther from the other's than "
                         "either replicate's own samples spread): the machine moved between them, and every figure "
                         "predicted from these parameters carries that spread in its interval.", "alert")
                out.lines.append(f"{plat.name}: replicates disagree on {', '.join(flagged)}")
            else:
                out.para(f"{plat.name}: {count} characterisation replicates, which agree within their own noise on "
                         "every parameter with samples.", "good")
            out.table(["parameter", "pooled", "each replicate", "largest / smallest", "disagree"], rows)
        for plat in inputs.platforms:
            for name, size in (plat.data.get("sizing") or {}).items():
                if isinstance(size, dict) and size.get("capped"):
                    out.para(f"{plat.name}/{name}: the triad's arrays were capped by the memory budget at "
                             f"{size.get('triad_bytes_per_array', 0) / 2**20:.0f} MiB each (the cache rule wanted "
                             f"{size.get('wanted_bytes_per_array', 0) / 2**20:.0f} MiB for an LLC of "
                             f"{size.get('llc_bytes', 0) / 2**20:.0f} MiB; {size.get('limit_source')})"
                             + ("; below 4 x the LLC, the triad partly measures the cache." if
                                size.get("below_stream_rule") else "."), "alert")
            for name, proc in plat.data.get("processors", {}).items():
                if not isinstance(proc, dict):
                    continue
                fit = proc.get("roofline_fit")
                ops = (proc.get("operations") or {}).get("fits")
                poor_ops = sorted(k for k, f in (ops or {}).items() if f.get("r2") is None or f["r2"] < POOR_R2)
                if poor_ops:
                    out.para(f"{plat.name}/{name}: per-operation cost fits with R² below {POOR_R2}: "
                             f"{', '.join(poor_ops)} (their tau is shown but does not describe the operation well).",
                             "alert")
                moved = sorted((k, f["tau_spread"]) for k, f in (ops or {}).items()
                               if round(f.get("tau_spread") or 0, 2) > TRUSTED_SPREAD)  # as shown
                if moved:
                    out.para(f"{plat.name}/{name}: per-operation costs that moved more than {TRUSTED_SPREAD}x between "
                             f"the characterisation's repetitions: "
                             f"{', '.join(f'{k} ({v:.2f}x)' for k, v in moved)} (the machine's speed changed while "
                             "they were measured; predictions from them are uncertain by as much).", "alert")
                if isinstance(fit, dict) and fit.get("poor_fit"):
                    out.para(f"{plat.name}/{name}: the roofline fitted to the intensity sweep is poor "
                             f"(R²={fmt_sig(fit.get('r2'))}): its t_f/t_b do not describe this processor's kernels well.", "alert")
        out.para("What this shows: the machine parameters the models use, as rates; the balance t_b/t_f is the ridge "
                 "intensity (flop/byte) above which a processor is compute-bound. The compute ceilings are what each kernel "
                 "class reaches (element-wise vector FMA chains, the backend's GEMM; float32 and float64): each case "
                 "bounds each phase by the ceiling of the kernels it runs - an LA or PEACH product against GEMM with "
                 "its compulsory traffic - and the figures draw them as dashed roofs. The last column is the roofline "
                 "least-squares fitted to a stream kernel swept over 2.4 decades of intensity (its points are the grey "
                 "squares in the roofline figures).", "what")
        runs = inputs.frame("runs")
        entries: list[FigureEntry] = []
        for plat in inputs.platforms:
            for side in PROCESSORS:
                fig = roofline_figure(plat, side, runs)
                if fig is None:
                    out.notes.append(f"{plat.name}/{side}: no roofline (processor or its t_f / t_b missing).")
                    continue
                name = f"roofline-{slug(plat.name, side)}.png"
                save_figure(fig, out_dir, name)
                entries.append(FigureEntry(name, f"{plat.name} — {side}", (
                    f"Roofline of the {side} processor from its measured t_f and t_b (black; grey band: spread of the "
                    f"benchmark rates); dots are the parts of runs executed on {side}, at their own intensity. Dots "
                    "above the ceiling mean the parameters underestimate the machine.")))
        out.heading("Rooflines")
        out.figures_block(entries, "No roofline: no platform with t_f and t_b.")
        return out
