"""The Snakemake workflow: lint, dry runs of every shipped study, config errors, and a tiny study end to end."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import BIN, REPO
from tests.workflow.tiny import job_counts, snakemake

STUDIES = sorted((REPO / "config" / "studies").glob("*.yaml"))


#: The one lint the workflow does not follow: its software is a pip virtualenv installed against
#: constraints.txt (what CI tested), not a per-rule conda environment or container - neither conda nor a
#: container runtime exists where it is tested, and an environment nobody runs is not offered.
NO_CONDA = "Specify a conda environment or container for each rule."


def lints(text: str) -> list[str]:
    """The lint headlines (``* ...``) of ``snakemake --lint`` output."""
    return [line.strip()[2:].rstrip(":") for line in text.splitlines() if line.strip().startswith("* ")]


def test_lint(env):
    out = subprocess.run([str(BIN / "snakemake"), "--lint"], env=env, capture_output=True, text=True, cwd=REPO)
    found = lints(out.stdout + out.stderr)
    assert set(found) <= {NO_CONDA}, out.stdout + out.stderr
    assert "Traceback" not in out.stderr


def test_dry_run_default_study(env, tmp_path):
    # as the README runs it: Snakemake finds the root Snakefile and the default profile by itself
    out = snakemake(["-n", "-c2"], env, tmp_path, snakefile=None)
    assert out.returncode == 0, out.stderr
    assert f"Snakefile: {REPO / 'Snakefile'}" in out.stdout + out.stderr
    assert "workflow specific profile profiles/default" in out.stdout + out.stderr
    counts = job_counts(out.stdout)
    assert counts["characterize_platform"] == 2  # two replicates: before the runs and after them
    assert counts["pool_platform"] == 1
    # SA: two sizes x (five WPs and an 11-point alpha sweep); LA: four WPs; PEACH: two workloads x 11 alphas;
    # FDM: three designs x (1 + 3 + 1) scale/decompositions: every one measured in one batch job, in rounds
    assert counts["simulate_batch_b1"] == 1 and "simulate_run" not in counts
    outputs = next(line for line in out.stdout[out.stdout.index("rule simulate_batch_b1:"):].splitlines()
                   if line.strip().startswith("output:"))
    # SA 2 x (5 WPs + 11 alphas), LA 4, PEACH 2 x 11, FDM 3 scales x 5 layouts and the one-rank grid on NumPy x 3
    assert outputs.count("results/raw/default/") == 2 * (5 + 11) + 4 + 2 * 11 + 3 * 5 + 3
    assert counts["ingest_run"] == 12  # PEACH Table VIII, ingested where Snakemake runs (a localrule)
    assert counts["gather_runs"] == counts["validate_models"] == counts["report_validation"] == 1
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("study", STUDIES, ids=lambda p: p.stem)
def test_dry_run_every_shipped_study(env, tmp_path, study):
    out = snakemake(["-n", "-c2", "--configfile", str(study)], env, tmp_path)
    assert out.returncode == 0, out.stderr
    counts = job_counts(out.stdout)
    assert sum(n for rule, n in counts.items() if rule.startswith("simulate_")) >= 1  # a job of its own or a batch


def test_bad_config_stops_before_anything_runs(env, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases:\n  sa:\n    alphas: [0.5, 2.0]\n")
    out = snakemake(["-c2", "--configfile", str(bad)], env, tmp_path)
    assert out.returncode != 0
    errors = [line for line in out.stderr.splitlines() if line.startswith("hetval: config error:")]
    assert errors == ["hetval: config error: cases.sa.alphas[1]: 2.0 is not allowed (allowed: a number >= 0 and <= 1)"]
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_tiny_study_end_to_end(tiny_study):
    """The session's tiny study (tests/workflow/tiny.py): built alone, then its end-to-end checks, run in the
    background beside tests that check no measurement; this waits for them and raises what they raised."""
    from tests.conftest import tiny_end_to_end

    tiny_end_to_end()


def test_rules_use_the_environment_snakemake_runs_in(tmp_path):
    """``.venv/bin/snakemake`` started without activating the environment: the rules' ``python`` and ``hetval``
    are still the environment's (a PATH of the system's directories alone has no Python with hetval in it)."""
    import re

    study = tmp_path / "study.yaml"
    study.write_text("study: pathcheck\ncases:\n  published:\n    tables: [peach-2014-table-viii]\n")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    args = ["-c1", "--configfile", str(study)]
    dry = snakemake([*args, "-n", "--until", "ingest_run"], env, tmp_path / "work")
    assert dry.returncode == 0, dry.stderr
    record = re.search(r"results/raw/pathcheck/\w+\.json", dry.stdout).group(0)
    out = snakemake([record, *args], env, tmp_path / "work")  # before --configfile, which takes every path after it
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert (tmp_path / "work" / record).is_file()


ROUNDS_STUDY = """study: rounds
batch_runs: 8
runs: {warmup: 0, repetitions: 3, rounds: 3}
cases:
  fdm:
    orders: [2]
    steps: 3
    marshaling: [host-staging, device-pack]
    boundary: {kind: cpml, width: 2}
    scales:
      - {ranks: 2, shape: [12, 12, 12]}
"""


def test_runs_measured_in_rounds_are_interleaved_gathered_and_not_redone(env, tmp_path):
    """runs.rounds for real: real MPI runs launched once per round by one batch job, each record merged from its
    launches under the run's own id, gathered whole; a second invocation has nothing to do."""
    import json

    from analysis.storage.dataset import read_runs

    study = tmp_path / "rounds.yaml"
    study.write_text(ROUNDS_STUDY)
    args = ["-c2", "results/rounds/gathered.json", "--configfile", str(study)]
    out = snakemake(args, env, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert log.count("[hetval batch] round ") == 6 and "0 failed, 0 quarantined" in log
    raw = sorted((tmp_path / "results" / "raw" / "rounds").glob("*.json"))
    assert len(raw) == 2
    for path in raw:
        rows = json.loads(path.read_text())["records"]
        assert [r["run_id"] for r in rows] == [path.stem] * 3 and [r["rep"] for r in rows] == [0, 1, 2]
        assert len({r["started_at"] for r in rows}) == 3  # three launches, one per round
        assert all(r["status"] == "ok" and r["time_s"] > 0 for r in rows)
    runs = read_runs(tmp_path / "results" / "runs")
    assert runs.num_rows == 6 and set(runs.column("run_id").to_pylist()) == {p.stem for p in raw}
    again = snakemake([*args, "-n"], env, tmp_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
