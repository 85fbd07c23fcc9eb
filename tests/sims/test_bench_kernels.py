"""Microbenchmark kernels: results, returned counts, cache-size parsing."""

import numpy as np
import pytest

from sims.backends import get_backend
from sims.backends.cupy_backend import CupyBackend
from sims.bench import kernels as B

ALL = ["numpy", "numba", "cupy-xp"]


def make(name):
    return CupyBackend(xp=np) if name == "cupy-xp" else get_backend(name)


@pytest.mark.parametrize("name", ALL)
def test_triad_result_and_bytes(name):
    be = make(name)
    st = B.triad_setup(be, 10_007, seed=3)
    b, c = be.asnumpy(st["b"]).copy(), be.asnumpy(st["c"]).copy()
    nbytes = B.triad(be, st)
    be.synchronize()
    assert nbytes == 12 * 10_007
    np.testing.assert_allclose(be.asnumpy(st["a"]), b + np.float32(3.0) * c, rtol=1e-6)
    assert np.array_equal(be.asnumpy(st["b"]), b) and np.array_equal(be.asnumpy(st["c"]), c)


@pytest.mark.parametrize("name", ALL)
def test_fma_peak_counts_and_result(name, monkeypatch):
    # small working set so the test is fast; the counts must follow the state
    monkeypatch.setattr(B, "FMA_NUMPY_BLOCK", 1000)
    monkeypatch.setattr(B, "FMA_NUMPY_STEPS", 50)
    be = make(name)
    st = B.fma_setup(be, seed=4)
    if name == "numba":
        st["steps"] = 50  # lanes are a compile-time constant of the kernel
        assert st["lanes"] == B.FMA_NUMBA_LANES
    acc0 = be.asnumpy(st["acc"]).astype(np.float64).copy()
    x, y = float(st["x"]), float(st["y"])
    flops = B.fma_peak(be, st)
    be.synchronize()
    assert flops == 2 * st["lanes"] * st["steps"] == B.fma_flops(st)
    # closed form of 50 steps of acc = acc*x + y
    s = st["steps"]
    expect = acc0 * x**s + y * (1 - x**s) / (1 - x)
    np.testing.assert_allclose(be.asnumpy(st["acc"]), expect, rtol=1e-4)
    assert 0.9 <= x <= 0.99 and 0.01 <= y <= 0.1


def test_fma_default_sizes():
    st = B.fma_setup(get_backend("numba"), seed=0)
    assert B.fma_flops(st) == 2 * 128 * 2**25
    st = B.fma_setup(get_backend("numpy"), seed=0)
    assert st["acc"].size * 4 <= 2**20  # in-cache block


def make_cache_tree(root, entries):
    for i, (level, ctype, size) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{ctype}\n")
        (d / "size").write_text(f"{size}\n")


def test_llc_bytes_from_sysfs(tmp_path):
    make_cache_tree(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"), (3, "Unified", "105M")])
    assert B.llc_bytes(str(tmp_path)) == 105 * 2**20
    assert B.triad_elements(8, llc=105 * 2**20) == (8 * 105 * 2**20 // 12) // 1024 * 1024


def test_llc_bytes_fallback_and_l2_only(tmp_path):
    assert B.llc_bytes(str(tmp_path / "missing")) == 32 * 2**20
    make_cache_tree(tmp_path, [(1, "Data", "32K"), (2, "Unified", "1024K")])
    assert B.llc_bytes(str(tmp_path)) == 2**20


def test_llc_bytes_this_machine_and_triad_elements():
    llc = B.llc_bytes()
    assert llc >= 2**20
    n = B.triad_elements()
    assert abs(3 * 4 * n - 8 * llc) <= 12 * 1024
    with pytest.raises(ValueError):
        B.triad_elements(0)


@pytest.mark.gpu
def test_real_cupy_triad_and_fma():
    pytest.importorskip("cupy")
    be = get_backend("cupy")
    st = B.triad_setup(be, 100_000, seed=1)
    assert B.triad(be, st) == 1_200_000
    be.synchronize()
    np.testing.assert_allclose(be.asnumpy(st["a"]), be.asnumpy(st["b"]) + 3 * be.asnumpy(st["c"]), rtol=1e-6)
    st = B.fma_setup(be, seed=1)
    assert B.fma_peak(be, st) == B.fma_flops(st)
