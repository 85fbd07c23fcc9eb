"""Extra-P's normal form: the search recovers the exponents of known functions, cross-validation picks the simpler
hypothesis on noise, too few scales are flagged, and the held-out test compares with the analytical model."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from analysis.equations import extrap
from analysis.scoring import scaling

P = np.repeat([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], 5)


@pytest.mark.parametrize(("i", "j"), [(Fraction(1), 0), (Fraction(1, 2), 1), (Fraction(2), 0), (Fraction(0), 1),
                                      (Fraction(1, 3), 2)])
def test_recovers_the_exponents_of_known_functions(i, j):
    rng = np.random.default_rng(7)
    truth = 0.3 + 0.05 * P ** float(i) * np.log2(P) ** j
    f = extrap.fit(P, truth * (1 + 0.005 * rng.standard_normal(len(P))))
    assert f.term == (i, j) and not f.poor and f.adj_r2 > 0.99
    lo, hi = f.interval(64.0)
    exact = 0.3 + 0.05 * 64 ** float(i) * 6**j
    # at 2x the largest scale the extrapolation is within 2 % of the truth, inside a non-empty interval
    assert f.predict(64.0)[0] == pytest.approx(exact, rel=0.02) and lo[0] < f.predict(64.0)[0] < hi[0]
    assert f.cv_smape < 0.05 and f.smape < 0.01


def test_pure_noise_gets_the_constant():
    hits = 0
    for seed in range(20):  # a term bought by noise alone is rare (Bonferroni over the hypotheses)
        rng = np.random.default_rng(seed)
        f = extrap.fit(P, 1.0 + 0.01 * rng.standard_normal(len(P)))
        hits += f.term is not None
    assert hits <= 2


def test_too_few_scales_are_flagged_and_fit_the_constant():
    f = extrap.fit(np.array([1.0, 1.0, 2.0, 2.0]), np.array([2.0, 2.2, 1.0, 1.2]))
    assert f.term is None and f.poor and "3" in f.reason and f.coef[0] == pytest.approx(1.6)
    assert f.formula() == "1.6"
    with pytest.raises(ValueError):
        extrap.fit(np.array([np.nan]), np.array([1.0]))


def test_smape_and_t_quantiles():
    assert extrap.smape(np.array([1.0, 3.0]), np.array([1.0, 1.0])) == pytest.approx(0.5)
    # the tables' values: t_{0.975} at 1, 10, 35 and many degrees of freedom; t_{0.9995, 10}
    assert extrap.t975(1) == pytest.approx(12.706, abs=1e-3) and extrap.t975(10) == pytest.approx(2.228, abs=1e-3)
    assert extrap.t975(35) == pytest.approx(2.030, abs=1e-3) and extrap.t975(10**6) == pytest.approx(1.960, abs=1e-3)
    assert extrap.t_quantile(0.9995, 10) == pytest.approx(4.587, abs=1e-3)
    assert np.isnan(extrap.t975(0))


def test_large_scales_and_high_exponents_stay_well_conditioned():
    rng = np.random.default_rng(1)
    p = np.repeat([1e6, 4e6, 1.6e7, 6.4e7], 5)  # problem sizes: p^2 ~ 4e15
    f = extrap.fit(p, (0.01 + 2e-16 * p**2) * (1 + 0.001 * rng.standard_normal(len(p))))
    assert f.term == (Fraction(2), 0) and f.coef[1] == pytest.approx(2e-16, rel=0.01)


def test_a_negative_exponent_is_work_divided_over_the_ranks():
    rng = np.random.default_rng(3)
    falling = 0.2 + 1.6 / P ** 1.25  # strong scaling with an exponent Extra-P's own switch offers (-5/4)
    f = extrap.fit(P, falling * (1 + 0.005 * rng.standard_normal(len(P))))
    assert f.term == (Fraction(-5, 4), 0) and f.coef[1] > 0
    # a curve rising towards a ceiling is never a negative exponent with a negative coefficient, whatever noise
    # makes of it (it would extrapolate below the ceiling's trend); every fit of such series keeps the sign
    for seed in range(10):
        rng = np.random.default_rng(seed)
        rising = 1.0 + 0.2 * np.log2(P) + 0.1 * P ** 0.5
        g = extrap.fit(P, rising * (1 + 0.1 * rng.standard_normal(len(P))))
        assert g.term is None or g.term[0] >= 0 or g.coef[1] > 0, (seed, g.formula())


def test_a_flat_series_is_a_good_constant():
    rng = np.random.default_rng(5)
    f = extrap.fit(P, 2.0 * (1 + 0.01 * rng.standard_normal(len(P))))
    assert f.term is None and not f.poor and f.smape < 0.01


def _fdm_run(ranks: int, decomposition: str, t: float, predicted: float, model: str = "FDM") -> dict:
    return {"run_id": f"{ranks}{decomposition}", "model": model, "study": "s", "platform": "p",
            "grid": '{"shape":[96,96,96],"spacing":10.0}', "order": 2,
            "boundary": "cpml(8)", "marshaling": "host-staging", "backend": "numba", "ranks": ranks,
            "decomposition": decomposition, "time_median_s": t, "time_reps_s": [t * 0.99, t, t * 1.01],
            "time_predicted_s": predicted}


def test_fdm_series_use_the_fastest_decomposition_and_hold_out_the_largest_scale():
    # time = 0.1 + 0.9 / p (Amdahl): at p = 8 measured 0.2125
    runs = pd.DataFrame([_fdm_run(p, "[1,1,1]" if p == 1 else f"[{p},1,1]", 0.1 + 0.9 / p, 0.05 * 8 / p)
                         for p in (1, 2, 4, 8)] + [_fdm_run(8, "[1,1,8]", 0.5, 0.05)])
    # a second model's rows for the same runs: one more row for the series, the same empirical fit
    other = runs.assign(model="other", time_predicted_s=runs["time_median_s"])
    f = scaling.fdm_fits(pd.concat([runs, other], ignore_index=True))
    assert f["analytical_model"].tolist() == ["FDM", "other"]
    assert f.iloc[1]["heldout_analytical_error"] == pytest.approx(0.0)
    assert f.iloc[0]["hypothesis"] == f.iloc[1]["hypothesis"] and f.iloc[0]["scales"] == f.iloc[1]["scales"]
    row = f.iloc[0]
    assert row["scales"] == "1, 2, 4, 8" and row["heldout_scale"] == 8
    assert row["heldout_measured_s"] == pytest.approx(0.2125)  # the fastest decomposition at 8 ranks
    assert row["heldout_empirical_error"] < 0.05  # fitted on 1, 2, 4 (c0 + c1 / p), it predicts 8
    assert row["heldout_analytical_error"] == pytest.approx(abs(0.05 - 0.2125) / 0.2125)
    assert "ranks 16" in row["extrapolated"] and not row["poor_fit"]
    assert str(row["series"]).startswith("grid 96x96x96, order 2")


def test_only_series_of_three_or_more_scales_are_fitted():
    def run(variant: str, size: int) -> dict:
        t = 1e-8 * size
        return {"run_id": f"{variant}{size}", "study": "s", "case": "sa", "platform": "p", "variant": variant,
                "model": "m", "quantity": "time",
                "size": size, "time_median_s": t, "time_reps_s": [t, t * 1.01, t * 0.99], "time_predicted_s": t / 2}

    runs = pd.DataFrame([run("CO", n) for n in (10**5, 10**6, 10**7)] + [run("GO", n) for n in (10**5, 10**6)])
    f = scaling.size_fits(runs)
    assert f["series"].tolist() == ["CO"] and f.iloc[0]["scales"] == "100000, 1000000, 10000000"
    assert f.iloc[0]["heldout_analytical_error"] == pytest.approx(0.5)
