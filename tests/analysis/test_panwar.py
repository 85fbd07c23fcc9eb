"""Panwar's online projection (thesis ch. 3): the three-component max, the device-selection penalty and the
relative-error metric, against their definitions (the thesis' tables of times did not survive in its text, so
its one printed penalty and the metric's stated range are what can be checked)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.equations import panwar
from analysis.models.panwar import MODEL, predict_panwar
from analysis.scoring.projection import device_selection


def test_the_kernel_is_bound_by_its_longest_component():
    # 1e9 flops at 1e-10 s/flop = 0.1 s; 4e8 bytes at 1e-9 s/byte = 0.4 s; 1e8 local bytes at 1e-10 = 0.01 s
    assert panwar.project(1e9, 1e-10, 4e8, 1e-9, 1e8, 1e-10) == pytest.approx(0.4)
    assert panwar.project(1e10, 1e-10, 4e8, 1e-9) == pytest.approx(1.0)
    assert panwar.project(0.0, 1e-10, 0.0, 1e-9, 2e9, 1e-9) == pytest.approx(2.0)  # local memory can bind too
    np.testing.assert_allclose(panwar.project(np.array([1e9, 1e10]), np.array([1e-10, 1e-10]), 4e8, 1e-9),
                               [0.4, 1.0])


def test_device_selection_penalty():
    assert panwar.selection_penalty([1.0, 2.0], [3.0, 4.0]) == 0.0  # the right pick costs nothing
    # the thesis' one wrong pick (AES-Encrypt): 33.72 % lost, i.e. T(B) / T(A) = 1.3372
    assert 100 * panwar.selection_penalty([1.3372, 1.0], [1.0, 2.0]) == pytest.approx(33.72)
    assert math.isnan(panwar.selection_penalty([1.0, np.nan], [1.0, 2.0]))


def test_relative_error_is_zero_for_the_right_shape_and_one_at_most():
    assert panwar.relative_error([1.0, 2.0, 4.0], [3.0, 6.0, 12.0]) == pytest.approx(0.0)  # scale does not matter
    assert panwar.relative_error([1e-9, 1.0], [1.0, 1e-9]) == pytest.approx(1.0, abs=1e-8)  # orthogonal: the maximum
    a, p = np.array([0.2, 0.05]), np.array([0.1, 0.1])
    expect = np.linalg.norm(a / np.linalg.norm(a) - p / np.linalg.norm(p)) / math.sqrt(2)
    assert panwar.relative_error(a, p) == pytest.approx(expect)
    rng = np.random.default_rng(0)
    for _ in range(200):
        x, y = rng.uniform(1e-3, 1.0, (2, 4))
        assert 0.0 <= panwar.relative_error(x, y) <= 1.0


def _runs():
    """Two workloads' alone-on-each-processor runs and a split one, with the profile columns joined."""
    rows = []
    for size, host_t, accel_t in ((100, 0.20, 0.05), (200, 0.40, 0.41)):
        for variant, fh, fa in (("CO", 1e9, 0.0), ("GO", 0.0, 1e9), ("DP(0.5)", 5e8, 5e8)):
            t = {"CO": host_t, "GO": accel_t, "DP(0.5)": max(host_t, accel_t) / 2}[variant]
            rows.append({"study": "s", "case": "sa", "platform": "p", "size": size, "variant": variant,
                         "alpha": np.nan, "flops": fh + fa, "bytes": (fh + fa) / 8, "flops_host": fh,
                         "bytes_host": fh / 8, "flops_accel": fa, "bytes_accel": fa / 8, "time_median_s": t,
                         "time_host_median_s": t if fh else np.nan, "time_accel_median_s": t if fa else np.nan,
                         "time_reps_s": [t * f for f in (0.9, 0.95, 1.0, 1.05, 1.1)],
                         "t_f_host": 1e-10, "t_b_host": 1e-9, "t_f_accel": 2e-11, "t_b_accel": 2e-10})
    return pd.DataFrame(rows)


def test_the_model_projects_each_part_and_scores_device_selection():
    out = predict_panwar(_runs())
    assert (out["model"] == MODEL).all() and len(out) == 6
    co = out[out["variant"] == "CO"]
    # host alone: max(1e9 x 1e-10, 1.25e8 x 1e-9) = 0.125 s
    np.testing.assert_allclose(co["time_predicted_s"], 0.125)
    split = out[out["variant"] == "DP(0.5)"]
    np.testing.assert_allclose(split["time_predicted_s"], 0.0625)  # the longer part: the host's half
    table = device_selection(out, 0.05, MODEL)
    assert list(table["size"]) == [100, 200] and (table["picked"] == "accel").all()
    first, second = table.iloc[0], table.iloc[1]
    assert first["best_measured"] == "accel" and first["selection_penalty"] == 0.0 and first["distinguishable"]
    # 0.40 on the host against 0.41 on the accelerator: the accelerator pick loses 2.5 %, within noise here
    assert second["best_measured"] == "host" and second["selection_penalty"] == pytest.approx(0.025)
    assert not second["distinguishable"]
    assert 0.0 < first["relative_error"] < 1.0
