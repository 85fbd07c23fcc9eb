"""The scorecard: workload classes, intervals and the verdict rule (analysis.scoring.scorecard)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.planning.config import uncertainty_settings
from analysis.scoring.scorecard import scale_band, scorecard, verdicts

SETTINGS = uncertainty_settings(resamples=400, seed=3)
BASE = {"runs": 10, "tightness_lo": 0.7, "tightness_hi": 0.95, "distinguishable_groups": 4,
        "kendall_tau_lo": 0.4, "kendall_tau_hi": 0.9, "top1_noise_aware_lo": 0.6, "top1_noise_aware_hi": 1.0}


@pytest.mark.parametrize(("change", "expect"), [
    ({}, ("trusted", "trusted", "both")),
    ({"tightness_lo": 1.15, "tightness_hi": 1.3}, ("not trusted", "trusted", "trust for ranking")),  # beaten
    ({"tightness_lo": 0.2, "tightness_hi": 0.3}, ("not trusted", "trusted", "trust for ranking")),  # 3x loose
    ({"tightness_hi": 1.3}, ("undecided", "trusted", "trust for ranking")),  # across 1.1: the noise may decide
    ({"tightness_lo": 0.45}, ("undecided", "trusted", "trust for ranking")),  # a median inside, the interval across
    ({"kendall_tau_lo": -0.2}, ("trusted", "undecided", "trust for bounds")),  # tau's interval reaches 0
    ({"kendall_tau_lo": -0.6, "kendall_tau_hi": -0.1}, ("trusted", "not trusted", "trust for bounds")),
    ({"top1_noise_aware_lo": 0.2}, ("trusted", "undecided", "trust for bounds")),
    ({"top1_noise_aware_lo": 0.0, "top1_noise_aware_hi": 0.4}, ("trusted", "not trusted", "trust for bounds")),
    ({"tightness_lo": 1.15, "tightness_hi": 1.3, "kendall_tau_lo": -0.6, "kendall_tau_hi": -0.1},
     ("not trusted", "not trusted", "neither")),
    ({"tightness_hi": 1.3, "kendall_tau_lo": -0.6, "kendall_tau_hi": -0.1}, ("undecided", "not trusted", "undecided")),
    ({"runs": 2, "distinguishable_groups": 1}, ("not enough data", "not enough data", "not enough data")),
    ({"runs": 2}, ("not enough data", "trusted", "trust for ranking")),
    ({"tightness_lo": math.nan, "tightness_hi": math.nan}, ("not enough data", "trusted", "trust for ranking")),
    # a predictor's band is 0.8-1.25: a few per cent above 1 is trusted, not a beaten bound
    ({"model_kind": "predictor", "tightness_lo": 0.99, "tightness_hi": 1.15}, ("trusted", "trusted", "both")),
    ({"model_kind": "predictor", "tightness_lo": 0.95, "tightness_hi": 1.15, "runs": 10, "distinguishable_groups": 0},
     ("trusted", "not enough data", "trust for predictions")),
    ({"model_kind": "predictor", "tightness_lo": 0.75, "tightness_hi": 0.9}, ("undecided", "trusted",
                                                                               "trust for ranking")),
])
def test_the_verdict_is_a_rule_on_the_intervals(change, expect):
    assert verdicts({**BASE, **change}) == expect


def test_two_verdicts_contradict_only_when_an_aspect_is_trusted_on_one_side_and_not_on_the_other():
    from analysis.scoring.compare import contradicts

    trusted, undecided, bad = ({"bounds_verdict": v, "ranking_verdict": "not enough data"}
                               for v in ("trusted", "undecided", "not trusted"))
    assert contradicts(trusted, bad) and contradicts(bad, trusted)
    assert not contradicts(trusted, undecided) and not contradicts(undecided, bad) and not contradicts(bad, bad)
    assert contradicts({"bounds_verdict": "trusted", "ranking_verdict": "trusted"},
                       {"bounds_verdict": "trusted", "ranking_verdict": "not trusted"})


def test_an_undecided_row_says_what_would_decide_it():
    from analysis.scoring.scorecard import decide

    row = {**BASE, "tightness_hi": 1.3, "interval_level": "characterisation", "model_kind": "bound",
           "kendall_tau_hi": 0.9, "top1_noise_aware_hi": 1.0}
    row["bounds_verdict"], row["ranking_verdict"], row["verdict"] = verdicts(row)
    text = decide(row)
    assert "straddles 1.1" in text and "characterize.replicates" in text
    assert decide({**row, "bounds_verdict": "trusted"}) == ""


def test_scale_bands():
    assert [scale_band(r) for r in (1, 2, 4, 5, 16, 64, 65, None)] == [
        "1 rank", "2-4 ranks", "2-4 ranks", "5-16 ranks", "5-16 ranks", "17-64 ranks", "over 64 ranks", "all scales"]


def _tables(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    runs, fid = [], []
    for size, intensity in ((1000, 0.05), (2000, 5.0)):  # either side of the balance of PROCS (1 flop/byte)
        for model, scale in (("good", 0.85), ("loose", 0.2)):
            for _ in range(8):
                runs.append({"study": "s", "platform": "p", "case": "sa", "model": model, "size": size,
                             "intensity": intensity, "quantity": "time",
                             "tightness": scale * float(rng.normal(1.0, 0.03))})
            for _ in range(6):  # 6 of 6 right: the top-1 interval's lower end 0.54 (3 of 3: 0.29)
                fid.append({"study": "s", "platform": "p", "case": "sa", "model": model, "size": size,
                            "quantity": "time", "kendall_tau": 0.9, "kendall_tau_lo": 0.6, "kendall_tau_hi": 1.0,
                            "distinguishable": True, "top1_noise_aware": 1.0 if model == "good" else 0.0})
    return {"runs": pd.DataFrame(runs), "fidelity": pd.DataFrame(fid)}


PROCS = pd.DataFrame({"platform": ["p"], "t_b_host": [1e-10], "t_f_host": [1e-10]})  # balance 1 flop/byte


def test_rows_per_model_and_class_with_intervals_from_the_runs():
    card = scorecard(_tables(np.random.default_rng(0)), PROCS, SETTINGS)
    assert len(card) == 4
    assert set(card["workload_class"]) == {"memory-bound", "compute-bound"}
    for r in card.to_dict("records"):
        assert r["runs"] == 8 and r["groups"] == 6 and r["distinguishable_groups"] == 6
        assert r["tightness_lo"] <= r["tightness_median"] <= r["tightness_hi"]
        assert r["top1_noise_aware_lo"] <= r["top1_noise_aware_rate"] <= r["top1_noise_aware_hi"]
    good = card[card["model"] == "good"]
    loose = card[card["model"] == "loose"]
    assert set(good["verdict"]) == {"both"}
    # tightness 0.2: a bound five times loose; never the pick: not trusted for ranking either
    assert set(loose["verdict"]) == {"neither"}


def test_the_same_seed_gives_the_same_card_and_a_noisy_class_stays_undecided():
    tables = _tables(np.random.default_rng(1))
    assert scorecard(tables, PROCS, SETTINGS).equals(scorecard(tables, PROCS, SETTINGS))
    noisy = tables["runs"].copy()
    noisy["tightness"] = np.random.default_rng(2).uniform(0.3, 1.6, len(noisy))  # the median ~0.95, the spread huge
    card = scorecard({**tables, "runs": noisy}, PROCS, SETTINGS)
    assert (card["bounds_verdict"] == "undecided").all() and card["decide"].str.contains("straddles").all()


def test_fdm_rows_by_scale_band_and_no_platform_balance_is_unknown():
    fdm = pd.DataFrame({"study": "s", "platform": "p", "model": "FDM", "ranks": [1, 1, 1, 4, 4, 4, 32],
                        "tightness": [0.9, 0.92, 0.88, 0.7, 0.75, 0.72, 0.6]})
    card = scorecard({"fdm_runs": fdm}, None, SETTINGS)
    assert dict(zip(card["workload_class"], card["runs"], strict=True)) == {"1 rank": 3, "2-4 ranks": 3, "17-64 ranks": 1}
    assert card.set_index("workload_class").loc["17-64 ranks", "verdict"] == "not enough data"
    runs = _tables(np.random.default_rng(0))["runs"]
    assert set(scorecard({"runs": runs}, None, SETTINGS)["workload_class"]) == {"unknown intensity"}


def test_two_machines_scorecards_side_by_side(tmp_path, capsys):
    import json

    from analysis.cli import main
    from analysis.scoring.compare import compare_machines
    from analysis.scoring.tables import to_arrow
    from sims.atomic import atomic_write_parquet

    tables = _tables(np.random.default_rng(0))
    here = scorecard(tables, PROCS, SETTINGS, {"p": "aaaaaaaaaaaa"})
    slower = {**tables, "runs": tables["runs"].assign(tightness=tables["runs"]["tightness"] * 0.5)}
    there = scorecard(slower, PROCS, SETTINGS, {"p": "bbbbbbbbbbbb"})
    assert set(here["fingerprint"]) == {"aaaaaaaaaaaa"}
    side = compare_machines(here, there)
    assert len(side) == 4 and set(side["fingerprint_a"]) == {"aaaaaaaaaaaa"}
    good = side[side["model"] == "good"]
    assert set(good["verdict_a"]) == {"both"} and set(good["verdict_b"]) == {"trust for ranking"}  # 0.42: too loose
    assert not good["same_verdict"].any() and side[side["model"] == "loose"]["same_verdict"].all()
    assert good["contradicts"].all() and not side[side["model"] == "loose"]["contradicts"].any()
    assert not good["a_in_b"].any() and not good["b_in_a"].any()  # halved: neither median in the other's interval
    for name, card in (("a", here), ("b", there)):
        (tmp_path / name).mkdir()
        atomic_write_parquet(to_arrow(card, "scorecard"), tmp_path / name / "scorecard.parquet")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b" / "scorecard.parquet")]) == 0
    out = capsys.readouterr().out
    assert "machine aaaaaaaaaaaa" in out and "machine bbbbbbbbbbbb" in out and "2 of 4 rows with the same verdict" in out
    assert "2 contradicting" in out and out.count("[hetval compare] contradicts: good, sa") == 2
    assert main(["compare", "--json", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 4
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "nothing")]) == 2
    assert "neither a scorecard.parquet nor a validation directory" in capsys.readouterr().err


@pytest.mark.parametrize("n", [7, 8])
def test_the_order_statistic_bootstrap_draws_the_resampled_median_distribution(n):
    """Two draws per resample give the medians that resampling all n values gives (odd and even n, ties)."""
    from scipy import stats

    from analysis.scoring import intervals as sc

    values = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0][:n])
    rng = np.random.default_rng(1)
    brute = np.median(rng.choice(values, size=(20_000, n)), axis=1)
    assert stats.ks_2samp(brute, sc.bootstrap_medians(values, 20_000, 2)).pvalue > 1e-3


def test_a_large_row_s_interval_matches_scipy_s_bootstrap_within_its_monte_carlo_error():
    from scipy import stats

    from analysis.scoring.intervals import MEDIAN_SCIPY_ELEMENTS
    from analysis.scoring.intervals import median_interval as _median_interval

    v = np.random.default_rng(4).lognormal(0.0, 0.3, 20_001)
    settings = uncertainty_settings(resamples=1000, seed=5)
    assert len(v) * settings.resamples > MEDIAN_SCIPY_ELEMENTS  # the order-statistic path
    mid, lo, hi = _median_interval(v, settings)
    ref = stats.bootstrap((v[:, None],), np.median, axis=0, n_resamples=1000, method="percentile",
                          random_state=6, batch=50).confidence_interval
    width = float(ref.high[0] - ref.low[0])
    assert mid == np.median(v)
    assert abs(lo - ref.low[0]) < 0.2 * width and abs(hi - ref.high[0]) < 0.2 * width


def test_each_maps_distinct_values_once_and_every_missing_marker_as_none():
    from analysis.scoring.classes import each as _each

    seen = []

    def how(v):
        seen.append(v)
        return {"a": 1.0}.get(v)

    out = _each(pd.Series(["a", np.nan, None, "a", pd.NA], dtype=object), how)
    assert out.tolist() == [1.0, None, None, 1.0, None] and sorted(map(str, seen)) == ["None", "a"]
    assert _each(pd.Series([1, None, np.nan, 64], dtype=object), scale_band).tolist() == [
        scale_band(1), "all scales", "all scales", scale_band(64)]


def test_params_become_one_struct_column_with_nulls_kept_and_text_kept_when_not_objects():
    """``params`` texts are parsed once per distinct text and taken per row: missing rows stay null, and a
    column that is not all JSON objects (or only empty ones) stays text."""
    from analysis.scoring.tables import _struct

    texts = pd.Series(['{"n": 2, "dtype": "float32"}', None, '{"n": 1.5}', '{"n": 2, "dtype": "float32"}', np.nan],
                      dtype=object)
    arr = _struct(texts)
    assert arr.to_pylist() == [{"n": 2.0, "dtype": "float32"}, None, {"n": 1.5, "dtype": None},
                               {"n": 2.0, "dtype": "float32"}, None]
    assert _struct(pd.Series(['{"n": 1}', "[1, 2]"])) is None
    assert _struct(pd.Series(['{"n": 1}', "not json"])) is None
    assert _struct(pd.Series(["{}", "{}"])) is None
    assert _struct(pd.Series([None, None], dtype="string")) is None
    assert _struct(pd.Series(['{"n": 1}', None], dtype="string")) is None  # pandas' NA: the column stays text
