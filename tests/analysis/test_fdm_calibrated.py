"""The calibrated FDM model: the solver's cost features, the calibration's fits, per-phase predictions."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from analysis.cases.fdm import score_fdm, worst_phase
from analysis.equations import fdm
from analysis.models.fdm import CALIBRATED
from analysis.models.fdm import predict_calibrated as predict_only
from analysis.planning.config import uncertainty_settings
from analysis.scoring.measured import attach
from sims.bench import fdm_calib
from sims.fdm import cost
from sims.fit import relative_nonnegative_fit

COEF = {"bulk_points": 1e-9, "bulk_rows": 2e-7, "pml_points": 2e-9, "pml_rows": 3e-7, "pml_layer_xy": 1e-9,
        "pml_layer_z": 1e-8}


def predict_calibrated(runs):
    """The calibrated model's rows as validation holds them (the tightness attached, the worst phase named)."""
    return worst_phase(attach(predict_only(runs)))


def _calibration(coef=COEF, per_call=1e-6, per_element=(5e-10, 6e-10, 2e-9)) -> dict:
    half = {p: {"coefficients": dict(coef)} for p in ("velocity", "stress")}
    marshal = {impl: {d: {a: {"per_call_s": per_call, "per_element_s": e} for a, e in zip("xyz", per_element, strict=True)}
                      for d in ("pack", "unpack")} for impl in ("numba", "xp")}
    return {"half_steps": {"2": half, "4": half}, "marshal": {"2": marshal, "4": marshal}}


def _solver_features(shape, width, backend="numba"):
    """The features of a real one-rank Simulation's plan: points and rows of each box, by kernel kind."""
    from mpi4py import MPI

    from sims.fdm.solver import Simulation
    from sims.fdm.spec import parse

    sim = Simulation(parse(fdm_calib.run_doc(shape, 2, width, backend)), MPI.COMM_SELF)
    out = dict.fromkeys(cost.FEATURES, 0)
    for lo, hi, sides in sim.boxes:
        n = [h - low for low, h in zip(lo, hi, strict=True)]
        kind = "bulk" if sides == (None, None, False) else "pml"
        out[f"{kind}_points"] += n[0] * n[1] * n[2]
        out[f"{kind}_rows"] += n[0] * n[1]
    return out


@pytest.mark.parametrize("shape,width", [((24, 20, 16), 0), ((24, 20, 16), 4), ((16, 32, 24), 5)])
def test_features_match_the_solver_boxes(shape, width):
    got = cost.block_features(shape, (0, 0, 0), shape, width)
    solver = _solver_features(shape, width)
    for k in ("bulk_points", "bulk_rows", "pml_points", "pml_rows"):
        assert got[k] == solver[k], k
    assert got["bulk_points"] + got["pml_points"] == np.prod(shape)
    if width:
        nx, ny, nz = shape
        assert got["pml_layer_z"] == 2 * width * nx * ny
        assert got["pml_layer_xy"] == 2 * width * ny * nz + 2 * width * nx * nz


def test_a_block_off_the_z_layers_runs_its_interior_with_the_bulk_kernel():
    # rank block in the middle of z (no z layer), touching the x layer only on its low side
    f = cost.block_features((40, 40, 40), (0, 10, 12), (20, 30, 28), 6)
    # x cuts: [0,6) layer, [6,20) interior; y [10,30) interior entirely
    assert f["bulk_points"] == 14 * 20 * 16 and f["bulk_rows"] == 14 * 20
    assert f["pml_points"] == 6 * 20 * 16 and f["pml_layer_xy"] == 6 * 20 * 16 and f["pml_layer_z"] == 0


def test_relative_nonnegative_fit_recovers_costs_and_never_goes_negative():
    rng = np.random.default_rng(3)
    A = rng.uniform(1e3, 1e6, (40, 3))
    truth = np.array([2e-9, 0.0, 5e-8])
    y = A @ truth * (1 + 0.002 * rng.standard_normal(40))
    fit = relative_nonnegative_fit(list(A.T), y)
    assert fit.coef[0] == pytest.approx(2e-9, rel=0.05) and fit.coef[2] == pytest.approx(5e-8, rel=0.05)
    assert min(fit.coef) >= 0 and fit.r2 > 0.999
    # a target that a negative coefficient would fit best: clipped at zero, never negative
    fit = relative_nonnegative_fit([A[:, 0], A[:, 1]], A[:, 0] * 1e-9 - A[:, 1] * 1e-10 + 1.0)
    assert min(fit.coef) >= 0
    with pytest.raises(ValueError, match="positive"):
        relative_nonnegative_fit([A[:, 0]], -A[:, 0])


