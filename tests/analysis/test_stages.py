"""Where a study's time went (analysis.planning.stages): each stage's wall time from Snakemake's log."""

from __future__ import annotations

from analysis.planning.stages import stage_times, summary_line

LOG = """\
[Sat Nov 28 09:39:29 2026]
localrule characterize_platform:
    output: results/default/platforms/replicates/p.1.yaml
    jobid: 5
[Sat Nov 28 09:40:21 2026]
Finished jobid: 5 (Rule: characterize_platform)
[Sat Nov 28 09:40:21 2026]
localrule ingest_run:
    jobid: 17
[Sat Nov 28 09:40:21 2026]
rule simulate_batch_b1:
    jobid: 4
[Sat Nov 28 09:40:22 2026]
Finished jobid: 17 (Rule: ingest_run)
[Sat Nov 28 09:44:12 2026]
Finished jobid: 4 (Rule: simulate_batch_b1)
[Sat Nov 28 09:44:12 2026]
localrule characterize_platform:
    jobid: 6
[Sat Nov 28 09:44:50 2026]
Finished jobid: 6 (Rule: characterize_platform)
[Sat Nov 28 09:44:51 2026]
localrule validate_models:
    jobid: 2
[Sat Nov 28 09:45:01 2026]
Finished jobid: 2 (Rule: validate_models)
"""


def test_each_stage_is_the_union_of_its_jobs_and_the_total_spans_the_log():
    times, total = stage_times(LOG)
    assert times == {"characterisation": 52 + 38, "runs": 231, "validation": 10}  # the ingest inside the batch's span
    assert total == 332
    assert summary_line(LOG).startswith("where the time went: characterisation 90 s, runs 231 s, validation 10 s")
    assert summary_line("") == "where the time went: no job ran"
