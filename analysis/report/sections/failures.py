"""Failed and skipped runs with their reasons, and the records quarantined by gather."""

from __future__ import annotations

from pathlib import Path

from analysis.report.common import TABLE_ROWS, Inputs, cell_text
from analysis.report.section import Section, SectionOutput


class FailuresSection(Section):
    title = "Failed runs and quarantined records"

    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        out = SectionOutput()
        out.heading("Failed runs", anchor="failed")
        failed = inputs.failed
        if not failed.usable:
            if failed.status == "empty":
                out.para("No failed runs (failed.parquet is empty).")
            else:
                out.para(f"failed.parquet is {failed.status}: failed runs cannot be listed.", "missing")
        else:
            f = failed.frame
            cols = [c for c in ("run_id", "study", "case", "variant", "platform", "started_at", "error") if c in f]
            out.para("", bold=f"{len(f)} failed run(s).")
            out.table(cols, [[cell_text(row[c]) for c in cols] for _, row in f.head(TABLE_ROWS).iterrows()],
                      "failed runs", total=len(f), source="failed.parquet")
        if inputs.given_up:
            out.heading("Runs not retried any more", 3, anchor="given-up")
            out.para(f"{len(inputs.given_up)} run(s) failed the same way repeatedly (runs.max_attempts) and are not "
                     "retried until the code changes or the study is run with --config retry_failed=true.", "alert")
            out.table(["run_id", "attempts", "last reason"],
                      [[cell_text(g.get("run_id")), cell_text(g.get("attempts")), cell_text(g.get("why"))]
                       for g in inputs.given_up[:TABLE_ROWS]], "runs given up", total=len(inputs.given_up),
                      source="the gather manifest")
            out.lines.append(f"{len(inputs.given_up)} run(s) given up after repeated failures: "
                             + ", ".join(cell_text(g.get("run_id")) for g in inputs.given_up[:10]))
        out.heading("Quarantined records", anchor="quarantine")
        if inputs.quarantine_status != "ok":
            out.para(f"quarantine directory is {inputs.quarantine_status}.", "missing")
        elif not inputs.quarantined:
            out.para("No quarantined records.")
        else:
            out.para(f"{len(inputs.quarantined)} quarantined record(s) failed the schema check and are not in the "
                     "dataset.")
            out.table(["file", "reason"], [[q.file, q.reason] for q in inputs.quarantined], "quarantined records")
        return out
