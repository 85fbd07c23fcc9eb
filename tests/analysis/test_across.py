"""Every model on every case it can judge: the WP models on PEACH's sweeps, PEACH's model on SA's, Panwar's
projection and device selection on FDM runs of one grid on two backends, the split three ways and the matrix
(the default study's real runs where they exist; small frames whose answers are known otherwise)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from analysis import registry
from analysis.planning.config import uncertainty_settings
from analysis.report.sections.scorecard import matrix
from analysis.scoring import splits as sp


def test_peach_sweeps_are_scored_by_the_wp_models_and_the_transpose_says_why_not(default_validated):
    v = default_validated / "validation"
    runs = pd.read_parquet(v / "peach_runs.parquet")
    by = runs.groupby(["model", "workload"]).size().to_dict()
    assert by[("PEACH (end-point calibrated)", "MatrixMultiply")] == 11
    assert by[("PerDome/PeaPaw", "MatrixMultiply")] == 11 and by[("Panwar projection", "MatrixTranspose")] == 11
    assert ("PerDome/PeaPaw", "MatrixTranspose") not in by  # its bound is a flop rate: a transpose counts none
    # the WP models' tightness is predicted over measured time, the same as W / T against the rates
    wp = runs[runs["model"] != "PEACH (end-point calibrated)"]
    np.testing.assert_allclose(wp["tightness"], wp["time_predicted_s"] / wp["time_median_s"])
    np.testing.assert_allclose(wp["rate_predicted"] * wp["time_predicted_s"], wp["work"])
    fid = pd.read_parquet(v / "peach_fidelity.parquet")
    assert set(fid["model"]) == {"PEACH (end-point calibrated)", "PerDome/PeaPaw", "Panwar projection"}
    card = pd.read_parquet(v / "scorecard.parquet")
    peach = card[card["case"] == "peach"]
    assert {("PerDome/PeaPaw", "compute-bound"), ("Panwar projection", "memory-bound")} <= set(
        zip(peach["model"], peach["workload_class"], strict=True))
    assert registry.models()["PerDome/PeaPaw"].why_not("peach", "memory-bound").startswith("the bound is a flop rate")


def test_peach_model_scores_the_sa_sweep_on_its_interior_points(default_validated):
    runs = pd.read_parquet(default_validated / "validation" / "runs.parquet")
    mine = runs[(runs["case"] == "sa") & (runs["model"] == "PEACH (end-point calibrated)")]
    assert len(mine) == 18 and set(mine["alpha"]) == {round(0.1 * k, 1) for k in range(1, 10)}  # 0 and 1 calibrate
    assert mine["axis_alpha"].all() and mine["tightness"].between(0.5, 2).all()


def test_the_split_three_ways_on_the_default_study(default_validated):
    table = pd.read_parquet(default_validated / "validation" / "splits.parquet")
    assert set(table["case"]) == {"sa", "peach"} and table.groupby(sp.SWEEP_KEYS).ngroups == 4
    assert set(table["method"]) == {sp.MEASURED, sp.PEACH_RATE, sp.PEACH_ENERGY, sp.PDP, sp.PEROP}
    best = table[table["method"] == sp.MEASURED]
    assert (best["selection_penalty"] == 0).all()
    answered = table[table["alpha"].notna()]
    assert (answered["selection_penalty"] >= 0).all() and answered["alpha"].between(0, 1).all()
    assert ((answered["selection_penalty_lo"] <= answered["selection_penalty"] + 1e-12)
            & (answered["selection_penalty"] <= answered["selection_penalty_hi"] + 1e-12)).all()
    # no meter here: PEACH's energy answer is absent and says so; the per-operation model names only SA
    assert table.loc[table["method"] == sp.PEACH_ENERGY, "alpha"].isna().all()
    assert table.loc[table["method"] == sp.PEACH_ENERGY, "note"].str.contains("no meter").all()
    perop = table[(table["method"] == sp.PEROP) & (table["case"] == "peach")]
    assert perop["alpha"].isna().all() and perop["note"].str.contains("library kernels").all()


def _sweep(a: float, b: float, reps: int = 5, noise: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """A DP(alpha) sweep of W = 1 whose time is max((1 - alpha) a, alpha b): PEACH's own curve (eq. 7, T_OH = 0)."""
    rng = np.random.default_rng(seed)
    grid = np.round(np.linspace(0, 1, 11), 1)
    t = np.maximum((1 - grid) * a, grid * b)
    rows = []
    for alpha, ti in zip(grid, t, strict=True):
        r = ti * (1 + noise * rng.standard_normal(reps))
        for model, tp in (("PerDome/PeaPaw", 0.5 * ti), ("per-operation (Kannan)", ti)):
            rows.append({"study": "s", "case": "sa", "platform": "p", "size": 1, "size_label": "one", "alpha": alpha,
                         "time_median_s": float(np.median(r)), "time_reps_s": r.tolist(), "model": model,
                         "time_predicted_s": tp, "work": 1.0})
    return pd.DataFrame(rows)


