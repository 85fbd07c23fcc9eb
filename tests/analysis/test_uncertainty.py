"""Bootstrap intervals, the Mann-Whitney test and the noise-aware best (analysis.uncertainty)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.runs import score_alternatives, tightness_intervals
from analysis.uncertainty import (
    Settings,
    batch_ranking,
    format_interval,
    group_uncertainty,
    mann_whitney_greater,
    noise_aware_best,
)


def test_mann_whitney_exact_small_samples_match_the_tables():
    # completely separated samples: p = 1 / C(n+m, n)
    assert mann_whitney_greater([4, 5, 6], [1, 2, 3]) == pytest.approx(1 / 20)
    assert mann_whitney_greater([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) == pytest.approx(1 / 252)
    # the other direction is not significant at all
    assert mann_whitney_greater([1, 2, 3], [4, 5, 6]) == pytest.approx(1.0)
    # identical samples: every arrangement ties the observed rank sum or exceeds it half the time
    assert mann_whitney_greater([1, 1, 1], [1, 1, 1]) == pytest.approx(1.0)


def test_mann_whitney_exact_agrees_with_brute_force_permutations_with_ties():
    x, y = [3.0, 5.0, 5.0, 7.0], [1.0, 3.0, 5.0]
    pooled = np.array(x + y)
    # brute force on the values' ranks
    from analysis.uncertainty import _avg_ranks

    ranks = _avg_ranks(pooled)
    obs = ranks[:4].sum()
    sums = [ranks[list(c)].sum() for c in itertools.combinations(range(7), 4)]
    expected = np.mean([s >= obs - 1e-9 for s in sums])
    assert mann_whitney_greater(x, y) == pytest.approx(expected)
    assert 0.0 < expected < 1.0  # ties and overlap: neither extreme


def test_mann_whitney_normal_approximation_for_large_samples():
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 0.1, 40), rng.normal(1.2, 0.1, 40)
    assert mann_whitney_greater(b, a) < 1e-6
    assert mann_whitney_greater(a, b) > 0.99
    assert math.isnan(mann_whitney_greater([], [1.0]))


def test_noise_aware_best_keeps_what_noise_cannot_separate():
    fast = [1.00, 1.02, 0.98, 1.01, 0.99]
    overlapping = [1.01, 0.97, 1.03, 1.00, 1.02]
    slow = [1.50, 1.52, 1.49, 1.51, 1.48]
    mask = noise_aware_best([fast, overlapping, slow], alpha=0.05)
    assert mask.tolist() == [True, True, False]


def test_batch_ranking_equals_the_scalar_metrics_row_by_row():
    rng = np.random.default_rng(1)
    p = np.array([1.0, 2.0, 2.0, 4.0])
    M = rng.choice([1.0, 2.0, 3.0, 4.0], size=(200, 4))
    got = batch_ranking(M, p)
    for b in range(len(M)):
        m = M[b]
        for name, fn in (("kendall_tau", metrics.kendall_tau), ("pairwise_agreement", metrics.pairwise_agreement),
                         ("top1_agreement", metrics.top1_agreement), ("selection_penalty", metrics.selection_penalty),
                         ("profile_error", metrics.profile_error)):
            want = fn(m, p)
            assert (math.isnan(want) and math.isnan(got[name][b])) or got[name][b] == pytest.approx(want), name


def test_intervals_cover_the_point_value_and_are_reproducible_by_seed():
    rng = np.random.default_rng(0)
    samples = [rng.normal(mu, 0.2 * mu, 5) for mu in (1.0, 1.3, 2.0, 2.2)]
    med = np.array([np.median(s) for s in samples])
    pred = np.array([0.8, 1.0, 1.9, 1.7])
    t = pred / med
    a = group_uncertainty(("k",), med, pred, list("abcd"), samples, Settings(resamples=500, seed=7), t)
    b = group_uncertainty(("k",), med, pred, list("abcd"), samples, Settings(resamples=500, seed=7), t)
    c = group_uncertainty(("k",), med, pred, list("abcd"), samples, Settings(resamples=500, seed=8), t)
    assert a == b
    assert a != c
    tau = metrics.kendall_tau(med, pred)
    assert a["kendall_tau_lo"] <= tau <= a["kendall_tau_hi"]
    assert a["tightness_median_lo"] <= np.median(t) <= a["tightness_median_hi"]
    assert a["n_reps_min"] == 5


def test_noise_free_group_has_point_intervals_and_noisy_group_wide_ones():
    exact = [[1.0] * 5, [2.0] * 5, [3.0] * 5]
    pred = [1.0, 2.0, 3.0]
    out = group_uncertainty("g", [1.0, 2.0, 3.0], pred, ["a", "b", "c"], exact, Settings(resamples=200))
    assert out["kendall_tau_lo"] == out["kendall_tau_hi"] == 1.0
    assert out["distinguishable"] is True and out["best_measured_noise_aware"] == "a"
    rng = np.random.default_rng(5)
    noisy = [rng.lognormal(0, 0.4, 5) for _ in range(3)]
    med = [float(np.median(s)) for s in noisy]
    out = group_uncertainty("g", med, pred, ["a", "b", "c"], noisy, Settings(resamples=500))
    assert out["kendall_tau_hi"] - out["kendall_tau_lo"] >= 1.0


def test_indistinguishable_group_scores_noise_aware_top1_as_right():
    samples = [[1.0, 1.2, 0.9, 1.1, 1.05], [1.1, 0.95, 1.15, 1.0, 1.02]]
    med = [float(np.median(s)) for s in samples]
    # the model picks the one measured slower by median, inside the noise
    out = group_uncertainty("g", med, [1.0, 2.0], ["a", "b"], samples, Settings(resamples=100))
    assert out["distinguishable"] is False
    assert out["top1_noise_aware"] == 1.0 and out["selection_penalty_noise_aware"] == 0.0
    assert metrics.top1_agreement(med, [1.0, 2.0]) == 0.0


def test_score_alternatives_carries_every_interval_and_runs_get_tightness_intervals():
    row = score_alternatives({"study": "s"}, np.array([1.0, 2.0]), np.array([0.9, 1.5]), ["a", "b"],
                             pd.Series([0.9, 0.75]), [[1.0, 1.1, 0.9], [2.0, 2.2, 1.8]], Settings(resamples=100))
    for m in ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error",
              "tightness_median"):
        assert f"{m}_lo" in row and f"{m}_hi" in row
    runs = pd.DataFrame({"run_id": ["r1", "r2"], "tightness": [0.5, 0.8], "time_median_s": [1.0, 2.0],
                         "time_reps_s": [[0.9, 1.0, 1.2], [2.0]]})
    out = tightness_intervals(runs, Settings(resamples=200))
    assert out.loc[0, "tightness_lo"] <= 0.5 <= out.loc[0, "tightness_hi"]
    assert np.isnan(out.loc[1, "tightness_lo"])  # one repetition: no interval


def test_format_interval():
    assert format_interval(0.8, 0.6, 0.93) == "0.80 [0.60, 0.93]"
    assert format_interval(0.8, float("nan"), 1.0) == "0.80"
    assert format_interval(float("nan"), 0, 1) == "n/a"
