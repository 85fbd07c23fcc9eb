"""Kernels compiled once per machine when processes start together (sims.backends.jit.compile_once)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import tool_env

SCRIPT = textwrap.dedent('''
    import sys, time
    from numba import njit
    from sims.backends.jit import compile_once

    @njit(cache=True)
    def kernel(a):
        s = 0.0
        for x in a:
            s += x * x
        return s

    def first_call():
        kernel(__import__("numpy").ones(3))
        time.sleep(float(sys.argv[1]))  # still compiling, as far as a process that starts meanwhile can tell

    compile_once("test-kernel", first_call)
    compile_once("test-kernel", first_call)  # once per process: no second call
    print(kernel.stats.cache_hits and "loaded" or "compiled", sum(kernel.stats.cache_misses.values()))
''')


def test_processes_that_start_together_compile_a_kernel_once(tmp_path):
    (tmp_path / "k.py").write_text(SCRIPT)
    env = dict(tool_env(), NUMBA_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "k.py"), "1"], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    said = sorted(out.split()[0] for out, _ in outs)
    assert said == ["compiled", "loaded"], outs
    assert list(tmp_path.glob("hetval-numba-*/test-kernel.lock"))


def test_a_simulation_compiles_its_kernels_without_touching_a_cell(monkeypatch):
    import numpy as np
    from mpi4py import MPI

    from sims.backends import jit
    from sims.fdm.solver import Simulation
    from sims.fdm.spec import parse
    from tests.fdm.conftest import base_spec

    monkeypatch.setattr("sims.fdm.solver._kernel_threads", lambda: 1)  # the serial kernels the suite compiles first
    sim = Simulation(parse(base_spec()), MPI.COMM_SELF)
    rng = np.random.default_rng(1)
    for f in sim.fields.values():
        f[...] = rng.standard_normal(f.shape).astype(np.float32)
    before = {n: f.copy() for n, f in sim.fields.items()}
    sim.compile_kernels()
    assert all(np.array_equal(before[n], f) for n, f in sim.fields.items())
    names = {k.__name__ for phase in ("velocity", "stress") for k, _ in sim._plans[phase]}
    assert names and names <= {n.rsplit("-", 1)[0] for n in jit._READY}


def test_a_lock_held_by_a_stopped_process_is_waited_out(tmp_path, monkeypatch):
    import fcntl
    import os

    from sims.backends import jit

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    folder = tmp_path / f"hetval-numba-{os.getuid()}"
    folder.mkdir()
    ran = []
    with open(folder / "stuck.lock", "a") as held:  # another open file description: as another process's lock
        fcntl.flock(held, fcntl.LOCK_EX)
        jit.compile_once("stuck", lambda: ran.append(1), wait=0.5)
    assert ran == [1] and "stuck" in jit._READY
    jit._READY.discard("stuck")
