"""PEACH (Ge et al. 2014): equations, optima, DVFS search, and properties (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.equations import peach

rates = st.floats(min_value=1.0, max_value=5000.0)
powers = st.floats(min_value=0.0, max_value=500.0)
alphas = st.floats(min_value=0.0, max_value=1.0)

SYS_I = {"R_C": 293.0, "R_G": 1052.4, "P0": 42.4 + 76.7 + 46.6, "Pd_C": 239.4, "Pd_G": 128.6, "P_OH": 30.0}


def test_equations_by_hand():
    # half on each: T_C = 0.5/100, T_G = 0.5/400 -> T = 0.005, R = 200
    assert peach.rate(0.5, 100.0, 400.0) == pytest.approx(200.0)
    # with an overhead of 0.01 on W = 1: T = max(0.005, 0.00125 + 0.01)
    assert peach.rate(0.5, 100.0, 400.0, T_OH=0.01) == pytest.approx(1 / 0.01125)
    # no offload, no overhead (eq. 7 applies T_OH only to offloaded work)
    assert peach.rate(0.0, 100.0, 400.0, T_OH=0.01) == pytest.approx(100.0)
    # eq. 11: T P0 + T_C Pd_C + T_G Pd_G + (T_G - T_C)+ P_OH
    e = peach.energy(0.9, 100.0, 400.0, P0=10.0, Pd_C=20.0, Pd_G=30.0, P_OH=5.0)
    t_c, t_g = 0.1 / 100, 0.9 / 400
    assert e == pytest.approx(t_g * 10 + t_c * 20 + t_g * 30 + (t_g - t_c) * 5)
    assert peach.efficiency(0.9, 100.0, 400.0, 10.0, 20.0, 30.0, 5.0) == pytest.approx(1 / e)


def test_table_vi_optima():
    assert round(100 * peach.best_alpha("performance", **SYS_I)[0]) == 78
    assert peach.best_alpha("energy", **SYS_I)[0] == 1.0
    sys_ii = dict(SYS_I, R_G=302.53, P0=42.4 + 76.7 + 82.3, Pd_G=117.8, P_OH=28.0)
    assert round(100 * peach.best_alpha("performance", **sys_ii)[0]) == 51
    assert round(100 * peach.best_alpha("energy", **sys_ii)[0]) == 51


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="alpha"):
        peach.rate(1.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="R_G"):
        peach.rate(0.5, 1.0, 0.0)
    with pytest.raises(ValueError, match="objective"):
        peach.best_alpha("speed", 1.0, 1.0)
    with pytest.raises(ValueError, match="step"):
        peach.best_alpha("performance", 1.0, 1.0, step=0.3)


def test_vectorised_over_alpha_and_parameters():
    a = np.linspace(0, 1, 1_000_001)
    r = peach.rate(a, 293.0, 1052.4)
    assert r.shape == a.shape and a[np.argmax(r)] == pytest.approx(1052.4 / (293 + 1052.4), abs=1e-6)
    eta = peach.efficiency(a[:, None][:5], np.array([100.0, 200.0]), 400.0, 10.0, 20.0, 30.0)
    assert eta.shape == (5, 2)


@given(rates, rates)
def test_alpha_perf_is_rg_over_rc_plus_rg(r_c, r_g):
    a, r, _ = peach.best_alpha("performance", r_c, r_g)
    assert a == pytest.approx(r_g / (r_c + r_g), rel=1e-9)
    assert r == pytest.approx(r_c + r_g, rel=1e-9)


@given(alphas, rates, rates, powers, powers, powers, powers)
def test_energy_positive_and_efficiency_finite(a, r_c, r_g, p0, pd_c, pd_g, p_oh):
    e = peach.energy(a, r_c, r_g, p0 + 1.0, pd_c, pd_g, p_oh)
    assert e > 0 and np.isfinite(peach.efficiency(a, r_c, r_g, p0 + 1.0, pd_c, pd_g, p_oh))


@given(alphas, rates, rates, st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1))
def test_rate_does_not_increase_with_overhead(a, r_c, r_g, t1, t2):
    lo, hi = sorted((t1, t2))
    assert peach.rate(a, r_c, r_g, T_OH=hi) <= peach.rate(a, r_c, r_g, T_OH=lo) * (1 + 1e-12)


@given(rates, rates, powers, powers, powers, powers, st.sampled_from([0.1, 0.05, 0.02, 0.01]))
def test_grid_optimum_is_never_better_than_the_continuous_one(r_c, r_g, p0, pd_c, pd_g, p_oh, step):
    for objective, k in (("performance", 1), ("energy", 2)):
        cont = peach.best_alpha(objective, r_c, r_g, p0 + 1.0, pd_c, pd_g, p_oh)
        grid = peach.best_alpha(objective, r_c, r_g, p0 + 1.0, pd_c, pd_g, p_oh, step=step)
        assert grid[k] <= cont[k] * (1 + 1e-9)
        if objective == "performance":
            assert abs(grid[0] - cont[0]) <= step + 1e-9


def test_round_predictions_take_each_rounds_end_point_medians_as_one_calibration():
    """Every curve at once, against the rule written out per curve: the end points' median time in each round both
    share (a missing, NaN or None repetition left out; lists of unequal length read to the shorter), a curve
    with fewer than two shared rounds or a non-positive median left empty."""
    import pandas as pd

    from analysis.equations import peach as eq
    from analysis.models.peach import round_predictions

    def by_round(x, r):
        out: dict[float, list[float]] = {}
        for v, k in zip(x or [], r or []):  # noqa: B905 - the shorter list, as the model reads it
            if v is not None and np.isfinite(v) and np.isfinite(k):
                out.setdefault(float(k), []).append(float(v))
        return {k: float(np.median(v)) for k, v in out.items()}

    rng = np.random.default_rng(2)
    for _ in range(20):
        reps, rounds = [], []
        for _ in range(40):
            size = int(rng.integers(0, 9))
            x = list(np.round(rng.lognormal(0, 0.3, size), 2))
            if size and rng.random() < 0.2:
                x[0] = [None, np.nan, -1.0][int(rng.integers(0, 3))]
            reps.append(None if rng.random() < 0.05 else x)
            r = list(rng.integers(0, 4, size).astype(float))
            rounds.append(r[:-1] if rng.random() < 0.1 else r)
        c = pd.DataFrame({"time_reps_s": reps, "rounds_reps": rounds})
        i0, i1 = rng.integers(-1, 40, 15), rng.integers(-1, 40, 15)
        g = rng.integers(0, 15, 80)
        out = pd.DataFrame({"alpha": rng.choice(np.linspace(0, 1, 11), 80), "time_median_s": rng.lognormal(0, .3, 80)})
        W = rng.choice([1.0, 2.0, 0.0], 80)
        got = round_predictions(c, i0, i1, out, g, W)
        for row, (k, a, w) in enumerate(zip(g, out["alpha"], W, strict=True)):
            m0 = by_round(reps[i0[k]], rounds[i0[k]]) if i0[k] >= 0 else {}
            m1 = by_round(reps[i1[k]], rounds[i1[k]]) if i1[k] >= 0 else {}
            shared = sorted(set(m0) & set(m1))
            t0, t1 = np.array([m0[r] for r in shared]), np.array([m1[r] for r in shared])
            if len(shared) < 2 or (t0 <= 0).any() or (t1 <= 0).any() or not w > 0:
                want = []
            else:
                want = [w / eq.rate(a, w / x0, w / x1, 0.0, w) for x0, x1 in zip(t0, t1, strict=True)]
            np.testing.assert_allclose(got[row], want, rtol=1e-12)
