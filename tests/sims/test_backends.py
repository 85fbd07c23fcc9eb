"""Backends: selection, errors, deterministic data, and the numpy-as-xp cupy path."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sims.backends import get_backend
from sims.backends.cupy_backend import CupyBackend


def cupy_as_numpy():
    return CupyBackend(xp=np)


def make(name):
    return cupy_as_numpy() if name == "cupy-xp" else get_backend(name)


ALL = ["numpy", "numba", "cupy-xp"]


def test_import_does_not_import_gpu_modules():
    code = (
        "import sys, sims.backends, sims.sa.kernels, sims.bench.kernels, sims.meters\n"
        "sims.backends.get_backend('numpy')\n"
        "bad = [m for m in ('cupy', 'pynvml') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr


def test_unknown_backend_lists_allowed():
    with pytest.raises(ValueError, match="numpy, numba, cupy"):
        get_backend("torch")


def test_cpu_backend_rejects_device():
    with pytest.raises(ValueError, match="device"):
        get_backend("numpy", device=0)


def test_cupy_missing_is_clear_runtime_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    with pytest.raises(RuntimeError, match="CuPy is not importable"):
        get_backend("cupy")


@pytest.mark.parametrize("name", ALL)
def test_interface(name):
    be = make(name)
    assert be.name == ("cupy" if name == "cupy-xp" else name)
    assert be.xp is np
    z = be.zeros((3, 4))
    assert z.dtype == np.float32 and z.shape == (3, 4) and not z.any()
    assert be.zeros(5, dtype=np.float64).dtype == np.float64
    be.synchronize()
    assert isinstance(be.asnumpy(z), np.ndarray)


@pytest.mark.parametrize("name", ALL)
def test_uniform_deterministic_in_range_and_equal_across_backends(name):
    be = make(name)
    u = be.asnumpy(be.uniform((4, 1000), 0.98, 1.02, seed=7))
    ref = get_backend("numpy").uniform((4, 1000), 0.98, 1.02, seed=7)
    assert u.dtype == np.float32 and u.shape == (4, 1000)
    assert u.min() >= np.float32(0.98) and u.max() <= np.float32(1.02)
    assert np.array_equal(u, ref)
    assert not np.array_equal(u, be.asnumpy(be.uniform((4, 1000), 0.98, 1.02, seed=8)))
    assert u.std() > 0.005  # actually spread over the range


def test_cupy_xp_backend_is_not_native():
    be = cupy_as_numpy()
    assert be.native is False and be.is_gpu
    assert get_backend("numpy").native is True


@pytest.mark.gpu
def test_real_cupy_backend():
    cp = pytest.importorskip("cupy")
    be = get_backend("cupy", device=0)
    assert be.xp is cp and be.native
    a = be.uniform(1000, 0.0, 1.0, seed=1)
    be.synchronize()
    assert np.array_equal(be.asnumpy(a), get_backend("numpy").uniform(1000, 0.0, 1.0, seed=1))


def test_placed_arrays_start_where_asked_in_their_page():
    from sims.backends.numpy_backend import PAGE, placed_empty
    from sims.bench import ops

    for offset in (0, 64, 2048):
        a = placed_empty((32, 2048), np.float32, offset)
        assert a.shape == (32, 2048) and a.flags.c_contiguous and a.ctypes.data % PAGE == offset
    with pytest.raises(ValueError, match="multiple of 64"):
        placed_empty(10, np.float64, 16)
    # the NumPy chains' block and operands: on cache lines, in different places of their pages
    state = ops.states(1 << 12, 0, "numpy")["float32"]
    starts = [state["buf"].ctypes.data % PAGE, ops._operand(state, "c", "fma").ctypes.data % PAGE,
              ops._operand(state, "d", "fma").ctypes.data % PAGE]
    assert starts == [0, 1024, 2048]
