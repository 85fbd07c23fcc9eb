"""Measure several runs one after another in one batch job, each under :mod:`sims.guard`, each writing its own record.

Under a batch scheduler every job pays for its submission, its start and the workflow's start inside it - seconds
that dwarf a short run. The workflow can therefore hand one job a *batch*: runs of one platform and one job shape
(same nodes, tasks and cores; the job holds the memory of the largest), listed as JSON entries
``{record, spec, ranks, estimate_mb, command, log}``::

    python -m sims.batch --runs '<JSON list>'

Each run starts as its own job would start it (``python -m sims.guard ... -- <command>``, its output to its own
log), so its record is exactly what a job of its own writes: a run that fails is recorded as failed and the next
one starts. The batch succeeds when every run has a record, and says which ones have none otherwise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def guard_words(entry: dict) -> list[str]:
    """The guard's command line for one run of a batch."""
    return [sys.executable, "-m", "sims.guard", "--record", entry["record"], "--spec", json.dumps(entry["spec"]),
            "--ranks", str(int(entry["ranks"])), "--estimate-mb", str(float(entry["estimate_mb"])), "--",
            entry["command"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sims.batch", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", required=True, help="the batch's runs: a JSON list of "
                        "{record, spec, ranks, estimate_mb, command, log}")
    args = parser.parse_args(argv)
    try:
        entries = json.loads(args.runs)
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError("not a list of objects")
        for e in entries:
            missing = {"record", "spec", "ranks", "estimate_mb", "command", "log"} - set(e)
            if missing:
                raise ValueError(f"an entry lacks {', '.join(sorted(missing))}")
    except ValueError as exc:
        print(f"hetval: batch: --runs is not a list of runs ({exc})", file=sys.stderr)
        return 2
    started = time.monotonic()
    for k, entry in enumerate(entries, 1):
        log = Path(entry["log"])
        log.parent.mkdir(parents=True, exist_ok=True)
        print(f"[hetval batch] run {k}/{len(entries)}: {Path(entry['record']).stem} (log {log})", flush=True)
        with log.open("w", encoding="utf-8") as fh:
            proc = subprocess.Popen(guard_words(entry), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            assert proc.stdout is not None
            for line in proc.stdout:  # its own log, and the batch's, as a job of its own would tee it
                fh.write(line)
                sys.stdout.write(line)
            proc.wait()
    missing = [e["record"] for e in entries if not Path(e["record"]).exists()]
    took = time.monotonic() - started
    if missing:
        print(f"hetval: batch: {len(missing)} of {len(entries)} run(s) wrote no record: {', '.join(missing)}",
              file=sys.stderr)
        return 1
    print(f"[hetval batch] {len(entries)} run(s) recorded in {took:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