def test_calibration_fits_recover_the_half_step_costs_and_flag_a_bad_fit():
    rows = []
    for order in (2,):
        for shape in cost.BLOCKS:
            for width in cost.WIDTHS:
                feats = cost.block_features(shape, (0, 0, 0), shape, width)
                t = sum(COEF[k] * feats[k] for k in cost.FEATURES)
                for phase in fdm_calib.HALF_STEPS:
                    rows.append({"order": order, "phase": phase, "shape": list(shape), "width": width, **feats,
                                 "times_s": [t * 0.99, t, t * 1.01]})
    fits = fdm_calib.fit_half_steps(rows)
    got = fits["2"]["velocity"]
    for k, v in COEF.items():
        assert got["coefficients"][k] == pytest.approx(v, rel=0.02), k
    assert got["r2"] > 0.999 and not got["poor_fit"]
    assert len(got["samples"]) == len(cost.BLOCKS) * len(cost.WIDTHS)
    # one sample 3x off: the fit says so
    rows[0]["times_s"] = [x * 3 for x in rows[0]["times_s"]]
    assert fdm_calib.fit_half_steps(rows)["2"]["velocity"]["poor_fit"]


def test_calibration_blocks_are_checked():
    with pytest.raises(ValueError, match="two positive widths"):
        cost.check_blocks(cost.BLOCKS, [0, 5])
    with pytest.raises(ValueError, match="no interior"):
        cost.check_blocks([(16, 16, 16), (16, 16, 32), (32, 16, 16)], [0, 4, 8])
    with pytest.raises(ValueError, match="row lengths"):
        cost.check_blocks([(32, 32, 32)] * 3, [0, 4, 6])


def test_one_rank_is_the_sum_of_its_half_steps():
    calib = _calibration()
    shape = (64, 64, 64)
    got = fdm.calibrated_run_time(shape, (1, 1, 1), 2, 10, "device-pack", calib, backend="numba", latency=1e-6,
                                  t_net=1e-10, pml_width=8)
    feats = cost.block_features(shape, (0, 0, 0), shape, 8)
    one = sum(COEF[k] * feats[k] for k in cost.FEATURES)
    assert got["velocity"] == pytest.approx(10 * one) and got["stress"] == pytest.approx(10 * one)
    assert got["pack"] == got["unpack"] == got["halo"] == 0.0
    assert got["total"] == pytest.approx(20 * one)


def test_short_rows_and_strided_faces_make_a_z_split_slower():
    calib = _calibration()
    kw = dict(backend="numba", latency=1e-6, t_net=1e-10, pml_width=8, cores=2)
    x_split = fdm.calibrated_run_time((96, 96, 96), (2, 1, 1), 2, 10, "device-pack", calib, **kw)
    z_split = fdm.calibrated_run_time((96, 96, 96), (1, 1, 2), 2, 10, "device-pack", calib, **kw)
    assert z_split["velocity"] > x_split["velocity"]  # twice the rows of half the length
    assert z_split["pack"] > x_split["pack"]  # the z face costs more per element here
    # the host-staging design marshals with the array module's slicing, the others with the Numba kernel
    assert fdm.marshal_impl("numba", "host-staging") == "xp" and fdm.marshal_impl("numba", "gpu-aware") == "numba"
    assert fdm.marshal_impl("numpy", "device-pack") == "xp"


