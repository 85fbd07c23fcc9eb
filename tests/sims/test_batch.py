"""sims.batch: several runs in one job, each under the guard and writing its own record; a run that writes none
is recorded as failed and the next one still runs; runs measured in rounds are interleaved and merged."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def entry(tmp_path, name: str, command: str) -> dict:
    spec = {"study": "s", "case": "sa", "variant": "CO", "platform": "p", "run_id": name, "ranks": 2}
    return {"record": str(tmp_path / "raw" / f"{name}.json"), "spec": spec, "ranks": 2, "estimate_mb": 100.0,
            "command": command, "log": str(tmp_path / "logs" / f"{name}.log")}


def test_each_run_writes_its_record_and_a_run_that_dies_is_recorded_failed(tmp_path):
    (tmp_path / "raw").mkdir()
    write = "import json, sys; open(sys.argv[1], 'w').write(json.dumps({'run_id': sys.argv[2], 'records': []}))"
    runs = [entry(tmp_path, "aaaaaaaaaaaaaaaa", f"{sys.executable} -c \"{write}\" {tmp_path}/raw/aaaaaaaaaaaaaaaa.json a"),
            entry(tmp_path, "bbbbbbbbbbbbbbbb", f"{sys.executable} -c 'import sys; print(\"dying\"); sys.exit(3)'"),
            entry(tmp_path, "cccccccccccccccc", f"{sys.executable} -c \"{write}\" {tmp_path}/raw/cccccccccccccccc.json c")]
    out = subprocess.run([sys.executable, "-m", "sims.batch", "--runs", json.dumps(runs)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "launch 3/3" in out.stdout and "3 run(s) recorded" in out.stdout
    failed = json.loads((tmp_path / "raw" / "bbbbbbbbbbbbbbbb.json").read_text())
    assert failed["records"][0]["status"] == "failed" and "exited with status 3" in failed["records"][0]["error"]
    assert (tmp_path / "raw" / "cccccccccccccccc.json").exists()  # the run after the failure still ran
    assert "dying" in (tmp_path / "logs" / "bbbbbbbbbbbbbbbb.log").read_text()  # each run its own log


def test_a_bad_batch_is_one_line():
    out = subprocess.run([sys.executable, "-m", "sims.batch", "--runs", '[{"record": "x"}]'], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "an entry lacks" in out.stderr and "Traceback" not in out.stderr


def test_a_launch_that_dies_at_once_writing_nothing_is_started_once_more(tmp_path):
    """An MPI start-up failing on one rank (exit 15 at once, no record): the guard starts the command again."""
    record, marker = tmp_path / "r.json", tmp_path / "first-launch"
    code = (f"import os, sys, json\nif not os.path.exists({str(marker)!r}):\n    open({str(marker)!r}, 'w').close()\n"
            f"    sys.exit(15)\nopen({str(record)!r}, 'w').write(json.dumps({{'run_id': 'x', 'records': []}}))")
    script = tmp_path / "flaky.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, "-m", "sims.guard", "--record", str(record), "--spec", "{}", "--", sys.executable,
                          str(script)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "starting it again (2 of 2)" in out.stderr, out.stderr
    assert json.loads(record.read_text())["run_id"] == "x"  # the second launch's own record, not a failed one


PART = """import json, sys
from sims.guard import failed_record
from sims.record import write_raw
record, spec, n, status, own_id = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = []
for i in range(n):
    row = failed_record(spec, 2, "boom")[0]
    row.update(run_id=own_id, rep=i, status=status, error=None if status == "ok" else "boom", time_s=float(i))
    rows.append(row)
