"""Run the invariance configurations on the ranks of COMM_WORLD (launched by test_invariance.py under mpiexec)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import yaml
from mpi4py import MPI

from sims.fdm.driver import execute

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import base_spec, threaded  # noqa: E402

#: process grid per rank count: every axis is split by some run; 3 ranks cut y (22 cells) unevenly (8, 7, 7)
DECOMPOSITIONS = {1: [1, 1, 1], 2: [1, 1, 2], 3: [1, 3, 1], 4: [2, 2, 1]}


def configs():
    force = {"kind": "force", "position": [115.0, 105.0, 95.0], "f0": 5.0, "force": 1.0e10, "direction": [0.3, -1.0, 0.6]}
    for order in (2, 4):
        yield f"explosive-o{order}", base_spec(order=order)
        yield f"force-o{order}", base_spec(order=order, source=force)
    yield "explosive-o2-none-numpy", base_spec(boundary={"kind": "none"}, backend="numpy", marshaling="host-staging")
    yield "force-o4-free-surface", base_spec(order=4, source=force, free_surface=True)


def main(out: str) -> None:
    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    threads = int(os.environ.get("HETVAL_THREADS_PER_RANK", "1"))  # the kernels' parallel loops when > 1
    tag = f"{size}x{threads}" if threads > 1 else str(size)
    for name, doc in configs():
        if threads > 1 and not threaded(name):
            continue
        doc["decomposition"] = DECOMPOSITIONS[size]
        if threads > 1:
            doc["threads_per_rank"] = threads
        path = Path(out) / f"{name}-{tag}.yaml"
        if comm.Get_rank() == 0:
            path.write_text(yaml.safe_dump(doc))
        comm.Barrier()
        result = execute(comm, str(path))
        if comm.Get_rank() == 0:
            rec = result.records[0]
            if rec["status"] != "ok":
                raise SystemExit(f"{name} on {size} ranks failed: {rec['error']}")
            np.savez(Path(out) / f"{name}-{tag}.npz", **result.seismograms, decomposition=rec["decomposition"])


if __name__ == "__main__":
    main(sys.argv[1])
