"""The page's head: where the numbers come from (provenance), every case's run counts, what the report read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.report.common import Inputs
from analysis.report.section import Section, SectionOutput


def counts(inputs: Inputs) -> dict[str, Any]:
    """ok runs per case (from summary.json, which counts every case), failed and quarantined."""
    ok = (inputs.summary or {}).get("runs_ok") or {}
    per_case = dict(ok) if isinstance(ok, dict) else {"runs": int(ok)}
    if not per_case:  # no summary: the WP runs table is all there is to count
        runs = inputs.runs.frame
        if runs is not None and {"run_id", "case"} <= set(runs.columns):
            per_case = {str(c): int(g["run_id"].nunique()) for c, g in runs.groupby("case", sort=True)}
        elif runs is not None:
            per_case = {"runs": len(runs)}
    failed = inputs.failed.frame
    return {"cases": {c: int(n) for c, n in per_case.items() if n}, "ok": int(sum(per_case.values())),
            "failed": 0 if failed is None else len(failed), "quarantined": len(inputs.quarantined),
            "given_up": len(inputs.given_up)}


def provenance(inputs: Inputs) -> list[tuple[str, str]]:
    """(what, value) rows: the code, the config, where and when the runs were measured, when validated."""
    s = inputs.summary or {}
    p = s.get("provenance") or {}
    window = s.get("runs_measured") or {}
    hosts = window.get("hosts") or []
    sha = p.get("git_sha") or "unknown (not a git checkout)"
    rows = [
        ("study", str(p.get("study") or "n/a")),
        ("hetval", f"{p.get('version') or 'unknown'}, git {sha}" + (" (uncommitted changes)" if p.get("git_dirty") else "")),
        ("config hash", str(p.get("config_hash") or "n/a")),
        ("runs measured", f"{window.get('first') or 'n/a'} to {window.get('last') or 'n/a'}"),
        ("on host(s)", ", ".join(hosts[:8]) + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "") or "n/a"),
        ("platforms", ", ".join(pl.name for pl in inputs.platforms) or "none"),
        ("validated", str(p.get("validated_at") or "n/a")),
        ("bootstrap", ", ".join(f"{k} {v}" for k, v in (p.get("bootstrap") or {}).items()) or "n/a"),
    ]
    if p.get("history_snapshot"):
        rows.append(("history snapshot", str(p["history_snapshot"])))
    return rows


def input_lines(inputs: Inputs) -> list[str]:
    lines = [f"{t.name}: {t.status}" for t in (inputs.runs, inputs.fidelity, inputs.failed)]
    lines.append(f"summary.json: {inputs.summary_status}")
    lines.append(f"platform files: {len(inputs.platforms)}")
    lines.extend(inputs.platform_problems)
    lines.append(f"gather manifest: {inputs.quarantine_status}")
    return lines


class OverviewSection(Section):
    title = "Overview"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        n = counts(inputs)
        per_case = ", ".join(f"{c} {k}" for c, k in n["cases"].items())
        head = (f"{n['ok']} runs ok ({per_case or 'none'}); {n['failed']} failed; {n['quarantined']} quarantined "
                "record(s)" + (f"; {n['given_up']} run(s) given up after repeated failures" if n["given_up"] else "")
                + ".")
        trouble = n["failed"] or n["quarantined"] or n["given_up"]
        out.para(head, "alert" if trouble else "good",
                 links=[("failed runs", "#failed"), ("quarantine", "#quarantine")] if trouble else [])
        rows = provenance(inputs)
        out.table(["", ""], [[k, v] for k, v in rows], "where these numbers come from")
        out.heading("Inputs", 3)
        out.items(input_lines(inputs))
        out.lines += [head, *(f"{k}: {v}" for k, v in rows), "", "inputs:", *(f"  {line}" for line in input_lines(inputs))]
        return out