write_raw(record, own_id, rows)
"""


PART_SCRIPT, BOGUS_SCRIPT = "part.py", "bogus.py"
#: a part whose rows carry a field outside the record contract (written without the contract's check)
BOGUS = "rows[0]['bogus'] = 1; open(record, 'w').write(json.dumps({'run_id': own_id, 'records': rows}))"


def rounds_entry(tmp_path, name: str, shares: list[int], status: list[str] | None = None) -> dict:
    """A run measured in len(shares) rounds: each part's command writes its share of rows under an id of its own
    (as a runner hashes a spec with fewer repetitions)."""
    script = tmp_path / "part.py"
    script.write_text(PART)
    e = entry(tmp_path, name, "false")
    spec = json.dumps(e["spec"])
    e["parts"] = [{"record": str(tmp_path / "raw" / ".parts" / f"{name}.{k}.json"),
                   "command": f"{sys.executable} {script} {tmp_path}/raw/.parts/{name}.{k}.json '{spec}' {n} "
                              f"{(status or ['ok'] * len(shares))[k]} {k:016x}"} for k, n in enumerate(shares)]
    return e


def batch(runs: list[dict]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sims.batch", "--runs", json.dumps(runs)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_rounds_launch_every_run_once_per_round_and_merge_its_parts_under_its_own_id(tmp_path):
    runs = [rounds_entry(tmp_path, name * 16, [2, 1, 1]) for name in "abcd"]
    out = batch(runs)
    assert out.returncode == 0, out.stdout + out.stderr
    launched = re.findall(r"round (\d)/3, launch \d/4: ([a-d]{16})", out.stdout)
    assert len(launched) == 12 and all(sorted(r for k2, r in launched if k2 == k) == [c * 16 for c in "abcd"]
                                       for k in "123")  # each round launches every run once
    orders = [[r for k2, r in launched if k2 == k] for k in "123"]
    assert any(order != [c * 16 for c in "abcd"] for order in orders)  # shuffled, not the batch's own order
    assert orders == [[r for k2, r in re.findall(r"round (\d)/3, launch \d/4: ([a-d]{16})", batch(runs).stdout)
                       if k2 == k] for k in "123"]  # seeded: the same batch runs in the same orders again
    for name in "abcd":
        doc = json.loads((tmp_path / "raw" / f"{name * 16}.json").read_text())
        assert doc["run_id"] == name * 16 and [r["run_id"] for r in doc["records"]] == [name * 16] * 4
        assert [r["rep"] for r in doc["records"]] == [0, 1, 2, 3]  # numbered through, in round order
        assert [r["time_s"] for r in doc["records"]] == [0.0, 1.0, 0.0, 0.0]  # round 1's two rows, then 2's, 3's
        assert "4 repetition(s) from 3 round(s)" in out.stdout
        assert list((tmp_path / "raw" / ".measurements" / (name * 16)).glob("*.json"))  # its permanent copy
    assert not list((tmp_path / "raw" / ".parts").glob("*.json"))  # the parts are merged away


def test_a_part_that_fails_ends_its_runs_rounds_and_records_the_run_failed_under_its_own_id(tmp_path):
    runs = [rounds_entry(tmp_path, "a" * 16, [1, 1, 1], ["ok", "failed", "ok"]), entry(tmp_path, "b" * 16, "true"),
            rounds_entry(tmp_path, "c" * 16, [1, 1]), rounds_entry(tmp_path, "d" * 16, [1, 1])]
    runs[1]["parts"] = [{"record": str(tmp_path / "raw" / ".parts" / f"b.{k}.json"),
                         "command": f"{sys.executable} -c 'import sys; sys.exit(3)'"} for k in range(1)]
    stale = Path(runs[1]["parts"][0]["record"])  # an ok record a killed batch left where b's first part writes
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps({"run_id": "b", "records": [{"status": "ok"}]}))
    runs[2]["parts"][1]["command"] = runs[2]["parts"][1]["command"].replace(PART_SCRIPT, BOGUS_SCRIPT)
    (tmp_path / "bogus.py").write_text(PART.replace("write_raw(record, own_id, rows)", BOGUS))
    out = batch(runs)
    assert out.returncode == 0, out.stdout + out.stderr
    failed = json.loads((tmp_path / "raw" / f"{'a' * 16}.json").read_text())
    assert failed["run_id"] == "a" * 16 and [r["status"] for r in failed["records"]] == ["failed"]
    assert f"part {'a' * 16}.1.json is failed: so is the run" in out.stdout
    assert len(re.findall(f"launch \\d/\\d: {'a' * 16}", out.stdout)) == 2  # round 3 not launched after round 2 failed
    died = json.loads((tmp_path / "raw" / f"{'b' * 16}.json").read_text())  # the guard's record of a dead part,
    assert died["records"][0]["status"] == "failed" and "exited with status 3" in died["records"][0]["error"]
    assert died["records"][0]["run_id"] == "b" * 16  # not the stale one, which the batch removed first
    bad = json.loads((tmp_path / "raw" / f"{'c' * 16}.json").read_text())  # a row outside the record contract
    assert bad["records"][0]["status"] == "failed" and "could not be merged" in bad["records"][0]["error"]
    assert [r["rep"] for r in json.loads((tmp_path / "raw" / f"{'d' * 16}.json").read_text())["records"]] == [0, 1]
    assert not list((tmp_path / "raw" / ".parts").glob("*.json"))


def test_a_runs_repetitions_split_over_rounds_and_each_parts_spec():
    from analysis.planning.config import load_config, study_matrix
    from analysis.planning.jobs import round_shares
    from analysis.registry import case

    assert round_shares(5, 2) == [3, 2] and round_shares(5, 5) == [1] * 5 and round_shares(3, 1) == [3]
    assert round_shares(2, 5) == [1, 1]  # never an empty launch
    specs = study_matrix(load_config(REPO / "config" / "studies" / "tiny.yaml"), check=False)
    for name in ("fdm", "sa"):
        spec = next(s for s in specs if s["case"] == name)
        before = json.dumps(spec, sort_keys=True)
        part = case(name).with_repetitions(spec, 1)
        assert part["repetitions"] == 1 and part["run_id"] == spec["run_id"]
        assert json.dumps(spec, sort_keys=True) == before  # the run's own spec is untouched
        if name == "fdm":
            assert part["fdm_doc"]["repetitions"] == 1 and '"repetitions": 1' in case(name).command(
                part, "r.json", "", "mpiexec -n 2")


#: a runner module as sims.launch calls it: main(argv) on every rank, rank 0 writing the part's record; one that
#: is told to die kills its whole process (as the kernel's out-of-memory killer would)
RUNNER = """import json, os, signal, sys, time
from mpi4py import MPI