def test_splits_answers_are_those_of_the_equations():
    settings = uncertainty_settings(resamples=200)
    table = sp.splits(_sweep(1.0, 3.0), settings).set_index("method")
    # T = max((1 - alpha), 3 alpha): best at alpha = 1/4, swept 0.2 or 0.3 (0.2: 0.8 s, 0.3: 0.9 s)
    assert table.loc[sp.MEASURED, "alpha"] == pytest.approx(0.2)
    assert table.loc[sp.PEACH_RATE, "alpha"] == pytest.approx(0.25)  # R_G / (R_C + R_G) = (1/3) / (1 + 1/3)
    assert table.loc[sp.PEACH_RATE, "alpha_run"] == pytest.approx(0.2)  # nearest swept (the smaller on a tie)
    # PerDome's bound of each processor alone is half its time: the balance is the same share
    assert table.loc[sp.PDP, "alpha"] == pytest.approx(0.25)
    assert table.loc[sp.PEROP, "alpha"] == pytest.approx(0.2)
    # the per-operation model's pick differs where it predicts a faster alpha than it is
    skewed = _sweep(1.0, 3.0)
    skewed.loc[(skewed["model"] == "per-operation (Kannan)") & (skewed["alpha"] == 0.7), "time_predicted_s"] = 0.1
    row = sp.splits(skewed, settings).set_index("method").loc[sp.PEROP]
    assert row["alpha_run"] == pytest.approx(0.7) and row["selection_penalty"] == pytest.approx(2.1 / 0.8 - 1)


def test_split_intervals_move_with_the_repetitions_and_a_missing_model_says_why():
    settings = uncertainty_settings(resamples=300)
    noisy = sp.splits(_sweep(1.0, 1.0, noise=0.2, reps=5), settings).set_index("method")
    lo, hi = noisy.loc[sp.PEACH_RATE, ["alpha_lo", "alpha_hi"]]
    assert lo < 0.5 < hi and hi - lo > 0.02  # noisy end points: PEACH's answer is uncertain
    quiet = sp.splits(_sweep(1.0, 1.0, noise=0.0, reps=5), settings).set_index("method")
    assert quiet.loc[sp.PEACH_RATE, "alpha_hi"] - quiet.loc[sp.PEACH_RATE, "alpha_lo"] == pytest.approx(0.0)
    alone = _sweep(1.0, 1.0)
    alone = alone[alone["model"] != "per-operation (Kannan)"]
    row = sp.splits(alone, settings, {"per-operation (Kannan)": "not for this sweep"}).set_index("method").loc[sp.PEROP]
    assert np.isnan(row["alpha"]) and row["note"] == "not for this sweep"


def test_fdm_scales_run_on_each_backend_with_their_processor_and_keep_their_ids():
    from analysis.cases.fdm import fdm_runs
    from analysis.planning.config import load_config

    config = load_config("config/config.yaml")
    both = fdm_runs(config)
    one = copy.deepcopy(config)
    for scale in one["cases"]["fdm"]["scales"]:
        scale.pop("backends", None)
    numba = fdm_runs(one)
    assert {r["run_id"] for r in numba} < {r["run_id"] for r in both}  # adding a backend re-measures nothing
    extra = [r for r in both if r["fdm_doc"]["backend"] == "numpy"]
    assert len(extra) == 3 and {r["fdm_doc"]["processor"] for r in extra} == {"host"}
    assert {r["fdm_doc"]["processor"] for r in numba} == {"accel"}


