"""Bootstrap intervals, the Mann-Whitney test and the noise-aware best (analysis.scoring.uncertainty)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from analysis.planning.config import uncertainty_settings
from analysis.scoring import metrics
from analysis.scoring.runs import score_alternatives, tightness_intervals
from analysis.scoring.uncertainty import (
    batch_ranking,
    format_interval,
    group_uncertainty,
    mann_whitney_greater,
    noise_aware_best_rows,
    pad_sorted,
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
    from scipy.stats import rankdata

    ranks = rankdata(pooled)
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
    XS, n = pad_sorted([fast, overlapping, slow])
    mask = noise_aware_best_rows(XS[None], n[None], alpha=0.05)[0]
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
    a = group_uncertainty(("k",), med, pred, list("abcd"), samples, uncertainty_settings(resamples=500, seed=7), t)
    b = group_uncertainty(("k",), med, pred, list("abcd"), samples, uncertainty_settings(resamples=500, seed=7), t)
    c = group_uncertainty(("k",), med, pred, list("abcd"), samples, uncertainty_settings(resamples=500, seed=8), t)
    assert a == b
    assert a != c
    tau = metrics.kendall_tau(med, pred)
    assert a["kendall_tau_lo"] <= tau <= a["kendall_tau_hi"]
    assert a["tightness_median_lo"] <= np.median(t) <= a["tightness_median_hi"]
    assert a["n_reps_min"] == 5


def test_noise_free_group_has_point_intervals_and_noisy_group_wide_ones():
    exact = [[1.0] * 5, [2.0] * 5, [3.0] * 5]
    pred = [1.0, 2.0, 3.0]
    out = group_uncertainty("g", [1.0, 2.0, 3.0], pred, ["a", "b", "c"], exact, uncertainty_settings(resamples=200))
    assert out["kendall_tau_lo"] == out["kendall_tau_hi"] == 1.0
    assert out["distinguishable"] is True and out["best_measured_noise_aware"] == "a"
    rng = np.random.default_rng(5)
    noisy = [rng.lognormal(0, 0.4, 5) for _ in range(3)]
    med = [float(np.median(s)) for s in noisy]
    out = group_uncertainty("g", med, pred, ["a", "b", "c"], noisy, uncertainty_settings(resamples=500))
    assert out["kendall_tau_hi"] - out["kendall_tau_lo"] >= 1.0


def test_indistinguishable_group_scores_noise_aware_top1_as_right():
    samples = [[1.0, 1.2, 0.9, 1.1, 1.05], [1.1, 0.95, 1.15, 1.0, 1.02]]
    med = [float(np.median(s)) for s in samples]
    # the model picks the one measured slower by median, inside the noise
    out = group_uncertainty("g", med, [1.0, 2.0], ["a", "b"], samples, uncertainty_settings(resamples=100))
    assert out["distinguishable"] is False
    assert out["top1_noise_aware"] == 1.0 and out["selection_penalty_noise_aware"] == 0.0
    assert metrics.top1_agreement(med, [1.0, 2.0]) == 0.0


def test_score_alternatives_carries_every_interval_and_runs_get_tightness_intervals():
    row = score_alternatives({"study": "s"}, np.array([1.0, 2.0]), np.array([0.9, 1.5]), ["a", "b"],
                             pd.Series([0.9, 0.75]), [[1.0, 1.1, 0.9], [2.0, 2.2, 1.8]], uncertainty_settings(resamples=100))
    for m in ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error",
              "tightness_median"):
        assert f"{m}_lo" in row and f"{m}_hi" in row
    runs = pd.DataFrame({"run_id": ["r1", "r2"], "tightness": [0.5, 0.8], "time_median_s": [1.0, 2.0],
                         "time_reps_s": [[0.9, 1.0, 1.2], [2.0]]})
    out = tightness_intervals(runs, uncertainty_settings(resamples=200))
    assert out.loc[0, "tightness_lo"] <= 0.5 <= out.loc[0, "tightness_hi"]
    assert np.isnan(out.loc[1, "tightness_lo"])  # one repetition: no interval


def test_format_interval():
    assert format_interval(0.8, 0.6, 0.93) == "0.80 [0.60, 0.93]"
    assert format_interval(0.8, float("nan"), 1.0) == "0.80"
    assert format_interval(float("nan"), 0, 1) == "n/a"


# ---- the batched path (many groups at once) against the one-group rules ----------------------------------------

from analysis.scoring.runs import score_batch  # noqa: E402
from analysis.scoring.uncertainty import (  # noqa: E402
    _median_positions,
    interval,
    interval_rows,
    mann_whitney_rows,
    run_intervals,
)


def test_median_positions_draw_the_bootstrap_median_distribution():
    # the median of 5 draws with replacement from 5 sorted values is the j-th value with
    # P(J <= j) = P(Binomial(5, (j + 1) / 5) >= 3)
    lo, hi = _median_positions(0, 200_000, 5, 0)
    assert (lo == hi).all()
    for j in range(5):
        q = (j + 1) / 5
        want = sum(math.comb(5, i) * q**i * (1 - q) ** (5 - i) for i in range(3, 6))
        assert np.mean(lo <= j) == pytest.approx(want, abs=0.005)
    lo, hi = _median_positions(0, 1000, 4, 1)  # even n: the two middle positions
    assert (lo <= hi).all() and (lo < hi).any()


def test_run_intervals_equal_the_percentile_of_resampled_medians():
    rng = np.random.default_rng(2)
    settings = uncertainty_settings(resamples=300, seed=4)
    for n in (2, 3, 4, 5, 7):
        reps = [rng.lognormal(0, 0.3, n) for _ in range(6)]
        med = np.array([np.median(r) for r in reps])
        t = rng.uniform(0.2, 1.0, 6)
        lo, hi = run_intervals(t, med, reps, settings)
        a, b = _median_positions(4, 300, n, 0)
        for r in range(6):
            s = np.sort(reps[r])
            want = interval(t[r] * med[r] / (0.5 * (s[a] + s[b])), settings.level)
            assert (lo[r], hi[r]) == pytest.approx(want, rel=1e-12)
    lo, hi = run_intervals([0.5, np.nan, 0.5], [1.0, 1.0, 1.0], [[1.0], [1.0, 2.0], None], settings)
    assert np.isnan(lo).all() and np.isnan(hi).all()


def test_interval_rows_equal_interval_row_by_row():
    rng = np.random.default_rng(3)
    V = rng.normal(size=(40, 57))
    V[rng.random(V.shape) < 0.2] = np.nan
    V[5] = np.nan
    lo, hi = interval_rows(V, 0.9)
    for r in range(len(V)):
        want = interval(V[r], 0.9)
        assert (math.isnan(want[0]) and math.isnan(lo[r])) or (lo[r], hi[r]) == pytest.approx(want, rel=1e-13)


def test_vectorised_mann_whitney_equals_the_scalar_test():
    rng = np.random.default_rng(4)
    for n, m in ((3, 3), (5, 5), (4, 6), (12, 12)):  # the last beyond the exact limit
        X = rng.normal(0.0, 1.0, (50, n)) + rng.uniform(0, 2, (50, 1))
        Y = rng.normal(0.0, 1.0, (50, m))
        X[:5, 0] = Y[:5, 0]  # ties go through the exact tie-aware test
        got = mann_whitney_rows(X, Y)
        want = [mann_whitney_greater(X[r], Y[r]) for r in range(50)]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_score_batch_equals_scoring_each_group_alone():
    rng = np.random.default_rng(5)
    settings = uncertainty_settings(resamples=200, seed=1)
    gids, m, p, t, names, reps, groups = [], [], [], [], [], [], []
    for g in range(30):
        k = int(rng.integers(2, 6))
        n = [int(rng.integers(1, 6)) for _ in range(k)]
        s = [rng.lognormal(np.log(rng.choice([1.0, 1.2, 2.0])), 0.2, c) for c in n]
        if g % 7 == 0:
            s[0] = np.array([])  # an alternative without usable repetitions
        mm = np.array([np.median(x) if len(x) else 1.5 for x in s])
        pp = rng.choice([1.0, 1.1, 1.5], size=k)  # ties in the prediction too
        tt = pp / mm
        nm = [f"v{i}" for i in range(k)]
        groups.append((mm, pp, tt, nm, s))
        gids += [g] * k
        m += mm.tolist()
        p += pp.tolist()
        t += tt.tolist()
        names += nm
        reps += s
    batch = score_batch(np.array(gids), m, p, names, t, reps, settings)
    assert len(batch) == 30 and batch["first"].is_monotonic_increasing
    for g, (mm, pp, tt, nm, s) in enumerate(groups):
        alone = score_alternatives({}, mm, pp, nm, pd.Series(tt), s, settings)
        want = {**metrics.ranking_summary(mm, pp, nm),
                **group_uncertainty(("g",), mm, pp, nm, s, settings, tt)}
        for c, v in want.items():
            got = batch.iloc[g][c]
            assert alone[c] == got or (isinstance(v, float) and math.isnan(v) and math.isnan(got)) or \
                got == pytest.approx(v), (g, c)
            assert (isinstance(v, float) and math.isnan(v) and math.isnan(got)) or got == v or \
                got == pytest.approx(v), (g, c)


def test_pad_sorted_drops_non_finite_repetitions():
    XS, n = pad_sorted([[3.0, np.nan, 1.0], None, [np.inf, 2.0]])
    assert n.tolist() == [2, 0, 1]
    assert XS[0, :2].tolist() == [1.0, 3.0] and np.isnan(XS[1]).all() and XS[2, 0] == 2.0


def test_interval_rows_without_missing_values_take_the_partition_path():
    V = np.random.default_rng(8).normal(size=(30, 101))
    lo, hi = interval_rows(V, 0.95)
    for r in range(len(V)):
        assert (lo[r], hi[r]) == pytest.approx(interval(V[r], 0.95), rel=1e-13)


@pytest.mark.parametrize("through", ["comm", "files"])
def test_score_batch_spread_over_a_dask_cluster_equals_one_piece(through, tmp_path):
    """The chunks' inputs go to the workers through the comm or through files (a local cluster's hand-off
    directory, each file removed once its chunk is scored): the same rows as one piece."""
    from distributed import Client, LocalCluster

    from analysis.scoring.runs import scoring_on

    rng = np.random.default_rng(9)
    k, G = 3, 25
    gid = np.repeat(np.arange(G), k)
    reps = [rng.lognormal(0, 0.2, 5) for _ in range(G * k)]
    m = np.array([np.median(r) for r in reps])
    p = rng.uniform(0.5, 1.5, G * k)
    names = [f"v{i % k}" for i in range(G * k)]
    settings = uncertainty_settings(resamples=100, seed=3)
    whole = score_batch(gid, m, p, names, p / m, reps, settings)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client, scoring_on(client, groups_per_task=7,
                                                  handoff=str(tmp_path) if through == "files" else None):
        spread = score_batch(gid, m, p, names, p / m, reps, settings)
        assert not list(tmp_path.iterdir())
    pd.testing.assert_frame_equal(whole, spread)


def _where() -> str:
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return "here"
    return "worker"


def test_begin_runs_a_large_step_as_a_cluster_task_and_a_small_one_here(tmp_path):
    from distributed import Client, LocalCluster

    from analysis.scoring.runs import begin, scoring_on

    assert begin(_where, rows=10**9)() == "here"  # no cluster: computed by the caller
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client, scoring_on(client, groups_per_task=10):
        large, small = begin(_where, rows=11), begin(_where, rows=10)
        assert (large(), small()) == ("worker", "here")
        with scoring_on(client, groups_per_task=10, handoff=str(tmp_path)):  # its arguments through a file
            assert begin(np.add, np.arange(3), 1, rows=11)().tolist() == [1, 2, 3]
            assert not list(tmp_path.iterdir())
        with scoring_on(client, groups_per_task=10, handoff=str(tmp_path / "gone")):  # no such directory: the comm
            assert begin(np.add, np.arange(3), 1, rows=11)().tolist() == [1, 2, 3]


def test_pad_sorted_reads_rows_of_every_form_as_their_finite_values_sorted():
    """Lists (the reductions' rows, read without a NumPy call each), arrays, None, scalars and 2-D arrays all give
    each row's finite values, sorted, NaN-padded."""
    from analysis.scoring.uncertainty import finite_values

    rng = np.random.default_rng(11)
    lists = [list(rng.normal(size=int(rng.integers(0, 7)))) for _ in range(200)]
    lists[3] = [np.nan, 1.0, np.inf]
    for rows in (lists, [*lists[:-1], np.asarray(lists[-1]), None, 2.5, np.float64("nan"), np.ones((2, 2)), (7.0,)]):
        XS, n = pad_sorted(rows)
        for i, x in enumerate(rows):
            want = np.sort(finite_values(x))
            assert n[i] == len(want)
            np.testing.assert_array_equal(XS[i, :n[i]], want)
            assert np.isnan(XS[i, n[i]:]).all()
    assert n[3] == 1 and XS[3, 0] == 1.0 and n[-2] == 4


def test_energy_sources_per_run_none_single_and_mixed():
    from analysis.scoring.runs import energy_sources

    run = pd.Series(["a", "a", "b", "b", "c", "c"], name="run_id")
    src = pd.Series(["rapl", "rapl", "rapl", "nvml", None, None], dtype="string")
    out = energy_sources(run, src)
    assert out.to_dict() == {"a": "rapl", "b": "mixed: nvml, rapl", "c": "none"}


def test_weighted_intervals_equal_the_intervals_of_the_rows_written_out():
    from analysis.scoring.uncertainty import weighted_interval_rows

    rng = np.random.default_rng(11)
    V = np.round(rng.normal(size=(60, 9)), 1)  # ties between distinct columns too
    V[rng.random(V.shape) < 0.15] = np.nan
    V[rng.random(V.shape) < 0.05] = np.inf
    V[3] = np.nan
    counts = rng.integers(1, 40, size=9)
    for level in (0.95, 0.5):
        lo, hi = weighted_interval_rows(V, counts, level)
        want_lo, want_hi = interval_rows(np.repeat(V, counts, axis=1), level)
        np.testing.assert_array_equal(lo, want_lo)
        np.testing.assert_array_equal(hi, want_hi)


def test_groups_of_one_shape_scored_by_distinct_resamples_equal_every_resample_scored(monkeypatch):
    """Groups sharing their repetition counts are scored on their distinct resamples, weighted; the columns
    must be exactly those of scoring all resamples (the path taken by groups of rarer shapes)."""
    from analysis.scoring import uncertainty as unc

    rng = np.random.default_rng(12)
    settings = uncertainty_settings(resamples=300, seed=4)
    for k, sizes in ((2, (5, 5)), (2, (4, 1)), (3, (5, 3, 2)), (2, (0, 5))):
        G = 80
        X = np.round(rng.lognormal(0.0, 0.2, size=(G, k, max(sizes))), 2)  # ties inside a group
        n = np.tile(np.array(sizes), (G, 1))
        XS = np.full_like(X, np.nan)
        for a, size in enumerate(sizes):
            XS[:, a, :size] = np.sort(X[:, a, :size], axis=1)
        m = unc.sorted_medians(XS.reshape(G * k, -1), n.reshape(-1)).reshape(G, k)
        p = np.round(rng.lognormal(0.0, 0.2, size=(G, k)), 1)
        p[0, 0] = np.nan  # a group without a prediction for one alternative
        t = p / m
        names = [[f"a{i}" for i in range(k)]] * G
        distinct = unc.uncertainty_rows(m, p, t, XS, n, names, settings)
        assert len(unc._resample_support(settings.seed, settings.resamples, sizes)[2]) * 4 <= settings.resamples
        monkeypatch.setattr(unc, "SUPPORT_MIN_GROUPS", G + 1)  # every resample scored
        every = unc.uncertainty_rows(m, p, t, XS, n, names, settings)
        monkeypatch.undo()
        for c in unc.UNCERTAINTY_COLUMNS:
            if isinstance(every[c], list):
                assert distinct[c] == every[c], (sizes, c)
            else:
                np.testing.assert_array_equal(distinct[c], every[c], err_msg=f"{sizes} {c}")


@pytest.mark.parametrize(("spread", "scale"), [(0.0, 1.0), (0.5, 1.0), (0.5, 8e307)])
@pytest.mark.parametrize("k", [2, 5, 8, 11])
def test_compiled_intervals_equal_the_numpy_planes(monkeypatch, k, spread, scale):
    """The compiled kernel (large chunks) and the NumPy planes (small ones) give the same intervals to the
    last bit: NaN and zero predictions, ties, alternatives with 0 or 1 repetitions, both interval paths (a
    narrow level keeps a few order statistics; a wide one sorts). With ``spread`` the alternatives' scales
    differ, so some pairs never overlap and some tightness never reaches the median (the kernel settles
    those once per group); at ``scale`` 8e307 two repetitions' sum overflows, which NumPy says."""
    if scale > 1e300:
        with pytest.warns(RuntimeWarning, match="overflow"):
            _compiled_equal_numpy(monkeypatch, k, spread, scale)
    else:
        _compiled_equal_numpy(monkeypatch, k, spread, scale)


def _compiled_equal_numpy(monkeypatch, k, spread, scale):
    from analysis.scoring import uncertainty as unc

    rng = np.random.default_rng(20 + k)
    G, w = 60, 6
    n = rng.integers(0, w + 1, size=(G, k))
    n[:, 0] = np.maximum(n[:, 0], 2)  # every group resampled
    X = np.round(rng.lognormal(0.0, 0.3, size=(G, k, w)) * np.exp(spread * rng.permutation(k))[None, :, None], 2) * scale
    XS = np.full_like(X, np.nan)
    for g in range(G):
        for a in range(k):
            XS[g, a, :n[g, a]] = np.sort(X[g, a, :n[g, a]])
    m = unc.sorted_medians(XS.reshape(G * k, -1), n.reshape(-1)).reshape(G, k)
    p = np.round(rng.lognormal(0.0, 0.3, size=(G, k)), 1)
    p[rng.random((G, k)) < 0.05] = np.nan
    p[rng.random((G, k)) < 0.05] = 0.0
    t = rng.random((G, k))
    t[rng.random((G, k)) < 0.05] = np.nan
    positive = np.where(np.isfinite(p) & (p > 0), p, 1.0) / m  # every group's tightness positive and finite
    names = [[f"a{i}" for i in range(k)]] * G
    monkeypatch.setattr(unc, "SUPPORT_MIN_GROUPS", G + 1)
    for level in (0.95, 0.2):
        for tight in (t, positive, None):
            settings = unc.Settings(resamples=150, seed=3, level=level, noise_alpha=0.05)
            monkeypatch.setattr(unc, "JIT_MIN_ELEMENTS", 10**12)
            planes = unc.uncertainty_rows(m, p, tight, XS, n, names, settings)
            monkeypatch.setattr(unc, "JIT_MIN_ELEMENTS", 0)
            compiled = unc.uncertainty_rows(m, p, tight, XS, n, names, settings)
            for c in unc.UNCERTAINTY_COLUMNS:
                if isinstance(planes[c], list):
                    assert compiled[c] == planes[c], c
                else:
                    np.testing.assert_array_equal(compiled[c], planes[c], err_msg=f"{level} {c}")


def test_flat_repetitions_drops_missing_and_non_finite_values_and_keeps_rows():
    from analysis.scoring.uncertainty import flat_repetitions

    row, flat = flat_repetitions([[1.0, None, np.inf, 2.0], None, np.array([3.0, np.nan]), [], (4.0,)])
    assert row.tolist() == [0, 0, 2, 4] and flat.tolist() == [1.0, 2.0, 3.0, 4.0]
