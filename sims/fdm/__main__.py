"""Run one FDM simulation under MPI and write its seismograms and run record.

Usage::

    mpiexec -n P python -m mpi4py -m sims.fdm run --config SPEC.yaml --out DIR
    mpiexec -n P python -m mpi4py -m sims.fdm run --spec-text '<JSON>' --out DIR   # writes DIR/spec.yaml first

Writes ``DIR/seismograms.npz`` and ``DIR/record.json`` (the raw-record file
of docs/contracts.md: ``{"run_id", "records": [...]}``, one record per repetition).
A spec that cannot run, or an error on any rank, still writes a ``failed``
record; the exit status is then 1 (0 with ``--record-failures``, which the
workflow uses so that a study goes on).
"""

from __future__ import annotations

from sims._threads import limit_threads, threads_per_rank

limit_threads(threads_per_rank())  # one per rank unless the scale gives threads_per_rank

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402

from sims.fdm.driver import execute, write_outputs  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpi4py -m sims.fdm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one simulation")
    given = run.add_mutually_exclusive_group(required=True)
    given.add_argument("--config", help="the run spec (YAML)")
    given.add_argument("--spec-text", help="the run spec as JSON text (written to OUT/spec.yaml for the record): "
                       "how sims.launch hands it over, with no file written before the launch")
    run.add_argument("--out", required=True, help="output directory (created)")
    run.add_argument("--raw-record", default=None,
                     help="also write the records to this path (the workflow's results/raw/<study>/<run_id>.json)")
    run.add_argument("--record-failures", action="store_true",
                     help="exit 0 after recording a failed run (the workflow's mode)")
    run.add_argument("--config-hash", default=os.environ.get("HETVAL_CONFIG_HASH", "unknown"),
                     help="hash of the study config (provenance; default $HETVAL_CONFIG_HASH)")
    args = parser.parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    config = args.config
    if args.spec_text is not None:
        config = os.path.join(args.out, "spec.yaml")
        if comm.Get_rank() == 0:
            from sims.atomic import atomic_write_text

            os.makedirs(args.out, exist_ok=True)
            atomic_write_text(config, args.spec_text + "\n")
        comm.Barrier()
    try:
        result = execute(comm, config, args.config_hash)
    except Exception:  # noqa: BLE001 - a bug in the driver itself: say where, exit non-zero
        traceback.print_exc()
        return 1
    if comm.Get_rank() != 0:
        return 0
    write_outputs(args.out, result, args.raw_record)
    first = result.records[0]
    if first["status"] != "ok":
        print(f"[hetval fdm] FAILED: {first['error']}", file=sys.stderr, flush=True)
        return 0 if args.record_failures else 1
    print(result.summary(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
