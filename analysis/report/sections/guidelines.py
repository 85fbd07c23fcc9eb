"""PeaPaw's partitioning guidelines as validation checked them (``guidelines.parquet``)."""

from __future__ import annotations

from pathlib import Path

from analysis.report.common import TABLE_ROWS, Inputs, fmt_sig
from analysis.report.section import Section, SectionOutput


class GuidelinesSection(Section):
    title = "Partitioning guidelines (PeaPaw §5)"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        g = inputs.frame("guidelines")
        out.lines += ["", "PeaPaw partitioning guidelines (P-Paw category; does the measured best WP follow it?):"]
        if g is None:
            note = "No WP runs on a characterised platform with t_f and t_b: no partitioning categories to check."
            out.heading("Partitioning guidelines")
            out.para(note, "missing")
            out.lines.append("  " + note)
            return out
        out.heading(self.title)
        rows = []
        for r in g.head(TABLE_ROWS).itertuples():
            label = getattr(r, "size_label", None)
            group = f"{r.study} / {r.case} / " + (str(label) if isinstance(label, str) and label else f"size {r.size}")
            none_run = "none of them ran"
            rows.append([r.platform, fmt_sig(r.bl_host), fmt_sig(r.bl_accel), r.p_category, r.p_guideline,
                         r.e_category, f"{group}: {r.best_measured}", r.guideline_wps or none_run, r.follows,
                         r.least_energy])
            out.lines.append(f"  {r.platform} {group.replace(' / ', ' ')}: {r.p_category}; measured best "
                             f"{r.best_measured}; guideline WPs {r.guideline_wps or none_run}; follows: {r.follows}")
            if not str(r.least_energy).startswith("n/a"):
                out.lines.append(f"  {r.platform} {group.replace(' / ', ' ')}: E-Paw {r.e_category}; least energy "
                                 f"{r.least_energy}")
        out.table(["platform", "BL_C = t_bC/t_fC", "BL_G = t_bG/t_fG", "P-Paw category", "guideline",
                   "E-Paw category", "measured best WP", "WPs that follow the guideline", "best follows it",
                   "least-energy WP follows E-Paw"], rows, "guideline checks", total=len(g),
                  source="guidelines.parquet")
        out.para("What this shows: each platform's P-Paw category from its measured machine balances (eq. 27) with "
                 "the paper's guideline, and, per WP study and size, whether the WP that measured fastest is one the "
                 "guideline prescribes. PeaPaw itself found its guideline picked the best WP in 2 of 12 cases "
                 "(§6.4.3). The E-Paw category needs e_f, e_b, p_s, which only an energy meter provides.", "what")
        return out
