"""PEACH validation on measured curves: end-point calibration, exact recovery of a PEACH-shaped curve, optima."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.cases.peach import FIDELITY_COLUMNS, RUN_COLUMNS, score_curves
from analysis.equations import peach
from analysis.models.peach import PEACHModel
from analysis.planning.config import uncertainty_settings

ALPHAS = np.round(np.linspace(0, 1, 11), 10)



def validate_peach(reduced: pd.DataFrame, idle_w: dict[str, float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The PEACH model and the PEACH case's scoring, as validation applies them (idle power per platform)."""
    joined = reduced.assign(idle_w=reduced["platform"].map(idle_w).astype("float64"))
    return score_curves(PEACHModel().predict(joined), uncertainty_settings())


def curve(R_C=10.0, R_G=30.0, W=100.0, P0=None, Pd_C=20.0, Pd_G=50.0, noise=None, platform="p"):
    T = W / peach.rate(ALPHAS, R_C, R_G, 0.0, W)
    if noise is not None:
        T = T * noise
    E = peach.energy(ALPHAS, R_C, R_G, P0, Pd_C, Pd_G, 0.0, 0.0, W) if P0 is not None else np.full(len(ALPHAS), np.nan)
    rows = []
    for a, t, e in zip(ALPHAS, T, E, strict=True):
        params = {"workload": "MatrixMultiply", "n": 64, "work_unit": "flop",
                  "work": {"host": W * (1 - a), "accel": W * a}}
        rows.append({"run_id": f"r{a}", "study": "s", "case": "peach", "variant": f"DP({a:g})", "platform": platform,
                     "size": 64.0, "alpha": float(a), "params": json.dumps(params), "time_median_s": float(t),
                     "time_iqr_s": 0.0, "energy_median_j": float(e), "energy_source": "trace" if P0 else "none"})
    return pd.DataFrame(rows)


def test_exact_peach_curve_is_recovered_with_its_optima():
    runs, fid = validate_peach(curve(P0=10.0), {"p": 10.0})
    assert len(runs) == 11 and runs["endpoint"].sum() == 2
    assert runs["time_rel_error"].max() == pytest.approx(0.0, abs=1e-12)
    assert runs["energy_rel_error"].max() == pytest.approx(0.0, abs=1e-12)
    t = fid[fid["quantity"] == "time"].iloc[0]
    assert (t["R_C"], t["R_G"]) == pytest.approx((10.0, 30.0))
    assert t["alpha_continuous"] == pytest.approx(0.75)  # eq. 13: R_G / (R_C + R_G)
    assert t["alpha_best_measured"] == t["alpha_best_predicted"] == pytest.approx(0.8)
    assert t["top1_agreement"] == 1.0 and t["kendall_tau"] == pytest.approx(1.0)
    e = fid[fid["quantity"] == "energy"].iloc[0]
    assert (e["P0"], e["Pd_C"], e["Pd_G"]) == pytest.approx((10.0, 20.0, 50.0))
    best = peach.best_alpha("energy", 10.0, 30.0, 10.0, 20.0, 50.0, step=0.1)[0]
    assert e["alpha_best_measured"] == pytest.approx(best) and e["top1_agreement"] == 1.0


def test_interior_error_is_measured_against_the_model():
    noise = np.ones(11)
    noise[5] = 1.25  # the run at alpha = 0.5 took 25 % longer than PEACH says
    runs, fid = validate_peach(curve(noise=noise), {})
    r = runs.set_index("alpha").loc[0.5]
    assert r["time_rel_error"] == pytest.approx(0.2)  # |pred - meas| / meas = 0.25 / 1.25
    t = fid.iloc[0]
    assert t["error_max"] == pytest.approx(0.2) and len(fid) == 1  # no energy measured: time only
    assert np.isnan(t["P0"])


def test_curve_without_both_end_points_is_not_predicted():
    c = curve()
    runs, fid = validate_peach(c[c["alpha"] < 1.0], {})
    assert runs.empty and fid.empty
    assert list(runs.columns) == RUN_COLUMNS and list(fid.columns) == FIDELITY_COLUMNS


def test_no_idle_power_means_no_energy_prediction():
    runs, fid = validate_peach(curve(P0=10.0), {})
    assert runs["eta_measured"].notna().all() and runs["eta_predicted"].isna().all()
    assert list(fid["quantity"]) == ["time"]
