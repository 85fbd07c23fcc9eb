"""Helpers for the FDM tests: build run specs and run them in this process (one rank) or under mpiexec."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml


@pytest.fixture(scope="session", autouse=True)
def precompiled_kernels():
    """The FDM tests start once the background compile of the kernels is done (tests/conftest.py)."""
    from tests.conftest import wait_for_precompile

    wait_for_precompile()


def base_spec(**over) -> dict:
    """A small, quick, valid run spec; keyword arguments replace top-level keys."""
    doc = {
        "grid": {"shape": [24, 22, 20], "spacing": 10.0},
        "time": {"steps": 30},
        "medium": {"layers": [{"top": 0.0, "vp": 3000.0, "vs": 1700.0, "rho": 2400.0},
                              {"top": 105.0, "vp": 3600.0, "vs": 2000.0, "rho": 2600.0}]},
        "source": {"kind": "explosive", "position": [115.0, 105.0, 95.0], "f0": 6.0, "moment": 1.0e15},
        "receivers": [[135.0, 105.0, 95.0], [60.0, 150.0, 40.0], [190.0, 45.0, 150.0]],
        "boundary": {"kind": "cpml", "width": 4},
        "order": 2,
        "backend": "numba",
    }
    doc.update(copy.deepcopy(over))
    return doc


def threaded(name: str) -> bool:
    """Configurations also run on ranks of two threads: the order-2 ones through Numba, every x/y layer copy of
    the kernels in its parallel form. Compiling the parallel copies of order 4 too would cost minutes of a
    fresh clone's suite; order 4's parallel box kernels are checked in test_threads.py."""
    return name.endswith("-o2")


@pytest.fixture
def run_local(tmp_path):
    """Run a spec mapping on one rank in this process; return (seismograms, records)."""
    from mpi4py import MPI

    from sims.fdm.driver import execute

    counter = [0]

    def run(doc: dict):
        counter[0] += 1
        path = tmp_path / f"spec{counter[0]}.yaml"
        path.write_text(yaml.safe_dump(doc))
        result = execute(MPI.COMM_SELF, str(path))
        assert result.records[0]["status"] == "ok", result.records[0]["error"]
        return {k: np.asarray(v) for k, v in result.seismograms.items()}, result.records

    return run