def test_fdm_runs_take_their_own_warmup_and_otherwise_the_runs_one():
    # the two-processor jobs rehearse their kernels in setup; the FDM loop keeps its own untimed loop
    from analysis import registry
    from analysis.cases.fdm import fdm_runs
    from analysis.planning.config import load_config

    config = load_config("config/config.yaml")
    assert config["runs"]["warmup"] == 0 and config["cases"]["fdm"]["warmup"] == 1
    assert {r["fdm_doc"]["warmup"] for r in fdm_runs(config)} == {1}
    assert {r["warmup"] for name in ("sa", "la", "peach") for r in registry.case(name).expand(config)} == {0}
    config["cases"]["fdm"]["warmup"] = None
    config["runs"]["warmup"] = 2
    assert {r["fdm_doc"]["warmup"] for r in fdm_runs(config)} == {2}


def test_the_fdm_driver_counts_on_the_processor_it_ran():
    from sims.fdm.driver import per_processor

    assert per_processor("accel", 10, 20) == {"flops_host": 0, "bytes_host": 0, "flops_accel": 10, "bytes_accel": 20}
    assert per_processor(None, 10, 20) == {}


def test_panwar_projects_one_rank_fdm_runs_and_picks_a_backend():
    from analysis.cases.fdm import fdm_device_selection
    from analysis.models.panwar import PanwarProjection

    base = {"study": "s", "platform": "p", "grid": '{"shape": [8, 8, 8], "spacing": 10.0}', "order": 2,
            "boundary": "cpml(4)", "points": 512, "steps": 10, "decomposition": "[1, 1, 1]", "marshaling": "host-staging",
            "t_f_host": 1e-9, "t_b_host": 1e-9, "t_f_accel": 1e-10, "t_b_accel": 1e-10}
    rows = []
    for backend, role, t in (("numpy", "host", 2.0), ("numba", "accel", 0.2)):
        counts = {f"{k}_{r}": (v if r == role else 0) for r in ("host", "accel") for k, v in (("flops", 1e8),
                                                                                               ("bytes", 1e8))}
        rows.append({**base, **counts, "run_id": backend, "backend": backend, "ranks": 1, "time_median_s": t,
                     "time_reps_s": [t * f for f in (0.99, 1.0, 1.01, 1.0, 1.02)]})
    rows.append({**rows[1], "run_id": "two", "ranks": 2})  # several ranks: not a kernel on one device
    out = PanwarProjection().predict(pd.DataFrame(rows))
    assert sorted(out["run_id"]) == ["numba", "numpy"]
    np.testing.assert_allclose(out.set_index("run_id").loc[["numpy", "numba"], "time_predicted_s"], [0.1, 0.01])
    assert "t_f_host" not in out  # inputs, not results
    pick = fdm_device_selection(out, uncertainty_settings(resamples=0))
    assert len(pick) == 1 and pick["picked"].iloc[0] == "accel" and pick["best_measured"].iloc[0] == "accel"
    assert pick["distinguishable"].iloc[0] and pick["selection_penalty"].iloc[0] == 0


def test_the_matrix_names_every_model_and_every_gap(default_validated):
    card = pd.read_parquet(default_validated / "validation" / "scorecard.parquet")
    columns, grid = matrix(card, ["sa", "la", "peach", "fdm", "published"])
    assert ("peach", "memory-bound") in columns and all(c != "published" for c, _ in columns)
    cells = {name: dict(zip(columns, row, strict=True)) for name, row in grid}
    assert cells["PerDome/PeaPaw"][("peach", "compute-bound")]["href"] == "#peach"
    assert "flop rate" in cells["PerDome/PeaPaw"][("peach", "memory-bound")]["why"]
    assert "stencil" in cells["FDM"][("sa", "compute-bound")]["why"]
    # every cell is a verdict or a reason, never empty
    assert all(("verdict" in c) != ("why" in c) and (c.get("verdict") or c.get("why")) for _, row in grid for c in row)


