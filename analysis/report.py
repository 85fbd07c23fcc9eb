"""Render the validation outputs, platform files and quarantine into one HTML page with PNG figures."""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import html
import io
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sims.atomic import atomic_write_bytes

if TYPE_CHECKING:  # matplotlib and pandas are imported inside the functions that need them
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: The WP variants in the order the papers list them; DP(alpha) variants follow, by alpha.
WP_ORDER: tuple[str, ...] = ("CO", "GO", "p-DP", "CP", "CP-reverse")
#: Keys that identify one comparison group in runs.parquet and fidelity.parquet.
GROUP_KEYS: tuple[str, ...] = ("study", "case", "platform", "size")
#: File-name prefixes of the figures this module writes (stale ones are pruned on rebuild).
FIGURE_PREFIXES: tuple[str, ...] = ("roofline-", "wp-", "tightness-", "alpha-", "fdm-", "peach-")
PROCESSORS: tuple[str, ...] = ("host", "accel")

_INTENSITY_RANGE = (2.0**-6, 2.0**8)  # flop/byte
_GIGA = 1e9
_NA = "n/a"
_NA_FOOTNOTE = (
    "n/a: the metric is undefined for that group, not zero. Kendall tau-b needs at least two "
    "alternatives and is undefined when all measured (or all predicted) values are tied; the "
    "other metrics need at least one alternative with both a measured and a predicted value "
    "(a missing platform parameter leaves the model without a prediction)."
)


# --------------------------------------------------------------------------- data holders


@dataclass(frozen=True)
class Loaded:
    """One input table and what happened when reading it.

    Attributes
    ----------
    name : str
        File name, e.g. ``"runs.parquet"``.
    frame : pandas.DataFrame or None
        The rows; None when the file is missing or unreadable.
    status : str
        ``"ok"``, ``"missing"``, ``"empty"`` or ``"unreadable: <reason>"``.
    """

    name: str
    frame: pd.DataFrame | None
    status: str

    @property
    def usable(self) -> bool:
        """True when there is at least one row to show."""
        return self.frame is not None and len(self.frame) > 0


@dataclass(frozen=True)
class PlatformFile:
    """A characterised platform file (``results/platforms/<name>.yaml``)."""

    name: str
    source: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Quarantined:
    """One quarantined raw record: its path relative to the quarantine dir and the reason."""

    file: str
    reason: str


@dataclass(frozen=True)
class FigureEntry:
    """A written figure: file name (relative to the report dir), title and a "what this shows" line."""

    file: str
    title: str
    caption: str


@dataclass
class Inputs:
    """Everything the report reads."""

    runs: Loaded
    fidelity: Loaded
    failed: Loaded
    summary: dict[str, Any] | None
    summary_status: str
    platforms: list[PlatformFile]
    platform_problems: list[str] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    quarantine_status: str = "ok"


# --------------------------------------------------------------------------- small helpers


def _finite(x: Any) -> bool:
    """True for a real finite number (bools and None excluded)."""
    if x is None or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fmt_fraction(x: Any) -> str:
    """Format a fraction with 3 decimals; bools as yes/no; missing or NaN as ``n/a``.

    Examples
    --------
    >>> fmt_fraction(0.33333), fmt_fraction(float("nan")), fmt_fraction(True)
    ('0.333', 'n/a', 'yes')
    """
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return "yes" if x else "no"
    return f"{float(x):.3f}" if _finite(x) else _NA


def fmt_sig(x: Any, digits: int = 3) -> str:
    """Format a number with ``digits`` significant digits; missing or NaN as ``n/a``."""
    return f"{float(x):.{digits}g}" if _finite(x) else _NA


