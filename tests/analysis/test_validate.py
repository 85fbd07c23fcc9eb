"""The validation transforms (pure pandas) and the Dask job on a real local cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis.cases.wp import FIDELITY_COLUMNS, score_groups
from analysis.equations import hetero
from analysis.models.energy_roofline import ROOFLINE_ENERGY_COLUMNS, predict_energy_roofline
from analysis.models.peapaw import ENERGY_MODEL, MODEL, predict_energy, predict_sa
from analysis.models.perop import PEROP_MODEL, predict_perop
from analysis.planning.config import uncertainty_settings
from analysis.scoring import validate
from analysis.scoring.measured import attach, run_measures
from analysis.scoring.runs import failed_runs, reduce_repetitions
from analysis.storage import dataset
from analysis.storage.platforms import energy_fit_problem, load_platforms
from sims.record import FIELDS, write_raw

T = {"t_f_host": 1e-10, "t_b_host": 1e-10, "t_f_accel": 2.5e-11, "t_b_accel": 5e-11}
N = 1000
F, B = 2049 * N, 268 * N


def sa(runs):
    """PerDome/PeaPaw's rows as validation holds them: the case's measured columns, the bound, the tightness."""
    return attach(predict_sa(run_measures(runs)))


def perop_rows(runs):
    return attach(predict_perop(run_measures(runs)))


def energy_rows(runs):
    return attach(predict_energy(run_measures(runs)), "energy")


def rows(run_id, variant, times, alpha=None, fh=F, bh=B, fa=0, ba=0, status="ok"):
    out = []
    for rep, t in enumerate(times):
        r = {name: None for name, _, _ in FIELDS}
        r.update(
            run_id=run_id, study="s", case="sa", variant=variant, params="{}", platform="pair", ranks=2, rep=rep,
            status=status, size=N, alpha=alpha, time_s=t, time_host_s=t if fh else None,
            time_accel_s=t if fa else None, flops=fh + fa, bytes=bh + ba, flops_host=fh, bytes_host=bh,
            flops_accel=fa, bytes_accel=ba, energy_source="none", started_at=f"2026-11-22T03:00:0{rep}.000000Z",
            hostname="h", versions="{}", config_hash="c", error="boom" if status == "failed" else None,
        )
        if status == "failed":
            r["time_s"] = r["time_host_s"] = r["time_accel_s"] = None
        out.append(r)
    return out


def frame(records):
    df = pd.DataFrame(records)
    df["started_at"] = pd.to_datetime(df["started_at"])
    return df


STUDY = [
    *rows("a", "CO", [2.0, 2.2, 2.1], alpha=0.0),
    *rows("b", "GO", [1.0, 1.1, 0.9], alpha=1.0, fh=0, bh=0, fa=F, ba=B),
    *rows("c", "p-DP", [0.8, 0.8, 0.8], alpha=0.8, fh=F // 5, bh=B // 5, fa=F - F // 5, ba=B - B // 5),
    *rows("d", "CP", [1.5, 1.5, 1.6], fh=N, bh=12 * N, fa=2048 * N, ba=256 * N),
    *rows("e", "DP(0.5)", [1.2, 1.2, 1.3], alpha=0.5, fh=F // 2, bh=B // 2, fa=F // 2, ba=B // 2),
    *rows("f", "DP(0)", [2.0, 2.1, 2.0], alpha=0.0),
    *rows("g", "DP(1)", [1.0, 1.0, 1.0], alpha=1.0, fh=0, bh=0, fa=F, ba=B),
    *rows("h", "CP-reverse", [9.0], status="failed"),
]


def write_platform(where):
    procs = {
        role: {"t_f": {"value": T[f"t_f_{role}"]}, "t_b": {"value": T[f"t_b_{role}"]}} for role in ("host", "accel")
    }
    where.mkdir(parents=True)
    (where / "pair.yaml").write_text(yaml.safe_dump({"platform": "pair", "processors": procs}))


def test_a_platforms_per_operation_costs_and_the_spread_of_its_multiplication_cost(tmp_path):
    """The platform frame carries each processor's add/mul costs, the NumPy move/short_add costs where measured
    (null on the Numba one), the smallest R² of those fits and the multiplication cost's spread."""
    from analysis.storage.platforms import load_platforms

    def fits(ops, spread):
        return {f"{op}/float32": {"tau": 1e-10 * (k + 1), "r2": 0.99 - 0.01 * k,
                                  "tau_spread": spread if op == "mul" else 3.0} for k, op in enumerate(ops)}

    procs = {role: {"t_f": {"value": T[f"t_f_{role}"]}, "t_b": {"value": T[f"t_b_{role}"]}} for role in ("host", "accel")}
    procs["host"]["operations"] = {"fits": fits(("add", "mul", "move", "short_add"), 1.3)}
    procs["accel"]["operations"] = {"fits": fits(("add", "mul"), None)}
    (tmp_path / "pair.yaml").write_text(yaml.safe_dump({"platform": "pair", "processors": procs}))
    row = load_platforms(tmp_path).iloc[0]
    assert (row["tau_move_host"], row["tau_short_add_host"]) == (pytest.approx(3e-10), pytest.approx(4e-10))
    assert np.isnan(row["tau_move_accel"]) and np.isnan(row["tau_short_add_accel"])
    assert row["tau_r2_host"] == pytest.approx(0.96) and row["tau_r2_accel"] == pytest.approx(0.98)
    assert row["tau_spread_host"] == pytest.approx(1.3) and np.isnan(row["tau_spread_accel"])


