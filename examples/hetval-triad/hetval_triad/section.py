"""The triad case's report section: each run measured against its bound, and each fraction grid's ranking."""

from __future__ import annotations

from pathlib import Path

from analysis.report.common import Inputs, fmt_interval, fmt_sig
from analysis.report.section import Section, SectionOutput


class TriadSection(Section):
    title = "STREAM triad"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        out.heading("STREAM triad split by fraction (example plugin)", anchor="triad")
        runs, fid = inputs.frame("triad_runs"), inputs.frame("triad_fidelity")
        if runs is None or not len(runs):
            out.para("No triad run was scored in this study.", "missing")
            return out
        out.table(["platform", "elements", "fraction on the accelerator", "model", "measured median (s)",
                   "predicted (s)", "tightness"],
                  [[str(r.platform), f"{int(r.size):,}", f"{float(r.alpha):g}", str(r.model), fmt_sig(r.time_median_s),
                    fmt_sig(r.time_predicted_s), fmt_sig(r.tightness)] for r in runs.itertuples()],
                  "each run: its measured median time beside the model's (tightness = predicted / measured)",
                  total=len(runs), source="triad_runs.parquet")
        if fid is not None and len(fid):
            out.table(["platform", "elements", "model", "fractions", "Kendall tau [CI]", "fastest measured",
                       "fastest predicted"],
                      [[str(r["platform"]), f"{int(r['size']):,}", str(r["model"]), str(int(r["n_alternatives"])),
                        fmt_interval(r, "kendall_tau"), str(r["best_measured"]), str(r["best_predicted"])]
                       for r in fid.to_dict("records")],
                      "each size's fraction grid ranked by the model", total=len(fid), source="triad_fidelity.parquet")
        out.para("What this shows: a streaming bound max(bytes_host t_b_host, bytes_accel t_b_accel) for a triad "
                 "split between the two processors, and whether it orders the fractions as the runs do.", "what")
        return out
