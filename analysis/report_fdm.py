"""The FDM part of the report: scaling curves, per-phase stacked bars, runs and ranking-fidelity tables."""

from __future__ import annotations

import html
import json
from pathlib import Path

from analysis.report import _read_parquet, fmt_sig, html_table

PHASES = ("velocity", "stress", "pack", "unpack", "halo", "h2d")
PRED_PARTS = ("compute", "pack", "unpack", "halo", "h2d")


def _shape(grid: str) -> str:
    try:
        return "x".join(str(n) for n in json.loads(grid)["shape"])
    except (ValueError, KeyError, TypeError):
        return str(grid)


def _save(fig, out_dir: Path, name: str) -> None:
    import io

    import matplotlib.pyplot as plt

    from sims.atomic import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(out_dir / name, buf.getvalue())


def scaling_figure(runs, order: int, boundary: str):
    """Time per step against ranks, measured (median, min-max bars) and predicted (dashed), per grid and design."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = runs[(runs["order"] == order) & (runs["boundary"] == boundary)]
    if sub.empty:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    cmap = plt.get_cmap("tab10")
    for n, ((grid, design), g) in enumerate(sub.groupby(["grid", "marshaling"], sort=True)):
        # at each rank count the fastest decomposition measured, and the model's value for that same run
        best = g.loc[g.groupby("ranks")["time_median_s"].idxmin()].sort_values("ranks")
        steps = best["steps"].to_numpy(dtype=float)
        color = cmap(n % 10)
        label = f"{_shape(grid)} {design}"
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
    fig.text(0.5, -0.02, "solid: measured (median, bars: min-max over repetitions); dashed: FDM model", ha="center", fontsize=8)
    return fig


def phase_figure(runs, order: int, boundary: str):
    """Per run, measured per-phase seconds per step stacked (slowest rank per phase) beside the model's parts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    sub = runs[(runs["order"] == order) & (runs["boundary"] == boundary)].sort_values(
        ["grid", "ranks", "decomposition", "marshaling"])
    if sub.empty:
        return None
    fig, ax = plt.subplots(figsize=(max(7.0, 0.55 * len(sub) + 2), 4.6))
    x = np.arange(len(sub))
    steps = sub["steps"].to_numpy(dtype=float)
    cmap = plt.get_cmap("tab10")
    bottom = np.zeros(len(sub))
    for n, p in enumerate(PHASES):
        v = np.nan_to_num(sub[f"{p}_median_s"].to_numpy(dtype=float)) / steps
        ax.bar(x - 0.2, v, 0.38, bottom=bottom, color=cmap(n), label=f"measured {p}")
        bottom += v
    bottom = np.zeros(len(sub))
    colors = {"compute": "0.35", "pack": cmap(2), "unpack": cmap(3), "halo": cmap(4), "h2d": cmap(5)}
    for p in PRED_PARTS:
        v = np.nan_to_num(sub[f"{p}_pred_s"].to_numpy(dtype=float)) / steps
        ax.bar(x + 0.2, v, 0.38, bottom=bottom, color=colors[p], hatch="//", alpha=0.6, label=f"model {p}")
        bottom += v
    labels = [f"{_shape(r.grid)}\n{r.ranks}r {r.decomposition}\n{r.marshaling}" for r in sub.itertuples()]
    ax.set_xticks(x, labels, fontsize=6, rotation=90)
    ax.set(ylabel="seconds per step", title=f"order {order}, {boundary}: phases (left: measured, right: model)")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    return fig


