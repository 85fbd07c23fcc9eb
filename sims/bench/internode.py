"""The interconnect between two nodes: MPI ping-pong between one rank on each, fitted as latency + size / bandwidth.

Characterisation measures a platform's processors and the MPI path between
its two ranks *inside one node* (:mod:`sims.bench.characterize`). A platform
whose runs span nodes also needs the path *between* nodes, which the FDM
model uses for every halo message to a rank on another node
(:mod:`analysis.equations.fdm`). This job measures it: launched with two ranks
on two nodes (``srun --mpi=pmi2 -n 2 -N 2``, which the workflow's
``characterize_inter_node`` rule does), it checks that the ranks really sit on
different nodes, runs the same ping-pong as characterisation and writes
``<platform>.network.json`` beside the platform file (the *network overlay*,
merged by :func:`sims.platform_file.read_platform` into
``network.inter_node``)::

    srun --mpi=pmi2 -n 2 -N 2 python -m mpi4py -m sims.bench.internode \\
        --platform NAME --out results/<study>/platforms/NAME.network.json

Two ranks on one node are refused (that would measure shared memory and call
it the network); ``--allow-same-node`` runs anyway and marks the result
``same_node: true`` - for testing the job on one machine, never for a model.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sims.atomic import atomic_write_text


class SameNodeError(RuntimeError):
    """The two ranks of the inter-node ping-pong share a node."""


def measure(comm: Any, platform: str, repetitions: int = 7, allow_same_node: bool = False) -> dict[str, Any] | None:
    """Ping-pong between world ranks 0 and 1 on two nodes; rank 0 returns the overlay document."""
    from mpi4py import MPI

    from sims import record as rec
    from sims.bench import pingpong

    if comm.Get_size() != 2:
        raise ValueError(f"the inter-node ping-pong needs 2 ranks (one per node), got {comm.Get_size()}")
    hosts = comm.allgather(MPI.Get_processor_name())
    same = hosts[0] == hosts[1]
    if same and not allow_same_node:
        raise SameNodeError(f"both ranks run on node {hosts[0]!r}: launch them on two nodes "
                            "(srun --mpi=pmi2 -n 2 -N 2), or pass --allow-same-node to test the job on one machine")
    if comm.Get_rank() == 0:
        print(f"[hetval characterize] {platform}: MPI ping-pong between nodes {hosts[0]} and {hosts[1]}, "
              f"{len(pingpong.SIZES)} sizes {pingpong.SIZES[0]} B .. {pingpong.SIZES[-1]} B", flush=True)
    samples = pingpong.measure(comm, repetitions=repetitions,
                               say=lambda text: print(f"[hetval characterize] {platform}: {text}", flush=True))
    if comm.Get_rank() != 0:
        return None
    f = pingpong.fit(samples)
    method = ("MPI ping-pong between one rank on each of two nodes: median one-way time of the smallest message; "
              "t_net from the least-squares T(m) = L + m t_net")
    return {
        "platform": platform,
        "measured_at": rec.utc_now(),
        "inter_node": {
            "latency": {"value": f["latency_s"], "unit": "s", "obtained": "measured", "method": method},
            "t_net": {"value": f["t_net"], "unit": "s/byte", "obtained": "measured", "method": "same fit (slope)",
                      "rate_median": 1.0 / f["t_net"] if f["t_net"] > 0 else None},
            "nodes": hosts,
            "same_node": same,
            "r2": f["r2"],
            "residuals_s": f["residuals_s"],
            "samples_s": f["samples_s"],
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpi4py -m sims.bench.internode",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--platform", required=True, help="the platform's name (as in the study config)")
    parser.add_argument("--out", required=True, help="the network overlay to write (<platform>.network.json)")
    parser.add_argument("--repetitions", type=int, default=7, help="timed samples per message size (default 7)")
    parser.add_argument("--allow-same-node", action="store_true",
                        help="run even when both ranks share a node (testing only; the result says so)")
    args = parser.parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    try:
        doc = measure(comm, args.platform, args.repetitions, args.allow_same_node)
    except (SameNodeError, ValueError) as exc:
        if comm.Get_rank() == 0:
            print(f"[hetval characterize] error: {exc}", file=sys.stderr, flush=True)
        return 2
    if doc is not None:
        atomic_write_text(args.out, json.dumps(doc, indent=1))
        inter = doc["inter_node"]
        print(f"[hetval characterize] {args.platform} between nodes: latency {inter['latency']['value'] * 1e6:.2f} us, "
              f"{(inter['t_net']['rate_median'] or 0) / 1e9:.2f} GB/s -> {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    from sims._threads import limit_threads

    limit_threads(1)
    sys.exit(main())
