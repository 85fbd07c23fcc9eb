"""Run one job's command and, when it dies without saying why, say it in one line and keep a record of it.

A rank killed by the kernel's out-of-memory killer (or by any signal) ends its job before the runner can
write a failed record, so the run would vanish from the study. The workflow starts every run (and every
characterisation) under this guard::

    python -m sims.guard --record results/raw/<study>/<run_id>.json --spec '<run spec JSON>' --ranks 2 \
        --estimate-mb 1536 -- <the run's command>

When the command ends and no record exists, the guard writes a ``failed`` record (every rank's absence as
one row, ``rep`` 0) whose error says what happened in one line - ``killed by the kernel (out of memory):
estimate 1.5 GiB, node 23.4 GiB`` when the kernel's count of out-of-memory kills rose while the job ran (the
node's figure is what the job may use: the machine's memory, or the memory cgroup's or SLURM's limit, named) -
and exits 0, so that gather keeps the failure and its retry rule decides (a run that fails the same way
``runs.max_attempts`` times in a row is given up, not retried in a loop). Without ``--record`` (a
characterisation) the line goes to standard error and the command's own status is kept.

A command that fails within a minute having written nothing - and not killed for memory - is started once more
first (``--relaunch``, saying so): an MPI start-up that fails on one rank (MPICH over UCX does, now and
then, under ``srun``) measured nothing, so starting again loses nothing.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from typing import Any

from sims import record as rec
from sims.memory import oom_kills

#: a launch that fails faster than this, having written nothing, is started once more (``--relaunch``)
RELAUNCH_WITHIN_S = 60.0


def describe(returncode: int, oom_before: int | None, oom_after: int | None, estimate_mb: float | None,
             node_mb: float | None, node_what: str = "node") -> str:
    """One line: why a job ended without its output."""
    sizes = ", ".join(x for x in (f"estimate {estimate_mb / 1024:.1f} GiB" if estimate_mb else "",
                                  f"{node_what} {node_mb / 1024:.1f} GiB" if node_mb else "") if x)
    if oom_before is not None and oom_after is not None and oom_after > oom_before:
        return "killed by the kernel (out of memory)" + (f": {sizes}" if sizes else "")
    sig = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if sig > 0:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"ended by {name} and wrote no record" + (f" ({sizes})" if sizes else "")
    return f"exited with status {returncode} and wrote no record"


def failed_record(spec: dict[str, Any], ranks: int, error: str) -> list[dict[str, Any]]:
    """The one row of a run that left no record of its own."""
    prov = rec.provenance()
    size = spec.get("size")
    return [{**{name: None for name in rec.FIELD_TYPES},
             "run_id": rec.run_id_of(spec) if "run_id" not in spec else spec["run_id"],
             "study": spec["study"], "case": spec["case"], "variant": spec["variant"],
             "params": rec.canonical_json(spec.get("params", {})), "platform": spec["platform"], "ranks": int(ranks),
             "size": int(size) if size is not None else None, "rep": 0, "status": "failed", "error": error,
             "energy_source": "none", "started_at": rec.utc_now(), "config_hash": spec.get("config_hash", "unknown"),
             **prov}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sims.guard", description=__doc__.splitlines()[0])
    parser.add_argument("--record", default=None, help="the raw record the command writes (runs)")
    parser.add_argument("--spec", default=None, help="the run spec as JSON text (with --record)")
    parser.add_argument("--ranks", type=int, default=1, help="the run's ranks (with --record)")
    parser.add_argument("--estimate-mb", type=float, default=None, help="the job's memory estimate (MB per node)")
    parser.add_argument("--node-mb", type=float, default=None,
                        help="the node's memory (MB; default: what this job may use, as sims.memory measures it)")
    parser.add_argument("--relaunch", type=int, default=1,
                        help="start again this many times a command that failed within "
                             f"{RELAUNCH_WITHIN_S:g} s, wrote no record and was not killed for memory")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command (one shell string or words)")
    args = parser.parse_args(argv)
    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not words:
        parser.error("no command after --")
    if args.node_mb is None:
        from sims.memory import memory_limit

        limit = memory_limit()
        args.node_mb = limit.bytes / 2**20
        node_what = "node" if limit.source == "this machine" else f"limit ({limit.source})"
    else:
        node_what = "node"
    from pathlib import Path

    for attempt in range(1 + max(0, args.relaunch)):
        before = oom_kills()
        started = time.monotonic()
        proc = subprocess.run(words[0] if len(words) == 1 else words, shell=len(words) == 1)
        after = oom_kills()
        took = time.monotonic() - started
        wrote = args.record is not None and Path(args.record).exists()
        # (a rank that failed its MPI start-up under srun --kill-on-bad-exit shows as its step's SIGTERM)
        if proc.returncode == 0 or wrote or after != before or took > RELAUNCH_WITHIN_S or attempt == args.relaunch:
            break
        # died at once and measured nothing: an MPI start-up that failed on one rank (MPICH over UCX does, now
        # and then, under srun), not the run's own failure - started once more before anything is recorded
        print(f"hetval: the launch ended with status {proc.returncode} after {took:.1f} s and wrote nothing: "
              f"starting it again ({attempt + 2} of {args.relaunch + 1})", file=sys.stderr, flush=True)

    if args.record is None:
        if proc.returncode != 0:
            print(f"hetval: {describe(proc.returncode, before, after, args.estimate_mb, args.node_mb, node_what)}",
                  file=sys.stderr, flush=True)
        return proc.returncode
    if Path(args.record).exists():
        return proc.returncode
    why = describe(proc.returncode, before, after, args.estimate_mb, args.node_mb, node_what)
    spec = json.loads(args.spec or "{}")
    records = failed_record(spec, args.ranks, why)
    rec.write_raw(args.record, records[0]["run_id"], records, keep=True)
    print(f"[hetval run] {spec.get('study')} {spec.get('case')} {spec.get('variant')} on {spec.get('platform')}: "
          f"FAILED - {why}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