def _text(x: Any) -> str:
    """Plain text for a cell that may be missing."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return _NA
    try:
        import pandas as pd

        if pd.isna(x):
            return _NA
    except (TypeError, ValueError):
        pass
    return str(x)


def _mpl_text(s: str) -> str:
    """Stop matplotlib from reading ``$...$`` in data strings as mathtext."""
    return s.replace("$", r"\$")


def _slug(*parts: Any) -> str:
    """A file-name-safe, collision-resistant name for a group of values."""
    joined = "|".join(_text(p) for p in parts)
    readable = re.sub(r"[^A-Za-z0-9._]+", "-", joined).strip("-")[:60]
    digest = hashlib.sha1(joined.encode()).hexdigest()[:8]
    return f"{readable}-{digest}" if readable else digest


def group_label(keys: Sequence[Any]) -> str:
    """``study / case / platform / size=N`` for a group key tuple."""
    study, case, platform, size = (list(keys) + [None] * 4)[:4]
    size_text = str(int(size)) if _finite(size) else _text(size)
    return f"{_text(study)} / {_text(case)} / {_text(platform)} / size={size_text}"


def variant_sort_key(variant: Any, alpha: Any = None) -> tuple[int, float, str]:
    """Order WPs as the papers do (CO, GO, p-DP, CP, CP-reverse), then DP(alpha) by alpha, then the rest."""
    name = _text(variant)
    if name in WP_ORDER:
        return (0, float(WP_ORDER.index(name)), name)
    if _finite(alpha):
        return (1, float(alpha), name)
    return (2, 0.0, name)


def _missing_columns(frame: pd.DataFrame, columns: Iterable[str]) -> list[str]:
    return [c for c in columns if c not in frame.columns]


def _truthy(series: pd.Series) -> pd.Series:
    """A boolean mask from a column that may hold bools, 0/1 or nulls."""
    return series.astype("boolean").fillna(False).astype(bool)


def _groupby(frame: pd.DataFrame, keys: Sequence[str]) -> Iterable[tuple[tuple[Any, ...], pd.DataFrame]]:
    """Group on the keys present in ``frame`` (null keys kept), yielding full 4-tuples of keys."""
    present = [k for k in keys if k in frame.columns]
    if not present:
        yield tuple(None for _ in keys), frame
        return
    for values, sub in frame.groupby(present, dropna=False, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        by_name = dict(zip(present, values, strict=True))
        yield tuple(by_name.get(k) for k in keys), sub


# --------------------------------------------------------------------------- reading


def _read_parquet(path: Path) -> Loaded:
    """Read one parquet file, reporting missing / empty / unreadable instead of raising."""
    import pandas as pd
    import pyarrow as pa

    if not path.exists():
        return Loaded(path.name, None, "missing")
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        return Loaded(path.name, None, f"unreadable: {exc}")
    return Loaded(path.name, frame, "ok" if len(frame) else "empty")


def _read_summary(path: Path) -> tuple[dict[str, Any] | None, str]:
    if not path.exists():
        return None, "missing"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return None, f"unreadable: {exc}"
    if not isinstance(data, dict):
        return None, "unreadable: not a JSON object"
    return data, "ok" if data else "empty"


def _read_platforms(platforms: Path | Sequence[Path]) -> tuple[list[PlatformFile], list[str]]:
    """Load the platform files (a directory's ``*.yaml`` / ``*.yml``, or the given files); problems are returned."""
    from sims.platform_file import PlatformFileError, read_platform

    if isinstance(platforms, Path):
        if not platforms.is_dir():
            return [], [f"platform directory {platforms} is missing"]
        paths = sorted([*platforms.glob("*.yaml"), *platforms.glob("*.yml")])
        where = str(platforms)
    else:
        paths, where = [Path(p) for p in platforms], "the given list"
    found: list[PlatformFile] = []
    problems: list[str] = []
    for path in paths:
        try:
            data = read_platform(path)  # with the energy a later trace measured for it, if any
        except PlatformFileError as exc:
            problems.append(f"{path.name}: unreadable ({exc})")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("processors"), dict):
            problems.append(f"{path.name}: no 'processors' mapping")
            continue
        found.append(PlatformFile(str(data.get("platform") or path.stem), path.name, data))
    if not paths:
        problems.append(f"no platform files in {where}")
    return found, problems


def _read_quarantine(quarantine_dir: Path) -> tuple[list[Quarantined], str]:
    """The quarantined records, as (record path, reason): from a gather manifest (JSON), or every
    ``<name>.reason.txt`` under a quarantine directory."""
    if quarantine_dir.suffix == ".json":
        try:
            doc = json.loads(quarantine_dir.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return [], f"manifest unreadable: {exc}"
        return [Quarantined(Path(q["file"]).name, q["reason"]) for q in doc.get("quarantined", [])], "ok"
    if not quarantine_dir.is_dir():
        return [], "missing"
    records = []
    for path in sorted(quarantine_dir.rglob("*.reason.txt")):
        rel = path.relative_to(quarantine_dir).as_posix()
        try:
            reason = path.read_text(errors="replace").strip()
        except OSError as exc:
            reason = f"(reason file unreadable: {exc})"
        records.append(Quarantined(rel[: -len(".reason.txt")], reason or "(empty reason file)"))
    return records, "ok"


def load_inputs(validation_dir: Path, platforms_dir: Path | Sequence[Path], quarantine_dir: Path) -> Inputs:
    """Read every input of the report; nothing here raises on a missing or empty input."""
    summary, summary_status = _read_summary(validation_dir / "summary.json")
    platforms, platform_problems = _read_platforms(platforms_dir)
    quarantined, quarantine_status = _read_quarantine(quarantine_dir)
    return Inputs(
        runs=_read_parquet(validation_dir / "runs.parquet"),
        fidelity=_read_parquet(validation_dir / "fidelity.parquet"),
        failed=_read_parquet(validation_dir / "failed.parquet"),
        summary=summary,
        summary_status=summary_status,
        platforms=platforms,
        platform_problems=platform_problems,
        quarantined=quarantined,
        quarantine_status=quarantine_status,
    )


# --------------------------------------------------------------------------- platform parameters


def param_value(param: Any) -> float | None:
    """The SI value of a platform parameter given as ``{value: ...}`` or a bare number; None if absent."""
    value = param.get("value") if isinstance(param, dict) else param
    return float(value) if _finite(value) else None


def _rate_range(param: Any) -> tuple[float, float] | None:
    """(min, max) rate from ``rate_spread`` in per-second units, if given."""
    spread = param.get("rate_spread") if isinstance(param, dict) else None
    if not isinstance(spread, dict):
        return None
    low, high = spread.get("min"), spread.get("max")
    return (float(low), float(high)) if _finite(low) and _finite(high) else None


def _n_samples(param: Any) -> str:
    if not isinstance(param, dict):
        return _NA
    samples = param.get("samples")
    if isinstance(samples, list) and samples:
        return str(len(samples))
    reps = param.get("repetitions")
    return str(reps) if reps is not None else _NA


def _rate_cell(param: Any, unit: str) -> str:
    """``52.0 (49.1–53.3) GFLOP/s``: 1/value, and the spread of the measured rates."""
    value = param_value(param)
    if not value:
        return _NA
    text = f"{1.0 / value / _GIGA:.3g}"
    spread = _rate_range(param)
    if spread:
        text += f" ({spread[0] / _GIGA:.3g}–{spread[1] / _GIGA:.3g})"
    return f"{text} {unit}"


def _energy_cell(param: Any, unit: str) -> str:
    value = param_value(param)
    return "not measured (no meter)" if value is None else f"{value:.3g} {unit}"


def _obtained(param: Any) -> str:
    if not isinstance(param, dict):
        return _NA if param is None else "given"
    text = _text(param.get("obtained"))
    r2 = param.get("r2")
    return f"{text} (R²={r2:.3f})" if _finite(r2) else text


def platform_rows(platforms: Sequence[PlatformFile]) -> list[list[str]]:
    """One table row per (platform, processor) with the machine parameters in readable units."""
    from analysis.platforms import energy_fit_problem

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
                    f"{_text(proc.get('backend'))} {_text(placement)}",
                    _rate_cell(proc.get("t_f"), "GFLOP/s"),
                    _rate_cell(proc.get("t_b"), "GB/s"),
                    f"{t_b / t_f:.3g} flop/B" if t_f and t_b else _NA,
                    f"t_f: {_obtained(proc.get('t_f'))}; t_b: {_obtained(proc.get('t_b'))}",
                    f"{_n_samples(proc.get('t_f'))} / {_n_samples(proc.get('t_b'))}",
                    *(_energy_cell(proc.get(k), unit) + unused for k, unit in (("e_f", "J/flop"), ("e_b", "J/B"),
                                                                                 ("p_s", "W"))),
                    _sweep_fit_cell(proc.get("roofline_fit")),
                ]
            )
    return rows