def test_an_oversubscribed_node_time_shares_its_cores_and_the_wait_shows_in_the_halo():
    calib = _calibration()
    kw = dict(backend="numba", latency=1e-6, t_net=1e-10, pml_width=8)
    four = fdm.calibrated_step_time((96, 96, 96), (2, 2, 1), 2, "device-pack", calib, cores=2, **kw)
    busy = four["velocity"] + four["stress"] + four["pack"] + four["unpack"]
    step = float(np.max(four["total"]))
    assert step >= busy.sum() / 2 > float(np.max(busy))  # two ranks per core: the cores' time sharing sets it
    assert np.allclose(four["halo"], step - busy)  # every rank waits out the rest of the step in the exchange
    # each rank's incoming messages (one per split axis and exchange) move on a core too: 48 x 96 cells a
    # face, 3 then 6 fields of 4 bytes, ping-pong latency 1e-6 s and 1e-10 s per byte
    moved = float(np.sum(fdm.transfers(fdm.rank_geometry((96, 96, 96), (2, 2, 1), 8), 2, 1e-6, 1e-10)))
    assert moved == pytest.approx(4 * 2 * (2 * 1e-6 + 4 * (3 + 6) * 48 * 96 * 1e-10))
    assert step == pytest.approx((busy.sum() + moved) / 2)
    # a chain of 4 ranks: its inner ranks receive 96 x 96 faces from both sides, twice its end ranks' bytes
    chain = fdm.transfers(fdm.rank_geometry((96, 96, 96), (4, 1, 1), 8), 2, 1e-6, 1e-10)
    assert chain.sum() > moved and list(chain[1:3]) == pytest.approx([2 * chain[0]] * 2)
    enough = fdm.calibrated_step_time((96, 96, 96), (2, 2, 1), 2, "device-pack", calib, cores=4, **kw)
    assert float(np.max(enough["total"])) < step
    with pytest.raises(KeyError, match="order 4"):
        fdm.calibrated_step_time((32, 32, 32), (1, 1, 1), 4, "device-pack", {"half_steps": {}, "marshal": {}},
                                 backend="numba", latency=0.0, t_net=0.0)


def _runs(calibration: str | None) -> pd.DataFrame:
    rows = []
    for n, (dec, design, t) in enumerate([("[2,1,1]", "device-pack", 1.0), ("[1,1,2]", "device-pack", 1.6),
                                         ("[2,1,1]", "host-staging", 0.9)]):
        rows.append({"run_id": f"r{n}", "study": "s", "variant": "v", "platform": "p", "ranks": 2,
                     "grid": json.dumps({"shape": [96, 96, 96], "spacing": 10.0}, separators=(",", ":")),
                     "order": 2, "boundary": "cpml(8)", "decomposition": dec, "marshaling": design, "steps": 20,
                     "points": 96**3, "n_reps": 3, "time_median_s": t, "time_min_s": t, "time_max_s": t,
                     "time_iqr_s": 0.0, "time_reps_s": [t, t, t], "backend": "numba", "nodes": 1,
                     **{f"{p}_median_s": t / 6 for p in ("velocity", "stress", "pack", "unpack", "halo", "h2d")},
                     "t_f": 1e-11, "t_b": 1e-10, "t_b_shared": 2e-10, "latency": 1e-6, "t_net": 1e-10,
                     "latency_inter": np.nan, "t_net_inter": np.nan, "cores": 2.0, "fdm_calibration": calibration})
    return pd.DataFrame(rows).astype({"fdm_calibration": "string"})


def test_predictor_gives_phases_and_the_worst_one_and_nothing_without_a_calibration():
    text = json.dumps({"modes": {"alone": _calibration(), "shared": _calibration()}})
    pred = predict_calibrated(_runs(text))
    assert (pred["model"] == CALIBRATED).all() and pred["time_predicted_s"].notna().all()
    assert np.allclose(pred["compute_pred_s"], pred["velocity_pred_s"] + pred["stress_pred_s"])
    assert pred["worst_phase"].notna().all() and "fdm_calibration" not in pred
    # the z split is predicted slower, as measured: the decomposition ranking is right
    fid = score_fdm(pred, uncertainty_settings())
    dec = fid[(fid["axis"] == "decomposition") & (fid["fixed"] == "marshaling=device-pack")].iloc[0]
    assert dec["best_predicted"] == "[2,1,1]" and dec["model"] == CALIBRATED
    none = predict_calibrated(_runs(None))
    assert none["time_predicted_s"].isna().all()


