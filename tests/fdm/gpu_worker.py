"""Run one spec with the stand-in CuPy on the ranks of COMM_WORLD; rank 0 saves seismograms, phases, transfers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "fake_gpu"))

import cupy  # noqa: E402 - the stand-in
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from sims.fdm.driver import execute  # noqa: E402


def main(spec: str, out: str) -> None:
    comm = MPI.COMM_WORLD
    result = execute(comm, spec)
    transfers = comm.gather(dict(cupy.TRANSFERS), root=0)
    if comm.Get_rank() == 0:
        rec = result.records[0]
        if rec["status"] != "ok":
            raise SystemExit(rec["error"])
        np.savez(out + ".npz", **result.seismograms)
        Path(out + ".json").write_text(json.dumps({"phases": json.loads(rec["phase_times"]), "transfers": transfers,
                                                  "fused_launches": dict(cupy.CALLS)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
