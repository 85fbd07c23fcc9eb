"""Measure several runs in one MPI launch, one after another, each through its own runner's ``main``.

A study measured in rounds launches every run once per round. Paying a launch (the MPI start-up, the imports,
the kernels loaded from Numba's cache) per run and round would make rounds cost more than the runs; instead
:mod:`sims.batch` starts one launch per job shape and round, which runs a *plan*::

    mpiexec -n 2 python -m mpi4py -m sims.launch --plan PLAN.json --progress PROGRESS

The plan is a JSON list of ``{"runner": [module, arg, ...], "record": path, "spec": {...}, "ranks": n}``: each entry is exactly the
runner's own command line without its launcher (``sims.run --spec ... --out ...``, ``sims.fdm run ...``), so a
run measured here writes the record it writes when launched alone. Before each entry every rank gets back the
CPU affinity the launcher gave it (a runner that pins its ranks does not pin the next one's) and waits at a
barrier, so no rank runs ahead into another run's region.

Rank 0 appends ``start <i>`` and ``done <i>`` to the progress file around entry ``i``: when the launch dies
(a signal, the out-of-memory killer, an MPI abort), the batch knows which entry was running - it is recorded
failed with the reason - and launches the entries not yet started again. An exception that escapes a runner on
one rank aborts the launch (the other ranks could wait in the runner's collectives for ever), with the same
outcome. An entry that returned without writing its record is recorded failed here, naming what it returned.
The launch exits 0 when every entry ran.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from sims._threads import limit_threads, threads_per_rank


def read_plan(text: str) -> list[dict[str, Any]]:
    """The plan's entries; ValueError naming what is wrong."""
    plan = json.loads(text)
    if not isinstance(plan, list):
        raise ValueError("a plan is a JSON list of {runner, record}")
    for i, entry in enumerate(plan):
        if not isinstance(entry, dict) or not {"runner", "record"} <= set(entry):
            raise ValueError(f"entry {i} is not {{runner, record}}")
        runner = entry["runner"]
        if not isinstance(runner, list) or not runner or not all(isinstance(w, str) for w in runner):
            raise ValueError(f"entry {i}: runner is not a non-empty list of words (module, then arguments)")
    return plan


def run_entry(runner: list[str]) -> Any:
    """Call ``main(argv)`` of the runner's module (``runner[0]``) with the rest of its words; a runner that
    raises or exits returns what it raised or its exit code, never ending the launch."""
    module = importlib.import_module(runner[0])
    main = getattr(module, "main", None)
    if main is None and hasattr(module, "__path__"):  # a package run as ``python -m package``
        main = getattr(importlib.import_module(f"{runner[0]}.__main__"), "main", None)
    if main is None:
        raise ValueError(f"runner module {runner[0]!r} has no main(argv)")
    try:
        return main(list(runner[1:]))
    except SystemExit as exc:  # argparse and friends
        return exc.code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpi4py -m sims.launch", description=__doc__.splitlines()[0])
    parser.add_argument("--plan", required=True, help="the plan: a JSON file of [{runner, record}]")
    parser.add_argument("--progress", default=None, help="rank 0 appends 'start i' and 'done i' here")
    args = parser.parse_args(argv)
    from mpi4py import MPI

    from sims import record as rec
    from sims.guard import failed_record

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        plan = read_plan(Path(args.plan).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if rank == 0:
            print(f"hetval: launch: the plan cannot be used ({exc})", file=sys.stderr, flush=True)
        return 2
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    gc.freeze()  # what is loaded so far lives as long as the launch: the collections after each run skip it
    progress = open(args.progress, "a", encoding="utf-8") if (args.progress and rank == 0) else None  # noqa: SIM115
    with progress if progress is not None else contextlib.nullcontext():
        for i, entry in enumerate(plan):
            if affinity is not None:
                os.sched_setaffinity(0, affinity)
            comm.Barrier()
            if progress is not None:
                progress.write(f"start {i}\n")
                progress.flush()
                print(f"[hetval launch] entry {i + 1}/{len(plan)}: {Path(entry['record']).name}", flush=True)
            started = time.monotonic()
            try:
                status = run_entry(entry["runner"])
            except BaseException:  # noqa: BLE001 - a runner's own errors are its records; this one escaped it
                # on this rank alone: the other ranks may wait in the runner's collectives for ever. The launch ends
                # here, as the run's own launch would have, and the batch records this run failed and launches the rest
                traceback.print_exc()
                sys.stdout.flush()
                sys.stderr.flush()
                comm.Abort(1)
                raise
            # the run's arrays are freed now, not whenever the collector next runs (a job's kernels refer back to
            # it): the next run then reuses their memory instead of faulting in fresh pages, which cost seconds
            gc.collect()
            gc.freeze()  # what survived (modules the runner imported, their caches) is not traversed again
            comm.Barrier()
            if rank == 0:
                if not Path(entry["record"]).exists():
                    spec = entry.get("spec") or {}
                    why = (f"its runner ({entry['runner'][0]}) returned {status!r} after "
                           f"{time.monotonic() - started:.1f} s and wrote no record")
                    rows = failed_record(spec, int(entry.get("ranks") or comm.Get_size()), why) if spec else []
                    if rows:
                        rec.write_raw(entry["record"], rows[0]["run_id"], rows, keep=True)
                print(f"[hetval launch] entry {i + 1} took {time.monotonic() - started:.2f} s", flush=True)
                if progress is not None:
                    progress.write(f"done {i}\n")
                    progress.flush()
    return 0


if __name__ == "__main__":
    limit_threads(threads_per_rank())  # before any runner's imports load NumPy / Numba thread pools
    sys.exit(main())
