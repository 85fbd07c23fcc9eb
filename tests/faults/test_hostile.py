"""Hostile or inconsistent input is refused in one line, quarantined with its reason, or healed - and nothing
is written outside the results directory: raw records that lie about where they live, a data file that
does not read, runs that fail the same way again and again, configs with NaN, infinities, typos and
impossible sizes, and run specs with bad counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.planning import heal, retry
from analysis.storage import dataset
from analysis.storage.dataset import Matrix
from analysis.storage.manifest import check_manifest
from sims.record import FIELDS
from tests.conftest import REPO, SLURM_PROGRAMS, cli, env_without


def record(run_id: str, rep: int = 0, **kw) -> dict:
    rec = {name: None for name, _, _ in FIELDS}
    rec.update(run_id=run_id, study="s", case="sa", variant="CO", params="{}", platform="p", ranks=2, rep=rep,
               status="ok", time_s=0.5 + rep, flops=100, bytes=10, energy_source="none",
               started_at="2026-11-22T03:00:00.000000Z", hostname="h", versions="{}", config_hash="c")
    rec.update(kw)
    return rec


@pytest.fixture
def root(tmp_path):
    """A results directory inside a sandbox: anything written outside ``results/`` shows up in the sandbox."""
    (tmp_path / "results").mkdir()
    return tmp_path


def put(root: Path, study_dir: str, run_id: str, reps: int = 2, **kw) -> Path:
    path = root / "results" / "raw" / study_dir / f"{run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run_id": run_id, "records": [record(run_id, r, **kw) for r in range(reps)]}))
    return path


def run_gather(root: Path, files, **kw) -> tuple[dataset.GatherResult, list[str]]:
    lines: list[str] = []
    r = root / "results"
    res = dataset.gather(files, r / "runs", r / "quarantine", r / "retry", log=lines.append, **kw)
    return res, lines


def outside(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                  and not p.relative_to(root).parts[0] == "results")


@pytest.mark.parametrize(("change", "reason"), [
    ({"study": "../../../escaped"}, "study"),
    ({"study": "../../escaped_retry", "status": "failed", "error": "x", "time_s": None}, "study"),
    ({"study": "default"}, "differs from the directory"),
    ({"study": "s\n"}, "not a safe name"),
    ({"case": "../x"}, "not a safe name"),
])
def test_a_record_that_lies_about_where_it_lives_is_quarantined(root, change, reason):
    path = put(root, "s", "a" * 16, **change)
    res, lines = run_gather(root, [path])
    assert len(res.quarantined) == 1 and reason in res.quarantined[0]["reason"]
    assert any("quarantined" in line for line in lines)
    assert outside(root) == []
    assert dataset.read_runs(root / "results" / "runs").num_rows == 0
    assert json.loads((root / "results" / "retry" / "s" / ("a" * 16 + ".json")).read_text())["run_id"] == "a" * 16


SPEC_IDENTITY = {"variant": "CO", "platform": "p", "ranks": 2, "size": 1024, "params": {"n": 1024, "alpha": 0.5}}


@pytest.mark.parametrize(("change", "reason"), [
    ({"variant": "GO"}, "variant 'GO' differs from the study's matrix ('CO')"),
    ({"platform": "../../../../tmp/evil"}, "platform"),
    ({"platform": "q"}, "platform 'q' differs from the study's matrix"),
    ({"ranks": 4}, "ranks 4 differs"),
    ({"size": 2048}, "size 2048 differs"),
    ({"params": "{not json"}, "field 'params': not JSON text"),
    ({"params": "[1, 2]"}, "not a JSON object"),
    ({"params": '{"n": 1024, "alpha": 0.25}'}, "params alpha differ"),
    ({"params": '{"n": NaN, "alpha": 0.5}'}, "not JSON text"),
    ({"time_s": 1e308}, "'time_s': 1e+308 is not a time one run can take"),
    ({"time_host_s": -1.0}, "'time_host_s'"),
    ({"energy_detail": "{"}, "field 'energy_detail': not JSON text"),
])
def test_a_record_is_checked_field_by_field_against_its_spec(root, change, reason):
    """Nothing a user did not measure is believed: every field the run's spec defines must be the spec's."""
    rid = "a" * 16
    ok = {"size": 1024, "params": json.dumps({"n": 1024, "alpha": 0.5, "described": "by the job"})}
    path = put(root, "s", rid, **{**ok, **change})
    res, lines = run_gather(root, [path], matrix=Matrix("s", {rid: "sa"}, {rid: SPEC_IDENTITY}))
    assert len(res.quarantined) == 1 and reason in res.quarantined[0]["reason"], res.quarantined
    assert dataset.read_runs(root / "results" / "runs").num_rows == 0
    assert outside(root) == []
    # the same record as the spec says it: believed (a record's params may add its job's own description)
    res, _ = run_gather(root, [put(root, "s", rid, **ok)], matrix=Matrix("s", {rid: "sa"}, {rid: SPEC_IDENTITY}))
    assert not res.quarantined and dataset.read_runs(root / "results" / "runs").num_rows == 2


def test_a_failed_record_without_a_size_is_not_a_lie(root):
    rid = "a" * 16
    path = put(root, "s", rid, reps=1, status="failed", error="boom", time_s=None, size=None,
               params=json.dumps({"n": 1024, "alpha": 0.5}))
    res, _ = run_gather(root, [path], matrix=Matrix("s", {rid: "sa"}, {rid: SPEC_IDENTITY}))
    assert not res.quarantined and res.failed_runs == [rid]


def test_a_raw_record_that_is_a_link_is_not_followed(root):
    """``ln -sf /etc/passwd results/raw/s/<run_id>.json``: quarantined with where it pointed, nothing copied."""
    secret = root / "secret.txt"
    secret.write_text("root:x:0:0:secret\n")
    rid = "a" * 16
    link = root / "results" / "raw" / "s" / f"{rid}.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    res, _ = run_gather(root, [link], matrix=Matrix("s", {rid: "sa"}))
    assert len(res.quarantined) == 1 and "symbolic link" in res.quarantined[0]["reason"]
    quarantine = root / "results" / "quarantine" / "s"
    assert not (quarantine / link.name).exists()
    assert "root:x:0:0" not in "".join(p.read_text() for p in quarantine.iterdir() if p.is_file())
    assert str(secret) in (quarantine / f"{link.name}.reason.txt").read_text()


def test_a_deeply_nested_record_is_quarantined_alone(root):
    deep = root / "results" / "raw" / "s" / ("d" * 16 + ".json")
    deep.parent.mkdir(parents=True)
    deep.write_text("[" * 100000 + "]" * 100000)
    good = put(root, "s", "e" * 16)
    res, _ = run_gather(root, [deep, good])
    assert len(res.quarantined) == 1 and "nested too deeply" in res.quarantined[0]["reason"]
    assert dataset.read_runs(root / "results" / "runs").num_rows == 2


def test_a_file_mixing_studies_or_cases_is_quarantined(root):
    path = root / "results" / "raw" / "s" / ("b" * 16 + ".json")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"run_id": "b" * 16, "records": [record("b" * 16, 0), record("b" * 16, 1, case="la")]}))
    res, _ = run_gather(root, [path])
    assert "more than one case" in res.quarantined[0]["reason"]


def test_the_matrix_decides_which_runs_and_cases_belong_to_the_study(root):
    keep, gone, wrong, stranger = "1" * 16, "2" * 16, "3" * 16, "4" * 16
    files = [put(root, "s", rid) for rid in (keep, gone, wrong)]
    run_gather(root, files)
    matrix = Matrix("s", {keep: "sa", wrong: "la"})
    res, lines = run_gather(root, [*files, put(root, "s", stranger)], matrix=matrix)
    reasons = sorted(q["reason"] for q in res.quarantined)
    assert any("differs from the study's matrix" in r for r in reasons)
    assert any("not in study 's''s matrix" in r or "is not in study" in r for r in reasons)
    table = dataset.read_runs(root / "results" / "runs").to_pandas()
    assert set(table["run_id"]) == {keep}  # the run that left the matrix is removed, the mislabelled one too
    assert gone in res.removed_runs and any("removed the rows" in line for line in lines)


def test_a_run_that_changes_case_leaves_no_rows_behind(root):
    rid = "c" * 16
    run_gather(root, [put(root, "s", rid, case="sa")])
    run_gather(root, [put(root, "s", rid, case="la")])
    table = dataset.read_runs(root / "results" / "runs").to_pandas()
    assert table["case"].tolist() == ["la", "la"]
    assert not table.duplicated(["run_id", "rep"]).any()
    assert not list((root / "results" / "runs" / "study=s" / "case=sa").glob("*.parquet"))


def test_a_data_file_that_does_not_read_is_set_aside_and_rebuilt_from_the_raw_records(root):
    files = [put(root, "s", rid) for rid in ("a" * 16, "a" + "b" * 15, "e" * 16)]
    res, _ = run_gather(root, files)
    part = root / "results" / "runs" / "study=s" / "case=sa" / "part-a.parquet"
    before = dataset.read_runs(root / "results" / "runs").sort_by("run_id")
    with open(part, "r+b") as fh:
        fh.truncate(200)
    manifest = root / "results" / "s" / "gathered.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps(res.as_dict()))
    assert any("changed since gather wrote it" in p for p in check_manifest(manifest, root / "results" / "runs", "s"))
    res, lines = run_gather(root, files)
    assert len(res.rebuilt) == 1 and res.rebuilt[0]["file"] == str(part)
    assert any("does not read" in line and str(part) in line for line in lines)
    assert Path(res.rebuilt[0]["moved_to"]).exists()  # nothing deleted
    assert dataset.read_runs(root / "results" / "runs").sort_by("run_id").equals(before)
    manifest.write_text(json.dumps(res.as_dict()))
    assert check_manifest(manifest, root / "results" / "runs", "s") == []


def test_the_manifest_notices_a_missing_added_or_changed_file_and_sets_itself_aside(root):
    files = [put(root, "s", rid) for rid in ("a" * 16, "b" * 16)]
    res, _ = run_gather(root, files)
    manifest = root / "results" / "s" / "gathered.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps(res.as_dict()))
    runs = root / "results" / "runs"
    (runs / "study=s" / "case=sa" / "part-b.parquet").unlink()
    (runs / "study=s" / "case=sa" / "stray.parquet").write_bytes(b"x")
    lines: list[str] = []
    problems = heal.stale_manifest(manifest, runs, "s", lines.append)
    assert len(problems) == 2 and any("missing" in p for p in problems) and any("not written by" in p for p in problems)
    assert not manifest.exists() and any("gathering again" in line for line in lines)
    [kept] = [p for p in (root / "results" / "quarantine" / "s").iterdir() if not p.name.endswith(".reason.txt")]
    assert kept.name.startswith("gathered.json.") and json.loads(kept.read_text()) == res.as_dict()  # nothing lost
    res, lines = run_gather(root, files, matrix=Matrix("s", {"a" * 16: "sa", "b" * 16: "sa"}))
    assert (runs / "study=s" / "case=sa" / "part-b.parquet").exists()
    assert not (runs / "study=s" / "case=sa" / "stray.parquet").exists()  # set aside: not a data file


def test_a_run_failing_the_same_way_twice_is_not_retried_until_asked(root):
    rid = "f" * 16
    req = root / "results" / "retry" / "s" / f"{rid}.json"
    first = put(root, "s", rid, reps=1, status="failed", error="boom", time_s=None)
    run_gather(root, [first])
    assert req.exists()
    os.utime(req, (1, 1))
    run_gather(root, [first])  # the same failed record again: counted once, no new request
    assert req.stat().st_mtime == 1
    again = put(root, "s", rid, reps=1, status="failed", error="boom", time_s=None, started_at="2026-11-22T04:00:00Z")
    res, lines = run_gather(root, [again])
    assert req.stat().st_mtime == 1 and [g["run_id"] for g in res.given_up] == [rid]
    assert any("not retried" in line for line in lines)
    assert retry.revive(root / "results" / "retry", "s", everything=True) == [rid]
    assert req.stat().st_mtime > 1 and retry.given_up(root / "results" / "retry", "s") == []


def test_a_changed_error_is_a_new_count_and_a_success_clears_it(root):
    rid = "e" * 16
    run_gather(root, [put(root, "s", rid, reps=1, status="failed", error="one", time_s=None)])
    res, _ = run_gather(root, [put(root, "s", rid, reps=1, status="failed", error="two", time_s=None,
                                   started_at="2026-11-22T04:00:00Z")])
    assert res.given_up == []
    run_gather(root, [put(root, "s", rid)])
    assert not retry.attempts_path(root / "results" / "retry", "s", rid).exists()


def test_a_stale_lock_of_a_killed_snakemake_is_removed_a_live_one_is_kept(tmp_path):
    sm = tmp_path / ".snakemake"
    (sm / "locks").mkdir(parents=True)
    (sm / "locks" / "0.input.lock").write_text("x\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (sm / heal.OWNER).write_text(json.dumps({"pid": dead.pid, "started": "1", "host": os.uname().nodename}))
    lines: list[str] = []
    assert heal.clear_stale_lock(sm, lines.append) and not (sm / "locks").exists()
    assert "removed the lock" in lines[0]
    (sm / "locks").mkdir()
    (sm / "locks" / "0.input.lock").write_text("x\n")
    (sm / heal.OWNER).write_text(json.dumps({"pid": os.getpid(), "started": heal._start_time(os.getpid()),
                                             "host": os.uname().nodename}))
    assert not heal.clear_stale_lock(sm, lines.append) and (sm / "locks").exists()


def one_line_refusal(out: subprocess.CompletedProcess, *needles: str) -> None:
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    for n in needles:
        assert n in out.stderr, out.stderr


FDM_SCALE = "    scales: [{ranks: 1, shape: [24, 24, 24]}]\n"


@pytest.mark.parametrize(("body", "needles"), [
    ("cases: {sa: {alphas: [.nan]}}", ["cases.sa.alphas[0]", "finite"]),
    ("runs: {min_region_factor: .inf}", ["runs.min_region_factor", "finite"]),
    ("runs: {min_region_factor: .nan}", ["runs.min_region_factor"]),
    ("cases: {sa: {sizes: [1073741824]}}", ["cases.sa", "GiB per node", "memory_gb"]),
    ("cases:\n  fdm:\n    boundary: {kind: cpml, wdth: 4}\n" + FDM_SCALE, ["wdth"]),
    ("cases:\n  fdm:\n    source: {kind: explosive, f0: 5.0, moment: 1.0e15, dleay: 1.0}\n" + FDM_SCALE, ["dleay"]),
    ("cases:\n  fdm:\n    medium: {homogeneous: {vp: 3000.0, vs: 1732.0, rho: 2500.0, Qp: 50}}\n" + FDM_SCALE, ["Qp"]),
    ("cases:\n  fdm:\n    medium: {homogeneous: {vp: .nan, vs: 1732.0, rho: 2500.0}}\n" + FDM_SCALE, ["vp", "finite"]),
    ("cases:\n  fdm:\n    source: {kind: explosive, f0: .nan, moment: 1.0}\n" + FDM_SCALE, ["f0", "finite"]),
    ("cases:\n  fdm:\n    source: {kind: explosive, f0: 5.0, moment: .inf}\n" + FDM_SCALE, ["moment", "finite"]),
    ("cases:\n  fdm:\n    steps: true\n" + FDM_SCALE, ["cases.fdm.steps"]),
    ("cases:\n  fdm:\n    position_fraction: [0.02, 0.5, 0.5]\n" + FDM_SCALE, ["source.position", "absorbing layer"]),
    ("cases:\n  fdm:\n    receivers_fraction: [[0.5, 0.5, 0.99]]\n" + FDM_SCALE, ["receivers[0]", "absorbing layer"]),
    ("cases:\n  fdm:\n    scales: [{ranks: 1, shape: [3000, 3000, 3000]}]\n", ["GiB per node"]),
    # a node too small for the characterisation itself: the job, its estimate and the node's memory are named
    ("platforms: [{name: small, host: {backend: numpy, cores: [0]}, accel: {backend: numba, cores: [1]}, "
     "memory_gb: 1.2}]\ncases: {sa: {sizes: [1024]}}",
     ["platforms[0].memory_gb", "job characterize_platform small", "memory estimate", "1.2 GiB"]),
    ("platforms: [{name: big, host: {backend: numpy, cores: [0]}, accel: {backend: numba, cores: [1]}, "
     "memory_gb: 1.0e+300}]\ncases: {sa: {}}", ["platforms[0].memory_gb", "<= 1048576"]),
    # an integer key given as a float would hash every run id anew: every run measured again
    ("runs: {repetitions: 5.0}\ncases: {sa: {}}", ["runs.repetitions", "5.0", "integer"]),
    # the history is checked before any measurement, not by the validation after all of them
    ("history: {path: /proc/x}\ncases: {sa: {}}", ["history.path", "pseudo-file systems"]),
    ("history: {path: /dev/null}\ncases: {sa: {}}", ["history.path"]),
    ("history: {path: ' '}\ncases: {sa: {}}", ["history.path", "blank"]),
    ("history: {path: /}\ncases: {sa: {}}", ["history.path", "root"]),
    ("history: {path: 'nosuchproto://b/h'}\ncases: {sa: {}}", ["history.path", "nosuchproto://"]),
    ("history: {path: bad.yaml}\ncases: {sa: {}}", ["history.path", "a file"]),
    # a launcher that cannot start anything fails every run: refused before the first
    ("launcher: '   '\ncases: {sa: {}}", ["launcher", "one line"]),
    ("launcher: \"mpiexec\\n-n\"\ncases: {sa: {}}", ["launcher", "one line"]),
    ("launcher: no-such-mpiexec\ncases: {sa: {}}", ["launcher", "no-such-mpiexec", "not found on PATH"]),
    ("launcher: srun --mpi=pmi2\ncases: {sa: {}}", ["launcher", "srun", "not found on PATH"]),
])
def test_check_config_refuses_in_one_line(tmp_path, monkeypatch, body, needles):
    # as on a machine without SLURM, also where it is installed (CI)
    monkeypatch.setenv("PATH", env_without(SLURM_PROGRAMS, tmp_path / "bin")["PATH"])
    (tmp_path / "bad.yaml").write_text("study: hostile\n" + body + "\n")
    one_line_refusal(cli("check-config", "--configfile", "bad.yaml", cwd=tmp_path), *needles)


def test_a_study_name_with_a_trailing_newline_is_refused(tmp_path):
    (tmp_path / "bad.yaml").write_text('study: "tiny\\n"\ncases: {sa: {}}\n')
    one_line_refusal(cli("check-config", "--configfile", "bad.yaml", cwd=tmp_path), "study")


@pytest.mark.parametrize(("change", "needle"), [({"warmup": "abc"}, "'warmup'"), ({"repetitions": 0}, "'repetitions'")])
def test_fdm_driver_argument_errors_are_failed_records(tmp_path, change, needle):
    import yaml

    sys.path.insert(0, str(REPO / "tests" / "fdm"))
    from conftest import base_spec

    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(base_spec(**change, study="s", platform="p", ranks=1)))
    out = subprocess.run([sys.executable, "-m", "mpi4py", "-m", "sims.fdm", "run", "--config", "spec.yaml", "--out",
                          "out", "--record-failures"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rec = json.loads((tmp_path / "out" / "record.json").read_text())["records"][0]
    assert rec["status"] == "failed" and needle in rec["error"]


def test_files_are_written_with_the_umask_permissions(tmp_path):
    """Atomic writes go through a private temporary file but end up as the umask says (group-readable)."""
    from sims.atomic import atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "x.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("proc", [True, False])
def test_the_umask_is_read_safely_from_many_threads(monkeypatch, proc):
    """The file mode comes from the umask, read from /proc or, without it, by setting it: threads reading it at
    once must each see the real one and leave it in place."""
    from concurrent.futures import ThreadPoolExecutor

    from sims import atomic
    from sims.atomic import _umask_mode

    if not proc:
        monkeypatch.setattr(atomic, "_STATUS", "/nonexistent/status")

    old, interval = os.umask(0o027), sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two calls
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            modes = set(pool.map(lambda _: _umask_mode(), range(20000)))
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(old)
        sys.setswitchinterval(interval)
    assert modes == {0o640}


def test_parquet_files_written_on_threads_keep_the_umask_and_raise_the_first_error(tmp_path):
    """Files written side by side (:func:`sims.atomic.parquet_writer`) each end complete and group-readable, the
    process's umask is left as it was (it is read by setting it), and a write that fails is raised on leaving."""
    import pandas as pd
    import pyarrow.parquet as pq

    from sims.atomic import parquet_writer

    old = os.umask(0o022)
    try:
        with parquet_writer(threads=4) as write:
            for i in range(40):
                write(pd.DataFrame({"x": np.arange(i + 1)}), tmp_path / f"{i}.parquet")
        assert os.umask(0o022) == 0o022
    finally:
        os.umask(old)
    for i in range(40):
        assert pq.read_table(tmp_path / f"{i}.parquet").column("x").to_pylist() == list(range(i + 1))
        assert (tmp_path / f"{i}.parquet").stat().st_mode & 0o777 == 0o644
    with pytest.raises(AttributeError), parquet_writer() as write:
        write(pd.DataFrame({"x": [1]}), tmp_path / "ok.parquet")
        write("not a frame", tmp_path / "bad.parquet")
    assert (tmp_path / "ok.parquet").exists() and not (tmp_path / "bad.parquet").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_report_lists_runs_given_up(tmp_path):
    from analysis.report.common import read_quarantine

    manifest = tmp_path / "gathered.json"
    manifest.write_text(json.dumps({"quarantined": [], "given_up": [{"run_id": "f" * 16, "attempts": 2,
                                                                     "why": "failed: boom"}]}))
    _, status, given = read_quarantine(manifest)
    assert status == "ok" and given[0]["run_id"] == "f" * 16


