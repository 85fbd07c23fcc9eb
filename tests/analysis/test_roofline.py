"""Tests of analysis.equations.roofline against hand-computed values and the papers' equations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.equations import roofline

# Time per flop/byte drawn log-uniformly over the range of real processors (0.1 ps .. 1 ns).
seconds_per_unit = st.floats(min_value=-13.0, max_value=-9.0).map(lambda e: 10.0**e)
intensity = st.floats(min_value=1e-3, max_value=1e3)


@pytest.mark.parametrize(
    ("I", "t_f", "t_b", "expected"),
    [
        (2.0, 1e-12, 1e-11, 2e11),  # memory bound: I / t_b
        (100.0, 1e-12, 1e-11, 1e12),  # compute bound: 1 / t_f
        (10.0, 1e-12, 1e-11, 1e12),  # ridge point I = t_b / t_f: both limits meet
        (0.0, 1e-12, 1e-11, 0.0),  # no flops
        (np.inf, 1e-12, 1e-11, 1e12),  # no bytes: compute peak
        # PerDome Table 1, i7 2600K (73.5 ps/flop, 65.9 ps/byte) at SA's I = 1.7: compute bound.
        (1.7, 73.5e-12, 65.9e-12, 1 / 73.5e-12),
    ],
)
def test_attainable_hand_values(I: float, t_f: float, t_b: float, expected: float) -> None:  # noqa: E741
    assert roofline.attainable(I, t_f, t_b) == pytest.approx(expected, rel=1e-12)


@given(I=intensity, t_f=seconds_per_unit, t_b=seconds_per_unit)
def test_attainable_is_eq3(I: float, t_f: float, t_b: float) -> None:  # noqa: E741
    # PerDome eq. 3 / PeaPaw eq. 2 as printed.
    printed = 1.0 / (t_b * max(t_f / t_b, 1.0 / I))
    assert roofline.attainable(I, t_f, t_b) == pytest.approx(printed, rel=1e-12)


@given(
    N_f=st.floats(min_value=1.0, max_value=1e15),
    N_b=st.floats(min_value=1.0, max_value=1e15),
    t_f=seconds_per_unit,
    t_b=seconds_per_unit,
)
def test_rate_is_flops_over_time(N_f: float, N_b: float, t_f: float, t_b: float) -> None:
    # Eq. 2 and eq. 3 describe the same bound: N_f / T = P(N_f / N_b).
    rate = N_f / roofline.time(N_f, N_b, t_f, t_b)
    assert rate == pytest.approx(roofline.attainable(N_f / N_b, t_f, t_b), rel=1e-12)


@pytest.mark.parametrize(
    ("N_f", "N_b", "t_f", "t_b", "expected"),
    [
        (1e9, 4e9, 1e-12, 1e-11, 0.04),  # bytes dominate
        (1e12, 1e9, 1e-12, 1e-11, 1.0),  # flops dominate
        (0.0, 0.0, 1e-12, 1e-11, 0.0),  # no work, no time
        (0.0, 1e9, 1e-12, 1e-11, 0.01),  # pure data movement
    ],
)
def test_time_hand_values(N_f: float, N_b: float, t_f: float, t_b: float, expected: float) -> None:
    assert roofline.time(N_f, N_b, t_f, t_b) == pytest.approx(expected, rel=1e-12)


def test_attainable_broadcasts() -> None:
    I = np.array([[0.5], [20.0]])  # noqa: E741
    t_f = np.array([1e-12, 2e-12, 4e-12])
    result = roofline.attainable(I, t_f, 1e-11)
    assert result.shape == (2, 3)
    np.testing.assert_allclose(result, [[5e10, 5e10, 5e10], [1e12, 5e11, 2.5e11]], rtol=1e-12)


def test_time_broadcasts() -> None:
    result = roofline.time(np.array([1e9, 1e12]), 4e9, 1e-12, 1e-11)
    np.testing.assert_allclose(result, [0.04, 1.0], rtol=1e-12)


@pytest.mark.parametrize("func", [roofline.attainable, roofline.time])
def test_scalars_give_a_float(func) -> None:
    args = (1.0, 1e-12, 1e-11) if func is roofline.attainable else (1.0, 1.0, 1e-12, 1e-11)
    result = func(*args)
    assert isinstance(result, float)
    assert np.ndim(result) == 0


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((-1.0, 1e-12, 1e-11), "I"),
        ((np.nan, 1e-12, 1e-11), "I"),
        ((1.0, 0.0, 1e-11), "t_f"),
        ((1.0, 1e-12, -1e-11), "t_b"),
        (([1.0, -2.0], 1e-12, 1e-11), "I"),
    ],
)
def test_attainable_rejects_invalid(args: tuple, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        roofline.attainable(*args)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((-1.0, 1.0, 1e-12, 1e-11), "N_f"),
        ((1.0, np.nan, 1e-12, 1e-11), "N_b"),
        ((1.0, 1.0, 0.0, 1e-11), "t_f"),
    ],
)
def test_time_rejects_invalid(args: tuple, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        roofline.time(*args)


def test_intensity_is_flops_per_byte_and_undefined_without_bytes():
    got = roofline.intensity([2.0, 1.0, 0.0, 3.0], [4.0, 0.0, 8.0, float("nan")])
    np.testing.assert_array_equal(got[:1], [0.5])
    assert np.isnan(got[1]) and got[2] == 0.0 and np.isnan(got[3])
