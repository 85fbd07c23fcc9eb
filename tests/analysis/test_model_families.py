"""Energy roofline, the per-operation model (Kannan et al.) and the three-component bound (Panwar)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.models import perop, roofline, threecomp

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
    assert perop.decide(median, TAU_CPU, TAU_GPU, B_to=8, B_from=4, Q_there=100 * PS, Q_back=100 * PS)
    assert not perop.decide(median, TAU_CPU, TAU_GPU, B_to=8, B_from=4, Q_there=1e-8, Q_back=1e-8)
    # basic-block form: max of compute and working set x transfer cost
    assert perop.basic_block_time(median, TAU_GPU, sigma=40, tau_transfer=100 * PS) == pytest.approx(4000 * PS)
    with pytest.raises(ValueError, match="no per-operation cost"):
        perop.compute_time({"double/divide": 1}, TAU_CPU)


def test_per_operation_fit_recovers_coefficients_with_noise():
    rng = np.random.default_rng(11)
    tau = {"add": 3e-10, "mul": 5e-10, "random": 8e-9}
    eps, pi0 = {"add": 2e-10, "mul": 3e-10, "random": 4e-9}, 20.0
    samples = []
    for _ in range(60):
        counts = {op: float(rng.integers(0, 10_000_000)) for op in tau}
        t = (sum(counts[o] * tau[o] for o in tau) + 1e-4) * rng.normal(1, 0.003)  # the run's actual time
        e = (sum(counts[o] * eps[o] for o in tau) + pi0 * t) * rng.normal(1, 0.0005)  # meter over that time
        samples.append({"counts": counts, "time_s": t, "energy_j": e})
    f = perop.fit(samples, pi0=pi0)  # static power measured at idle: the dynamic energies separate
    for op in tau:
        assert f["tau"][op] == pytest.approx(tau[op], rel=0.05)
        assert f["eps"][op] == pytest.approx(eps[op], rel=0.2)
    assert f["r2_time"] > 0.99 and f["r2_energy"] > 0.99
    # with idle periods in some samples, time is no longer linear in the counts: pi0 is fitted too
    for k, smp in enumerate(samples):
        idle = 0.01 * (k % 4)
        smp["energy_j"] += pi0 * idle
        smp["time_s"] += idle
    joint = perop.fit(samples)
    assert joint["pi0"] == pytest.approx(pi0, rel=0.05)
    with pytest.raises(ValueError, match="vary each count"):
        perop.fit([{"counts": {"add": 1.0, "mul": 1.0}, "time_s": 1.0}, {"counts": {"add": 2.0, "mul": 2.0}, "time_s": 2.0}])


def test_energy_per_work():
    assert perop.energy_per_work(1e-9, 20.0, 2.0, 1e10) == pytest.approx(1e-9 + 4e-9)


def test_three_component_bound():
    t, which = threecomp.time({"fp32": 1e9, "int": 5e8}, {"fp32": 1e12, "int": 5e11},
                              {"read": 1e6, "write": 1e6}, {"read": 1e9, "write": 5e8},
                              {"read": 4e6}, {"read": 1e10})
    assert t == pytest.approx(max(2e-3, 1e-3 + 2e-3, 4e-4)) and which == "global"
    # vectorised: 0.5 ms vs 1 ms of global traffic, then 10 s of compute
    t, which = threecomp.time({"fp32": np.array([5e8, 1e13])}, {"fp32": 1e12}, {"read": 1e6}, {"read": 1e9})
    assert list(which) == ["global", "compute"] and np.allclose(t, [1e-3, 10.0])
    with pytest.raises(ValueError, match="no instruction throughput"):
        threecomp.t_compute({"fp64": 1}, {"fp32": 1.0})


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