def test_identical_code_measures_the_drift_and_a_difference_within_it_is_not_a_ranking():
    from analysis.cases.fdm import code_path, drift_floor

    assert code_path("numba", 1, "host-staging") == code_path("numba", 1, "device-pack") == "no exchange"
    assert code_path("numba", 2, "device-pack") == code_path("numba", 2, "gpu-aware") != code_path("numba", 2, "host-staging")
    assert code_path("cupy", 2, "device-pack") != code_path("cupy", 2, "gpu-aware")
    text = json.dumps({"modes": {"alone": _calibration(), "shared": _calibration()}})
    runs = _runs(text)
    runs.loc[2, ["time_median_s", "time_min_s", "time_max_s"]] = 1.02  # host-staging, [2,1,1]
    runs.at[2, "time_reps_s"] = [1.02, 1.02, 1.02]
    # a gpu-aware run of the same code as r0 (device-pack, [2,1,1]) measured 5 % slower: drift, not design
    twin = runs.iloc[[0]].assign(run_id="r3", marshaling="gpu-aware", time_median_s=1.05, time_min_s=1.05,
                                 time_max_s=1.05, time_reps_s=[[1.05, 1.05, 1.05]])
    runs = pd.concat([runs, twin], ignore_index=True)
    floor, pairs = drift_floor(runs.assign(model="FDM"))
    assert pairs == 1 and floor == pytest.approx(0.05)
    pred = predict_calibrated(runs)
    fid = score_fdm(pred, uncertainty_settings(resamples=50))
    assert np.allclose(fid["noise_floor"], 0.05) and (fid["noise_floor_pairs"] == 1).all()
    marsh = fid[(fid["axis"] == "marshaling") & (fid["fixed"] == "decomposition=[2,1,1]")].iloc[0]
    # 1.00, 1.02 and 1.05: all within the 5 % drift of the fastest -> tied, not distinguishable, whatever the
    # repetitions (identical within each run) say
    assert not marsh["distinguishable"]
    assert set(marsh["best_measured_noise_aware"].split(", ")) == {"host-staging", "device-pack", "gpu-aware"}
    assert score_fdm(pred.assign(backend="cupy"), uncertainty_settings(resamples=50))["noise_floor"].eq(0).all()
    dec = fid[(fid["axis"] == "decomposition") & (fid["fixed"] == "marshaling=device-pack")].iloc[0]
    assert dec["distinguishable"]  # 1.0 vs 1.6: far beyond the drift


def test_characterisation_calibrates_the_fdm_backend_of_the_fdm_platform_only(tmp_path):
    import yaml

    from analysis.planning.config import REPO, ConfigError, characterize_spec, load_config

    tiny = REPO / "config" / "studies" / "tiny.yaml"
    config = load_config(tiny)
    name = config["platforms"][0]["name"]
    spec = characterize_spec(config, name)["fdm"]
    assert spec["backend"] == "numba" and spec["orders"] == [2] and spec["widths"] == [0, 3, 5]
    doc = yaml.safe_load(tiny.read_text())
    doc["cases"]["fdm"]["enabled"] = False
    off = tmp_path / "off.yaml"
    off.write_text(yaml.safe_dump(doc))
    assert characterize_spec(load_config(off), name)["fdm"] is None
    doc["cases"]["fdm"]["enabled"] = True
    doc["characterize"]["fdm_widths"] = [0, 3, 12]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="characterize.fdm_blocks / characterize.fdm_widths: layer width 12"):
        characterize_spec(load_config(bad), name)


def test_threads_split_a_ranks_half_steps_by_x_planes_and_count_against_the_cores():
    calib = _calibration()
    kw = dict(backend="numba", latency=1e-6, t_net=1e-10, pml_width=8, cores=2)
    one = fdm.calibrated_step_time((96, 96, 96), (1, 1, 1), 2, "device-pack", calib, **kw)
    two = fdm.calibrated_step_time((96, 96, 96), (1, 1, 1), 2, "device-pack", calib, threads=2, **kw)
    assert two["velocity"][0] == pytest.approx(one["velocity"][0] / 2)  # 96 planes: 48 per thread
    odd = fdm.calibrated_step_time((95, 96, 96), (1, 1, 1), 2, "device-pack", calib, threads=2, **kw)
    alone = fdm.calibrated_step_time((95, 96, 96), (1, 1, 1), 2, "device-pack", calib, **kw)
    assert odd["velocity"][0] == pytest.approx(alone["velocity"][0] * 48 / 95)  # the busier thread's 48 planes
    # 2 ranks x 2 threads on 2 cores: the node's core-seconds set the step, as 4 single-thread ranks' would
    over = fdm.calibrated_step_time((96, 96, 96), (2, 1, 1), 2, "device-pack", calib, threads=2, **kw)
    kernels = (over["velocity"] + over["stress"]) * 2 + over["pack"] + over["unpack"]
    assert float(np.max(over["total"])) >= kernels.sum() / 2 - 1e-15