def test_reduce_repetitions_takes_medians_and_spread():
    out = reduce_repetitions(frame(STUDY)).set_index("run_id")
    assert list(out.index) == ["a", "b", "c", "d", "e", "f", "g"]  # the failed run is not reduced
    assert out.loc["a", "time_median_s"] == pytest.approx(2.1)
    assert (out.loc["a", "time_min_s"], out.loc["a", "time_max_s"]) == (2.0, 2.2)
    assert out.loc["a", "n_reps"] == 3
    assert np.isnan(out.loc["a", "time_accel_median_s"])


def test_reduce_repetitions_on_empty_meta():
    empty = frame(STUDY).iloc[:0]
    out = reduce_repetitions(empty)
    assert len(out) == 0 and "time_median_s" in out


def test_predict_uses_the_right_equation_per_variant():
    runs = reduce_repetitions(frame(STUDY)).assign(**T)
    out = sa(runs).set_index("variant")
    host, accel = hetero.Processor(T["t_f_host"], T["t_b_host"]), hetero.Processor(T["t_f_accel"], T["t_b_accel"])
    I = F / B  # noqa: E741 - the papers' name
    assert out.loc["CO", "perf_predicted"] == pytest.approx(min(1e10, I * 1e10))
    assert out.loc["p-DP", "perf_predicted"] == pytest.approx(hetero.performance(I, I, I, host, accel))
    assert out.loc["p-DP", "perf_predicted"] > out.loc["GO", "perf_predicted"] > out.loc["CO", "perf_predicted"]
    assert out.loc["DP(0.5)", "perf_predicted"] == pytest.approx(hetero.dp_performance(I, 0.5, host, accel))
    assert out.loc["DP(0)", "perf_predicted"] == pytest.approx(out.loc["CO", "perf_predicted"])
    assert out.loc["CP", "perf_predicted"] == pytest.approx(hetero.performance(I, 1 / 12, 8.0, host, accel))
    assert out.loc["CO", "tightness"] == pytest.approx(out.loc["CO", "perf_measured"] / out.loc["CO", "perf_predicted"])
    assert out.loc["CO", "time_predicted_s"] == pytest.approx(F / out.loc["CO", "perf_predicted"])
    assert bool(out.loc["CP", "axis_wp"]) and not bool(out.loc["CP", "axis_alpha"])
    assert bool(out.loc["DP(0.5)", "axis_alpha"]) and not bool(out.loc["DP(0.5)", "axis_wp"])


