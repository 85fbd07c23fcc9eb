"""Energy: whether it was measured here (one line when not), energy per WP per processor, PeaPaw's energy
bound and Choi's energy roofline against metered runs, and why energy models are not scored."""

from __future__ import annotations

from pathlib import Path

from analysis.report.common import TABLE_ROWS, Inputs, fmt_sig
from analysis.report.section import Section, SectionOutput

SUPPORTED = ("RAPL (/sys/class/powercap, package and DRAM of every socket), NVML total-energy counters per GPU "
             "(nvidia-ml-py), an external power meter's CSV trace (config key energy.trace: timestamp, channel, "
             "watts), and published measurements (energy_source: published)")


def metered_runs(inputs: Inputs) -> int:
    """Runs whose energy a meter measured (SA/LA and PEACH)."""
    n = 0
    wp_runs, peach_runs = inputs.frame("runs"), inputs.frame("peach_runs")
    if wp_runs is not None and "energy_median_j" in wp_runs:
        n += int(wp_runs.loc[wp_runs["energy_median_j"].notna(), "run_id"].nunique())
    if peach_runs is not None and "energy_median_j" in peach_runs:
        n += int(peach_runs["energy_median_j"].notna().sum())
    return n


def meter_statement(platforms: list, metered: int) -> tuple[str, str, str]:
    """(css, bold text, detail): where energy came from, or that it could not be measured here and why."""
    if metered:
        return "", "", (f"Energy was measured for {metered} run(s); sources and per-processor attribution are in "
                        "each record's energy_source and energy_detail.")
    why = sorted({str(p.data.get("energy", "")) for p in platforms if p.data.get("energy")})
    line = ("Energy could not be measured on this machine: no run had a meter, so every measured energy column is "
            f"null (energy_source: none). Supported sources: {SUPPORTED}.")
    return "missing", line, (f" Characterisation said: {'; '.join(why)}" if why else "")


def model_gaps(platforms: list) -> list[str]:
    """Per characterised platform, why its energy models cannot be scored (no fitted parameters, an unphysical fit)."""
    from analysis.storage.platforms import energy_fit_problem

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


class EnergySection(Section):
    title = "Energy"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        metered = metered_runs(inputs)
        css, bold, detail = meter_statement(inputs.platforms, metered)
        out.heading("Energy")
        out.para(detail, css, bold=bold)
        out.lines.append(bold or detail)
        if metered:
            for gap in model_gaps(inputs.platforms):
                out.para(gap, "missing")
                out.lines.append(gap)
        wp_runs = inputs.frame("runs")
        if wp_runs is not None and "energy_median_j" in wp_runs and wp_runs["energy_median_j"].notna().any():
            w = wp_runs[wp_runs["model"] == wp_runs["model"].iloc[0]].drop_duplicates("run_id")
            w = w[w["axis_wp"].astype(bool)].sort_values(["study", "case", "platform", "size", "variant"])
            rows = [[r.study, r.case, r.platform, str(getattr(r, 'size_label', None) or r.size), r.variant, fmt_sig(r.time_median_s),
                     fmt_sig(r.energy_median_j), fmt_sig(r.energy_host_median_j), fmt_sig(r.energy_accel_median_j),
                     str(r.energy_source)] for r in w.head(TABLE_ROWS).itertuples()]
            if rows:
                out.heading("Energy per WP per processor", 3)
                out.table(["study", "case", "platform", "size", "WP", "time s (median)", "energy J (median)",
                           "host J", "accel J", "energy source"], rows, "energy per WP", total=len(w),
                          source="runs.parquet")
                out.para("What this shows: each WP's measured time next to its measured energy, whole and per "
                         "processor where the meter could attribute it (a RAPL package shared by both processors is "
                         "node energy only). Empty energy cells mean nothing measured it.", "what")
        energy_runs = inputs.frame("energy_runs")
        if energy_runs is not None and len(energy_runs):
            t = energy_runs["tightness"]
            out.lines.append(f"PeaPaw energy bound: {len(energy_runs)} metered runs, tightness (fraction of the bound reached) "
                             f"median {fmt_sig(t.median())} [{fmt_sig(t.min())}–{fmt_sig(t.max())}]")
        roofline_rows = inputs.frame("energy_roofline")
        if roofline_rows is not None and len(roofline_rows):
            rows = []
            for (case, proc), g in roofline_rows.groupby(["case", "processor"], sort=True):
                t = g["tightness"]
                rows.append([case, proc, str(len(g)), fmt_sig(t.median()), fmt_sig(t.min()), fmt_sig(t.max()),
                             str(int((t > 1).sum())), fmt_sig(g["rel_error"].abs().median())])
                out.lines.append(f"Energy roofline {case} {proc}: {len(g)} metered, tightness (fraction of the bound reached) "
                                 f"median {fmt_sig(t.median())} [{fmt_sig(t.min())}–{fmt_sig(t.max())}], "
                                 f"{int((t > 1).sum())} above 1")
            out.heading("Energy roofline (Choi) against measured energy", 3)
            out.table(["case", "processor", "runs", "tightness median", "min", "max", "above 1 (bound violated)",
                       "|rel. error| median"], rows, "energy roofline")
            out.para("What this shows: each processor's measured energy (where the meter could attribute it) and each "
                     "run's whole measured energy (node) against the energy roofline e_f N_f + e_b N_b + p_s "
                     "max(t_f N_f, t_b N_b) from the characterised costs and the run's static counts. It is a lower "
                     "bound: tightness above 1 means the run used less energy than the bound allows.", "what")
        return out
