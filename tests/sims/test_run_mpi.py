"""Multi-rank tests: the suite launches the runner and the characterisation under mpiexec itself."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from sims.bench.characterize import MOMENTS
from tests.conftest import run_mpi

pytestmark = pytest.mark.mpi

LAYOUT = {"host": {"backend": "numpy", "cores": [0]}, "accel": {"backend": "numba", "cores": [1]}}


def spec(variant: str = "CP", size: int = 1 << 16, **kw) -> dict:
    """A run spec as the registered case would write it (its job named as the case names it)."""
    from analysis.registry import case

    s = {
        "study": "t", "case": "sa", "variant": variant, "params": {"size": size}, "platform": "pair",
        "layout": LAYOUT, "warmup": 1, "repetitions": 3, "seed": 1, "min_region_factor": 1000, "ranks": 2,
        "size": size,
    }
    s.update(kw)
    s.setdefault("job", case(s["case"]).job)
    return s


def run(mpiexec, env, tmp_path, s, extra=()):
    out = tmp_path / "rec.json"
    proc = run_mpi(mpiexec, 2, ["-m", "sims.run", "--spec", json.dumps(s), "--out", str(out), *extra], env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc.stdout


def test_cp_run_on_two_ranks(mpiexec, env, tmp_path):
    doc, stdout = run(mpiexec, env, tmp_path, spec("CP"))
    recs = doc["records"]
    assert [r["rep"] for r in recs] == [0, 1, 2]
    r = recs[0]
    assert r["status"] == "ok" and r["ranks"] == 2
    assert r["time_s"] == max(r["time_host_s"], r["time_accel_s"])
    n = 1 << 16
    assert (r["flops_host"], r["bytes_host"]) == (n, 12 * n)
    assert (r["flops_accel"], r["bytes_accel"]) == (2048 * n, 256 * n)
    assert r["energy_j"] is None and r["energy_source"] == "none"
    assert "[hetval run] t sa CP on pair: ok" in stdout


def test_co_leaves_accel_idle(mpiexec, env, tmp_path):
    doc, _ = run(mpiexec, env, tmp_path, spec("CO"))
    r = doc["records"][0]
    assert r["time_accel_s"] is None and r["flops_accel"] == 0
    assert r["time_s"] == r["time_host_s"]


def test_setup_error_on_one_rank_gives_failed_record(mpiexec, env, tmp_path):
    layout = {"host": LAYOUT["host"], "accel": {"backend": "numba", "cores": [999]}}
    doc, stdout = run(mpiexec, env, tmp_path, spec("GO", layout=layout))
    [r] = doc["records"]
    assert r["status"] == "failed" and r["time_s"] is None
    assert r["error"].startswith("rank 1: ValueError: cores [999] are positions in this rank's cpuset")
    assert "FAILED" in stdout


def test_region_too_short_is_an_error(mpiexec, env, tmp_path):
    doc, _ = run(mpiexec, env, tmp_path, spec("CO", size=1, min_region_factor=1e9))
    [r] = doc["records"]
    assert r["status"] == "failed"
    assert "RegionTooShortError" in r["error"] and "make the problem larger" in r["error"]


def test_pdp_uses_the_characterised_platform(mpiexec, env, tmp_path):
    platform = tmp_path / "pair.yaml"
    procs = {
        "host": {"t_f": {"value": 2e-10}, "t_b": {"value": 1e-10}},
        "accel": {"t_f": {"value": 5e-11}, "t_b": {"value": 1e-10}},
    }
    platform.write_text(yaml.safe_dump({"platform": "pair", "processors": procs}))
    doc, _ = run(mpiexec, env, tmp_path, spec("p-DP"), ["--platform-file", str(platform)])
    r = doc["records"][0]
    assert r["alpha"] == pytest.approx(0.8)
    assert r["flops_accel"] == round(0.8 * (1 << 16)) * 2049


def test_characterize_on_two_ranks(mpiexec, env, tmp_path):
    """Characterisation with a (trace) meter: rates, sweep, operations, ping-pong, idle power, energy fit.

    (Without a meter the energy parameters are null: the tiny end-to-end study checks that path.)
    """
    from tests.sims.test_run_energy import _trace

    trace = tmp_path / "meter.csv"
    _trace(trace, 20.0, 30.0, span_s=400.0, step=0.002)
    out = tmp_path / "pair.yaml"
    s = {"platform": "pair", "description": "test", "layout": LAYOUT, "warmup": 1, "repetitions": 5, "llc_factor": 2, "llc_mib": 4,
         "gemm_sizes": [128],
         "energy": {"meter": "trace", "trace": {"path": str(trace), "channels": {"clamp-cpu0": "host",
                                                                                  "clamp-cpu1": "accel"}}}}
    proc = run_mpi(mpiexec, 2, ["-m", "sims.bench", "--spec", json.dumps(s), "--out", str(out)], env)
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(out.read_text())
    for role in ("host", "accel"):
        p = doc["processors"][role]
        for name in ("t_f", "t_b"):
            q = p[name]
            assert len(q["samples"]) == 5 * MOMENTS and q["obtained"] == "measured"  # 5 at each moment
            assert q["value"] == pytest.approx(1 / q["rate_median"])
            assert q["rate_spread"]["min"] <= q["rate_median"] <= q["rate_spread"]["max"]
        fit = p["roofline_fit"]  # the intensity sweep: 2.4 decades, fitted roofline with its samples
        assert len(fit["samples"]) == 9 and fit["samples"][-1]["intensity"] / fit["samples"][0]["intensity"] >= 100
        assert 0.0 < fit["r2"] <= 1.0 and fit["t_f"]["obtained"] == "fitted"
        fits = p["operations"]["fits"]  # per-operation costs (op x dtype) with their fits
        measured = ("add", "mul", "fma", "divide", "random") + (("move", "short_add") if role == "host" else ())  # numpy
        assert set(fits) == {f"{o}/{d}" for o in measured for d in ("float32", "float64")}
        assert all(f["tau"] > 0 for f in fits.values()), {k: (f["tau"], f["median_time_s"]) for k, f in fits.items()}
        # each repetition's tau; their spread where every one is positive (a repetition whose time did not grow
        # with the count on a noisy machine fits a tau <= 0, and then no ratio says how far tau moved)
        assert all(len(f["tau_by_rep"]) == 5 for f in fits.values())
        assert all(f["tau_spread"] >= 1 if min(f["tau_by_rep"]) > 0 else f["tau_spread"] is None
                   for f in fits.values()), {k: (f["tau_by_rep"], f["tau_spread"]) for k, f in fits.items()}
    net = doc["network"]  # MPI ping-pong between the two ranks
    assert net["latency"]["value"] > 0 and net["t_net"]["value"] > 0 and len(net["samples_s"]) == 10
    assert "[hetval characterize] pair host (numpy)" in proc.stdout
    idle = doc["idle_power"]
    assert idle["value"] == pytest.approx(50.0, rel=0.02)  # the clamps' constant 20 W + 30 W
    assert (idle["host"], idle["accel"]) == (pytest.approx(20.0, rel=0.02), pytest.approx(30.0, rel=0.02))
    assert "fitted from the intensity sweep's trace readings" in doc["energy"]
    # constant power: the sweep's energy is all static, p_s = the clamp's watts (each processor attributable)
    assert doc["processors"]["host"]["p_s"]["value"] == pytest.approx(20.0, rel=0.02)
    assert doc["processors"]["accel"]["p_s"]["value"] == pytest.approx(30.0, rel=0.02)


def test_characterize_without_a_meter_then_attach_a_later_trace(mpiexec, env, tmp_path):
    """No meter while characterising: the idle and sweep windows are kept; a later trace gives idle power and the fit."""
    from analysis.cli import main
    from analysis.storage.platforms import load_platforms
    from sims.platform_file import overlay_path
    from sims.platform_file import read_platform as load_platform
    out = tmp_path / "pair.yaml"
    s = {"platform": "pair", "description": "test", "layout": LAYOUT, "warmup": 1, "repetitions": 5, "llc_factor": 2, "llc_mib": 4,
         "gemm_sizes": [128],
         "energy": {"meter": "none", "update_period_s": 0.002}}
    proc = run_mpi(mpiexec, 2, ["-m", "sims.bench", "--spec", json.dumps(s), "--out", str(out)], env)
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(out.read_text())
    assert doc["idle_power"] is None and doc["processors"]["host"]["e_f"] is None
    for role, proc in doc["processors"].items():  # compute ceilings per kernel class and precision, with samples
        c = proc["ceilings"]
        assert sorted(c) == ["gemm", "transpose", "vector"] and sorted(c["gemm"]) == ["float32", "float64"]
        assert sorted(c["transpose"]) == ["float32", "float64"] and c["transpose"]["float32"]["unit"] == "s/byte"
        assert sorted(c["vector"]) == ["float64"]  # vector float32 is t_f itself, stored once
        assert c["gemm"]["float64"]["size"] == 128 and len(c["gemm"]["float64"]["samples"]) == 5
        assert all(q["value"] > 0 and q["obtained"] == "measured" for by in c.values() for q in by.values()), role
        # the same processor's float64 FMA chains are never faster than its float32 ones (half the lanes)
        assert c["vector"]["float64"]["rate_median"] < 1.5 * proc["t_f"]["rate_median"]
    win = doc["energy_windows"]
    assert len(win["idle"]) == 3 and all(t1 - t0 >= 1.0 for t0, t1 in win["idle"])
    for role in ("host", "accel"):
        samples = win["sweep"][role]
        assert len(samples) == 9 * 5
        # lengthened for the announced 2 ms meter: every window spans >= 10 samples
        assert all(w["window"][1] - w["window"][0] >= 0.02 for w in samples)
    trace = tmp_path / "later.csv"
    t_start = min(t0 for t0, _ in win["idle"]) - 5.0
    trace.write_text("timestamp,channel,watts\n" + "".join(
        f"{t_start + 0.002 * i:.4f},clamp-cpu0,20\n{t_start + 0.002 * i:.4f},clamp-cpu1,30\n"
        for i in range(int((time.time() + 5.0 - t_start) / 0.002))))
    assert main(["attach-trace", "--platform-file", str(out), "--trace", str(trace),
                 "--channel", "clamp-cpu0=host", "--channel", "clamp-cpu1=accel"]) == 0
    assert yaml.safe_load(out.read_text()) == doc  # the characterisation's own file is untouched
    overlay = json.loads(overlay_path(out).read_text())
    assert overlay["idle_power"]["value"] == pytest.approx(50.0, rel=0.02)
    assert overlay["idle_power"]["host"] == pytest.approx(20.0, rel=0.02)
    merged = load_platform(out)
    assert merged["idle_power"]["value"] == pytest.approx(50.0, rel=0.02)
    assert merged["processors"]["host"]["p_s"]["value"] == pytest.approx(20.0, rel=0.02)
    assert merged["processors"]["accel"]["p_s"]["value"] == pytest.approx(30.0, rel=0.02)
    assert "attached after characterisation" in merged["energy"]
    row = load_platforms(tmp_path).iloc[0]
    assert row["idle_w"] == pytest.approx(50.0, rel=0.02)
    # attaching again gives the same overlay (idempotent)
    assert main(["attach-trace", "--platform-file", str(out), "--trace", str(trace),
                 "--channel", "clamp-cpu0=host", "--channel", "clamp-cpu1=accel"]) == 0
    again = json.loads(overlay_path(out).read_text())
    assert {k: v for k, v in again.items() if k != "attached_at"} == {k: v for k, v in overlay.items()
                                                                      if k != "attached_at"}
