"""Subnormal floats flushed to zero while the solver and its calibration run (sims/fdm/subnormals.py)."""

from __future__ import annotations

import contextlib
import platform
import sys

import numpy as np
import pytest
import yaml

from sims.fdm.subnormals import flushed, flushing
from tests.fdm.conftest import base_spec

KNOWN = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64")
TINY = np.finfo(np.float32).tiny


def _subnormals(arrays) -> int:
    return sum(int(np.count_nonzero((a != 0) & (np.abs(a) < TINY))) for a in arrays)


@pytest.mark.skipif(not KNOWN, reason="the flush bits are set here only on Linux on x86_64 and aarch64")
def test_flushed_sets_the_bits_and_restores_them():
    a, b = np.float32(1e-30), np.float32(1e-9)
    assert not flushing() and a * b != 0  # gradual underflow outside
    with flushed() as ok:
        assert ok and flushing()
        assert a * b == 0 and np.float32(1e-39) + np.float32(0) == 0  # results and operands flushed
    assert not flushing() and a * b != 0


@pytest.mark.skipif(not KNOWN, reason="the flush bits are set here only on Linux on x86_64 and aarch64")
def test_an_order_4_wavefield_underflows_unless_flushed():
    """The mechanism behind the flush: the stencil's far taps carry values below float32's normal range ahead
    of the wave (IEEE arithmetic on any core); flushed, the wavefield holds none. On one thread: the flags of
    Numba's worker threads are those of the moment this process started them (sims/fdm/subnormals.py)."""
    import numba
    from mpi4py import MPI

    from sims.fdm.solver import Simulation
    from sims.fdm.spec import parse

    spec = parse(base_spec(order=4, time={"steps": 20}, boundary={"kind": "none"},
                           grid={"shape": [40, 22, 20], "spacing": 10.0}))

    def count(flush: bool) -> int:
        sim = Simulation(spec, MPI.COMM_SELF)
        assert sim.threads == 1
        with flushed() if flush else contextlib.nullcontext():
            sim.run()
        return _subnormals(sim.fields.values())

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert count(flush=True) == 0
        assert count(flush=False) > 0
        assert count(flush=True) == 0
    finally:
        numba.set_num_threads(threads)


@pytest.mark.skipif(not KNOWN, reason="the flush bits are set here only on Linux on x86_64 and aarch64")
def test_the_driver_times_its_loop_flushed_and_restores_the_flags(monkeypatch, tmp_path):
    from mpi4py import MPI

    from sims.fdm import driver
    from sims.fdm.solver import Simulation

    seen: list[bool] = []

    class Spy(Simulation):
        def run(self) -> float:
            seen.append(flushing())
            return super().run()

    monkeypatch.setattr(driver, "Simulation", Spy)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(dict(base_spec(time={"steps": 3}), warmup=1, repetitions=2)))
    result = driver.execute(MPI.COMM_SELF, str(path))
    assert result.records[0]["status"] == "ok", result.records[0]["error"]
    assert seen == [True, True, True]
    assert not flushing()


@pytest.mark.skipif(not KNOWN, reason="the flush bits are set here only on Linux on x86_64 and aarch64")
def test_the_calibration_measures_its_half_steps_flushed():
    from sims.bench import fdm_calib

    seen: list[bool] = []

    def timed(work):
        work()
        seen.append(flushing())
        return [1e-3, 1e-3, 1e-3]

    fdm_calib.measure(True, "numba", [2], [[8, 8, 8]], [0], timed)
    assert seen and all(seen)
    assert not flushing()
