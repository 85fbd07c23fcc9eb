"""Tests of analysis.scoring.metrics: hand-computed values, the tie rules of the module docstring, invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.scoring import metrics

positive = st.floats(min_value=1e-6, max_value=1e6)
distinct_values = st.lists(positive, min_size=2, max_size=12, unique=True)
values = st.lists(positive, min_size=1, max_size=12)


# --------------------------------------------------------------------------- tightness


def test_tightness_scalar_is_a_float() -> None:
    result = metrics.tightness(97.0, 100.0)
    assert isinstance(result, float)
    assert result == pytest.approx(0.97)


def test_tightness_is_elementwise() -> None:
    np.testing.assert_allclose(metrics.tightness([1.0, 3.0], [2.0, 4.0]), [0.5, 0.75])


# --------------------------------------------------------------------------- kendall_tau


@pytest.mark.parametrize(
    ("measured", "predicted", "expected"),
    [
        ([1.0, 2.0, 3.0], [10.0, 30.0, 20.0], 1 / 3),
        ([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], -1.0),
        # One pair tied in the measurement: n_c = 5, n_d = 0, n_0 = 6, n_1 = 1, n_2 = 0.
        ([1.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0], 5 / math.sqrt(5 * 6)),
        # Ties on both sides: n_c = 1 ((0,2)), n_d = 0, n_1 = 1 ((0,1)), n_2 = 1 ((1,2)).
        ([1.0, 1.0, 2.0], [1.0, 2.0, 2.0], 1 / math.sqrt(2 * 2)),
    ],
)
def test_kendall_tau_hand_values(measured: list, predicted: list, expected: float) -> None:
    assert metrics.kendall_tau(measured, predicted) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("measured", "predicted"),
    [
        ([1.0], [2.0]),  # no pairs
        ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]),  # measurement constant
        ([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]),  # prediction constant
    ],
)
def test_kendall_tau_undefined_is_nan(measured: list, predicted: list) -> None:
    assert math.isnan(metrics.kendall_tau(measured, predicted))


# --------------------------------------------------------------------------- pairwise_agreement


@pytest.mark.parametrize(
    ("measured", "predicted", "expected"),
    [
        ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 1.0),
        ([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], 0.0),
        ([1.0, 2.0, 3.0], [10.0, 30.0, 20.0], 2 / 3),
        # A pair tied in the prediction only counts 1/2.
        ([1.0, 2.0, 3.0], [1.0, 1.0, 5.0], 2.5 / 3),
        # A pair tied in the measurement is left out whatever the prediction says.
        ([1.0, 1.0, 2.0], [2.0, 1.0, 3.0], 1.0),
        ([1.0, 1.0, 2.0], [1.0, 1.0, 1.0], 0.5),
    ],
)
def test_pairwise_agreement_hand_values(measured: list, predicted: list, expected: float) -> None:
    assert metrics.pairwise_agreement(measured, predicted) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("measured", "predicted"), [([1.0], [1.0]), ([2.0, 2.0], [1.0, 3.0])])
def test_pairwise_agreement_without_ordered_pairs_is_nan(measured: list, predicted: list) -> None:
    assert math.isnan(metrics.pairwise_agreement(measured, predicted))


# --------------------------------------------------------------------------- top-1 and selection penalty


@pytest.mark.parametrize(
    ("measured", "predicted", "top1", "penalty"),
    [
        ([2.0, 1.0, 3.0], [2.0, 1.0, 3.0], 1.0, 0.0),  # right pick
        ([2.0, 1.0, 4.0], [1.0, 2.0, 3.0], 0.0, 1.0),  # picks the 2 s alternative, best is 1 s
        ([2.0, 1.0, 3.0], [2.5, 1.5, 1.5], 0.5, 1.0),  # prediction ties 1 s and 3 s: mean(1, 3)/1 - 1
        ([1.0, 1.0, 2.0], [2.0, 1.0, 3.0], 1.0, 0.0),  # measurement ties: either 1 s is best
        ([1.0, 2.0, 4.0], [5.0, 1.0, 1.0], 0.0, 2.0),  # pick set {2 s, 4 s}: mean 3 s
        ([3.0], [7.0], 1.0, 0.0),  # one alternative
    ],
)
def test_top1_and_selection_penalty_hand_values(measured, predicted, top1, penalty) -> None:
    assert metrics.top1_agreement(measured, predicted) == pytest.approx(top1, rel=1e-12)
    assert metrics.selection_penalty(measured, predicted) == pytest.approx(penalty, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------- profile_error


@pytest.mark.parametrize(
    ("measured", "predicted", "expected"),
    [
        ([1.0, 2.0], [10.0, 20.0], 0.0),
        # |u - v|^2 / 2 = 1 - cos(u, v), cos = 3 / sqrt(10).
        ([1.0, 1.0], [1.0, 2.0], math.sqrt(1 - 3 / math.sqrt(10))),
        ([5.0], [0.1], 0.0),
    ],
)
def test_profile_error_hand_values(measured: list, predicted: list, expected: float) -> None:
    assert metrics.profile_error(measured, predicted) == pytest.approx(expected, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------- input validation

PAIR_METRICS = [
    metrics.tightness,
    metrics.kendall_tau,
    metrics.pairwise_agreement,
    metrics.top1_agreement,
    metrics.selection_penalty,
    metrics.profile_error,
]


@pytest.mark.parametrize("func", PAIR_METRICS)
@pytest.mark.parametrize(
    ("first", "second", "pattern"),
    [
        ([1.0, np.nan], [1.0, 2.0], r"^(measured|measured_times) must hold finite values > 0; 1 do not, first at index 1"),
        ([1.0, 2.0], [1.0, np.inf], r"^(bound|predicted|predicted_times) must hold finite values > 0"),
        ([1.0, 0.0], [1.0, 2.0], r"^(measured|measured_times) must hold finite values > 0"),
        ([1.0, 2.0], [-1.0, 2.0], r"^(bound|predicted|predicted_times) must hold finite values > 0"),
        ([1.0, 2.0], [1.0, 2.0, 3.0], r"differ in length: 2 != 3"),
        ([], [], r"^(measured|measured_times) is empty"),
        ([[1.0, 2.0]], [[1.0, 2.0]], r"^(measured|measured_times) must be one-dimensional"),
        (["a"], [1.0], r"^(measured|measured_times) must be numeric"),
    ],
)
def test_invalid_inputs_name_the_argument(func, first, second, pattern) -> None:
    with pytest.raises(ValueError, match=pattern):
        func(first, second)


# --------------------------------------------------------------------------- invariants


@given(x=distinct_values)
def test_kendall_tau_of_itself_and_of_reversal(x: list) -> None:
    assert metrics.kendall_tau(x, x) == pytest.approx(1.0)
    # 1/x reverses every pair.
    assert metrics.kendall_tau(x, 1.0 / np.asarray(x)) == pytest.approx(-1.0)
    assert metrics.pairwise_agreement(x, x) == 1.0
    assert metrics.pairwise_agreement(x, 1.0 / np.asarray(x)) == 0.0


@given(m=values, data=st.data())
def test_bounded_fractions(m: list, data: st.DataObject) -> None:
    p = data.draw(st.lists(positive, min_size=len(m), max_size=len(m)))
    tau = metrics.kendall_tau(m, p)
    assert math.isnan(tau) or -1.0 - 1e-12 <= tau <= 1.0 + 1e-12
    agreement = metrics.pairwise_agreement(m, p)
    assert math.isnan(agreement) or 0.0 <= agreement <= 1.0
    assert 0.0 <= metrics.top1_agreement(m, p) <= 1.0
    assert metrics.selection_penalty(m, p) >= 0.0
    assert 0.0 <= metrics.profile_error(m, p) <= 1.0


@given(x=values, c=st.floats(min_value=1e-3, max_value=1e3))
def test_profile_error_ignores_scale(x: list, c: float) -> None:
    assert metrics.profile_error(x, c * np.asarray(x)) == pytest.approx(0.0, abs=1e-7)


@given(x=values)
def test_perfect_prediction_picks_the_best(x: list) -> None:
    assert metrics.top1_agreement(x, x) == 1.0
    assert metrics.selection_penalty(x, x) == 0.0
