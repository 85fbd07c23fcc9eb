"""SA kernels: counts, allocation, numerical agreement across backends, and the numba IR check."""

import re

import numpy as np
import pytest

from sims.backends import get_backend
from sims.backends.cupy_backend import CupyBackend
from sims.sa import kernels as K

ALL = ["numpy", "numba", "cupy-xp"]


def make(name):
    return CupyBackend(xp=np) if name == "cupy-xp" else get_backend(name)


def test_constants_follow_the_paper():
    from sims.sa import counts as C

    assert (C.VECADD_FLOPS, C.VECADD_BYTES) == (1, 12)
    assert C.POWADD_TERMS * (C.POW_EXPONENT + 1) == C.POWADD_FLOPS == 2048
    assert C.POWADD_TERMS * 8 == C.POWADD_BYTES == 256
    assert C.PHASE_OPERATIONS["powadd"]["add"] + C.PHASE_OPERATIONS["powadd"]["mul"] == C.POWADD_FLOPS
    for be in ("numpy", "numba", "cupy"):
        assert K.executed_flops_per_element(be, "vecadd") == 1
        assert K.executed_flops_per_element(be, "powadd") == 2048
    with pytest.raises(ValueError):
        K.executed_flops_per_element("numpy", "matmul")
    with pytest.raises(ValueError):
        K.executed_flops_per_element("torch", "vecadd")


def test_allocate_only_what_phases_need():
    be = get_backend("numpy")
    assert set(K.allocate(be, 10, {"vecadd"}, 0)) == {"a", "b", "c"}
    arr = K.allocate(be, 10, {"powadd"}, 0)
    assert set(arr) == {"d", "e"} and arr["e"].shape == (32, 10)
    assert set(K.allocate(be, 10, {"vecadd", "powadd"}, 0)) == {"a", "b", "c", "d", "e"}
    with pytest.raises(ValueError, match="phase"):
        K.allocate(be, 10, {"vecadd", "transpose"}, 0)
    with pytest.raises(ValueError):
        K.allocate(be, 0, {"vecadd"}, 0)


def test_e_range_keeps_pow63_normal():
    e = K.allocate(get_backend("numpy"), 5000, {"powadd"}, 3)["e"]
    assert e.dtype == np.float32
    assert e.min() >= np.float32(0.98) and e.max() <= np.float32(1.02)
    p = e.astype(np.float64) ** 63
    assert p.min() > np.finfo(np.float32).tiny * 1e30 and p.max() < 10


def reference(arr):
    b = arr["b"].astype(np.float64)
    c = arr["c"].astype(np.float64)
    e = arr["e"].astype(np.float64)
    return b + c, (e**63).sum(axis=0)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("n", [1, 1000, 5003])  # odd sizes: tails of tiles and SIMD loops
def test_kernels_against_float64_reference(name, n):
    be = make(name)
    arr = K.allocate(be, n, {"vecadd", "powadd"}, seed=11)
    host = {k: be.asnumpy(v).copy() for k, v in arr.items()}
    assert K.vecadd(be, arr) is None
    assert K.powadd(be, arr) is None
    be.synchronize()
    ref_a, ref_d = reference(host)
    np.testing.assert_allclose(be.asnumpy(arr["a"]), ref_a, rtol=1e-6)
    np.testing.assert_allclose(be.asnumpy(arr["d"]), ref_d, rtol=2e-5)  # 63 roundings per term
    # a second call adds the same amount again (d accumulates, a is overwritten)
    K.powadd(be, arr)
    K.vecadd(be, arr)
    np.testing.assert_allclose(be.asnumpy(arr["d"]), 2 * ref_d, rtol=4e-5)
    np.testing.assert_allclose(be.asnumpy(arr["a"]), ref_a, rtol=1e-6)


def test_backends_agree_to_float32_rounding():
    n = 4099
    out = {}
    for name in ALL:
        be = make(name)
        arr = K.allocate(be, n, {"vecadd", "powadd"}, seed=5)
        K.vecadd(be, arr)
        K.powadd(be, arr)
        be.synchronize()
        out[name] = (be.asnumpy(arr["a"]), be.asnumpy(arr["d"]))
    for name in ALL[1:]:
        np.testing.assert_allclose(out[name][0], out["numpy"][0], rtol=1e-5)
        np.testing.assert_allclose(out[name][1], out["numpy"][1], rtol=1e-5)
    # same order of operations everywhere on the CPU: in fact bit-identical
    assert np.array_equal(out["numba"][1], out["numpy"][1])


def test_numba_powadd_keeps_63_multiplies_per_term():
    """The optimised LLVM IR must contain the full multiply chain, not powi / square-and-multiply."""
    from numba import njit

    # cached dispatchers cannot be inspected: compile the same source uncached
    f = njit(K._powadd_nb.py_func)
    d = np.zeros(64, np.float32)
    e = np.ones((32, 64), np.float32)
    f(d, e, np.float32(1.0))
    ir = f.inspect_llvm(f.signatures[0])
    assert "llvm.powi" not in ir and "llvm.pow." not in ir
    assert not re.search(r"\bfmul (fast|reassoc|nnan|ninf|nsz|arcp|contract|afn)\b", ir)
    vec = re.findall(r"= fmul <(\d+) x float>", ir)
    scalar = re.findall(r"= fmul float ", ir)
    # main SIMD loop: 63 vector multiplies (times the interleave factor);
    # scalar remainder loop: 63 scalar multiplies (or none)
    assert len(vec) > 0 and len(vec) % 63 == 0, (len(vec), len(scalar))
    assert len(scalar) % 63 == 0
    # one vector add into d per chain: the adds are not merged or reassociated
    assert len(re.findall(r"= fadd <\d+ x float>", ir)) == len(vec) // 63


@pytest.mark.gpu
def test_real_cupy_matches_numpy():
    pytest.importorskip("cupy")
    be = get_backend("cupy")
    arr = K.allocate(be, 3001, {"vecadd", "powadd"}, seed=2)
    host = {k: be.asnumpy(v) for k, v in arr.items()}
    K.vecadd(be, arr)
    K.powadd(be, arr)
    be.synchronize()
    ref_a, ref_d = reference(host)
    np.testing.assert_allclose(be.asnumpy(arr["a"]), ref_a, rtol=1e-6)
    np.testing.assert_allclose(be.asnumpy(arr["d"]), ref_d, rtol=2e-5)
