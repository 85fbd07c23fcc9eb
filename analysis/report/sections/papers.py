"""The papers' own numbers recomputed from their own inputs (reproduced or not, with both numbers), and the
published measurements ingested as runs, scored against the predictions the papers print next to them."""

from __future__ import annotations

from pathlib import Path

from analysis.cases.published import summary_lines
from analysis.report.common import Inputs, fmt_fraction
from analysis.report.section import Section, SectionOutput


class PapersSection(Section):
    title = "Published studies"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        claims = inputs.table("published")
        if not claims.usable:
            why = ("missing: the papers' claims were not recomputed" if claims.status == "missing" else
                   f"{claims.status}: no published catalogs were given to the validation job")
            out.heading("Published studies")
            note = f"published.parquet is {why}."
            out.para(note, "missing")
            out.lines += ["", note]
        else:
            df = claims.frame
            out.lines += ["", "published claims recomputed from the papers' own inputs (reproduced / total):"]
            out.heading("Published studies: the papers' numbers from their own inputs")
            out.para("What this shows: each number, ordering or category a paper prints, recomputed with hetval's "
                     "models from that paper's machine table (analysis/resources/published/machines/) and workload parameters; "
                     "nothing is fitted or adjusted. A claim that does not reproduce is shown with both numbers.",
                     "what")
            for paper, g in df.groupby("paper", sort=True):
                ok = int(g["reproduced"].sum())
                out.lines.append(f"  {paper}: {ok} / {len(g)}")
                out.heading(f"{paper}: {ok} of {len(g)} reproduced", 3)
                misses = g[~g["reproduced"].astype(bool)]
                if len(misses):  # the claims that do not reproduce first, each with its reason, never collapsed
                    out.table(["where", "platform", "quantity", "unit", "published", "ours", "tolerance", "why not",
                               "computed from"],
                              [[str(v) for v in (r.where, r.platform, r.quantity, r.unit, r.published, r.ours,
                                                 getattr(r, "tolerance", ""), getattr(r, "reason", "") or r.note,
                                                 r.inputs)]
                               for r in misses.itertuples()], f"{paper}: claims not reproduced")
                out.table(["where", "platform", "quantity", "unit", "published", "ours", "tolerance", "reproduced",
                           "computed from", "note"],
                          [[str(v) for v in (r.where, r.platform, r.quantity, r.unit, r.published, r.ours,
                                             getattr(r, "tolerance", ""), "yes" if r.reproduced else "NO", r.inputs,
                                             r.note)]
                           for r in g.itertuples()], f"{paper}: every claim")
        runs, fid = inputs.frame("published_runs"), inputs.frame("published_fidelity")
        if runs is None:
            return out
        out.lines += ["", *summary_lines(runs, fid if fid is not None else runs.iloc[:0])]
        out.heading("Published measurements as runs (energy_source: published)", 3)
        out.table(["application", "strategy/objective", "time per unit (measured)", "predicted",
                   "energy per unit (measured)", "predicted", "rate error", "efficiency error", "same configuration"],
                  [[r.application, r.variant, f"{r.time_s:.4g}", f"{r.time_predicted_s:.4g}", f"{r.energy_j:.4g}",
                    f"{r.energy_predicted_j:.4g}", f"{r.rate_error:+.3f}", f"{r.efficiency_error:+.3f}",
                    "yes" if r.same_configuration else "no"] for r in runs.itertuples()], "published runs")
        out.para("What this shows: the measurements a paper prints, ingested as run records and scored like any run "
                 "against the prediction the paper prints next to them (the paper does not publish these "
                 "applications' model inputs, so hetval cannot recompute the predictions). Time and energy are per "
                 "unit of work.", "what")
        if fid is not None:
            out.table(["application", "axis", "n", "kendall tau", "top-1", "selection penalty", "best measured",
                       "best predicted"],
                      [[r.application, r.axis, str(r.n_alternatives), fmt_fraction(r.kendall_tau),
                        fmt_fraction(r.top1_agreement), fmt_fraction(r.selection_penalty), r.best_measured,
                        r.best_predicted] for r in fid.itertuples()], "published fidelity")
        return out