def test_the_analytical_model_gives_a_threaded_rank_its_share_of_the_planes():
    g = fdm.rank_geometry((40, 40, 40), (1, 1, 1))
    params = dict(t_f=1e-11, t_b=1e-10, latency=1e-6, t_net=1e-10, cores=2)
    one = fdm.step_time(g, 2, "device-pack", **params)["compute"][0]
    two = fdm.step_time(g, 2, "device-pack", threads=2, **params)["compute"][0]
    four = fdm.step_time(g, 2, "device-pack", threads=4, **params)["compute"][0]
    assert two == pytest.approx(one / 2)
    assert four == pytest.approx(one / 2)  # 4 threads on 2 cores: time-shared, no faster than 2


def test_the_predictors_read_threads_per_rank():
    text = json.dumps({"modes": {"alone": _calibration(), "shared": _calibration()}})
    runs = _runs(text).iloc[:1].assign(ranks=1, decomposition="[1,1,1]")
    both = pd.concat([runs, runs.assign(run_id="t2", threads_per_rank=2)], ignore_index=True)
    both["threads_per_rank"] = both["threads_per_rank"].fillna(1).astype("int64")
    pred = predict_calibrated(both)
    assert pred["velocity_pred_s"].iloc[1] == pytest.approx(pred["velocity_pred_s"].iloc[0] / 2)


def test_the_default_study_calibrates_its_own_rank_blocks_too():
    from analysis.planning.config import REPO, STUDY_BLOCKS, characterize_spec, load_config, study_fdm_blocks

    config = load_config(REPO / "config" / "config.yaml")
    spec = characterize_spec(config, config["platforms"][0]["name"])["fdm"]
    # 64^3 on one rank, on two along each axis; 128x64x64 on two ranks ([2, 1, 1]): 64^3 again
    own = [[32, 64, 64], [64, 32, 64], [64, 64, 32], [64, 64, 64]]
    assert spec["blocks"] == [list(b) for b in cost.BLOCKS] + own
    cost.check_blocks(spec["blocks"], cost.WIDTHS)
    # a study of many scales: at most STUDY_BLOCKS of its blocks, smallest and largest kept, none too thin
    many = dict(config, cases=dict(config["cases"], fdm=dict(config["cases"]["fdm"], scales=[
        {"ranks": r, "shape": [16 * k, 64, 64]} for k in range(2, 12) for r in (1, 2)])))
    got = study_fdm_blocks(many, cost.WIDTHS)
    assert len(got) == STUDY_BLOCKS and got[0] == [32, 32, 64] and got[-1] == [176, 64, 64]
    assert all(min(b) > 2 * max(cost.WIDTHS) for b in got)


def test_a_rank_block_is_predicted_from_the_calibration_samples_near_its_size():
    """Blocks up to 0.3 M points cost half per point what larger ones do (a cache): the locally weighted fit
    predicts both regimes; one global fit over all the samples misses the small blocks by far more."""
    blocks = [*cost.BLOCKS, (32, 64, 64), (64, 32, 64), (64, 64, 64), (48, 48, 48)]
    samples = []
    for shape in blocks:
        for width in cost.WIDTHS:
            feats = cost.block_features(shape, (0, 0, 0), shape, width)
            factor = 0.5 if shape[0] * shape[1] * shape[2] <= 300_000 else 1.0
            t = factor * sum(COEF[k] * feats[k] for k in cost.FEATURES)
            samples.append({**feats, "time_median_s": t})
    fit = relative_nonnegative_fit([[s[f] for s in samples] for f in cost.FEATURES], [s["time_median_s"] for s in samples])
    doc = {"coefficients": dict(zip(cost.FEATURES, fit.coef, strict=True)), "samples": samples}
    for shape, stop, factor in (((128, 64, 64), (64, 32, 64), 0.5), ((192, 192, 96), (96, 96, 96), 1.0)):
        feats = cost.block_features(shape, (0, 0, 0), stop, 8)
        x = np.array([feats[k] for k in cost.FEATURES], dtype=float)
        true = factor * sum(COEF[k] * feats[k] for k in cost.FEATURES)
        local = fdm.local_coefficients(doc, stop[0] * stop[1] * stop[2]) @ x
        assert local == pytest.approx(true, rel=0.1), stop
    small = cost.block_features((128, 64, 64), (0, 0, 0), (64, 32, 64), 8)
    glob = sum(doc["coefficients"][k] * small[k] for k in cost.FEATURES)
    assert glob > 1.2 * 0.5 * sum(COEF[k] * small[k] for k in cost.FEATURES)
    # without samples (an older platform file) the global coefficients stand
    assert list(fdm.local_coefficients({"coefficients": COEF}, 1e5)) == [COEF[k] for k in cost.FEATURES]


