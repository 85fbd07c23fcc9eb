"""Seismograms do not depend on the number of ranks or on how the grid is cut (real MPI ranks)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import precompiled_runs, run_mpi

from .conftest import threaded

WORKER = str(Path(__file__).with_name("invariance_worker.py"))
NAMES = ("explosive-o2", "force-o2", "explosive-o4", "force-o4", "explosive-o2-none-numpy", "force-o4-free-surface")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, mpiexec, env):
    out = tmp_path_factory.mktemp("invariance")
    done = precompiled_runs()  # one rank, of one thread and of two: run by the background compile
    for f in done.glob("*.npz") if done else ():
        shutil.copy(f, out / f.name)
    for n in (1, 2, 3, 4) if done is None else (2, 3, 4):
        proc = run_mpi(mpiexec, n, [WORKER, str(out)], env, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # ranks of two threads each: the kernels' parallel loops (Numba prange over x planes)
    threaded = dict(env, HETVAL_THREADS_PER_RANK="2", NUMBA_NUM_THREADS="2")
    for n in (1, 2) if done is None else (2,):
        proc = run_mpi(mpiexec, n, [WORKER, str(out)], threaded, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.mark.mpi
@pytest.mark.parametrize(("name", "ranks"), [(n, r) for n in NAMES for r in ("2", "3", "4", "1x2", "2x2")
                                             if "x" not in r or threaded(n)])
def test_decomposition_invariance(runs, name, ranks):
    ref = np.load(runs / f"{name}-1.npz")
    got = np.load(runs / f"{name}-{ranks}.npz")
    dims = json.loads(str(got["decomposition"]))
    assert int(np.prod(dims)) == int(ranks.split("x")[0])
    peak = max(np.abs(ref[c]).max() for c in ("vx", "vy", "vz"))
    assert peak > 0
    for c in ("vx", "vy", "vz"):
        # every point is computed by the same expression on every decomposition: bitwise equal
        assert np.array_equal(ref[c], got[c]), (c, dims, np.abs(ref[c] - got[c]).max() / peak)
    assert np.array_equal(ref["receiver_positions"], got["receiver_positions"])
