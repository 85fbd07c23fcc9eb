"""CFL and resolution checks."""

from __future__ import annotations

import math

import pytest

from sims.fdm.stability import check, critical_dt, points_per_wavelength


def test_critical_dt_orders():
    assert critical_dt(3000.0, 10.0, 2) == pytest.approx(10.0 / (3000.0 * math.sqrt(3)))
    assert critical_dt(3000.0, 10.0, 4) == pytest.approx(10.0 / (3000.0 * math.sqrt(3) * (9 / 8 + 1 / 24)))
    with pytest.raises(ValueError, match="order"):
        critical_dt(3000.0, 10.0, 3)


def test_ppw_and_refusal():
    assert points_per_wavelength(1000.0, 10.0, 4.0) == pytest.approx(10.0)
    check(3000.0, 1000.0, 10.0, 4.0, 2, 1e-4)
    with pytest.raises(ValueError, match="points per minimum wavelength"):
        check(3000.0, 1000.0, 10.0, 5.0, 2, 1e-4)
    with pytest.raises(ValueError, match="stability limit"):
        check(3000.0, 1000.0, 10.0, 4.0, 2, 1e-2)
