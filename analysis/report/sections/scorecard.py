"""The page's first table: which model to trust for which workload class and platform, with intervals
(``scorecard.parquet``, :mod:`analysis.scoring.scorecard`); each cell links to the section holding its evidence."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from analysis.report.common import Inputs
from analysis.report.section import Section, SectionOutput
from analysis.scoring.scorecard import (
    BOUND_HI,
    BOUND_LO,
    MIN_GROUPS,
    MIN_RUNS,
    PREDICTOR_HI,
    PREDICTOR_LO,
    TAU_LO,
    TOP1_LO,
)

#: The report anchor of each scorecard row's evidence (its case's section).
EVIDENCE = {"wp": "#wp", "peach": "#peach", "fdm": "#fdm"}
VERDICT_CSS = {"both": "v-both", "trust for bounds": "v-bounds", "trust for predictions": "v-bounds",
               "trust for ranking": "v-ranking", "undecided": "v-undecided", "neither": "v-neither",
               "not enough data": "v-none"}
JUDGED_CSS = {"trusted": "ok", "not trusted": "bad", "undecided": "v-undecided", "not enough data": "v-none"}


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


def _pooled(r: dict[str, Any]) -> str:
    nights = int(r.get("pooled_snapshots") or 0)
    if nights < 2:
        return "one night"
    return (f"{r['pooled_verdict']} ({nights} nights; tightness "
            f"{_interval(r['pooled_tightness_median'], r['pooled_tightness_lo'], r['pooled_tightness_hi'])})")


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
        header = ["model (kind)", "case", "platform", "workload class", "verdict", "verdict of all nights",
                  "tightness median [95 % CI]", "widest level", "runs", "Kendall tau median [CI]",
                  "noise-aware top-1 [CI]", "groups (distinguishable)", "held-out scale error"]
        rows, lines = [], ["", "Scorecard (verdict: model, case, platform, workload class):"]
        undecided = []
        for r in card.sort_values(["case", "model", "platform", "workload_class"]).to_dict("records"):
            href = EVIDENCE.get(str(r["evidence"]), "#scorecard")
            cell = lambda text, css="", href=href: {"text": text, "href": href, "css": css}  # noqa: E731
            pooled = _pooled(r)
            rows.append([
                cell(f"{r['model']} ({r.get('model_kind') or 'bound'})"), cell(r["case"]), cell(r["platform"]),
                cell(r["workload_class"]), cell(r["verdict"], VERDICT_CSS.get(r["verdict"], "")),
                cell(pooled, VERDICT_CSS.get(str(r.get("pooled_verdict") or ""), "")),
                cell(_interval(r["tightness_median"], r["tightness_lo"], r["tightness_hi"]),
                     JUDGED_CSS.get(r["bounds_verdict"], "")),
                cell(str(r.get("interval_level") or "n/a")),
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
                         f"tau {_interval(r['kendall_tau_median'], r['kendall_tau_lo'], r['kendall_tau_hi'])}; "
                         f"all nights: {pooled})")
            if r.get("decide"):
                undecided.append(f"{r['model']}, {r['case']}, {r['workload_class']}: {r['decide']}")
        out.cell_table(header, rows, caption=(
            f"A bound is trusted when at least {MIN_RUNS} runs were scored and the whole tightness interval lies in "
            f"[{BOUND_LO}, {BOUND_HI}], a predictor when it lies in [{PREDICTOR_LO}, {PREDICTOR_HI}]; ranking when at "
            f"least {MIN_GROUPS} groups of alternatives can be told apart, the tau interval lies above {TAU_LO} and "
            f"the top-1 interval's lower end is at least {TOP1_LO}. An interval clear of its band is not trusted, one across an edge "
            "undecided. Intervals cover the characterisation replicates, the runs and their repetitions; 'widest "
            "level' names the one whose own interval is widest. 'Verdict of all nights' pools every snapshot of this "
            "code, configuration and machine in the history (docs/scorecard.md). A cell links to its evidence."))
        if undecided:
            out.para("What would settle the undecided rows:", "what")
            out.items(undecided)
            lines += ["  undecided: " + u for u in undecided]
        out.lines += lines
        return out
