"""Extra-P's normal form: the search recovers the exponents of known functions, cross-validation picks the simpler
hypothesis on noise, too few scales are flagged, and the held-out test compares with the analytical model."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from analysis import scaling
from analysis.models import extrap

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
    rng = np.random.default_rng(3)
    f = extrap.fit(P, 1.0 + 0.01 * rng.standard_normal(len(P)))
    assert f.term is None or abs(f.coef[1]) < 0.01
    assert f.predict(1000.0)[0] == pytest.approx(1.0, abs=0.05)


def test_too_few_scales_are_flagged_and_fit_the_constant():
    f = extrap.fit(np.array([1.0, 1.0, 2.0, 2.0]), np.array([2.0, 2.2, 1.0, 1.2]))
    assert f.term is None and f.poor and "3" in f.reason and f.coef[0] == pytest.approx(1.6)
    assert f.formula() == "1.6"
    with pytest.raises(ValueError):
        extrap.fit(np.array([np.nan]), np.array([1.0]))


def test_smape_and_t_quantiles():
    assert extrap.smape(np.array([1.0, 3.0]), np.array([1.0, 1.0])) == pytest.approx(0.5)
    assert extrap.t975(1) == 12.706 and extrap.t975(35) == 2.042 and extrap.t975(10**6) == 1.980
    assert np.isnan(extrap.t975(0))


def _fdm_run(ranks: int, decomposition: str, t: float, predicted: float) -> dict:
    return {"study": "s", "platform": "p", "grid": '{"shape":[96,96,96],"spacing":10.0}', "order": 2,
            "boundary": "cpml(8)", "marshaling": "host-staging", "backend": "numba", "ranks": ranks,
            "decomposition": decomposition, "time_median_s": t, "time_reps_s": [t * 0.99, t, t * 1.01],
            "time_predicted_s": predicted}


def test_fdm_series_use_the_fastest_decomposition_and_hold_out_the_largest_scale():
    # time = 0.1 + 0.9 / p (Amdahl): at p = 8 measured 0.2125
    runs = pd.DataFrame([_fdm_run(p, "[1,1,1]" if p == 1 else f"[{p},1,1]", 0.1 + 0.9 / p, 0.05 * 8 / p)
                         for p in (1, 2, 4, 8)] + [_fdm_run(8, "[1,1,8]", 0.5, 0.05)])
    f = scaling.fdm_fits(runs, "FDM")
    assert len(f) == 1
    row = f.iloc[0]
    assert row["scales"] == "1, 2, 4, 8" and row["heldout_scale"] == 8
    assert row["heldout_measured_s"] == pytest.approx(0.2125)  # the fastest decomposition at 8 ranks
    assert row["heldout_empirical_error"] < 0.05  # fitted on 1, 2, 4 (c0 + c1 / p), it predicts 8
    assert row["heldout_analytical_error"] == pytest.approx(abs(0.05 - 0.2125) / 0.2125)
    assert "ranks 16" in row["extrapolated"] and not row["poor_fit"]
    assert str(row["series"]).startswith("grid [96, 96, 96], order 2")