def test_a_face_is_copied_at_the_cost_measured_on_blocks_of_its_size():
    """Faces of small blocks copy at 1 ns per element (still in a cache after the half-step), of large ones at
    4 ns: the rank's block size picks the cost; a fit without block sizes keeps its global figures."""
    samples = [{"elements": e, "block_points": b, "time_per_field_s": 1e-6 + e * (1e-9 if b < 500_000 else 4e-9)}
               for b in (131_072, 262_144, 884_736, 1_769_472) for e in (2048, 4096, 8192)]
    fit = {"per_call_s": 1e-6, "per_element_s": 2.5e-9, "samples": samples}
    small = fdm.local_marshal(fit, 131_072)
    large = fdm.local_marshal(fit, 1_769_472)
    assert small[1] == pytest.approx(1e-9, rel=0.1) and large[1] == pytest.approx(4e-9, rel=0.1)
    assert fdm.local_marshal({"per_call_s": 1e-6, "per_element_s": 2.5e-9, "samples": [
        {k: v for k, v in s.items() if k != "block_points"} for s in samples]}, 131_072) == (1e-6, 2.5e-9)


def test_the_designs_of_a_one_rank_run_are_no_ranking():
    """One rank exchanges nothing: its three marshaling designs run the same code, and 40 % between them is the
    machine's drift, not a ranking to score."""
    text = json.dumps({"modes": {"alone": _calibration(), "shared": _calibration()}})
    runs = _runs(text).iloc[[0, 2]].assign(ranks=1, decomposition="[1,1,1]")
    twin = runs.iloc[[0]].assign(run_id="r3", marshaling="gpu-aware", time_median_s=1.4, time_reps_s=[[1.4] * 3])
    pred = predict_calibrated(pd.concat([runs, twin], ignore_index=True))
    fid = score_fdm(pred, uncertainty_settings(resamples=50))
    assert not len(fid[fid["axis"] == "marshaling"])
    two = score_fdm(predict_calibrated(pd.concat([runs, twin], ignore_index=True).assign(ranks=2, decomposition="[2,1,1]")),
                    uncertainty_settings(resamples=50))
    assert len(two[two["axis"] == "marshaling"]) == 1  # the same runs on two ranks: numba copies vs slicing


def test_the_platform_column_carries_the_samples_the_local_fits_read():
    """The calibration joined to every run keeps its samples (cut to the fields the local refits read), so a
    run's prediction is that of its rank blocks' local fits; the column is categorical: a code per run."""
    import yaml

    from analysis.storage.platforms import FDM_CALIBRATION_COL, load_platform_params
    from tests.conftest import REPO

    samples = []
    for shape in [*cost.BLOCKS, (48, 96, 96), (96, 48, 96)]:
        for width in cost.WIDTHS:
            feats = cost.block_features(shape, (0, 0, 0), shape, width)
            factor = 0.5 if shape[0] * shape[1] * shape[2] <= 500_000 else 1.0
            samples.append({**feats, "shape": list(shape), "times_s": [1.0, 2.0],
                            "time_median_s": factor * sum(COEF[k] * feats[k] for k in cost.FEATURES)})
    calib = _calibration()
    for phase in ("velocity", "stress"):
        calib["half_steps"]["2"][phase] = {"coefficients": dict(COEF), "samples": samples}
    doc = yaml.safe_load((REPO / "analysis" / "resources" / "reference" / "cpu-pair-numpy-numba.yaml").read_text())
    doc["fdm_calibration"] = {"numba": {"modes": {"alone": calib, "shared": calib}}}
    params = load_platform_params([(REPO / "p.yaml", doc)])
    column = params[FDM_CALIBRATION_COL]
    assert isinstance(column.dtype, pd.CategoricalDtype)
    text = column[params["backend"] == "numba"].iloc[0]
    kept = json.loads(text)["modes"]["shared"]["half_steps"]["2"]["velocity"]["samples"]
    assert len(kept) == len(samples) and "times_s" not in kept[0] and "time_median_s" in kept[0]
    runs = _runs(text).astype({FDM_CALIBRATION_COL: "category"})
    pred = predict_calibrated(runs)
    for _, r in pred.iterrows():  # 96^3 on 2 ranks: blocks of 442,368 points, the cached regime
        want = fdm.calibrated_run_time([96, 96, 96], json.loads(r["decomposition"]), 2, 20, r["marshaling"], calib,
                                       backend="numba", latency=1e-6, t_net=1e-10, pml_width=8, cores=2)
        assert r["time_predicted_s"] == pytest.approx(want["total"], rel=1e-9)
    whole = fdm.calibrated_run_time([96, 96, 96], [2, 1, 1], 2, 20, "device-pack", _calibration(), backend="numba",
                                    latency=1e-6, t_net=1e-10, pml_width=8, cores=2)
    assert pred["velocity_pred_s"].iloc[0] < 0.7 * whole["velocity"]  # the global fit would miss the cache


