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
    from sims.cases.frequency import cpu_control

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


def test_characterisation_with_a_meter_measures_idle_power_and_fits_energy(mpiexec, env, tmp_path):
    trace = tmp_path / "meter.csv"
    _trace(trace, 20.0, 30.0, span_s=900.0, step=0.01)
    out = tmp_path / "pair.yaml"
    layout = {"host": {"backend": "numpy", "cores": [0]}, "accel": {"backend": "numba", "cores": [1]}}
    s = {"platform": "pair", "description": "test", "layout": layout, "warmup": 1, "repetitions": 5, "llc_factor": 2,
         "energy": {"meter": "trace", "trace": {"path": str(trace), "channels": {"clamp-cpu0": "host",
                                                                                  "clamp-cpu1": "accel"}}}}
    proc = run_mpi(mpiexec, 2, ["-m", "sims.bench", "--spec", json.dumps(s), "--out", str(out)], env)
    assert proc.returncode == 0, proc.stderr
    import yaml

    doc = yaml.safe_load(out.read_text())
    idle = doc["idle_power"]
    assert idle["value"] == pytest.approx(50.0, rel=0.02)  # the clamps' constant 20 W + 30 W
    assert (idle["host"], idle["accel"]) == (pytest.approx(20.0, rel=0.02), pytest.approx(30.0, rel=0.02))
    assert "fitted from the intensity sweep's trace readings" in doc["energy"]
    # constant power: the sweep's energy is all static, p_s = the clamp's watts (per processor, attributable)
    assert doc["processors"]["host"]["p_s"]["value"] == pytest.approx(20.0, rel=0.25)
    assert doc["processors"]["accel"]["p_s"]["value"] == pytest.approx(30.0, rel=0.25)
