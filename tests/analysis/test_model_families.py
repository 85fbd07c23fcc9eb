"""Energy roofline and the per-operation model (Kannan et al.)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.equations import perop, roofline

PS = 1e-12
# Kannan et al., "Timing Model for the CPU & GPU" table (ps per operation)
TAU_CPU = {"float/add": 400 * PS, "float/fma": 510 * PS, "float4/multiply": 140 * PS, "float4/random": 710 * PS}
TAU_GPU = {"float/add": 13 * PS, "float/fma": 14 * PS, "float4/multiply": 14 * PS, "float4/random": 150 * PS}


def test_slide_examples():
    # matrix addition instruction mix: 1 int add (as float add), 1 float add, 1 multiply, 3 random accesses
    mat_add = {"float/add": 2, "float4/multiply": 1, "float4/random": 3}
    assert perop.compute_time(mat_add, TAU_CPU) == pytest.approx((2 * 400 + 140 + 3 * 710) * PS)
    assert perop.compute_time(mat_add, TAU_GPU) == pytest.approx((2 * 13 + 14 + 3 * 150) * PS)
    # median filter: 20 fmin + 20 fmax (as fma), 10 random accesses
    median = {"float/fma": 40, "float4/random": 10}
    assert perop.compute_time(median, TAU_CPU) == pytest.approx((40 * 510 + 10 * 710) * PS)
    # offloading pays when the transfer costs less than the time saved
    # basic-block form: max of compute and working set x transfer cost
    assert perop.basic_block_time(median, TAU_GPU, sigma=40, tau_transfer=100 * PS) == pytest.approx(4000 * PS)
    with pytest.raises(ValueError, match="no per-operation cost"):
        perop.compute_time({"double/divide": 1}, TAU_CPU)


nonneg = st.floats(min_value=0.0, max_value=1e12)
pos = st.floats(min_value=1e-13, max_value=1e-8)


@given(nonneg, nonneg, pos, pos, st.floats(min_value=0, max_value=300), pos, pos)
def test_energy_roofline_at_least_its_dynamic_part_and_monotone(nf, nb, ef, eb, ps, tf, tb):
    e = roofline.energy(nf, nb, ef, eb, ps, tf, tb)
    assert e >= ef * nf + eb * nb - 1e-12 * max(1.0, e)
    assert roofline.energy(nf * 2 + 1, nb, ef, eb, ps, tf, tb) >= e
    assert roofline.energy(nf, nb * 2 + 1, ef, eb, ps, tf, tb) >= e


def test_energy_efficiency_matches_energy():
    i = np.array([0.25, 1.0, 16.0])
    eff = roofline.energy_efficiency(i, 1e-10, 5e-10, 30.0, 1e-11, 1e-10)
    assert np.allclose(eff, 1.0 / roofline.energy(1.0, 1.0 / i, 1e-10, 5e-10, 30.0, 1e-11, 1e-10))
    with pytest.raises(ValueError, match="t_b"):
        roofline.energy(1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0)
