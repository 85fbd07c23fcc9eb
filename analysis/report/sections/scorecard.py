"""The page's first table: which model to trust for which workload class and platform, with intervals
(``scorecard.parquet``, :mod:`analysis.scoring.scorecard`); each cell links to the section holding its evidence."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from analysis.report.common import Inputs
from analysis.report.section import Section, SectionOutput
from analysis.scoring.scorecard import BOUND_HI, BOUND_LO, MIN_GROUPS, MIN_RUNS, TAU_LO, TOP1_LO

#: The report anchor of each scorecard row's evidence (its case's section).
EVIDENCE = {"wp": "#wp", "peach": "#peach", "fdm": "#fdm"}
VERDICT_CSS = {"both": "v-both", "trust for bounds": "v-bounds", "trust for ranking": "v-ranking",
               "neither": "v-neither", "not enough data": "v-none"}
JUDGED_CSS = {"trusted": "ok", "not trusted": "bad", "not enough data": "v-none"}


def _num(v: Any, digits: int = 2) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(x) else f"{x:.{digits}f}"


def _interval(mid: Any, lo: Any, hi: Any) -> str:
    if _num(mid) == "n/a":
        return "n/a"
    return f"{_num(mid)} [{_num(lo)}-{_num(hi)}]" if _num(lo) != "n/a" else f"{_num(mid)} [no interval]"


class ScorecardSection(Section):
    title = "Scorecard"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        out.heading("Which model to trust", anchor="scorecard")
        card = inputs.frame("scorecard")
        if card is None:
            status = inputs.table("scorecard").status
            out.para(f"scorecard.parquet is {status}: no scorecard.", "missing")
            out.lines += ["", f"Scorecard: scorecard.parquet is {status}."]
            return out
        header = ["model", "case", "platform", "workload class", "verdict", "tightness median [95 % CI]",
                  "runs", "Kendall tau median [CI]", "noise-aware top-1 [CI]", "groups (distinguishable)",
                  "held-out scale error"]
        rows, lines = [], ["", "Scorecard (verdict: model, case, platform, workload class):"]
        for r in card.sort_values(["case", "model", "platform", "workload_class"]).to_dict("records"):
            href = EVIDENCE.get(str(r["evidence"]), "#scorecard")
            cell = lambda text, css="", href=href: {"text": text, "href": href, "css": css}  # noqa: E731
            rows.append([
                cell(r["model"]), cell(r["case"]), cell(r["platform"]), cell(r["workload_class"]),
                cell(r["verdict"], VERDICT_CSS.get(r["verdict"], "")),
                cell(_interval(r["tightness_median"], r["tightness_lo"], r["tightness_hi"]),
                     JUDGED_CSS.get(r["bounds_verdict"], "")),
                cell(str(r["runs"])),
                cell(_interval(r["kendall_tau_median"], r["kendall_tau_lo"], r["kendall_tau_hi"]),
                     JUDGED_CSS.get(r["ranking_verdict"], "")),
                cell(_interval(r["top1_noise_aware_rate"], r["top1_noise_aware_lo"], r["top1_noise_aware_hi"]),
                     JUDGED_CSS.get(r["ranking_verdict"], "")),
                cell(f"{r['groups']} ({r['distinguishable_groups']})"),
                cell(_num(r["heldout_error"])),
            ])
            lines.append(f"  {r['verdict']}: {r['model']}, {r['case']}, {r['platform']}, {r['workload_class']} "
                         f"(tightness {_interval(r['tightness_median'], r['tightness_lo'], r['tightness_hi'])}, "
                         f"tau {_interval(r['kendall_tau_median'], r['kendall_tau_lo'], r['kendall_tau_hi'])})")
        out.cell_table(header, rows, caption=(
            f"Bounds are trusted when at least {MIN_RUNS} runs were scored and the whole tightness interval lies "
            f"in [{BOUND_LO}, {BOUND_HI}]; ranking when at least {MIN_GROUPS} groups of alternatives can be told "
            f"apart, the tau interval lies above {TAU_LO} and the top-1 interval reaches {TOP1_LO} "
            "(docs/scorecard.md). A cell links to its evidence."))
        out.lines += lines
        return out
