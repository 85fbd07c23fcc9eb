"""The energy part of the report: whether energy was measured here, PEACH's curves, energy per WP per processor."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from analysis.report import _read_parquet, fmt_sig, html_table

SUPPORTED = ("RAPL (/sys/class/powercap, package and DRAM of every socket), NVML total-energy counters per GPU "
             "(nvidia-ml-py), an external power meter's CSV trace (config key energy.trace: timestamp, channel, "
             "watts), and published measurements (energy_source: published)")


def _save(fig: Any, out_dir: Path, name: str) -> None:
    from analysis.report_fdm import _save as save

    save(fig, out_dir, name)


def meter_statement(platforms: list, metered_runs: int) -> tuple[str, str]:
    """One line saying where energy came from, or that it could not be measured here and why."""
    if metered_runs:
        line = (f"Energy was measured for {metered_runs} run(s); sources and per-processor attribution are in "
                "each record's energy_source and energy_detail.")
        return f"<p>{html.escape(line)}</p>", line
    why = sorted({str(p.data.get("energy", "")) for p in platforms if p.data.get("energy")})
    line = ("Energy could not be measured on this machine: no run had a meter, so every measured energy column is "
            f"null (energy_source: none). Supported sources: {SUPPORTED}.")
    detail = f" Characterisation said: {'; '.join(why)}" if why else ""
    return f'<p class="missing"><b>{html.escape(line)}</b>{html.escape(detail)}</p>', line


def peach_figure(runs: Any, fid: Any) -> Any:
    """Measured vs predicted rate (and eta, when measured) against alpha, with the optima marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_eta = runs["eta_measured"].notna().any()
    fig, axes = plt.subplots(1, 2 if has_eta else 1, figsize=(10 if has_eta else 6, 3.8), squeeze=False)
    r = runs.sort_values("alpha")
    unit = str(r["work_unit"].iloc[0])
    scale, label = (1e9, f"G{unit}/s")
    ax = axes[0][0]
    ax.plot(r["alpha"], r["rate_measured"] / scale, "o-", label="measured (median)")
    ax.plot(r["alpha"], r["rate_predicted"] / scale, "s--", label="PEACH eq. 7")
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
    fig.tight_layout()
    return fig


def model_gaps(platforms: list) -> list[str]:
    """Per characterised platform, why its energy models cannot be scored (no fitted parameters, an unphysical fit)."""
    from analysis.platforms import energy_fit_problem

    out = []
    for plat in platforms:
        procs = plat.data.get("processors") or {}
        ours = {r: p for r, p in procs.items() if isinstance(p, dict) and "backend" in p}
        if not ours:
            continue  # a published machine: its parameters are the paper's
        missing = [r for r, p in ours.items() if not isinstance(p.get("e_f"), dict) or p["e_f"].get("value") is None]
        if missing:
            out.append(f"{plat.name}: characterisation had no meter, so e_f, e_b, p_s ({', '.join(missing)}) and the "
                       "idle power are unknown and the energy models (PeaPaw bound, energy roofline, PEACH's energy "
                       "curve) are not scored; characterise with the meter running, or fit them from a later trace "
                       "with hetval attach-trace --platform-file.")
        for r, p in ours.items():
            problem = energy_fit_problem(p)
            if problem:
                out.append(f"{plat.name} {r}: {problem}; its energy models are not scored (the fit is reported in "
                           "the platform file, never clipped).")
    return out