def test_each_exchange_copies_at_its_own_measured_cost():
    """The stress exchange's faces, copied right after the stress half-step, cost 1 ns per element and the
    velocity exchange's 3 ns: each exchange is refitted from its own samples, and a rank's predicted pack adds
    3 velocity fields at the one cost and 6 stress fields at the other. Samples that name no exchange (an older
    platform file) stand for both."""
    per_ns = {"velocity": 3e-9, "stress": 1e-9}
    samples = [{"elements": e, "block_points": 262_144, "exchange": x, "time_per_field_s": 2e-6 + e * per_ns[x]}
               for x in per_ns for e in (2048, 4096, 8192)]
    fit = {"per_call_s": 2e-6, "per_element_s": 2e-9, "samples": samples}
    for x, ns in per_ns.items():
        assert fdm.local_marshal(fit, 262_144, x) == pytest.approx((2e-6, ns), rel=1e-6)
    old = {**fit, "samples": [{k: v for k, v in s.items() if k != "exchange"} for s in samples if s["exchange"] == "stress"]}
    assert fdm.local_marshal(old, 262_144, "velocity") == fdm.local_marshal(old, 262_144, "stress")
    calib = _calibration(per_call=0.0)
    for impl in calib["marshal"]["2"]:
        for d in ("pack", "unpack"):
            calib["marshal"]["2"][impl][d] = {a: fit for a in "xyz"}
    parts = fdm.calibrated_step_time((64, 64, 64), (2, 1, 1), 2, "device-pack", calib, backend="numba",
                                     latency=1e-6, t_net=1e-10)
    face = 64 * 64  # order 2: a face one cell wide
    want = 3 * (2e-6 + face * 3e-9) + 6 * (2e-6 + face * 1e-9)
    assert parts["pack"] == pytest.approx([want, want], rel=1e-6)


def test_transfers_between_nodes_cost_the_inter_node_link():
    """A chain of 4 ranks on 2 nodes: rank 1 receives from rank 0 on its node and from rank 2 on the other, each
    message at its own link's ping-pong; rank 0 only from rank 1, within the node."""
    g = fdm.rank_geometry((96, 96, 96), (4, 1, 1), 8, nodes=2)
    got = fdm.transfers(g, 2, 1e-6, 1e-10, 5e-6, 4e-10)
    face = 96 * 96 * 4 * (3 + 6)  # bytes of both exchanges' messages over one face (order 2: one cell wide)
    assert got[0] == pytest.approx(2 * 1e-6 + face * 1e-10)
    assert got[1] == pytest.approx(2 * 1e-6 + face * 1e-10 + 2 * 5e-6 + face * 4e-10)
    assert list(got) == pytest.approx(list(got[::-1]))


def test_a_timed_unpack_follows_the_pack_of_the_face_beside_it_as_in_a_run():
    """The calibration times each copy where a run makes it: a pack right after its half-step reads the owned
    face; an unpack writes the ghost layers beside that face right after packing it, so it finds the caches a
    run's unpack finds (timed alone after a half-step, unpacks cost about twice what runs measure)."""
    from types import SimpleNamespace

    from sims.bench.fdm_calib import _marshal_samples
    from sims.fdm.decomp import HALO

    calls: list[tuple] = []

    class Recording:
        @staticmethod
        def _marshal(fields, sl, buf, face, use_numba, pack):
            calls.append((sl, pack))

    names = ("vx", "vy", "vz", "sxx", "syy", "szz", "sxy", "sxz", "syz")
    sim = SimpleNamespace(fields={n: np.zeros((12, 12, 12), np.float32) for n in names}, xp=np,
                          block=SimpleNamespace(n=(8, 8, 8)), _half_step=lambda phase: calls.append(("half", phase)))
    runs: list[list] = []

    def timed(work):
        before = len(calls)
        work()
        runs.append(calls[before:])
        return [0.0]

    rows = _marshal_samples(sim, "numba", 4, (8, 8, 8), timed, Recording)
    assert len(rows) == len(runs) == 3 * 2 * 2 * 2  # axes x exchanges x implementations x directions
    for row, seq in zip(rows, runs, strict=True):
        axis = row["axis"]
        owned, ghosts = slice(HALO, HALO + 2), slice(HALO - 2, HALO)
        assert seq[0] == ("half", row["exchange"])
        if row["direction"] == "pack":
            assert [(s[axis], p) for s, p in seq[1:]] == [(owned, True)]
        else:
            assert [(s[axis], p) for s, p in seq[1:]] == [(owned, True), (ghosts, False)]


