"""The page's headline (ok / failed / quarantined counts) and what the report read."""

from __future__ import annotations

from pathlib import Path

from analysis.report.common import Inputs
from analysis.report.section import Section, SectionOutput


def counts(inputs: Inputs) -> dict[str, int]:
    """ok / failed / quarantined counts from the files themselves (not from summary.json)."""
    runs = inputs.runs.frame
    if runs is None:
        ok = 0
    elif "run_id" in runs.columns:
        ok = int(runs["run_id"].nunique())
    else:
        ok = len(runs)
    failed = inputs.failed.frame
    return {"ok": ok, "failed": 0 if failed is None else len(failed), "quarantined": len(inputs.quarantined)}


def input_lines(inputs: Inputs) -> list[str]:
    lines = [f"{t.name}: {t.status}" for t in (inputs.runs, inputs.fidelity, inputs.failed)]
    lines.append(f"summary.json: {inputs.summary_status}")
    lines.append(f"platform files: {len(inputs.platforms)}")
    lines.extend(inputs.platform_problems)
    lines.append(f"quarantine: {inputs.quarantine_status}")
    return lines


class OverviewSection(Section):
    title = "Overview"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        n = counts(inputs)
        summary = ", ".join(f"{k}={v}" for k, v in (inputs.summary or {}).items())
        out.para(f"{n['ok']} runs ok, {n['failed']} failed, {n['quarantined']} quarantined records."
                 + (f" summary.json: {summary}" if summary else ""),
                 "alert" if n["failed"] or n["quarantined"] else "good",
                 links=[("failed runs", "#failed"), ("quarantine", "#quarantine")])
        out.heading("Inputs")
        out.items(input_lines(inputs))
        out.lines += [f"runs: {n['ok']} ok, {n['failed']} failed, {n['quarantined']} quarantined"]
        if summary:
            out.lines.append("summary.json: " + summary)
        out.lines += ["", "inputs:", *(f"  {line}" for line in input_lines(inputs))]
        return out