def test_a_data_file_of_an_older_layout_is_rebuilt_and_refused_by_validation_in_one_line(root):
    """Layout 1 kept versions and phase_times as JSON text: gather rebuilds such a file from the raw records (and
    the workflow regathers on its own: the manifest names the layout); validation refuses it in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from analysis.storage.schema import FILE_SCHEMA

    files = [put(root, "s", rid) for rid in ("a" * 16, "a" + "c" * 15)]
    res, _ = run_gather(root, files)
    part = root / "results" / "runs" / "study=s" / "case=sa" / "part-a.parquet"
    new = pq.read_table(part)
    old_schema = pa.schema([pa.field(f.name, pa.string() if f.name in ("versions", "phase_times") else f.type)
                            for f in FILE_SCHEMA])
    old = pa.table({n: (pa.array([json.dumps(dict(v)) if v is not None else None for v in new[n].to_pylist()])
                        if n in ("versions", "phase_times") else new[n]) for n in new.column_names}, schema=old_schema)
    pq.write_table(old, part)
    manifest = root / "results" / "s" / "gathered.json"
    manifest.parent.mkdir(parents=True)
    doc = res.as_dict()
    doc.pop("dataset_schema")
    manifest.write_text(json.dumps(doc))
    assert any("layout 1" in p for p in check_manifest(manifest, root / "results" / "runs", "s"))
    out = cli("validate", "--runs", str(root / "results" / "runs"), "--platform-file",
              str(REPO / "analysis" / "resources" / "reference" / "cpu-pair-numpy-numba.yaml"), "--published", "", "--workers", "1",
              "--out", str(root / "val"), cwd=root)
    one_line_refusal(out, "dataset layout 1", "gather again")
    # the workflow's gather (every raw record of the study, and its matrix) rebuilds it
    res, lines = run_gather(root, files, matrix=Matrix("s", {"a" * 16: "sa", "a" + "c" * 15: "sa"}))
    assert len(res.rebuilt) == 1 and "layout 1" in res.rebuilt[0]["reason"]
    assert dataset.read_runs(root / "results" / "runs").num_rows == 4
    assert all(pq.read_schema(p).metadata[b"hetval.dataset_schema"] == str(dataset.DATASET_SCHEMA).encode()
               for p in (root / "results" / "runs").rglob("*.parquet"))


def test_runs_left_without_a_record_are_named_at_start(tmp_path):
    from analysis.planning.heal import missing_records

    said = []
    raw = tmp_path / "raw" / "s"
    assert missing_records("s", ["a" * 16, "b" * 16], tmp_path, said.append) == [] and not said  # never run
    raw.mkdir(parents=True)
    (raw / f"{'a' * 16}.json").write_text("{}")
    assert missing_records("s", ["a" * 16, "b" * 16, "c" * 16], tmp_path, said.append) == ["b" * 16, "c" * 16]
    assert len(said) == 1 and "2 of 3 run(s)" in said[0] and "b" * 16 in said[0] and "measuring them again" in said[0]
    (raw / f"{'b' * 16}.json").write_text("{}")
    (raw / f"{'c' * 16}.json").write_text("{}")
    assert missing_records("s", ["a" * 16, "b" * 16, "c" * 16], tmp_path, said.append) == [] and len(said) == 1


def test_runs_that_failed_since_the_last_gather_are_retried_at_start(tmp_path):
    from sims import record as rec
    from sims.guard import failed_record

    said = []
    spec = {"study": "s", "case": "sa", "variant": "CO", "platform": "p", "run_id": "d" * 16, "ranks": 2,
            "params": {"wp": "CO"}, "size": 1}
    path = tmp_path / "raw" / "s" / f"{'d' * 16}.json"
    path.parent.mkdir(parents=True)
    rec.write_raw(path, "d" * 16, failed_record(spec, 2, "ended by SIGKILL and wrote no record"), keep=True)
    assert heal.retry_new_failures("s", 2, tmp_path, said.append) == ["d" * 16]
    assert (tmp_path / "retry" / "s" / f"{'d' * 16}.json").exists() and "failed since the last gather" in said[0]
    # the same failed record counted again - at the next start, or by gather - is the same attempt
    assert heal.retry_new_failures("s", 2, tmp_path, said.append) == [] and len(said) == 1
    # a record older than the last gather is gather's to count
    manifest = tmp_path / "s" / "gathered.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("{}")
    os.utime(path, (1, 1))
    assert heal.retry_new_failures("s", 1, tmp_path, said.append) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_track_refuses_a_non_finite_threshold(tmp_path, value):
    (tmp_path / "study.yaml").write_text(f"history: {{path: {tmp_path / 'h'}}}\ncases: {{sa: {{}}}}\n")
    out = cli("track", "--configfile", "study.yaml", f"--z={value}", cwd=tmp_path)
    one_line_refusal(out, "history.z", "finite")


def test_a_nested_key_from_the_command_line_takes_its_keys_type():
    from analysis.planning.checks import command_line_values, merge
    from analysis.planning.config import load_schema, validate_config

    schema = load_schema()
    config = merge({"cases": {"sa": {}}, "runs": {"warmup": 1}},
                          command_line_values({"runs": {"rounds": "2", "repetitions": "4"},
                                               "characterize": {"plateau": "false"}, "study": "2"}, schema))
    validate_config(config)
    assert config["runs"] == {**config["runs"], "rounds": 2, "repetitions": 4, "warmup": 1}
    assert config["characterize"]["plateau"] is False and config["study"] == "2"  # a name stays text
    bad = merge({"cases": {"sa": {}}}, command_line_values({"runs": {"rounds": "two"}}, schema))
    with pytest.raises(Exception, match="runs.rounds: 'two'"):
        validate_config(bad)


def test_check_config_finds_the_launcher_beside_its_own_python(tmp_path):
    """``.venv/bin/hetval check-config`` with the environment not active finds that environment's mpiexec, as
    ``.venv/bin/snakemake`` does."""
    from tests.conftest import BIN

    if not (BIN / "mpiexec").exists():
        pytest.skip("this environment has no mpiexec of its own (the mpich extra)")
    out = subprocess.run([str(BIN / "hetval"), "check-config", "--configfile",
                          str(REPO / "config" / "studies" / "tiny.yaml")], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert out.returncode == 0 and "config ok" in out.stdout, out.stderr


@pytest.mark.parametrize(("body", "needles"), [
    ("study: " + "a" * 300 + "\ncases: {sa: {}}", ["study", "300 characters"]),
    ("report: {title: '" + "T" * 5000 + "'}\ncases: {sa: {}}", ["report.title"]),
])
def test_names_and_titles_too_long_for_a_path_or_a_command_are_refused(tmp_path, body, needles):
    (tmp_path / "bad.yaml").write_text(body + "\n")
    one_line_refusal(cli("check-config", "--configfile", "bad.yaml", cwd=tmp_path), *needles)


def test_a_yaml_alias_bomb_is_refused_in_seconds(tmp_path):
    import time

    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]  # 9^10 leaves
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    one_line_refusal(cli("check-config", "--configfile", "bomb.yaml", cwd=tmp_path), "unknown key")
    assert time.monotonic() - started < 20


def test_a_study_matrix_that_does_not_read_is_set_aside_and_written_again(root):
    matrix = root / "results" / "s" / "matrix.json"
    matrix.parent.mkdir(parents=True)
    matrix.write_text("[1, 2")
    lines: list[str] = []
    why = heal.corrupt_matrix(matrix, "s", root / "results", lines.append)
    assert why and not matrix.exists() and any("writing the study's matrix again" in line for line in lines)
    Matrix("other", {}).write(matrix)
    assert "another study" in heal.corrupt_matrix(matrix, "s", root / "results", lines.append)
    Matrix("s", {"a" * 16: "sa"}).write(matrix)
    assert heal.corrupt_matrix(matrix, "s", root / "results", lines.append) is None and matrix.exists()


def test_a_key_given_twice_is_refused_naming_it(tmp_path):
    (tmp_path / "bad.yaml").write_text("study: a\ncases: {sa: {}}\nstudy: b\n")
    one_line_refusal(cli("check-config", "--configfile", "bad.yaml", cwd=tmp_path), "'study' is given twice",
                     "line 3")