def test_the_time_shared_calibration_runs_beside_a_co_runner_on_the_core_and_counts_cpu_seconds():
    """A study whose FDM runs put more ranks on a node than it has cores calibrates that case too: each kernel
    measured while a forked co-runner shares this process's core, in the CPU seconds it used (so the co-runner's
    share of the core is not counted, its cache evictions are); the co-runner is gone afterwards."""
    import os

    from sims.bench import fdm_calib

    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity here")
    before = set(os.listdir("/proc"))
    walls: list[float] = []

    def timed(work):
        out = []
        for _ in range(3):
            t0 = time.perf_counter()
            work()
            out.append(time.perf_counter() - t0)
        walls.extend(out)
        return out

    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(old)})  # one core: the co-runner must share it
    try:
        got = fdm_calib.measure(True, "numba", [2], [[48, 48, 48]], [0], timed, corunner=True)
    finally:
        os.sched_setaffinity(0, old)
    half = got["half_steps"]
    assert len(half) == 2 and all(len(h["times_s"]) == 3 for h in half)
    cpu = sum(t for h in half for t in h["times_s"])
    wall = sum(walls[:6])
    assert 0 < cpu < 0.85 * wall  # the co-runner had its share of the core while the kernels ran
    unpacks = [r for r in got["marshal"] if r["direction"] == "unpack"]
    assert unpacks and all(t >= 0 for r in unpacks for t in r["times_s"])
    assert len(unpacks) == len(got["marshal"])  # a rank packs right after its own half-step: the shared mode's
    children = [p for p in set(os.listdir("/proc")) - before if p.isdigit()]
    assert not [p for p in children if os.path.exists(f"/proc/{p}/status")
                and f"PPid:\t{os.getpid()}" in open(f"/proc/{p}/status").read()]  # reaped


def test_a_time_shared_run_is_priced_with_the_time_shared_calibration():
    from analysis.models.fdm import _calibration

    text = json.dumps({"modes": {"alone": {"m": "a"}, "shared": {"m": "s"}, "timeshared": {"m": "t"}}})
    assert _calibration(text, "timeshared") == {"m": "t", "marshal": {}} and _calibration(text, "shared") == {"m": "s"}
    # the kernels and unpacks time-shared, the packs as the shared mode measured them
    fits = {"pack": {"x": "shared pack"}, "unpack": {"x": "shared unpack"}}
    text = json.dumps({"modes": {"shared": {"half_steps": "s", "marshal": {"2": {"numba": fits}}},
                                 "timeshared": {"half_steps": "t", "marshal": {"2": {"numba": {"unpack": {"x": "t"}}}}}}})
    assert _calibration(text, "timeshared") == {"half_steps": "t", "marshal": {"2": {"numba": {
        "unpack": {"x": "t"}, "pack": {"x": "shared pack"}}}}}
    older = json.dumps({"modes": {"alone": {"m": "a"}, "shared": {"m": "s"}}})
    assert _calibration(older, "timeshared") == {"m": "s"}  # a platform file from before: the shared mode


def test_only_a_study_with_time_shared_fdm_runs_calibrates_them():
    from analysis.planning.config import time_shared

    assert time_shared({"scales": [{"ranks": 4, "shape": [8, 8, 8]}]})
    assert not time_shared({"scales": [{"ranks": 2, "shape": [8, 8, 8]}, {"ranks": 4, "nodes": 2,
                                                                           "shape": [8, 8, 8]}]})
    assert time_shared({"scales": [{"ranks": 2, "threads_per_rank": 2, "shape": [8, 8, 8]}]})
