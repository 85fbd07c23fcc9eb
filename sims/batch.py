"""Measure several runs one after another in one batch job, each under :mod:`sims.guard`, each writing its own record.

Under a batch scheduler every job pays for its submission, its start and the workflow's start inside it - seconds
that dwarf a short run. The workflow can therefore hand one job a *batch*: runs of one platform and one job shape
(same nodes, tasks and cores; the job holds the memory of the largest), listed as JSON entries
``{record, spec, ranks, estimate_mb, command, log}``::

    python -m sims.batch --runs '<JSON list>'      # or --runs-file FILE holding it

Each run starts as its own job would start it (``python -m sims.guard ... -- <command>``, its output to its own
log), so its record is exactly what a job of its own writes: a run that fails is recorded as failed and the next
one starts. The batch succeeds when every run has a record, and says which ones have none otherwise.

**Rounds** (``runs.rounds``): an entry may instead list ``parts``, each ``{record, command}`` measuring a share
of the run's repetitions. The batch then measures in rounds: round ``k`` launches part ``k`` of every run, in an
order shuffled afresh each round (seeded by the batch's run ids, so a re-run repeats it). A machine whose speed
drifts or stalls for seconds then slows a share of every run's repetitions instead of all of some runs', and
the runs a ranking compares are measured at the same moments. When every part is measured, a run's record is
its parts' rows in round order, ``rep`` numbered through. A launch that failed ends the run's rounds (it is not
launched again between the other runs' measurements) and its record becomes the run's, so the run is recorded
failed and retried whole; a part whose record is unreadable becomes the run's record as it is, for gather to
quarantine. A batch killed before its last round keeps nothing of its rounds. The run's record gets its
permanent copy (:func:`sims.record.measurement_path`), as each part's record did under the part's own id.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sims.guard import failed_record
from sims.record import stable_hash, write_raw


def guard_words(entry: dict, record: str, command: str) -> list[str]:
    """The guard's command line for one launch of a batch's run: the run's record and command, or a part's."""
    return [sys.executable, "-m", "sims.guard", "--record", record, "--spec", json.dumps(entry["spec"]),
            "--ranks", str(int(entry["ranks"])), "--estimate-mb", str(float(entry["estimate_mb"])), "--", command]


def launch(words: list[str], log: Path, append: bool) -> None:
    """Run one guarded command, its output to its own log and to the batch's, as a job of its own would tee it."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a" if append else "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(words, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            sys.stdout.write(line)
        proc.wait()


def round_orders(entries: list[dict], launches: list[int]) -> list[list[int]]:
    """Each round's order of the entries with a launch in it (``launches``: each entry's count): shuffled afresh
    every round, seeded by the batch's run ids (the same batch measures in the same orders every time it runs);
    one round keeps the batch's own order."""
    rounds = max(launches, default=0)
    seed = stable_hash(sorted(str(e["spec"].get("run_id", e["record"])) for e in entries))
    orders = []
    for k in range(rounds):
        order = [i for i, n in enumerate(launches) if k < n]
        if rounds > 1:
            random.Random(f"{seed}:{k}").shuffle(order)
        orders.append(order)
    return orders


def part_rows(path: Path) -> list[dict[str, Any]] | None:
    """A part's rows, or None when its record is missing or is not a list of rows."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))["records"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return records if isinstance(records, list) and records and all(isinstance(r, dict) for r in records) else None


def part_ok(path: str) -> bool:
    """Whether a part's launch measured every repetition it was given (its rows all ``ok``)."""
    rows = part_rows(Path(path))
    return rows is not None and all(r.get("status") == "ok" for r in rows)


