"""The page's first table: which model to trust for which workload class and platform, with intervals
(``scorecard.parquet``, :mod:`analysis.scoring.scorecard`); each cell links to the section holding its evidence.
Then the matrix: every registered model against every case the study ran (by workload class), each cell its
verdict or, in grey, why the model cannot judge that case (:meth:`analysis.registry.Model.why_not`)."""

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


def _href(evidence: object) -> str:
    """The link to a row's evidence: the anchor its case named (:attr:`analysis.registry.Scored.evidence`), else
    the scorecard itself."""
    return f"#{evidence}" if isinstance(evidence, str) and evidence else "#scorecard"


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


#: the cases whose runs the matrix shows (the published tables are the papers' own, scored on their own)
MATRIX_SKIPS = ("published",)


def matrix(card: Any, cases_run: list[str]) -> tuple[list[tuple[str, str]], list[tuple[str, list[dict[str, Any]]]]]:
    """The models x (case, workload class) grid: its columns, and per model (registry name order) one cell per
    column - ``{"verdict", "href"}`` where the scorecard has the row, ``{"why"}`` where the model cannot judge it.

    A case the study ran whose runs no model scored has one column of its own (class ``all``); the classes of a
    case are those any model's rows have."""
    from analysis.registry import RegistryError, models

    try:
        registered = {n: m for n, m in sorted(models().items()) if m.quantity == "time"
                      and set(m.cases) - set(MATRIX_SKIPS)}
    except RegistryError:
        registered = {}
    rows = card.to_dict("records") if card is not None else []
    order = [c for c in dict.fromkeys([*cases_run, *(str(r["case"]) for r in rows)]) if c not in MATRIX_SKIPS]
    columns = []
    for case_name in order:
        classes = sorted({str(r["workload_class"]) for r in rows if str(r["case"]) == case_name})
        columns += [(case_name, c) for c in classes] or [(case_name, "all")]
    names = sorted({*registered, *(str(r["model"]) for r in rows)})
    found = {(str(r["model"]), str(r["case"]), str(r["workload_class"])): r for r in rows}
    grid = []
    for name in names:
        cells = []
        for case_name, wclass in columns:
            r = found.get((name, case_name, wclass))
            if r is not None and int(r.get("runs") or 0) == 0 and name in registered:  # rows, none predicted
                cells.append({"why": registered[name].why_not(case_name, None if wclass == "all" else wclass)})
            elif r is not None:
                cells.append({"verdict": str(r["verdict"]), "href": _href(r["evidence"])})
            elif name in registered:
                cells.append({"why": registered[name].why_not(case_name, None if wclass == "all" else wclass)})
            else:
                cells.append({"why": f"{name} is not registered here"})
        grid.append((name, cells))
    return columns, grid


def _cases_run(inputs: Inputs) -> list[str]:
    """The cases with ok runs in this study (the validation summary's counts)."""
    counts = ((inputs.summary or {}).get("runs_ok") or {}) if inputs.summary else {}
    return [str(c) for c, n in counts.items() if n]


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
            href = _href(r["evidence"])
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
        columns, grid = matrix(card, _cases_run(inputs))
        if columns and grid:
            out.heading("Every model on every case", 3, anchor="matrix")
            mrows, mlines = [], ["", "Matrix (model: case / workload class = verdict, or n/a: why):"]
            for name, cells in grid:
                row = [{"text": name, "href": "#scorecard", "css": ""}]
                said = []
                for (case_name, wclass), c in zip(columns, cells, strict=True):
                    if "verdict" in c:
                        row.append({"text": c["verdict"], "href": c["href"], "css": VERDICT_CSS.get(c["verdict"], "")})
                        said.append(f"{case_name}/{wclass} = {c['verdict']}")
                    else:
                        row.append({"text": f"not applicable: {c['why']}", "href": "#matrix", "css": "v-none"})
                        said.append(f"{case_name}/{wclass} = n/a ({c['why']})")
                mrows.append(row)
                mlines.append(f"  {name}: " + "; ".join(said))
            out.cell_table(["model", *(f"{c} / {w}" for c, w in columns)], mrows, caption=(
                "Each model against each case the study ran, by workload class: its verdict (the scorecard's rule, "
                "colour as above; the cell links to the evidence) or, in grey, why it cannot judge that case: its "
                "paper defines it for other runs, or no run of the class had its inputs. docs/scorecard.md explains "
                "the grid."))
            out.lines += mlines
        if undecided:
            out.para("What would settle the undecided rows:", "what")
            out.items(undecided)
            lines += ["  undecided: " + u for u in undecided]
        out.lines += lines
        return out
