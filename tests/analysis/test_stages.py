"""Where a study's time went (analysis.planning.stages): each stage's wall time from Snakemake's log."""

from __future__ import annotations

import pytest

from analysis.planning.stages import compiling_seconds, stage_times, summary_line
from sims.bench import KERNELS_READY

LOG = """\
[Sat Nov 28 09:39:29 2026]
localrule characterize_platform:
    output: results/default/platforms/replicates/p.1.yaml
    log: logs/default/characterize/p.1.log
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
    log: logs/default/characterize/p.2.log
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


def test_the_share_that_compiled_the_fdm_kernels_is_read_from_the_characterisations_own_logs(tmp_path):
    logs = tmp_path / "logs" / "default" / "characterize"
    logs.mkdir(parents=True)
    # exactly the line the characterisation prints (sims.bench.characterize), once per job: compiled, then loaded
    (logs / "p.1.log").write_text(f"[hetval characterize] p: {KERNELS_READY.format(seconds=21.96)} [60 s]\n")
    (logs / "p.2.log").write_text(f"[hetval characterize] p: {KERNELS_READY.format(seconds=0.31)} [27 s]\n")
    assert compiling_seconds(LOG, tmp_path) == pytest.approx(22.0 + 0.3)  # as printed, to a tenth
    line = summary_line(LOG, tmp_path)
    assert line.startswith("where the time went: characterisation 90 s (22 s of it compiling the FDM kernels, which "
                           "Numba's cache keeps for the next study), runs 231 s"), line
    # kernels loaded from the cache in well under a second: nothing to say
    (logs / "p.1.log").write_text(f"[hetval characterize] p: {KERNELS_READY.format(seconds=0.4)} [27 s]\n")
    assert summary_line(LOG, tmp_path).startswith("where the time went: characterisation 90 s, runs 231 s")
    # a log that is gone (or a study without FDM runs) adds nothing
    for f in logs.iterdir():
        f.unlink()
    assert compiling_seconds(LOG, tmp_path) == 0.0