def section(validation_dir: Path, out_dir: Path) -> tuple[str, list[str], list[str]]:
    """The FDM HTML section, its summary lines and the figure files written."""
    runs_in = _read_parquet(Path(validation_dir) / "fdm_runs.parquet")
    fid_in = _read_parquet(Path(validation_dir) / "fdm_fidelity.parquet")
    runs, rstatus, fid, fstatus = runs_in.frame, runs_in.status, fid_in.frame, fid_in.status
    files: list[str] = []
    if runs is None or runs.empty:
        note = f"fdm_runs.parquet is {rstatus}: no FDM runs in this study."
        return f'<h2>FDM seismology</h2><p class="missing">{html.escape(note)}</p>', [note], files
    parts = ["<h2>FDM seismology: scaling, phases, model</h2>"]
    figs = []
    for (order, boundary), _ in runs.groupby(["order", "boundary"], sort=True):
        slug = f"o{order}-{str(boundary).replace('(', '').replace(')', '')}"
        for kind, make, title, caption in (
            ("scaling", scaling_figure, "scaling", "Strong scaling (same grid, more ranks) and weak scaling (grids "
             "that grow with the ranks): measured time per step and throughput against the FDM model; at each rank "
             "count the fastest decomposition is shown."),
            ("phases", phase_figure, "per-phase time", "Where each run's time goes: measured per-phase seconds per "
             "step (each phase on its slowest rank) next to the model's compute, pack/unpack, halo and "
             "host-device terms."),
        ):
            fig = make(runs, int(order), str(boundary))
            if fig is None:
                continue
            name = f"fdm-{kind}-{slug}.png"
            _save(fig, out_dir, name)
            files.append(name)
            figs.append(f'<figure><img src="{name}" alt="{html.escape(title)}"><figcaption><b>order {order}, '
                        f'{html.escape(str(boundary))}: {title}</b><br><span class="what">What this shows: '
                        f"{html.escape(caption)}</span></figcaption></figure>")
    parts += figs
    header = ["grid", "ranks", "decomposition", "design", "order", "boundary", "measured s (median [min–max])",
              "predicted s", "tightness (pred/meas)", "MLUP/s measured", "MLUP/s predicted", "reps"]
    rows = [[_shape(r.grid), str(r.ranks), r.decomposition, r.marshaling, str(r.order), r.boundary,
             f"{fmt_sig(r.time_median_s)} [{fmt_sig(r.time_min_s)}–{fmt_sig(r.time_max_s)}]", fmt_sig(r.time_predicted_s),
             fmt_sig(r.tightness), fmt_sig(r.mlups_measured, 4), fmt_sig(r.mlups_predicted, 4), str(r.n_reps)]
            for r in runs.itertuples()]
    parts.append("<h3>FDM runs</h3>" + html_table(header, rows))
    parts.append('<p class="what">What this shows: every FDM run with its measured loop time (slowest rank) and the '
                 "model's prediction; tightness is predicted / measured (below 1: the model is optimistic).</p>")
    lines = [f"FDM: {len(runs)} ok runs; tightness (predicted/measured) median "
             f"{fmt_sig(runs['tightness'].median())} [{fmt_sig(runs['tightness'].min())}–{fmt_sig(runs['tightness'].max())}]"]
    if fid is not None and len(fid):
        fh = ["grid", "ranks", "order", "boundary", "axis", "fixed", "n", "kendall tau", "pairwise", "top-1",
              "selection penalty", "best measured", "best predicted"]
        frows = [[_shape(r.grid), str(r.ranks), str(r.order), r.boundary, r.axis, r.fixed, str(r.n_alternatives),
                  fmt_sig(r.kendall_tau), fmt_sig(r.pairwise_agreement), fmt_sig(r.top1_agreement),
                  fmt_sig(r.selection_penalty), r.best_measured, r.best_predicted] for r in fid.itertuples()]
        parts.append("<h3>FDM ranking fidelity</h3>" + html_table(fh, frows))
        parts.append('<p class="what">What this shows: at each scale, how well the model orders the marshaling '
                     "designs (at a fixed decomposition) and the decompositions (at a fixed design). On a CPU "
                     "backend the model gives the three designs the same time (nothing lives on a device), so "
                     "its ranking of designs is a tie: n/a tau.</p>")
        for r in fid.itertuples():
            lines.append(f"  {_shape(r.grid)} {r.ranks} ranks order {r.order} | axis {r.axis} ({r.fixed}): "
                         f"kendall tau {fmt_sig(r.kendall_tau)}, top-1 {fmt_sig(r.top1_agreement)}, selection penalty "
                         f"{fmt_sig(r.selection_penalty)}, best measured {r.best_measured} vs predicted {r.best_predicted}")
    else:
        parts.append(f'<p class="missing">fdm_fidelity.parquet is {html.escape(fstatus)}: no FDM fidelity table.</p>')
    return "\n".join(parts), lines, files