def test_with_a_meter_peach_answers_for_energy_too_and_its_penalty_is_in_energy():
    from analysis.equations import peach

    sweep = _sweep(1.0, 3.0)
    grid = sweep["alpha"].to_numpy()
    power = np.where(grid < 0.5, 120.0, 60.0)  # the host side draws more: energy favours the accelerator
    sweep["energy_median_j"] = sweep["time_median_s"] * power
    sweep["idle_w"] = 20.0
    row = sp.splits(sweep, uncertainty_settings(resamples=50)).set_index("method").loc[sp.PEACH_ENERGY]
    t0, t1 = 1.0, 3.0
    want = peach.best_alphas("energy", np.array([1 / t0]), np.array([1 / t1]), np.array([20.0]),
                             np.array([120.0 - 20.0]), np.array([60.0 - 20.0]))[0][0]
    assert row["alpha"] == pytest.approx(want) and row["note"] == ""
    runs = sweep.drop_duplicates("alpha").set_index("alpha")
    at = runs.index[np.argmin(np.abs(runs.index - want))]
    assert row["selection_penalty"] == pytest.approx(runs.loc[at, "energy_median_j"] / runs["energy_median_j"].min() - 1)


def test_the_compiled_split_resamples_are_the_numpy_ones_to_the_bit(monkeypatch):
    """Many hostile sweeps (few or one repetition, a NaN median, a sweep without alpha 1, tied end points, a
    model answer that is NaN or halfway between two swept alphas, ragged grids): the compiled pass gives the
    NumPy planes' table exactly, at two levels."""
    from analysis.scoring import uncertainty as unc

    rng = np.random.default_rng(11)
    frames = []
    for s in range(60):
        sweep = _sweep(float(rng.uniform(0.5, 2)), float(rng.uniform(0.5, 2)), reps=int(rng.integers(1, 8)),
                       noise=float(rng.choice([0.0, 0.3])), seed=s)
        sweep["size"] = s
        sweep["time_reps_s"] = [np.round(r, 2).tolist() for r in sweep["time_reps_s"]]  # ties among repetitions
        if s % 7 == 1:
            sweep = sweep[sweep["alpha"] != 1.0]  # no alpha 1: PEACH cannot answer
        if s % 5 == 2:
            sweep.loc[sweep["alpha"] == 0.4, ["time_median_s", "time_reps_s"]] = [np.nan, None]
        if s % 6 == 3:  # one repetition at a point: it keeps its median
            sweep["time_reps_s"] = [r[:1] if a == 0.5 else r for r, a in zip(sweep["time_reps_s"], sweep["alpha"],
                                                                               strict=True)]
        if s % 4 == 0:  # the per-operation model predicts nothing; PerDome's balance lands halfway between 0.5 and 0.6
            sweep.loc[sweep["model"] == "per-operation (Kannan)", "time_predicted_s"] = np.nan
            sweep.loc[sweep["model"] == "PerDome/PeaPaw", "time_predicted_s"] = np.where(
                sweep.loc[sweep["model"] == "PerDome/PeaPaw", "alpha"] == 0.0, 0.55, 0.45)
        if s % 9 == 4:
            sweep = sweep[~sweep["alpha"].isin([0.3, 0.6])]  # a coarser grid
        frames.append(sweep)
    sweeps = pd.concat(frames, ignore_index=True)
    for level in (0.95, 0.3):
        settings = unc.Settings(resamples=120, seed=5, level=level, noise_alpha=0.05)
        monkeypatch.setattr(unc, "JIT_MIN_ELEMENTS", 10**12)
        planes = sp.splits(sweeps, settings)
        monkeypatch.setattr(unc, "JIT_MIN_ELEMENTS", 0)
        compiled = sp.splits(sweeps, settings)
        pd.testing.assert_frame_equal(compiled, planes, check_exact=True)
        assert planes["alpha_lo"].notna().any() and planes["selection_penalty_hi"].gt(0).any()