def section(validation_dir: Path, out_dir: Path, platforms: list) -> tuple[str, list[str], list[str]]:
    """HTML, summary lines and figure files of the energy and PEACH sections."""
    vdir = Path(validation_dir)
    peach_runs = _read_parquet(vdir / "peach_runs.parquet").frame
    peach_fid = _read_parquet(vdir / "peach_fidelity.parquet").frame
    energy_runs = _read_parquet(vdir / "energy_runs.parquet").frame
    roofline_rows = _read_parquet(vdir / "energy_roofline.parquet").frame
    wp_runs = _read_parquet(vdir / "runs.parquet").frame
    metered = 0
    if wp_runs is not None and "energy_median_j" in wp_runs:
        metered += int(wp_runs.loc[wp_runs["energy_median_j"].notna(), "run_id"].nunique())
    if peach_runs is not None:
        metered += int(peach_runs["energy_median_j"].notna().sum())
    statement_html, statement = meter_statement(platforms, metered)
    parts = ["<h2>Energy</h2>", statement_html]
    lines = [statement]
    if metered:
        for gap in model_gaps(platforms):
            parts.append(f'<p class="missing">{html.escape(gap)}</p>')
            lines.append(gap)
    files: list[str] = []

    # energy per WP per processor (SA and LA), measured only
    if wp_runs is not None and len(wp_runs) and "energy_median_j" in wp_runs:
        w = wp_runs[wp_runs["model"] == wp_runs["model"].iloc[0]].drop_duplicates("run_id")
        w = w[w["axis_wp"].astype(bool)].sort_values(["study", "case", "platform", "size", "variant"])
        rows = [[r.study, r.case, r.platform, fmt_sig(r.size), r.variant, fmt_sig(r.time_median_s),
                 fmt_sig(r.energy_median_j), fmt_sig(r.energy_host_median_j), fmt_sig(r.energy_accel_median_j),
                 str(r.energy_source)] for r in w.itertuples()]
        if rows:
            parts.append("<h3>Energy per WP per processor</h3>" + html_table(
                ["study", "case", "platform", "size", "WP", "time s (median)", "energy J (median)", "host J",
                 "accel J", "energy source"], rows))
            parts.append('<p class="what">What this shows: each WP\'s measured time next to its measured energy, '
                         "whole and per processor where the meter could attribute it (a RAPL package shared by both "
                         "processors is node energy only). Empty energy cells mean nothing measured it.</p>")
    if energy_runs is not None and len(energy_runs):
        t = energy_runs["tightness"]
        lines.append(f"PeaPaw energy bound: {len(energy_runs)} metered runs, tightness (EE measured / bound) median "
                     f"{fmt_sig(t.median())} [{fmt_sig(t.min())}–{fmt_sig(t.max())}]")

    if roofline_rows is not None and len(roofline_rows):
        rows = []
        for (case, proc), g in roofline_rows.groupby(["case", "processor"], sort=True):
            t = g["tightness"]
            rows.append([case, proc, str(len(g)), fmt_sig(t.median()), fmt_sig(t.min()), fmt_sig(t.max()),
                         str(int((t > 1).sum())), fmt_sig(g["rel_error"].abs().median())])
            lines.append(f"Energy roofline {case} {proc}: {len(g)} metered, tightness (predicted / measured) median "
                         f"{fmt_sig(t.median())} [{fmt_sig(t.min())}–{fmt_sig(t.max())}], {int((t > 1).sum())} above 1")
        parts.append("<h3>Energy roofline (Choi) against measured energy</h3>" + html_table(
            ["case", "processor", "runs", "tightness median", "min", "max", "above 1 (bound violated)",
             "|rel. error| median"], rows))
        parts.append('<p class="what">What this shows: each processor\'s measured energy (where the meter could '
                     "attribute it) and each run's whole measured energy (node) against the energy roofline "
                     "e_f N_f + e_b N_b + p_s max(t_f N_f, t_b N_b) from the characterised costs and the run's static "
                     "counts. It is a lower bound: tightness above 1 means the run used less energy than the bound "
                     "allows.</p>")

    # PEACH curves
    parts.append("<h2>PEACH: splitting a workload by alpha</h2>")
    if peach_runs is None or not len(peach_runs):
        parts.append('<p class="missing">No PEACH runs with both end points (alpha = 0 and 1) to calibrate from.</p>')
        return "\n".join(parts), lines, files
    keys = ["study", "platform", "workload", "size", "frequency"]
    for n, (k, g) in enumerate(peach_runs.groupby(keys, sort=True)):
        f = peach_fid
        for key, val in zip(keys, k, strict=True):
            f = f[f[key] == val]
        fig = peach_figure(g, f)
        name = f"peach-{n}.png"
        _save(fig, out_dir, name)
        files.append(name)
        label = f"{k[0]} / {k[1]} / {k[2]} n={int(k[3])} / frequency {k[4]}"
        parts.append(f'<figure><img src="{name}" alt="PEACH {html.escape(label)}"><figcaption><b>'
                     f'{html.escape(label)}</b><br><span class="what">What this shows: the measured rate over the '
                     "alpha grid against PEACH's eq. 7 with R_C and R_G from the alpha = 0 and 1 runs; the vertical "
                     "lines are the measured best alpha and the model's continuous optimum (alpha_perf, and alpha_eff "
                     "when energy was measured).</span></figcaption></figure>")
    header = ["workload", "n", "frequency", "by", "n", "kendall tau", "top-1", "selection penalty", "best measured",
              "best predicted", "α continuous", "rel. error median (interior)", "max", "R_C", "R_G"]
    rows = []
    for r in peach_fid.itertuples():
        rows.append([r.workload, fmt_sig(r.size), r.frequency, r.quantity, str(r.n_alternatives),
                     fmt_sig(r.kendall_tau), fmt_sig(r.top1_agreement), fmt_sig(r.selection_penalty),
                     r.best_measured, r.best_predicted, fmt_sig(r.alpha_continuous), fmt_sig(r.error_median),
                     fmt_sig(r.error_max), fmt_sig(r.R_C), fmt_sig(r.R_G)])
        lines.append(f"PEACH {r.study} {r.workload} n={int(r.size)} ({r.frequency}) by {r.quantity}: kendall tau "
                     f"{fmt_sig(r.kendall_tau)}, top-1 {fmt_sig(r.top1_agreement)}, best measured {r.best_measured} "
                     f"vs predicted {r.best_predicted} (continuous {fmt_sig(r.alpha_continuous)}), interior error "
                     f"median {fmt_sig(r.error_median)}")
    parts.append("<h3>PEACH fidelity per curve</h3>" + html_table(header, rows))
    parts.append('<p class="what">What this shows: how well PEACH orders the alpha grid by time (and by energy where '
                 "it was measured), whether it picks the measured best alpha, and the relative error of its "
                 "predictions at the interior points (the end points calibrate the model and reproduce themselves). "
                 "Rates are W/s: flop/s for MatrixMultiply, byte/s for MatrixTranspose.</p>")
    skipped_note = _frequency_note(peach_runs)
    if skipped_note:
        parts.append(f"<p>{html.escape(skipped_note)}</p>")
    return "\n".join(parts), lines, files


def _frequency_note(runs: Any) -> str:
    freqs = sorted(set(runs["frequency"].astype(str)))
    if freqs == ["default"]:
        return ("All PEACH runs used the processors' default frequencies (no (f_C, f_G) pairs configured; a pair this "
                "platform cannot set is recorded as a skipped run, listed with the failed runs).")
    return ""