def merge_parts(entry: dict) -> str:
    """Write a run's record from its parts' records (see the module's docstring); returns what was done.

    A part measures the run with fewer repetitions, which its runner hashes into a run id of its own; the
    rows take the run's id (the spec's) back. Parts after a failed one were never launched."""
    rows: list[dict[str, Any]] = []
    run_id = entry["spec"]["run_id"]
    try:
        for part in entry["parts"]:
            path = Path(part["record"])
            records = part_rows(path)
            if records is None:  # unreadable: gather quarantines it and says why
                if not path.exists():
                    return f"part {path.name} has no record"
                os.replace(path, entry["record"])
                return f"part {path.name} is not a record: moved to the run's record as it is"
            for row in records:
                row["run_id"] = run_id
            if not all(r.get("status") == "ok" for r in records):  # this part says why the run did not run
                write_raw(entry["record"], run_id, records, keep=True)
                return f"part {path.name} is {records[0].get('status')}: so is the run"
            rows += records
        for rep, row in enumerate(rows):
            row["rep"] = rep
        write_raw(entry["record"], run_id, rows, keep=True)
        return f"{len(rows)} repetition(s) from {len(entry['parts'])} round(s)"
    except (OSError, ValueError) as exc:  # a row outside the record contract: the run is recorded failed
        why = f"its rounds could not be merged: {exc}".replace("\n", " ")
        write_raw(entry["record"], run_id, failed_record(entry["spec"], int(entry["ranks"]), why), keep=True)
        return why
    finally:
        for part in entry["parts"]:
            Path(part["record"]).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sims.batch", description=__doc__.splitlines()[0])
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--runs", help="the batch's runs: a JSON list of {record, spec, ranks, estimate_mb, command, "
                       "log} (with parts: [{record, command}] for rounds)")
    given.add_argument("--runs-file", help="the same list in a file (the workflow's way: one argument of a "
                       "command line holds at most 128 KiB, which a batch of long specs measured in rounds exceeds)")
    args = parser.parse_args(argv)
    try:
        text = args.runs if args.runs is not None else Path(args.runs_file).read_text(encoding="utf-8")
    except OSError as exc:
        print(f"hetval: batch: --runs-file cannot be read ({exc})", file=sys.stderr)
        return 2
    try:
        entries = json.loads(text)
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError("not a list of objects")
        for e in entries:
            missing = {"record", "spec", "ranks", "estimate_mb", "command", "log"} - set(e)
            if missing:
                raise ValueError(f"an entry lacks {', '.join(sorted(missing))}")
            parts = e.get("parts")
            if parts is not None and (not isinstance(parts, list) or not parts or not all(
                    isinstance(p, dict) and {"record", "command"} <= set(p) for p in parts)):
                raise ValueError("an entry's parts are not a non-empty list of {record, command}")
    except ValueError as exc:
        print(f"hetval: batch: --runs is not a list of runs ({exc})", file=sys.stderr)
        return 2
    started = time.monotonic()
    # a run not measured in rounds is one part: its own record and command
    parts = [e.get("parts") or [{"record": e["record"], "command": e["command"]}] for e in entries]
    rounds = max((len(p) for p in parts), default=0)
    for e in entries:  # a killed batch's parts are stale: this batch measures every part again
        for p in e.get("parts") or []:
            Path(p["record"]).unlink(missing_ok=True)
            Path(p["record"]).parent.mkdir(parents=True, exist_ok=True)
    stopped: set[int] = set()  # runs a failed launch ended: not launched again between the others' rounds
    for k, order in enumerate(round_orders(entries, [len(p) for p in parts])):
        order = [i for i in order if i not in stopped]
        for n, i in enumerate(order, 1):
            entry = entries[i]
            where = f"round {k + 1}/{rounds}, " if rounds > 1 else ""
            print(f"[hetval batch] {where}run {n}/{len(order)}: {Path(entry['record']).stem} (log {entry['log']})",
                  flush=True)
            launch(guard_words(entry, parts[i][k]["record"], parts[i][k]["command"]), Path(entry["log"]),
                   append=k > 0)
            if entry.get("parts") and k + 1 < len(parts[i]) and not part_ok(parts[i][k]["record"]):
                stopped.add(i)
                print(f"[hetval batch] {Path(entry['record']).stem}: round {k + 1} did not measure it: its later "
                      "rounds are not launched", flush=True)
    for entry in entries:
        if entry.get("parts"):
            print(f"[hetval batch] {Path(entry['record']).stem}: {merge_parts(entry)}", flush=True)
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