def main(argv):
    record, run_id, how = argv
    comm = MPI.COMM_WORLD
    if how == "die" and comm.Get_rank() == 0 and not os.path.exists(record + ".died"):
        open(record + ".died", "w").close()
        print("runner: dying", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    comm.Barrier()
    if comm.Get_rank() == 0:
        from sims.guard import failed_record
        from sims.record import write_raw
        row = failed_record({"study": "s", "case": "sa", "variant": "CO", "platform": "p", "run_id": run_id}, 2, "x")[0]
        row.update(status="ok", error=None, time_s=0.5, rep=0, measured_at=row["started_at"])
        write_raw(record, run_id, [row])
        print(f"runner: measured {run_id} with {sorted(os.sched_getaffinity(0))}", flush=True)
    return 0
"""


def shared_entry(tmp_path, name: str, rounds: int, how: list[str] | None = None) -> dict:
    e = entry(tmp_path, name, "false")
    e["launch"] = "mpiexec -n 2"
    e["parts"] = [{"record": str(tmp_path / "raw" / ".parts" / f"{name}.{k}.json"), "command": "false",
                   "runner": ["fake_runner", str(tmp_path / "raw" / ".parts" / f"{name}.{k}.json"), f"{k:016x}",
                              (how or ["ok"] * rounds)[k]]} for k in range(rounds)]
    return e


def shared_batch(tmp_path, runs: list[dict]) -> subprocess.CompletedProcess:
    (tmp_path / "fake_runner.py").write_text(RUNNER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "sims.batch", "--runs", json.dumps(runs)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.mpi
def test_the_runs_of_one_shape_share_one_launch_per_round_each_with_its_own_record_and_log(tmp_path):
    runs = [shared_entry(tmp_path, c * 16, 2) for c in "abc"]
    out = shared_batch(tmp_path, runs)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("3 run(s) in one launch (mpiexec -n 2)") == 2  # one launch per round, not per run
    for c in "abc":
        doc = json.loads((tmp_path / "raw" / f"{c * 16}.json").read_text())
        assert [r["round"] for r in doc["records"]] == [0, 1] and [r["rep"] for r in doc["records"]] == [0, 1]
        assert all(r["measured_at"] for r in doc["records"])
        log = (tmp_path / "logs" / f"{c * 16}.log").read_text()
        assert log.count(f"{c * 16}.") == 2 and not any(f"{o * 16}." in log for o in "abc" if o != c)  # its own


@pytest.mark.mpi
def test_a_launch_that_dies_records_the_run_it_was_measuring_failed_and_measures_the_others(tmp_path):
    runs = [shared_entry(tmp_path, "a" * 16, 1), shared_entry(tmp_path, "b" * 16, 1, ["die"]),
            shared_entry(tmp_path, "c" * 16, 1)]
    out = shared_batch(tmp_path, runs)
    assert out.returncode == 0, out.stdout + out.stderr
    died = json.loads((tmp_path / "raw" / f"{'b' * 16}.json").read_text())["records"]
    assert died[0]["status"] == "failed" and "SIGKILL" in died[0]["error"], died
    for c in "ac":  # measured whether the launch reached them before it died or in the launch after it
        assert json.loads((tmp_path / "raw" / f"{c * 16}.json").read_text())["records"][0]["status"] == "ok"
    order = re.findall(r"entry \d/\d: ([abc]{16})", out.stdout)
    if order.index("b" * 16) < len(order) - 1:  # b was not last: the launch after it measured the rest
        assert "not started: launching them again" in out.stdout