def test_score_groups_over_wps_and_alpha():
    runs = sa(reduce_repetitions(frame(STUDY)).assign(**T))
    fid = score_groups(runs, uncertainty_settings()).set_index("axis")
    assert set(fid.index) == {"wp", "alpha"}
    wp = fid.loc["wp"]
    assert wp["n_alternatives"] == 4 and wp["best_measured"] == "p-DP" and wp["best_predicted"] == "p-DP"
    assert wp["top1_agreement"] == 1.0 and wp["selection_penalty"] == 0.0
    assert -1.0 <= wp["kendall_tau"] <= 1.0 and 0.0 <= wp["profile_error"] <= 1.0
    alpha = fid.loc["alpha"]
    assert alpha["n_alternatives"] == 3 and alpha["best_measured"] == "DP(1)"


def test_failed_runs_picks_the_newest_record():
    out = failed_runs(frame(STUDY))
    assert out["run_id"].tolist() == ["h"] and out["error"].tolist() == ["boom"]


def test_scheduler_address_precedence(monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://env:8786")
    assert validate.scheduler_address("tcp://cfg:8786") == "tcp://cfg:8786"
    assert validate.scheduler_address(None) == "tcp://env:8786"
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    assert validate.scheduler_address("") is None


def test_dask_job_end_to_end(tmp_path):
    raw = tmp_path / "raw" / "s"
    by_run: dict[str, list] = {}
    for r in STUDY:
        by_run.setdefault(r["run_id"], []).append(r)
    files = []
    for run_id, recs in by_run.items():
        write_raw(raw / f"{run_id}.json", run_id, recs)
        files.append(raw / f"{run_id}.json")
    # file names must be the run ids; these short ids are fine for the test
    dataset.gather(files, tmp_path / "runs", tmp_path / "q", tmp_path / "failed", log=lambda *_: None)
    write_platform(tmp_path / "platforms")
    lines: list[str] = []
    summary = validate.validate(tmp_path / "runs", tmp_path / "platforms", tmp_path / "val", log=lines.append)
    assert summary["runs_ok"]["sa"] == 7 and summary["runs_failed"] == 1 and summary["records"] == 22
    runs = pd.read_parquet(tmp_path / "val" / "runs.parquet")
    for col in ("run_id", "tightness", "perf_predicted", "perf_measured", "intensity_host", "time_iqr_s", "model"):
        assert col in runs
    assert runs["tightness"].notna().all()
    fid = pd.read_parquet(tmp_path / "val" / "fidelity.parquet")
    assert list(fid.columns) == FIDELITY_COLUMNS and len(fid) == 4  # one group on two axes, two models
    assert set(fid["model"]) == {"PerDome/PeaPaw", "Panwar projection"}
    failed = pd.read_parquet(tmp_path / "val" / "failed.parquet")
    assert failed["run_id"].tolist() == ["h"]
    assert any("Dask scheduler" in line for line in lines)


@pytest.mark.parametrize("records", [78, validate.THREADS_BELOW_RECORDS])
def test_a_local_cluster_runs_threads_for_small_data_and_processes_for_large(records):
    import os

    settings = validate.DaskSettings(workers=1, connect_timeout=60)
    with validate.dask_client(settings, records) as client:
        pids = set(client.run(os.getpid).values())
    assert (pids == {os.getpid()}) == (records < validate.THREADS_BELOW_RECORDS)
    assert ("thread" in settings.describe(records)) == (records < validate.THREADS_BELOW_RECORDS)


def test_dask_job_uses_a_given_scheduler(tmp_path):
    from distributed import LocalCluster

    raw = tmp_path / "raw" / "s"
    write_raw(raw / "a.json", "a", [r for r in STUDY if r["run_id"] == "a"])
    write_raw(raw / "b.json", "b", [r for r in STUDY if r["run_id"] == "b"])
    dataset.gather([raw / "a.json", raw / "b.json"], tmp_path / "runs", tmp_path / "q", tmp_path / "r", log=lambda *_: None)
    write_platform(tmp_path / "platforms")
    lines: list[str] = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        summary = validate.validate(
            tmp_path / "runs", tmp_path / "platforms", tmp_path / "val", address=cluster.scheduler_address,
            log=lines.append,
        )
        assert any(cluster.scheduler_address in line for line in lines)
    assert summary["runs_ok"]["sa"] == 2


def test_per_operation_model_predicts_sa_runs_with_characterised_costs():
    import json as _json

    tau = {"tau_add_host": 1e-9, "tau_mul_host": 2e-9, "tau_add_accel": 1e-10, "tau_mul_accel": 2e-10}
    study = [
        *rows("a", "CO", [2.0, 2.0, 2.0], alpha=0.0),
        *rows("d", "CP", [1.5, 1.5, 1.6], fh=N, bh=12 * N, fa=2048 * N, ba=256 * N),
    ]
    for r in study:
        phases = {"host": ["vecadd", "powadd"], "accel": []} if r["variant"] == "CO" else {"host": ["vecadd"], "accel": ["powadd"]}
        elements = {"host": N, "accel": 0} if r["variant"] == "CO" else {"host": N, "accel": N}
        r["params"] = _json.dumps({"phases": phases, "elements": elements})
    runs = reduce_repetitions(frame(study)).assign(**T, **tau)
    out = perop_rows(runs).set_index("variant")
    assert set(out["model"]) == {PEROP_MODEL}
    # CO: one part, both phases on the host: max(ops tau, bytes t_b)
    co = max(N * (33 * 1e-9 + 2016 * 2e-9), N * 268 * T["t_b_host"])
    assert out.loc["CO", "time_predicted_s"] == pytest.approx(co)
    # CP: VecAdd on the host, PowAdd on the accelerator, concurrently
    cp = max(max(N * 1e-9, N * 12 * T["t_b_host"]), max(N * (32 * 1e-10 + 2016 * 2e-10), N * 256 * T["t_b_accel"]))
    assert out.loc["CP", "time_predicted_s"] == pytest.approx(cp)
    both = pd.concat([sa(runs), perop_rows(runs)])
    fid = score_groups(both, uncertainty_settings())
    assert set(fid["model"]) == {MODEL, PEROP_MODEL}
    # a cost fit below R² 0.95 is flagged on the rows whose prediction used it (CO never ran on the accelerator)
    flagged = predict_perop(runs.assign(tau_r2_host=0.99, tau_r2_accel=0.87)).set_index("variant")
    assert flagged.loc["CO", "perop_fit_r2"] == 0.99 and flagged.loc["CO", "fit_note"] == ""
    assert flagged.loc["CP", "perop_fit_r2"] == 0.87 and "R² 0.87 < 0.95 on the accel" in flagged.loc["CP", "fit_note"]
    # a multiplication cost that moved more than 1.2x between the characterisation's repetitions is flagged too
    moved = predict_perop(runs.assign(tau_spread_host=1.49, tau_spread_accel=1.05)).set_index("variant")
    assert moved.loc["CO", "perop_fit_spread"] == 1.49 and "host's multiplication cost moved 1.49x" in moved.loc["CO", "fit_note"]
    assert moved.loc["CP", "perop_fit_spread"] == 1.49  # CP's VecAdd ran on the host
    both_flags = predict_perop(runs.assign(tau_spread_host=1.49, tau_r2_host=0.9)).set_index("variant")
    assert both_flags.loc["CO", "fit_note"].count("; ") == 1
    assert out.loc["CO", "fit_note"] == "" and np.isnan(out.loc["CO", "perop_fit_spread"])  # no spread: no flag
    # a host characterised with NumPy's move and short-add costs runs the NumPy kernels: each ufunc call a basic
    # block, one after the other - VecAdd's one add, then PowAdd's copy of e, fill, 63 multiplies and 32 row adds
    t_b, tau_move, tau_short = T["t_b_host"], 3e-9, 4e-9
    numpy_host = predict_perop(runs.assign(tau_move_host=tau_move, tau_short_add_host=tau_short)).set_index("variant")
    vecadd = max(N * 1e-9, N * 12 * t_b)
    powadd = (max(N * 32 * tau_move, N * 128 * t_b) + N * 32 * tau_move + N * 2016 * 2e-9
              + max(N * 32 * tau_short, N * 8 * t_b))
    assert numpy_host.loc["CO", "time_predicted_s"] == pytest.approx(vecadd + powadd)
    assert numpy_host.loc["CP", "time_predicted_s"] == pytest.approx(max(vecadd, out.loc["CP", "time_predicted_s"]))


EN = {"e_f_host": 1e-9, "e_b_host": 5e-10, "p_s_host": 10.0, "e_f_accel": 2e-10, "e_b_accel": 1e-10, "p_s_accel": 5.0}


def test_energy_bound_only_for_metered_wp_runs_and_ranked_by_energy():
    recs = frame(STUDY)
    host = hetero.Processor(T["t_f_host"], T["t_b_host"], e_f=EN["e_f_host"], e_b=EN["e_b_host"], p_s=EN["p_s_host"])
    accel = hetero.Processor(T["t_f_accel"], T["t_b_accel"], e_f=EN["e_f_accel"], e_b=EN["e_b_accel"],
                             p_s=EN["p_s_accel"])
    I = F / B  # noqa: E741
    bound_co = float(hetero.energy_efficiency(I, I, 0.0, host, accel))
    bound_go = float(hetero.energy_efficiency(I, 0.0, I, host, accel))
    # CO measured at exactly half its bound's efficiency, GO at its bound; nothing else metered
    recs.loc[recs["run_id"] == "a", ["energy_j", "energy_source"]] = [2 * F / bound_co, "trace"]
    recs.loc[recs["run_id"] == "b", ["energy_j", "energy_source"]] = [F / bound_go, "trace"]
    recs.loc[recs["run_id"] == "e", ["energy_j", "energy_source"]] = [1.0, "trace"]  # DP(alpha): no eq. 25 shares
    runs = reduce_repetitions(recs).assign(**T, **EN)
    out = energy_rows(runs).set_index("variant")
    assert sorted(out.index) == ["CO", "GO"]
    assert out.loc["CO", "tightness"] == pytest.approx(0.5) and out.loc["GO", "tightness"] == pytest.approx(1.0)
    assert out.loc["CO", "energy_source"] == "trace" and (out["quantity"] == "energy").all()
    fid = score_groups(out.reset_index(), uncertainty_settings())
    [row] = fid.to_dict("records")
    assert row["quantity"] == "energy" and row["model"] == ENERGY_MODEL
    assert row["best_measured"] == ("GO" if F / bound_go < 2 * F / bound_co else "CO")
    # no energy parameters on the platform: nothing to compare
    assert predict_energy(reduce_repetitions(recs).assign(**T)).empty


def test_reduce_repetitions_keeps_energy_medians_and_source():
    recs = frame(STUDY)
    recs.loc[recs["run_id"] == "a", "energy_j"] = [3.0, 1.0, 2.0]
    recs.loc[recs["run_id"] == "a", "energy_source"] = "rapl"
    out = reduce_repetitions(recs).set_index("run_id")
    assert out.loc["a", "energy_median_j"] == 2.0 and out.loc["a", "energy_source"] == "rapl"
    assert np.isnan(out.loc["b", "energy_median_j"]) and out.loc["b", "energy_source"] == "none"


def test_dask_job_validates_metered_runs_against_the_energy_bound(tmp_path):
    """Runs with energy from a real meter (here: a trace) reach energy_runs.parquet and are ranked by energy."""
    metered = {"a": [40.0, 42.0, 41.0], "b": [20.0, 21.0, 19.0], "c": [30.0, 30.0, 30.0], "d": [50.0, 52.0, 51.0]}
    raw = tmp_path / "raw" / "s"
    files = []
    for run_id in sorted({r["run_id"] for r in STUDY}):
        recs = [dict(r) for r in STUDY if r["run_id"] == run_id]
        if run_id in metered:
            for rec, joules in zip(recs, metered[run_id], strict=True):
                rec.update(energy_j=joules, energy_source="trace")
                # one-processor WPs: the whole energy is that processor's; the others only node energy
                if run_id in ("a", "b"):
                    rec["energy_host_j" if run_id == "a" else "energy_accel_j"] = joules
        write_raw(raw / f"{run_id}.json", run_id, recs)
        files.append(raw / f"{run_id}.json")
    dataset.gather(files, tmp_path / "runs", tmp_path / "q", tmp_path / "failed", log=lambda *_: None)
    write_platform(tmp_path / "platforms")
    doc = yaml.safe_load((tmp_path / "platforms" / "pair.yaml").read_text())
    for role in ("host", "accel"):
        for p in ("e_f", "e_b", "p_s"):
            doc["processors"][role][p] = {"value": EN[f"{p}_{role}"]}
    (tmp_path / "platforms" / "pair.yaml").write_text(yaml.safe_dump(doc))
    summary = validate.validate(tmp_path / "runs", tmp_path / "platforms", tmp_path / "val", log=lambda *_: None)
    assert summary["runs_metered"] == 4
    energy = pd.read_parquet(tmp_path / "val" / "energy_runs.parquet").set_index("variant")
    assert sorted(energy.index) == ["CO", "CP", "GO", "p-DP"]
    assert energy.loc["GO", "energy_median_j"] == 20.0 and (energy["energy_source"] == "trace").all()
    assert (energy["tightness"] > 0).all()
    fid = pd.read_parquet(tmp_path / "val" / "fidelity.parquet")
    [row] = fid[fid["quantity"] == "energy"].to_dict("records")
    assert row["best_measured"] == "GO" and row["model"] == ENERGY_MODEL
    assert set(fid["quantity"]) == {"time", "energy"}
    roof = pd.read_parquet(tmp_path / "val" / "energy_roofline.parquet")
    assert summary["energy_roofline_rows"] == len(roof) == 4 + 2
    assert sorted(roof.loc[roof["processor"] != "node", "variant"] + roof.loc[roof["processor"] != "node", "processor"]) \
        == ["COhost", "GOaccel"]
    co = roof[(roof["variant"] == "CO") & (roof["processor"] == "host")].iloc[0]
    expected = EN["e_f_host"] * F + EN["e_b_host"] * B + EN["p_s_host"] * max(T["t_f_host"] * F, T["t_b_host"] * B)
    assert co["energy_predicted_j"] == pytest.approx(expected) and co["energy_measured_j"] == 41.0
    assert co["tightness"] == pytest.approx(expected / 41.0)
    # the report's energy section reads these files
    from analysis.report.common import load_inputs
    from analysis.report.sections.energy import EnergySection

    (tmp_path / "rep").mkdir()
    out = EnergySection().build(load_inputs(tmp_path / "val", [], tmp_path / "q"), tmp_path / "rep")
    lines, shown = out.lines, " ".join(str(b.get("text", "")) + str(b.get("bold", "")) for b in out.blocks)
    assert lines[0].startswith("Energy was measured for 4 run(s)")
    assert any(line.startswith("PeaPaw energy bound: 4 metered runs") for line in lines)
    assert any(line.startswith("Energy roofline sa node: 4 metered") for line in lines)
    assert "Energy roofline (Choi)" in shown and "could not be measured" not in shown


def test_report_says_in_one_line_that_nothing_was_metered():
    from analysis.report.sections.energy import meter_statement

    _, line, _ = meter_statement([], 0)
    assert line.startswith("Energy could not be measured on this machine")
    for source in ("RAPL", "NVML", "energy.trace"):
        assert source in line


def test_energy_roofline_per_processor_and_node():
    recs = frame(STUDY)
    cp = recs["run_id"] == "d"
    recs.loc[cp, ["energy_j", "energy_host_j", "energy_accel_j", "energy_source"]] = [10.0, 4.0, 5.0, "rapl+nvml"]
    runs = reduce_repetitions(recs).assign(**T, **EN)
    out = predict_energy_roofline(runs)
    assert list(out.columns) == ROOFLINE_ENERGY_COLUMNS  # predictions only: validation attaches the rest
    got = attach(out, "energy", runs).set_index("processor")
    assert sorted(got.index) == ["accel", "host", "node"] and (out["run_id"] == "d").all()

    def roof(role, nf, nb):
        return (EN[f"e_f_{role}"] * nf + EN[f"e_b_{role}"] * nb
                + EN[f"p_s_{role}"] * max(T[f"t_f_{role}"] * nf, T[f"t_b_{role}"] * nb))

    host, accel = roof("host", N, 12 * N), roof("accel", 2048 * N, 256 * N)
    assert got.loc["host", "energy_predicted_j"] == pytest.approx(host)
    assert got.loc["accel", "energy_predicted_j"] == pytest.approx(accel)
    assert got.loc["node", "energy_predicted_j"] == pytest.approx(host + accel)
    assert got.loc["node", "tightness"] == pytest.approx((host + accel) / 10.0)
    assert got.loc["host", "rel_error"] == pytest.approx((host - 4.0) / 4.0)
    # a platform without energy parameters: nothing to compare
    assert predict_energy_roofline(reduce_repetitions(recs).assign(**T)).empty
    # the accel's parameters unusable: the host's own row stays, the node row (accel did work) goes
    half = reduce_repetitions(recs).assign(**T, **{**EN, "e_f_accel": np.nan})
    assert sorted(predict_energy_roofline(half)["processor"]) == ["host"]


def test_unphysical_energy_fit_is_reported_and_not_used(tmp_path):
    write_platform(tmp_path / "p")
    doc = yaml.safe_load((tmp_path / "p" / "pair.yaml").read_text())
    doc["processors"]["host"].update(e_f={"value": 1e-10}, e_b={"value": 1e-10}, p_s={"value": 5.0},
                                     energy_fit={"unphysical": False})
    doc["processors"]["accel"].update(e_f={"value": -1e-11}, e_b={"value": 2e-10}, p_s={"value": 9.0},
                                      energy_fit={"unphysical": True})
    (tmp_path / "p" / "pair.yaml").write_text(yaml.safe_dump(doc))
    row = load_platforms(tmp_path / "p").iloc[0]
    assert row["e_f_host"] == 1e-10 and row["p_s_host"] == 5.0
    assert np.isnan(row["e_f_accel"]) and np.isnan(row["e_b_accel"]) and np.isnan(row["p_s_accel"])
    assert energy_fit_problem(doc["processors"]["accel"]) == "unphysical energy fit (e_f = -1e-11)"
    assert energy_fit_problem(doc["processors"]["host"]) is None
    assert energy_fit_problem({"t_f": {"value": 1.0}}) is None


def test_per_operation_flags_name_each_runs_own_processor_and_figures():
    """Runs of different fits in one frame: each note names its own processor, R² and spread (notes are built
    once per distinct combination and handed back to every run that has it); unflagged runs stay empty."""
    from analysis.models.perop import _fit_flags

    nan = np.nan
    r2 = {"host": np.array([0.99, 0.90, 0.99, nan, 0.80, 0.99]), "accel": np.array([0.99, 0.99, 0.85, 0.99, nan, 0.99])}
    spread = {"host": np.array([1.5, 1.1, 1.1, nan, 1.3, 1.5]), "accel": np.array([1.0, 1.0, 1.25, 1.0, nan, 1.0])}
    low, moved, notes = _fit_flags(r2, spread, pd.RangeIndex(6))
    assert list(low[:3]) == [0.99, 0.90, 0.85] and list(moved[:3]) == [1.5, 1.1, 1.25]
    assert notes[0] == notes[5] and notes[0].startswith("the host's multiplication cost moved 1.50x")
    assert notes[1] == "per-operation fit R² 0.9 < 0.95 on the host: costs too noisy to trust"
    assert notes[2].startswith("per-operation fit R² 0.85 < 0.95 on the accel") and "the accel's" in notes[2]
    assert notes[3] == "" and "R² 0.8 " in notes[4] and "host's multiplication cost moved 1.30x" in notes[4]
