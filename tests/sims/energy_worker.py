"""Run under ``mpiexec -n 2``: RAPL read once per host by the leader rank, energy not double counted.

argv: fake powercap root. Prints one JSON line from rank 0.
"""

import json
import sys

from mpi4py import MPI

from sims.meters.node import attribute, node_rank, open_meters

if __name__ == "__main__":
    root = sys.argv[1]
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    role = ("host", "accel")[rank]
    spec = {"energy": {"meter": "auto", "rapl_root": root}}
    meters = open_meters(spec, role, {"backend": "numpy", "cores": [rank]}, rank, node_rank(comm))
    before = meters.read()
    comm.Barrier()
    if rank == 0:  # the package counter advances by 5 J while both ranks "work"
        with open(f"{root}/intel-rapl:0/energy_uj", "w") as f:
            f.write("6000000\n")
    comm.Barrier()
    after = meters.read()
    descs = comm.gather(meters.describe(), root=0)
    deltas = comm.gather(meters.deltas(before, after), root=0)
    if rank == 0:
        row = attribute(descs, deltas)
        print(json.dumps({"readers": [sorted(d["meters"]) for d in descs], "row": row}))
