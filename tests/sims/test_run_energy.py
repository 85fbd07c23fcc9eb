"""Energy on real MPI ranks: one RAPL reader per host, trace energy end to end through the runner."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import REPO, run_mpi
from tests.sims.test_meters import zone
from tests.sims.test_run_mpi import spec

pytestmark = pytest.mark.mpi


def test_two_ranks_one_host_count_node_energy_once(mpiexec, env, tmp_path):
    zone(tmp_path, "0", "package-0", 1_000_000)
    proc = run_mpi(mpiexec, 2, [str(REPO / "tests" / "sims" / "energy_worker.py"), str(tmp_path)], env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["readers"] == [["rapl"], []]  # only the host's leader rank reads the node counter
    row = out["row"]
    assert row["energy_j"] == pytest.approx(5.0)  # 5 J once, not once per rank
    assert row["energy_source"] == "rapl"
    # both ranks share this machine's socket(s), so RAPL cannot be split between them
    assert row["energy_host_j"] is None and row["energy_accel_j"] is None


def _trace(path, watts_host, watts_accel, span_s=600.0, step=0.005):
    t0 = time.time() - 5.0
    lines = ["timestamp,channel,watts"]
    for i in range(int(span_s / step)):
        t = t0 + i * step
        lines += [f"{t:.4f},clamp-cpu0,{watts_host}", f"{t:.4f},clamp-cpu1,{watts_accel}"]
    path.write_text("\n".join(lines) + "\n")


def test_runner_integrates_a_supplied_trace(mpiexec, env, tmp_path):
    trace = tmp_path / "meter.csv"
    _trace(trace, 20.0, 30.0)
    energy = {"meter": "trace", "trace": {"path": str(trace), "clock_offset_s": 0.0,
                                          "channels": {"clamp-cpu0": "host", "clamp-cpu1": "accel"}}}
    out = tmp_path / "rec.json"
    s = spec("CP", size=1 << 14, energy=energy)
    proc = run_mpi(mpiexec, 2, ["-m", "sims.run", "--spec", json.dumps(s), "--out", str(out)], env)
    assert proc.returncode == 0, proc.stderr
    recs = json.loads(out.read_text())["records"]
    for r in recs:
        assert r["status"] == "ok" and r["energy_source"] == "trace"
        detail = json.loads(r["energy_detail"])
        # the region was lengthened to span 10 samples (50 ms); time and energy are per execution
        assert detail["executions_per_region"] > 1 and "lengthened" in detail["region"]
        assert r["energy_host_j"] / r["energy_accel_j"] == pytest.approx(20 / 30)
        # the window runs from the start barrier to the closing barrier, a little longer than time_s
        power = r["energy_j"] / r["time_s"]
        assert 50.0 <= power < 50.0 * 1.5
    assert json.loads(recs[0]["params"])["executions_per_region"] > 1


def test_trace_not_covering_the_run_is_refused(mpiexec, env, tmp_path):
    trace = tmp_path / "old.csv"
    trace.write_text("timestamp,channel,watts\n0,w,10\n1,w,10\n")
    s = spec("CO", size=1 << 14, energy={"meter": "trace", "short_region": "refuse",
                                         "trace": {"path": str(trace), "channels": {"w": "node"}}})
    out = tmp_path / "rec.json"
    proc = run_mpi(mpiexec, 2, ["-m", "sims.run", "--spec", json.dumps(s), "--out", str(out)], env)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())["records"][0]
    assert r["status"] == "ok" and r["energy_j"] is None and r["energy_source"] == "none"
    refused = " ".join(json.loads(r["energy_detail"])["refused"])
    assert "not covered" in refused and "shorter than 10 meter update periods (1 s each)" in refused


def test_frequency_the_platform_cannot_set_is_a_skipped_record(mpiexec, env, tmp_path):
    from sims.la.frequency import cpu_control

    out = tmp_path / "rec.json"
    for freq, expect in (({"f_G": 705}, "is a GPU clock, but the accel processor is a CPU"),
                         ({"f_C": 1.2}, cpu_control([0])[1])):
        if "f_C" in freq and cpu_control([0])[0]:
            continue  # this machine can set it: nothing to refuse
        s = spec("DP(0.5)", case="peach", params={"workload": "MatrixMultiply", "n": 64, "frequency": freq})
        proc = run_mpi(mpiexec, 2, ["-m", "sims.run", "--spec", json.dumps(s), "--out", str(out)], env)
        assert proc.returncode == 0, proc.stderr
        [r] = json.loads(out.read_text())["records"]
        assert r["status"] == "skipped" and expect in r["error"] and r["time_s"] is None


def test_trace_attached_after_the_study(mpiexec, env, tmp_path):
    """A meter log that arrives later: runs keep their wall-clock windows, attach-trace fills their energy."""
    raw = tmp_path / "raw"
    raw.mkdir()
    out = raw / "run.json"
    # no meter at run time; the later trace samples every 10 ms, so regions are lengthened to >= 0.1 s
    s = spec("CO", size=1 << 14, energy={"meter": "none", "update_period_s": 0.01})
    proc = run_mpi(mpiexec, 2, ["-m", "sims.run", "--spec", json.dumps(s), "--out", str(out)], env)
    assert proc.returncode == 0, proc.stderr
    before = json.loads(out.read_text())["records"]
    assert all(r["energy_j"] is None and json.loads(r["energy_detail"])["window"] for r in before)
    trace = tmp_path / "later.csv"
    _trace(trace, 40.0, 10.0, span_s=120.0, step=0.01)
    from analysis.cli import main

    assert main(["attach-trace", "--raw-dir", str(raw), "--trace", str(trace),
                 "--channel", "clamp-cpu0=host", "--channel", "clamp-cpu1=accel"]) == 0
    after = json.loads(out.read_text())["records"]
    for r in after:
        d = json.loads(r["energy_detail"])
        assert r["energy_source"] == "trace" and d["executions_per_region"] > 1 and d["attached"]["trace"]
        assert r["energy_host_j"] / r["energy_accel_j"] == pytest.approx(4.0)
        assert 50.0 <= r["energy_j"] / r["time_s"] < 75.0
    # the records stay valid for gather, and a second attach leaves them alone
    from analysis.storage.schema import check_record

    for r in after:
        check_record(r)
    from sims.meters.posthoc import attach_trace

    assert attach_trace(raw, trace, {"clamp-cpu0": "host"}, log=lambda _: None)["already_metered"] == 3
    assert main(["attach-trace", "--raw-dir", str(raw), "--trace", str(tmp_path / "nope.csv")]) == 2
