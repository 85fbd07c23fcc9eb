"""How to split a workload between the processors: the measured best alpha of every sweep beside PEACH's optimum,
PerDome's p-DP split and the per-operation model's, each with its selection penalty and interval
(``splits.parquet``, :mod:`analysis.scoring.splits`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.report.common import TABLE_ROWS, Inputs, finite
from analysis.report.section import Section, SectionOutput
from analysis.scoring.splits import MEASURED, SWEEP_KEYS


def _pct(v: Any) -> str:
    return f"{100 * float(v):.1f} %" if finite(v) else "n/a"


def _answer(r: Any) -> str:
    if not finite(r.alpha):
        return "n/a"
    if finite(r.alpha_lo) and finite(r.alpha_hi) and (r.alpha_lo != r.alpha or r.alpha_hi != r.alpha):
        return f"{r.alpha:.2f} [{r.alpha_lo:.2f}-{r.alpha_hi:.2f}]"
    return f"{r.alpha:.2f}"


def _penalty(r: Any) -> str:
    if not finite(r.selection_penalty):
        return "n/a"
    if finite(r.selection_penalty_lo) and finite(r.selection_penalty_hi):
        return f"{_pct(r.selection_penalty)} [{_pct(r.selection_penalty_lo)}-{_pct(r.selection_penalty_hi)}]"
    return _pct(r.selection_penalty)


class SplitsSection(Section):
    title = "How to split"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        out.heading("How to split one workload: each paper's answer", anchor="splits")
        table = inputs.frame("splits")
        if table is None or not len(table):
            out.para("No alpha sweep with its end points ran in this study: no split to compare.", "missing")
            return out
        sweeps = table.drop_duplicates(SWEEP_KEYS)
        rows, lines = [], ["", "How to split (answer alpha, run at alpha, selection penalty):"]
        for r in table.head(TABLE_ROWS * 5).itertuples():
            note = r.note if isinstance(r.note, str) else ""
            rows.append([r.case, r.size_label, r.method, _answer(r), f"{r.alpha_run:.2f}" if finite(r.alpha_run) else "n/a",
                         _penalty(r), note])
            lines.append(f"  {r.case} {r.size_label}: {r.method}: alpha {_answer(r)}, runs at "
                         f"{r.alpha_run if finite(r.alpha_run) else 'n/a'}, penalty {_penalty(r)}"
                         + (f" ({note})" if note else ""))
        out.table(["case", "workload", "answer", "alpha (fraction on the accel) [CI]", "run at (swept)",
                   "selection penalty [CI]", "why none"], rows, "how to split", total=len(table),
                  source="splits.parquet")
        trusted = []
        for _, g in table.groupby(SWEEP_KEYS, sort=True):
            answers = g[(g["method"] != MEASURED) & g["selection_penalty"].notna()]
            if len(answers):
                best = answers.sort_values(["selection_penalty_hi", "selection_penalty"], na_position="last").iloc[0]
                trusted.append(f"{best['case']} {best['size_label']}: {best['method']} (penalty {_penalty(best)})")
        if trusted:
            out.para("The answer with the smallest penalty per sweep (by the upper end of its interval):", "what")
            out.items(trusted)
            lines += ["  least penalty: " + t for t in trusted]
        out.para(f"What this shows: for each of the {len(sweeps)} alpha sweep(s), the split each paper's model "
                 "recommends, run at the nearest swept alpha, and what following it costs against the measured best "
                 "(0 % = it picks the best). PEACH calibrates from the sweep's alpha 0 and 1 runs (eq. 13; eq. 15 "
                 "for energy, with a meter); PerDome/PeaPaw balances its bounds of the whole workload on each "
                 "processor (eq. 19); the per-operation model picks its fastest predicted alpha. Intervals resample "
                 "each point's repetitions: the measured best and PEACH's answer move with them, the other models' "
                 "come from the characterisation.", "what")
        out.lines += lines
        return out
