"""The CuPy code paths (array module, device buffers, the three marshaling designs) on 2 real MPI ranks.

No GPU here: a stand-in CuPy (tests/fdm/fake_gpu) whose device arrays are NumPy
arrays counts every host<->device copy. The numbers must equal the NumPy
reference, and each design must move what it says it moves.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.conftest import run_mpi

from .conftest import base_spec

WORKER = str(Path(__file__).with_name("gpu_worker.py"))
DESIGNS = ("host-staging", "device-pack", "gpu-aware")


@pytest.fixture(scope="module")
def gpu_runs(tmp_path_factory, mpiexec, env):
    out = tmp_path_factory.mktemp("gpu")
    for design in DESIGNS:
        spec = out / f"{design}.yaml"
        spec.write_text(yaml.safe_dump(base_spec(backend="cupy", marshaling=design, decomposition=[2, 1, 1])))
        proc = run_mpi(mpiexec, 2, [WORKER, str(spec), str(out / design)], env, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.mark.mpi
def test_gpu_paths_match_the_numpy_reference(gpu_runs, run_local):
    ref, _ = run_local(base_spec(backend="numpy"))
    for design in DESIGNS:
        got = np.load(gpu_runs / f"{design}.npz")
        for c in ("vx", "vy", "vz"):
            assert np.array_equal(ref[c], got[c]), (design, c)


@pytest.mark.mpi
def test_each_design_moves_what_it_says(gpu_runs):
    info = {d: json.loads((gpu_runs / f"{d}.json").read_text()) for d in DESIGNS}
    d2h = {d: sum(t["d2h_bytes"] for t in info[d]["transfers"]) for d in DESIGNS}
    h2d_time = {d: max(info[d]["phases"]["h2d"]) for d in DESIGNS}
    # gpu-aware: device buffers go to MPI directly; only the traces come back at the end
    assert h2d_time["gpu-aware"] == 0.0 and h2d_time["device-pack"] > 0 and h2d_time["host-staging"] > 0
    # host-staging copies whole fields each exchange, device-pack only the packed faces
    assert d2h["host-staging"] > 10 * d2h["device-pack"] > 10 * d2h["gpu-aware"]


@pytest.mark.mpi
def test_the_gpu_runs_one_fused_kernel_per_half_step_and_box(gpu_runs):
    info = json.loads((gpu_runs / "gpu-aware.json").read_text())
    launches = info["fused_launches"]
    spec = base_spec()
    bulk = [k for k in launches if "bulk" in k]
    assert {k.split("_")[1] for k in bulk} == {"velocity", "stress"}
    # rank 0's launches: every step of warm-up and repetitions runs each half-step's kernel once per box
    assert all(launches[k] >= spec["time"]["steps"] for k in bulk)
    assert spec["boundary"]["kind"] == "cpml" and any("pml" in k for k in launches)  # and the slabs' kernels

