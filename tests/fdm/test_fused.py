"""The fused GPU kernels' text, run with NumPy, against the reference array kernels: the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from sims.fdm import kernels_fused as KF
from sims.fdm import kernels_xp as KX

NAMES = ("vx", "vy", "vz", "sxx", "syy", "szz", "sxy", "sxz", "syz")


def _state(seed=0, shape=(14, 12, 16)):
    rng = np.random.default_rng(seed)
    F = {n: rng.standard_normal(shape).astype(np.float32) for n in NAMES}
    P = {k: rng.uniform(0.1, 1.0, shape[2]).astype(np.float32) for k in ("b_c", "b_f", "l2m", "lam", "mu_c", "mu_f")}
    return F, P


@pytest.mark.parametrize("phase", ["velocity", "stress"])
@pytest.mark.parametrize("c1,c2", [(1.0, 0.0), (9 / 8, -1 / 24)])
def test_fused_half_step_gives_the_reference_bits(phase, c1, c2):
    lo, hi = (2, 2, 2), (12, 10, 14)
    F, P = _state()
    G = {k: v.copy() for k, v in F.items()}
    kernel, args = KF.bind(np, phase, G, P, lo, hi, c1, c2)
    for _ in range(2):  # bound once, launched every step, as the solver does
        (KX.velocity if phase == "velocity" else KX.stress)(F, P, lo, hi, c1, c2)
        kernel(args)
    changed = [n for n in NAMES if not np.array_equal(F[n], _state()[0][n])]
    assert changed == (["vx", "vy", "vz"] if phase == "velocity" else ["sxx", "syy", "szz", "sxy", "sxz", "syz"])
    for n in NAMES:
        assert np.array_equal(F[n], G[n]), n


@pytest.mark.parametrize("phase", ["velocity", "stress"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("c1,c2", [(1.0, 0.0), (9 / 8, -1 / 24)])
def test_fused_pml_slab_gives_the_reference_bits(phase, axis, c1, c2):
    lo, hi = (2, 2, 2), (12, 10, 14)
    F, P = _state(1)
    G = {k: v.copy() for k, v in F.items()}
    rng = np.random.default_rng(2)
    shape = [hi[a] - lo[a] for a in range(3)]
    psi = rng.standard_normal((3, *shape)).astype(np.float32)
    psi2 = psi.copy()
    prof = rng.uniform(0.0, 1.0, (4, 20)).astype(np.float32)
    kernel, args = KF.bind(np, phase, G, P, lo, hi, c1, c2, (axis, psi2, lo, prof))
    for _ in range(2):  # bound once, launched every step: the memory variable carries over
        (KX.velocity_pml if phase == "velocity" else KX.stress_pml)(F, P, lo, hi, c1, c2, [(axis, psi, lo, prof)])
        kernel(args)
    assert np.array_equal(psi, psi2)
    for n in NAMES:
        assert np.array_equal(F[n], G[n]), n


def test_the_kernel_text_is_cuda_without_contracted_multiply_adds():
    for phase in ("velocity", "stress"):
        for order in (2, 4):
            statements, views = (KF.velocity_statements if phase == "velocity" else KF.stress_statements)(order)
            text = KF.operation(statements)
            outs = [t for kind, t, _ in statements if kind == "out"]
            assert len(outs) == len(set(outs)) == (3 if phase == "velocity" else 6)  # each field written once
            assert all(line.endswith(";") for line in text.splitlines())
            assert ("c1" in text) == (order == 4)
            # order 4 reads two neighbours either side along each axis, order 2 one
            assert max(int(n[-1]) for n in views if not n.endswith("_0")) == order // 2
    assert "--fmad=false" in KF.OPTIONS
    with pytest.raises(ValueError, match="not a fused-kernel statement"):
        KF.evaluate("vx = __import__('os');", {"vx": np.zeros(1)})
