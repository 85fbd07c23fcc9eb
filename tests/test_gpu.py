"""Every backend kernel on a real GPU through CuPy against NumPy: the LA and PEACH phases (product, transpose),
the FDM kernels at orders 2 and 4 on one rank, and the three halo marshaling designs on two ranks sharing one
GPU. (The SA kernels, the triad and the FMA chains: tests/sims/test_sa_kernels.py, test_bench_kernels.py,
test_backends.py, also marked ``gpu``.)

Marked ``gpu``: they skip, saying why, without CuPy or a visible device (``pytest -m gpu`` selects them;
``benchmarks/gpu_acceptance.py`` runs them on a freshly provisioned GPU node). Run on no GPU yet: see docs/fdm.md.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml

from tests.conftest import REPO, run_mpi

pytestmark = pytest.mark.gpu


def _device() -> None:
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CUDA's own errors, whatever the driver says
        pytest.skip(f"no CUDA device ({type(exc).__name__}: {exc})")
    if count < 1:
        pytest.skip("no CUDA device")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_la_phases_on_cupy_equal_numpy(dtype):
    _device()
    from sims.backends import get_backend
    from sims.la import kernels as K
    from sims.la.matrix import Part

    part = Part(mm_rows=96, tr_rows=80, n_mm=128, n_tr=160, itemsize=np.dtype(dtype).itemsize)
    cpu, gpu = get_backend("numpy"), get_backend("cupy", device=0)
    ref, dev = K.allocate(cpu, part, dtype, seed=3), K.allocate(gpu, part, dtype, seed=3)
    for k in ref:  # the same data on both (each backend's generator is its own)
        dev[k] = gpu.xp.asarray(ref[k])
    for phase in part.phases:
        K.PHASES[phase](cpu, ref)
        K.PHASES[phase](gpu, dev)
    gpu.synchronize()
    assert np.array_equal(gpu.asnumpy(dev["E"]), ref["E"])  # a transpose is a copy: exact
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(gpu.asnumpy(dev["C"]), ref["C"], rtol=tol, atol=tol * np.abs(ref["C"]).max())


def _fdm_spec(**over) -> dict:
    sys.path.insert(0, str(REPO / "tests" / "fdm"))
    from conftest import base_spec

    return base_spec(**over)


@pytest.mark.parametrize("order", [2, 4])
def test_fdm_on_cupy_equals_numpy(order):
    """One rank: the seismograms of the fused CuPy kernels against the NumPy reference (relative to the largest
    amplitude: a GPU's float32 arithmetic rounds as the reference's does, without contracted multiply-adds)."""
    _device()
    from mpi4py import MPI

    from sims.fdm.driver import execute

    ref = execute(MPI.COMM_SELF, _fdm_spec(backend="numpy", order=order))
    got = execute(MPI.COMM_SELF, _fdm_spec(backend="cupy", order=order))
    assert got.records[0]["status"] == "ok", got.records[0]["error"]
    for c in ("vx", "vy", "vz"):
        scale = np.abs(ref.seismograms[c]).max()
        assert scale > 0
        assert np.abs(got.seismograms[c] - ref.seismograms[c]).max() <= 1e-5 * scale, c


DESIGNS = ("host-staging", "device-pack", "gpu-aware")


@pytest.mark.mpi
@pytest.mark.parametrize("design", DESIGNS)
def test_two_ranks_on_one_gpu_with_each_marshaling_design(tmp_path, request, env, design):
    """Two ranks share device 0, exchanging halos the way ``design`` says; their seismograms equal one NumPy
    rank's. ``gpu-aware`` hands device buffers to MPI, which only an MPI built for CUDA takes: elsewhere it
    says so and skips."""
    _device()
    if design == "gpu-aware":
        from sims.fdm.gpu_aware import device_buffers_supported

        ok, why = device_buffers_supported()
        if not ok:
            pytest.skip(f"this MPI does not take device buffers: {why}")
    mpiexec = request.getfixturevalue("mpiexec")  # after the device: no GPU is a skip, no MPI a failure
    from mpi4py import MPI

    from sims.fdm.driver import execute

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_fdm_spec(backend="cupy", marshaling=design, decomposition=[2, 1, 1])))
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import sys\nimport numpy as np\nfrom mpi4py import MPI\nfrom sims.fdm.driver import execute\n"
        "r = execute(MPI.COMM_WORLD, sys.argv[1])\n"
        "if MPI.COMM_WORLD.Get_rank() == 0:\n"
        "    assert r.records[0]['status'] == 'ok', r.records[0]['error']\n"
        "    np.savez(sys.argv[2], **r.seismograms)\n")
    out = run_mpi(mpiexec, 2, [str(worker), str(spec), str(tmp_path / "got.npz")], env, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    ref = execute(MPI.COMM_SELF, _fdm_spec(backend="numpy"))
    got = np.load(tmp_path / "got.npz")
    for c in ("vx", "vy", "vz"):
        assert np.abs(got[c] - ref.seismograms[c]).max() <= 1e-5 * np.abs(ref.seismograms[c]).max(), c