def _sweep_fit_cell(fit: Any) -> str:
    """The intensity sweep's fitted roofline: rates, balance, R², flagged when the fit is poor."""
    if not isinstance(fit, dict):
        return _NA
    try:
        f_rate, b_rate = 1.0 / float(fit["t_f"]["value"]), 1.0 / float(fit["t_b"]["value"])
        r2 = float(fit["r2"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return _NA
    text = (f"{f_rate / _GIGA:.3g} GFLOP/s, {b_rate / _GIGA:.3g} GB/s, balance {f_rate / b_rate:.3g} flop/B, "
            f"R²={r2:.3f} over {len(fit.get('samples') or [])} intensities")
    return ("POOR FIT: " + text) if fit.get("poor_fit") else text


def _proc_order(name: str) -> tuple[int, str]:
    return (PROCESSORS.index(name) if name in PROCESSORS else len(PROCESSORS), name)


# --------------------------------------------------------------------------- figures


def _new_figure(width: float = 7.5, height: float = 4.6) -> Figure:
    """A figure bound to the Agg canvas: no pyplot, no global backend state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save_figure(fig: Figure, out_dir: Path, name: str) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    atomic_write_bytes(out_dir / name, buffer.getvalue())


def _variant_colors(variants: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(variants) <= 10 else "tab20"]
    return {v: cmap(i % cmap.N) for i, v in enumerate(variants)}


def _roofline_points(runs: pd.DataFrame | None, platform: str, side: str) -> pd.DataFrame | None:
    """The run parts measured on one processor: columns variant, alpha, intensity, perf (flop/s)."""
    x_col, y_col = f"intensity_{side}", f"perf_{side}_measured"
    if runs is None or _missing_columns(runs, ("platform", "variant", x_col, y_col)):
        return None
    sub = runs[runs["platform"] == platform]
    if "run_id" in sub.columns:
        sub = sub.drop_duplicates("run_id")
    points = sub.assign(intensity=sub[x_col].astype(float), perf=sub[y_col].astype(float))
    points = points[(points["intensity"] > 0) & (points["perf"] > 0)]
    if "alpha" not in points.columns:
        points = points.assign(alpha=float("nan"))
    return points[["variant", "alpha", "intensity", "perf"]]


def _draw_ceiling(ax: Axes, t_f: float, t_b: float, proc: dict[str, Any]) -> None:
    import numpy as np

    intensity = np.logspace(math.log2(_INTENSITY_RANGE[0]), math.log2(_INTENSITY_RANGE[1]), 200, base=2.0)
    ceiling = np.minimum(1.0 / t_f, intensity / t_b) / _GIGA
    ax.plot(intensity, ceiling, color="black", lw=2, label="ceiling min(1/t_f, I/t_b)")
    f_range, b_range = _rate_range(proc.get("t_f")), _rate_range(proc.get("t_b"))
    if f_range and b_range:
        low = np.minimum(f_range[0], intensity * b_range[0]) / _GIGA
        high = np.minimum(f_range[1], intensity * b_range[1]) / _GIGA
        ax.fill_between(intensity, low, high, color="grey", alpha=0.25, label="spread of measured rates")
    ridge = t_b / t_f
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.plot([ridge], [1.0 / t_f / _GIGA], "o", color="black", ms=6)
    ax.annotate(
        f"ridge I = {ridge:.3g} flop/B",
        (ridge, 1.0 / t_f / _GIGA),
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
    fig = _new_figure()
    ax = fig.add_subplot()
    _draw_ceiling(ax, t_f, t_b, proc)
    fit = proc.get("roofline_fit")
    if isinstance(fit, dict) and fit.get("samples"):
        sweep_i = [float(s["intensity"]) for s in fit["samples"]]
        sweep_p = [float(s["flops"]) / float(s["time_median_s"]) / _GIGA for s in fit["samples"]]
        ax.plot(sweep_i, sweep_p, "s", color="0.45", ms=4, zorder=2,
                label=_mpl_text(f"intensity sweep (fit R²={float(fit['r2']):.3f})"))
    points = _roofline_points(runs, plat.name, side)
    if points is not None and len(points):
        order = sorted(
            points.drop_duplicates("variant").itertuples(), key=lambda r: variant_sort_key(r.variant, r.alpha)
        )
        variants = [str(r.variant) for r in order]
        colors = _variant_colors(variants)
        for variant in variants:
            sel = points[points["variant"] == variant]
            ax.scatter(
                sel["intensity"],
                sel["perf"] / _GIGA,
                color=colors[variant],
                s=30,
                edgecolor="black",
                lw=0.4,
                zorder=3,
                label=_mpl_text(variant),
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_log_ticks(ax)
    ax.set_xlabel("operational intensity I (flop/byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    backend = _text(proc.get("backend"))
    ax.set_title(_mpl_text(f"roofline: {plat.name} — {side} ({backend})"), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=2 if len(ax.get_legend_handles_labels()[0]) > 8 else 1)
    return fig


def _plain_log_ticks(ax: Axes) -> None:
    """Label a log y axis as 0.5, 2, 40 rather than 5×10⁻¹ (easier to read off GFLOP/s)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _perf_bounds(sub: pd.DataFrame) -> tuple[list[float], list[float]]:
    """Lower and upper error-bar lengths of the measured perf from time_max_s / time_min_s."""
    lows, highs = [], []
    for row in sub.itertuples():
        perf = float(row.perf_measured)
        flops = float(getattr(row, "flops", float("nan")))
        t_min = float(getattr(row, "time_min_s", float("nan")))
        t_max = float(getattr(row, "time_max_s", float("nan")))
        low = perf - flops / t_max if _finite(flops) and _finite(t_max) and t_max > 0 else 0.0
        high = flops / t_min - perf if _finite(flops) and _finite(t_min) and t_min > 0 else 0.0
        lows.append(max(low, 0.0) / _GIGA)
        highs.append(max(high, 0.0) / _GIGA)
    return lows, highs


def _ordered(sub: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by variant in the papers' order (DP by alpha)."""
    alphas = sub["alpha"] if "alpha" in sub.columns else [None] * len(sub)
    keys = [variant_sort_key(v, a) for v, a in zip(sub["variant"], alphas, strict=True)]
    order = sorted(range(len(sub)), key=lambda i: keys[i])
    return sub.iloc[order]


def _models(sub: pd.DataFrame) -> list[str]:
    return sorted(str(m) for m in sub["model"].dropna().unique()) if "model" in sub.columns else []


def wp_figure(keys: Sequence[Any], sub: pd.DataFrame) -> Figure:
    """Grouped bars, per WP: measured perf (with min/max error bars) next to each model's prediction."""
    import numpy as np

    measured = _ordered(sub.drop_duplicates("variant"))
    variants = [str(v) for v in measured["variant"]]
    models = _models(sub)
    n_bars = 1 + len(models)
    width = 0.8 / n_bars
    x = np.arange(len(variants))
    fig = _new_figure()
    ax = fig.add_subplot()
    ax.bar(
        x - 0.4 + width / 2,
        measured["perf_measured"].astype(float) / _GIGA,
        width,
        yerr=_perf_bounds(measured),
        capsize=3,
        color="tab:blue",
        label="measured (median, min–max)",
    )
    for i, model in enumerate(models):
        pred = sub[sub["model"] == model].drop_duplicates("variant").set_index("variant")["perf_predicted"]
        values = [float(pred.get(v, float("nan"))) / _GIGA for v in variants]
        ax.bar(
            x - 0.4 + width * (i + 1.5),
            values,
            width,
            color=f"C{i + 1}",
            alpha=0.85,
            label=_mpl_text(f"predicted: {model}"),
        )
    ax.set_xticks(x, [_mpl_text(v) for v in variants], rotation=30 if len(variants) > 6 else 0)
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_title(_mpl_text(f"measured vs predicted per WP — {group_label(keys)}"), fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def tightness_figure(keys: Sequence[Any], sub: pd.DataFrame) -> Figure:
    """Bars of tightness (measured / predicted) per run, one bar per model, with the 1.0 line."""
    import numpy as np

    variants_frame = _ordered(sub.drop_duplicates("variant"))
    variants = [str(v) for v in variants_frame["variant"]]
    models = _models(sub) or [None]
    width = 0.8 / len(models)
    x = np.arange(len(variants))
    fig = _new_figure(max(7.5, 0.45 * len(variants) * len(models) + 2.5), 4.6)
    ax = fig.add_subplot()
    for i, model in enumerate(models):
        rows = sub if model is None else sub[sub["model"] == model]
        by_variant = rows.drop_duplicates("variant").set_index("variant")["tightness"]
        values = np.array([float(by_variant.get(v, float("nan"))) for v in variants])
        xs = x - 0.4 + width * (i + 0.5)
        bars = ax.bar(xs, values, width, color=f"C{i}", label=_mpl_text(str(model or "tightness")))
        for bar, value in zip(bars, values, strict=True):
            if value > 1.0:  # the "bound" was beaten: the model or its parameters are wrong
                bar.set_edgecolor("red")
                bar.set_linewidth(2)
        ax.bar_label(bars, labels=[f"{v:.2f}" if _finite(v) else _NA for v in values], fontsize=7, padding=2)
    ax.axhline(1.0, color="black", ls="--", lw=1, label="bound reached (1.0)")
    ax.set_xticks(x, [_mpl_text(v) for v in variants], rotation=30 if len(variants) > 6 else 0)
    ax.set_ylabel("tightness = measured / predicted")
    top = np.nanmax(np.append(sub["tightness"].astype(float).to_numpy(), 1.0))
    ax.set_ylim(0, max(1.35, top * 1.25))  # headroom above the 1.0 line for the legend
    ax.set_title(_mpl_text(f"tightness per run — {group_label(keys)}"), fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", ncol=len(models) + 1)
    return fig


def _pdp_point(group_rows: pd.DataFrame) -> tuple[float, float] | None:
    """(alpha, measured flop/s) of the group's p-DP run, if it has one with a known alpha."""
    if _missing_columns(group_rows, ("variant", "alpha", "perf_measured")):
        return None
    pdp = group_rows[group_rows["variant"] == "p-DP"]
    if not len(pdp) or not _finite(pdp["alpha"].iloc[0]):
        return None
    return float(pdp["alpha"].iloc[0]), float(pdp["perf_measured"].iloc[0])


def alpha_figure(keys: Sequence[Any], sweep: pd.DataFrame, pdp: tuple[float, float] | None) -> Figure:
    """Measured and predicted perf vs alpha with the measured optimum, the model's optimum and p-DP."""
    sweep = sweep.sort_values("alpha")
    measured = sweep.drop_duplicates("alpha")
    fig = _new_figure()
    ax = fig.add_subplot()
    ax.plot(measured["alpha"], measured["perf_measured"] / _GIGA, "o-", color="tab:blue", label="measured")
    best = measured.loc[measured["perf_measured"].astype(float).idxmax()]
    ax.plot(
        [best["alpha"]],
        [best["perf_measured"] / _GIGA],
        "*",
        color="tab:blue",
        ms=16,
        mec="black",
        label=f"measured best α = {best['alpha']:.3g}",
    )
    for i, model in enumerate(_models(sweep) or [None]):
        rows = sweep if model is None else sweep[sweep["model"] == model]
        rows = rows.drop_duplicates("alpha")
        perf = rows["perf_predicted"].astype(float)
        name = _mpl_text(str(model or "predicted"))
        ax.plot(rows["alpha"], perf / _GIGA, "s--", color=f"C{i + 1}", label=f"predicted: {name}")
        if perf.notna().any():
            pick = rows.loc[perf.idxmax()]
            ax.plot(
                [pick["alpha"]],
                [pick["perf_predicted"] / _GIGA],
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
            [pdp[1] / _GIGA],
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
    ax.set_title(_mpl_text(f"alpha sweep — {group_label(keys)}"), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


_WP_COLUMNS = ("variant", "perf_measured", "perf_predicted")
_ALPHA_COLUMNS = ("variant", "alpha", "perf_measured", "perf_predicted")


def make_figures(inputs: Inputs, out_dir: Path) -> tuple[dict[str, list[FigureEntry]], list[str]]:
    """Write every figure; returns the entries per section and notes on figures that could not be drawn."""
    sections: dict[str, list[FigureEntry]] = {"roofline": [], "wp": [], "tightness": [], "alpha": []}
    notes: list[str] = []
    runs = inputs.runs.frame if inputs.runs.usable else None
    _roofline_figures(inputs.platforms, runs, out_dir, sections["roofline"], notes)
    if runs is None:
        notes.append(f"runs.parquet is {inputs.runs.status}: no per-run figures.")
        return sections, notes
    _wp_figures(runs, out_dir, sections["wp"], notes)
    _tightness_figures(runs, out_dir, sections["tightness"], notes)
    _alpha_figures(runs, out_dir, sections["alpha"], notes)
    return sections, notes


def _emit(
    fig: Figure | None, out_dir: Path, name: str, title: str, caption: str, entries: list[FigureEntry]
) -> None:
    if fig is None:
        return
    _save_figure(fig, out_dir, name)
    entries.append(FigureEntry(name, title, caption))


def _roofline_figures(
    platforms: Sequence[PlatformFile],
    runs: pd.DataFrame | None,
    out_dir: Path,
    entries: list[FigureEntry],
    notes: list[str],
) -> None:
    for plat in platforms:
        for side in PROCESSORS:
            fig = roofline_figure(plat, side, runs)
            if fig is None:
                notes.append(f"{plat.name}/{side}: no roofline (processor or its t_f / t_b missing).")
                continue
            caption = (
                f"Roofline of the {side} processor from its measured t_f and t_b (black; grey band: "
                f"spread of the benchmark rates); dots are the parts of runs executed on {side}, at "
                f"their own intensity. Dots above the ceiling mean the parameters underestimate the machine."
            )
            _emit(
                fig,
                out_dir,
                f"roofline-{_slug(plat.name, side)}.png",
                f"{plat.name} — {side}",
                caption,
                entries,
            )


def _wp_figures(runs: pd.DataFrame, out_dir: Path, entries: list[FigureEntry], notes: list[str]) -> None:
    missing = _missing_columns(runs, (*_WP_COLUMNS, "axis_wp"))
    if missing:
        notes.append(f"runs.parquet lacks {', '.join(missing)}: no WP figures.")
        return
    wp = runs[_truthy(runs["axis_wp"])]
    for keys, sub in _groupby(wp, GROUP_KEYS):
        caption = (
            "Measured performance of each workload partition (median; error bar: fastest and "
            "slowest repetition) next to the model's predicted bound."
        )
        _emit(wp_figure(keys, sub), out_dir, f"wp-{_slug(*keys)}.png", group_label(keys), caption, entries)


def _tightness_figures(
    runs: pd.DataFrame, out_dir: Path, entries: list[FigureEntry], notes: list[str]
) -> None:
    missing = _missing_columns(runs, ("variant", "tightness"))
    if missing:
        notes.append(f"runs.parquet lacks {', '.join(missing)}: no tightness figures.")
        return
    for keys, sub in _groupby(runs, GROUP_KEYS):
        caption = (
            "Tightness = measured / predicted performance of each run. 1.0 means the bound is "
            "reached; bars outlined in red exceed 1.0, i.e. the run beat the model's 'upper bound'."
        )
        _emit(
            tightness_figure(keys, sub),
            out_dir,
            f"tightness-{_slug(*keys)}.png",
            group_label(keys),
            caption,
            entries,
        )


def _alpha_figures(runs: pd.DataFrame, out_dir: Path, entries: list[FigureEntry], notes: list[str]) -> None:
    missing = _missing_columns(runs, (*_ALPHA_COLUMNS, "axis_alpha"))
    if missing:
        notes.append(f"runs.parquet lacks {', '.join(missing)}: no alpha-sweep figures.")
        return
    # keyed by slug: group keys may hold NaN, which never compares equal in a tuple lookup
    groups = {_slug(*keys): sub for keys, sub in _groupby(runs, GROUP_KEYS)}
    sweep_rows = runs[_truthy(runs["axis_alpha"])]
    for keys, sweep in _groupby(sweep_rows, GROUP_KEYS):
        sweep = sweep[sweep["alpha"].notna() & sweep["perf_measured"].notna()]
        if not len(sweep):
            continue
        pdp = _pdp_point(groups.get(_slug(*keys), sweep[:0]))
        caption = (
            "Measured (blue) and predicted performance over the swept data fractions α; the star is "
            "the measured best α, the diamond the model's pick among the swept values, and the green "
            "cross and dotted line the p-DP run at its α (if any). Ranking fidelity asks whether "
            "they coincide."
        )
        _emit(
            alpha_figure(keys, sweep, pdp),
            out_dir,
            f"alpha-{_slug(*keys)}.png",
            group_label(keys),
            caption,
            entries,
        )


# --------------------------------------------------------------------------- tables and summary


FIDELITY_COLUMNS: tuple[str, ...] = (
    "study",
    "case",
    "platform",
    "size",
    "axis",
    "model",
    "n_alternatives",
    "kendall_tau",
    "pairwise_agreement",
    "top1_agreement",
    "selection_penalty",
    "profile_error",
    "best_measured",
    "best_predicted",
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
    }
)


def _cell(column: str, value: Any) -> str:
    if column in _FRACTION_COLUMNS:
        return fmt_fraction(value)
    if column in ("size", "n_alternatives") and _finite(value):
        return str(int(value))
    return _text(value)


def fidelity_rows(fidelity: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and formatted rows of the fidelity table (columns absent from the file are left out)."""
    columns = [c for c in FIDELITY_COLUMNS if c in fidelity.columns]
    present_keys = [c for c in (*GROUP_KEYS, "axis", "model") if c in fidelity.columns]
    ordered = fidelity.sort_values(present_keys, na_position="last") if present_keys else fidelity
    rows = [[_cell(c, row[c]) for c in columns] for _, row in ordered.iterrows()]
    return columns, rows


def failed_rows(failed: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the failed-runs table."""
    columns = [
        c
        for c in ("run_id", "study", "case", "variant", "platform", "started_at", "error")
        if c in failed.columns
    ]
    return columns, [[_text(row[c]) for c in columns] for _, row in failed.iterrows()]


def counts(inputs: Inputs) -> dict[str, int]:
    """ok / failed / quarantined counts from the files themselves (not from summary.json)."""
    runs = inputs.runs.frame
    if runs is None:
        ok = 0
    elif "run_id" in runs.columns:
        ok = int(runs["run_id"].nunique())
    else:
        ok = len(runs)
    failed = inputs.failed.frame
    return {"ok": ok, "failed": 0 if failed is None else len(failed), "quarantined": len(inputs.quarantined)}


def _input_lines(inputs: Inputs) -> list[str]:
    lines = [f"{t.name}: {t.status}" for t in (inputs.runs, inputs.fidelity, inputs.failed)]
    lines.append(f"summary.json: {inputs.summary_status}")
    lines.append(f"platform files: {len(inputs.platforms)}")
    lines.extend(inputs.platform_problems)
    lines.append(f"quarantine dir: {inputs.quarantine_status}")
    return lines


def _tightness_lines(runs: pd.DataFrame | None) -> list[str]:
    if runs is None or _missing_columns(runs, ("tightness",)):
        return ["  (no tightness data)"]
    lines = []
    for keys, sub in _groupby(runs, GROUP_KEYS):
        for model in _models(sub) or [None]:
            values = (
                (sub if model is None else sub[sub["model"] == model])["tightness"].astype(float).dropna()
            )
            if not len(values):
                lines.append(f"  {group_label(keys)} [{model}]: {_NA}")
                continue
            lines.append(
                f"  {group_label(keys)} [{model}]: {values.median():.3f} "
                f"[{values.min():.3f}–{values.max():.3f}] over {len(values)} runs"
            )
    return lines or ["  (no runs)"]


def _fidelity_lines(fidelity: pd.DataFrame | None) -> list[str]:
    if fidelity is None or not len(fidelity):
        return ["  (no fidelity data)"]
    lines = []
    for _, row in fidelity.sort_values(
        [c for c in (*GROUP_KEYS, "axis", "model") if c in fidelity.columns]
    ).iterrows():
        keys = [row.get(k) for k in GROUP_KEYS]
        lines.append(
            f"  {group_label(keys)} | axis {_text(row.get('axis'))} | {_text(row.get('model'))}: "
            f"kendall tau {fmt_fraction(row.get('kendall_tau'))}, "
            f"top-1 {fmt_fraction(row.get('top1_agreement'))}, "
            f"selection penalty {fmt_fraction(row.get('selection_penalty'))}, "
            f"best measured {_text(row.get('best_measured'))} vs predicted {_text(row.get('best_predicted'))}"
        )
    return lines


def summary_text(inputs: Inputs, title: str, report_path: Path, notes: Sequence[str],
                 extra_lines: Sequence[str] = ()) -> str:
    """The plain-text summary printed by :func:`main` and written to ``summary.txt``."""
    n = counts(inputs)
    lines = [
        title,
        "=" * len(title),
        f"runs: {n['ok']} ok, {n['failed']} failed, {n['quarantined']} quarantined",
    ]
    if inputs.summary:
        lines.append("summary.json: " + ", ".join(f"{k}={v}" for k, v in inputs.summary.items()))
    lines += ["", "inputs:", *(f"  {line}" for line in _input_lines(inputs))]
    lines += ["", "tightness per group (median [min–max]):", *_tightness_lines(inputs.runs.frame)]
    lines += ["", "ranking fidelity per group and axis:", *_fidelity_lines(inputs.fidelity.frame)]
    if extra_lines:
        lines += ["", *extra_lines]
    if notes:
        lines += ["", "notes:", *(f"  {note}" for note in notes)]
    lines += ["", f"report: {report_path}"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- HTML


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 1em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #eee; }
td.na { color: #999; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; max-width: 48%; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; }
.what { color: #555; }
.alert { background: #fde8e8; border: 1px solid #d33; padding: 0.5em; }
.good { background: #e8f6e8; border: 1px solid #393; padding: 0.5em; }
.missing { color: #a33; font-style: italic; }
pre { white-space: pre-wrap; }
"""


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table; every header and cell is escaped, and ``n/a`` cells are greyed."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="na">{_NA}</td>' if c == _NA else f"<td>{html.escape(c)}</td>" for c in row)
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _missing_note(text: str) -> str:
    return f'<p class="missing">{html.escape(text)}</p>'


def _figures_html(entries: Sequence[FigureEntry], empty: str) -> str:
    if not entries:
        return _missing_note(empty)
    return "".join(
        f'<figure><img src="{html.escape(e.file, quote=True)}" alt="{html.escape(e.title, quote=True)}">'
        f'<figcaption><b>{html.escape(e.title)}</b><br><span class="what">What this shows: '
        f"{html.escape(e.caption)}</span></figcaption></figure>"
        for e in entries
    )


def _counts_html(inputs: Inputs) -> str:
    n = counts(inputs)
    css = "alert" if n["failed"] or n["quarantined"] else "good"
    text = (
        f'{n["ok"]} runs ok, {n["failed"]} failed (see <a href="#failed">failed runs</a>), '
        f'{n["quarantined"]} quarantined records (see <a href="#quarantine">quarantine</a>).'
    )
    summary = ""
    if inputs.summary:
        summary = "<br>summary.json: " + html.escape(", ".join(f"{k}={v}" for k, v in inputs.summary.items()))
    return f'<p class="{css}">{text}{summary}</p>'


def _platform_html(inputs: Inputs) -> str:
    header = [
        "platform",
        "processor",
        "backend / placement",
        "peak 1/t_f (min–max)",
        "bandwidth 1/t_b (min–max)",
        "balance t_b/t_f",
        "how obtained",
        "n samples (t_f / t_b)",
        "e_f",
        "e_b",
        "p_s",
        "intensity-sweep roofline fit",
    ]
    parts = [html_table(header, platform_rows(inputs.platforms))] if inputs.platforms else []
    parts += [_missing_note(p) for p in inputs.platform_problems]
    for plat in inputs.platforms:
        for name, proc in plat.data.get("processors", {}).items():
            fit = proc.get("roofline_fit") if isinstance(proc, dict) else None
            ops = (proc.get("operations") or {}).get("fits") if isinstance(proc, dict) else None
            poor_ops = sorted(k for k, f in (ops or {}).items() if f.get("r2") is None or f["r2"] < 0.9)
            if poor_ops:
                parts.append(f'<p class="alert">{html.escape(plat.name)}/{html.escape(str(name))}: per-operation '
                             f"cost fits with R² below 0.9: {html.escape(', '.join(poor_ops))} (their tau is "
                             "shown but does not describe the operation well).</p>")
            if isinstance(fit, dict) and fit.get("poor_fit"):
                parts.append(f'<p class="alert">{html.escape(plat.name)}/{html.escape(str(name))}: the roofline '
                             f"fitted to the intensity sweep is poor (R²={fit.get('r2')}): its t_f/t_b do not "
                             "describe this processor's kernels well.</p>")
    parts.append(
        '<p class="what">What this shows: the machine parameters the models use, as rates; the '
        "balance t_b/t_f is the ridge intensity (flop/byte) above which a processor is compute-bound. The last "
        "column is the roofline least-squares fitted to a stream kernel swept over 2.4 decades of intensity "
        "(its points are the grey squares in the roofline figures).</p>"
    )
    return "".join(parts)


def _fidelity_html(fidelity: Loaded) -> str:
    if not fidelity.usable:
        return _missing_note(f"fidelity.parquet is {fidelity.status}: no ranking-fidelity table.")
    header, rows = fidelity_rows(fidelity.frame)
    return (
        html_table(header, rows)
        + '<p class="what">What this shows: per group and axis, how well the model orders the '
        "alternatives (Kendall tau-b, pairwise agreement, whether its top pick is the measured best, "
        "and the time lost by following its pick), and how tight its bound is.</p>"
        f'<p class="what"><small>{html.escape(_NA_FOOTNOTE)}</small></p>'
    )


def _failed_html(failed: Loaded) -> str:
    if not failed.usable:
        if failed.status == "empty":
            return "<p>No failed runs (failed.parquet is empty).</p>"
        return _missing_note(f"failed.parquet is {failed.status}: failed runs cannot be listed.")
    header, rows = failed_rows(failed.frame)
    return f"<p><b>{len(rows)} failed run(s).</b></p>" + html_table(header, rows)


def _quarantine_html(inputs: Inputs) -> str:
    if inputs.quarantine_status != "ok":
        return _missing_note(f"quarantine directory is {inputs.quarantine_status}.")
    if not inputs.quarantined:
        return "<p>No quarantined records.</p>"
    rows = [[q.file, q.reason] for q in inputs.quarantined]
    return (
        f"<p><b>{len(rows)} quarantined record(s)</b> failed the schema check and are not in the "
        "dataset.</p>" + html_table(["file", "reason"], rows)
    )


def render_html(
    inputs: Inputs, title: str, figures: dict[str, list[FigureEntry]], notes: Sequence[str], extra_html: str = ""
) -> str:
    """The complete, self-contained page (figures referenced by relative path)."""
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    inputs_list = "".join(f"<li>{html.escape(line)}</li>" for line in _input_lines(inputs))
    notes_html = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    sections = [
        f"<h1>{html.escape(title)}</h1><p>Generated {when}.</p>",
        _counts_html(inputs),
        f"<h2>Inputs</h2><ul>{inputs_list}</ul>",
        "<h2>Platform parameters</h2>" + _platform_html(inputs),
        "<h2>Rooflines</h2>"
        + _figures_html(figures["roofline"], "No roofline: no platform with t_f and t_b."),
        "<h2>Measured vs predicted per WP</h2>" + _figures_html(figures["wp"], "No WP runs to show."),
        "<h2>Tightness per run</h2>" + _figures_html(figures["tightness"], "No tightness data to show."),
        "<h2>Alpha sweeps</h2>" + _figures_html(figures["alpha"], "No alpha-sweep runs to show."),
        "<h2>Ranking fidelity</h2>" + _fidelity_html(inputs.fidelity),
        extra_html,
        '<h2 id="failed">Failed runs</h2>' + _failed_html(inputs.failed),
        '<h2 id="quarantine">Quarantined records</h2>' + _quarantine_html(inputs),
    ]
    if notes:
        sections.append(f"<h2>Notes</h2><ul>{notes_html}</ul>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )


# --------------------------------------------------------------------------- writing


def _prune_stale_figures(out_dir: Path, keep: set[str]) -> None:
    """Remove figures of an earlier build that this build did not produce (so the page lists all PNGs)."""
    for path in out_dir.glob("*.png"):
        if path.name.startswith(FIGURE_PREFIXES) and path.name not in keep:
            path.unlink(missing_ok=True)


def build_report(
    validation_dir: str | os.PathLike[str],
    platforms_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    quarantine_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    title: str = "hetval validation report",
) -> str:
    """Build the HTML validation report with its PNG figures and a plain-text summary.

    Parameters
    ----------
    validation_dir : path
        ``results/validation``: runs.parquet, fidelity.parquet, failed.parquet, summary.json.
        Any of them may be missing or empty; the page says so.
    platforms_dir : path or list of paths
        ``results/<study>/platforms`` with the characterised ``*.yaml`` platform files, or the files.
    quarantine_dir : path
        The study's gather manifest (``results/<study>/gathered.json``), whose quarantined records are
        listed, or a quarantine directory (every ``**/<name>.reason.txt`` is listed).
    out_dir : path
        Where ``index.html``, the figures and ``summary.txt`` are written (created if needed).
    title : str
        Page title.

    Returns
    -------
    str
        The plain-text summary, identical to ``out_dir/summary.txt``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plats = Path(platforms_dir) if isinstance(platforms_dir, str | os.PathLike) else [Path(p) for p in platforms_dir]
    inputs = load_inputs(Path(validation_dir), plats, Path(quarantine_dir))
    figures, notes = make_figures(inputs, out)
    from analysis import report_energy, report_fdm, report_guidelines, report_published

    fdm_html, fdm_lines, fdm_files = report_fdm.section(Path(validation_dir), out)
    pub_html, pub_lines = report_published.section(Path(validation_dir))
    guide_html, guide_lines = report_guidelines.section(inputs.platforms, Path(validation_dir))
    energy_html, energy_lines, energy_files = report_energy.section(Path(validation_dir), out, inputs.platforms)
    index = out / "index.html"
    text = summary_text(inputs, title, index, notes,
                        [*energy_lines, "", *guide_lines, "", *fdm_lines, "", *pub_lines])
    atomic_write_bytes(out / "summary.txt", text.encode())
    extra = "\n".join((energy_html, guide_html, fdm_html, pub_html))
    atomic_write_bytes(index, render_html(inputs, title, figures, notes, extra).encode())
    _prune_stale_figures(out, {e.file for entries in figures.values() for e in entries} | set(fdm_files) | set(energy_files))
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: build the report and print its summary.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status, 0.
    """
    parser = argparse.ArgumentParser(prog="hetval report", description=__doc__)
    parser.add_argument("--validation", default="results/validation", help="validation output directory")
    parser.add_argument("--platforms", default="results/platforms", help="characterised platform files")
    parser.add_argument("--quarantine", default="results/quarantine", help="quarantine directory")
    parser.add_argument("--out", default="results/report", help="report output directory")
    parser.add_argument("--title", default="hetval validation report", help="page title")
    args = parser.parse_args(argv)
    print(build_report(args.validation, args.platforms, args.quarantine, args.out, args.title), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
