"""CFL and resolution checks."""

from __future__ import annotations

import math

import pytest

from sims.fdm.stability import critical_dt, points_per_wavelength


def test_critical_dt_orders():
    assert critical_dt(3000.0, 10.0, 2) == pytest.approx(10.0 / (3000.0 * math.sqrt(3)))
    assert critical_dt(3000.0, 10.0, 4) == pytest.approx(10.0 / (3000.0 * math.sqrt(3) * (9 / 8 + 1 / 24)))
    with pytest.raises(ValueError, match="order"):
        critical_dt(3000.0, 10.0, 3)


def test_points_per_wavelength():
    # shortest wavelength 1000 m/s / (2.5 x 10 Hz) = 40 m: 10 points at 4 m (refusals: tests/fdm/test_spec.py)
    assert points_per_wavelength(1000.0, 10.0, 4.0) == pytest.approx(10.0)
