"""The NumPy reference and the Numba kernels compute the same wavefield."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import base_spec


@pytest.mark.parametrize("order", [2, 4])
@pytest.mark.parametrize("kind", ["explosive", "force"])
def test_numpy_and_numba_agree(run_local, order, kind):
    src = {"kind": kind, "position": [115.0, 105.0, 95.0], "f0": 5.0}
    src.update({"moment": 1.0e15} if kind == "explosive" else {"force": 1.0e10, "direction": [1.0, -2.0, 0.5]})
    results = {b: run_local(base_spec(order=order, source=src, backend=b))[0] for b in ("numpy", "numba")}
    ref, got = results["numpy"], results["numba"]
    peak = max(np.abs(ref[c]).max() for c in ("vx", "vy", "vz"))
    assert peak > 0
    for c in ("vx", "vy", "vz"):
        assert np.abs(got[c] - ref[c]).max() <= 1e-6 * peak, c
    assert np.array_equal(ref["moment_rate"], got["moment_rate"])


def test_marshaling_designs_agree_on_one_rank(run_local):
    """On a CPU backend the designs differ only in where packing happens: same numbers."""
    out = [run_local(base_spec(marshaling=m))[0]["vx"] for m in ("host-staging", "device-pack", "gpu-aware")]
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])


def test_record_of_a_run(run_local):
    seis, records = run_local(base_spec(repetitions=3))
    assert len(records) == 3 and [r["rep"] for r in records] == [0, 1, 2]
    r = records[0]
    assert r["case"] == "fdm" and r["steps"] == 30 and r["points"] == 24 * 22 * 20 and r["order"] == 2
    assert r["boundary"] == "cpml(4)" and r["energy_source"] == "none" and r["energy_j"] is None
    assert r["time_s"] > 0 and r["time_velocity_s"] > 0 and r["time_stress_s"] > 0
    assert r["flops"] > 0 and r["bytes"] > r["points"] * r["steps"] * 100
    assert seis["vx"].shape == (3, 30) and seis["t"].shape == (30,)
    assert np.allclose(seis["t"][1] - seis["t"][0], seis["moment_rate_t"][1] - seis["moment_rate_t"][0])
    # positions actually used: the source and receivers snapped to cell centres
    assert np.allclose(seis["source_position"], [115.0, 105.0, 95.0])
    assert np.allclose(seis["receiver_positions"][0], [135.0, 105.0, 95.0])


@pytest.mark.parametrize("box", [(0, 2, 2, 9, 2, 11), (5, 7, 0, 12, 1, 13), (3, 4, 4, 5, 6, 7)])
def test_halo_pack_and_unpack_move_exactly_the_box(box):
    """The Numba halo copies: ``pack`` gives the box in C order, ``unpack`` writes it back and nothing else."""
    from sims.fdm import kernels_numba as K

    rng = np.random.default_rng(7)
    field = rng.random((7, 12, 13), dtype=np.float32)
    lo0, hi0, lo1, hi1, lo2, hi2 = box
    sl = np.s_[lo0:hi0, lo1:hi1, lo2:hi2]
    buf = np.empty(field[sl].size, np.float32)
    K.pack(field, buf, *box)
    assert np.array_equal(buf, field[sl].ravel())
    out = np.zeros_like(field)
    K.unpack(out, buf, *box)
    expect = np.zeros_like(field)
    expect[sl] = field[sl]
    assert np.array_equal(out, expect)


def test_overlapping_kernel_arguments_are_refused():
    """The Numba kernels are compiled noalias; the solver refuses a written array that overlaps another argument."""
    from sims.fdm.solver import _check_disjoint

    a, b, c = np.zeros(10, np.float32), np.zeros(10, np.float32), np.ones(3, np.float32)
    _check_disjoint([a, b], [a, b, c, 1.0, c])  # read-only arguments may be shared
    with pytest.raises(RuntimeError, match="overlap"):
        _check_disjoint([a], [a, b, a[2:]])
    with pytest.raises(RuntimeError, match="overlap"):
        _check_disjoint([a, b[2:]], [a, b[2:], b])
