"""Measure a batch of runs in one job: in shuffled rounds, one launch per job shape and round.

A study's runs are measured interleaved: every run's repetitions are spread over the study, so a moment when the
machine slows down costs one repetition of several runs, never all repetitions of one. The workflow hands one
job a *batch* - the runs of one platform on one node - as JSON entries
``{record, spec, ranks, estimate_mb, command, log}``, with, for a case that gives one, the run's ``runner`` (its
MPI program's words without the launcher) and ``launch`` (the launcher prefix of its job shape, e.g.
``mpiexec -n 2``)::

    python -m sims.batch --runs '<JSON list>'      # or --runs-file FILE holding it

**Rounds** (``runs.rounds``): an entry lists ``parts``, each ``{record, command, runner}`` measuring a share of
the run's repetitions. Round ``k`` measures part ``k`` of every run, in an order shuffled afresh each round
(seeded by the batch's run ids, so a re-run repeats it). The runs of one job shape whose case gives a runner are
measured in *one* launch per round (:mod:`sims.launch`), so a round costs each run its setup and warm-up, not
an MPI start-up; a run with only a command is launched alone under :mod:`sims.guard`. When a shared launch dies,
the run it was measuring is recorded failed with the reason and the runs it had not reached are launched again.
Every repetition keeps its own start time (``measured_at``) and round (``round``), so a slow moment shows.

When every part is measured, a run's record is its parts' rows in round order, ``rep`` numbered through. A part
that failed ends the run's rounds (it is not launched again between the other runs' measurements) and its record
becomes the run's, so the run is recorded failed and retried whole; a part whose record is unreadable becomes
the run's record as it is, for gather to quarantine. A batch killed before its last round keeps nothing of its
rounds. The run's record gets its permanent copy (:func:`sims.record.measurement_path`), as each part's record
did under the part's own id. The batch succeeds when every run has a record, and says which ones have none.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
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


def launch(words: list[str] | str, log: Path | None, append: bool,
           logs: dict[str, Path] | None = None) -> int:
    """Run one command, its output to the batch's and to a log: ``log``, or, for a shared launch, the log of the
    run whose entry the launch last announced (``logs``: a part record's file name -> its run's log). Returns
    the command's exit status; a rank killed by a signal, as MPICH's launcher reports it (``KILLED BY SIGNAL:
    9``, ``EXIT STRING: Killed (signal 9)``), as minus the signal."""
    opened: dict[Path, Any] = {}

    def sink(path: Path) -> Any:
        if path not in opened:
            path.parent.mkdir(parents=True, exist_ok=True)
            opened[path] = path.open("a" if append or logs else "w", encoding="utf-8")
        return opened[path]

    current = log
    killed = None
    try:
        proc = subprocess.Popen(words, shell=isinstance(words, str), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if logs is not None and line.startswith(ANNOUNCE):
                current = logs.get(line.rsplit(": ", 1)[-1].strip(), current)
            found = KILLED.search(line)
            if found:
                killed = int(found.group(1) or found.group(2))
            if current is not None:
                sink(current).write(line)
            sys.stdout.write(line)
        status = proc.wait()
        return -killed if killed and status > 0 else status
    finally:
        for fh in opened.values():
            fh.close()


#: how :mod:`sims.launch` announces each entry (``[hetval launch] entry i/n: <record file name>``)
ANNOUNCE = "[hetval launch] entry "
#: how MPICH's launcher says a rank died of a signal
KILLED = re.compile(r"KILLED BY SIGNAL: (\d+)|EXIT STRING: .*\(signal (\d+)\)")


def _progress(path: Path) -> tuple[set[int], set[int]]:
    """The entries a shared launch started and finished (its progress file)."""
    started: set[int] = set()
    done: set[int] = set()
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            what, _, i = line.partition(" ")
            if i.isdigit():
                (started if what == "start" else done if what == "done" else set()).add(int(i))
    except OSError:
        pass
    return started, done


def shared_launch(prefix: str, items: list[tuple[dict, dict]], where: Path, tag: str) -> None:
    """Measure ``items`` (a run's entry and the part it measures now, each part with its ``runner``) in launches
    of :mod:`sims.launch` started with ``prefix`` (``mpiexec -n 2``), until each has a record.

    When a launch dies, the entry it was running is recorded failed with the reason (the guard's words: out of
    memory, a signal, a status) and the entries it had not started are launched again; a launch that dies
    within :data:`sims.guard.RELAUNCH_WITHIN_S` having started nothing (an MPI start-up that failed) is started
    once more, then its entries are recorded failed."""
    from sims import record as rec
    from sims.guard import RELAUNCH_WITHIN_S, describe, failed_record
    from sims.memory import memory_limit, oom_kills

    limit = memory_limit()
    node_mb = limit.bytes / 2**20
    node_what = "node" if limit.source == "this machine" else f"limit ({limit.source})"
    left = list(items)
    relaunched = False
    attempt = 0
    while left:
        attempt += 1
        plan_path = where / f"launch-{tag}-{attempt}.json"
        progress = plan_path.with_suffix(".progress")
        plan = [{"runner": part["runner"], "record": part["record"], "spec": entry["spec"], "ranks": entry["ranks"]}
                for entry, part in left]
        where.mkdir(parents=True, exist_ok=True)
        plan_path.write_text(json.dumps(plan), encoding="utf-8")
        progress.unlink(missing_ok=True)
        logs = {Path(part["record"]).name: Path(entry["log"]) for entry, part in left}
        before, started_at = oom_kills(), time.monotonic()
        status = launch(f"{prefix} python -m mpi4py -m sims.launch --plan {shlex.quote(str(plan_path))} "
                        f"--progress {shlex.quote(str(progress))}", None, True, logs)
        after, took = oom_kills(), time.monotonic() - started_at
        started, done = _progress(progress)
        plan_path.unlink(missing_ok=True)
        progress.unlink(missing_ok=True)
        estimate = max(float(entry["estimate_mb"]) for entry, _ in left)
        why = describe(status, before, after, estimate, node_mb, node_what)
        if not started and status != 0 and not relaunched and took <= RELAUNCH_WITHIN_S and after == before:
            relaunched = True
            print(f"hetval: batch: the launch ended with status {status} after {took:.1f} s and started nothing: "
                  "starting it again", file=sys.stderr, flush=True)
            continue
        remaining = []
        for i, (entry, part) in enumerate(left):
            record = Path(part["record"])
            if record.exists():
                continue
            if i in started or not started:  # the entry the launch died in; or a launch that started none twice
                rows = failed_record(entry["spec"], int(entry["ranks"]), why)
                rec.write_raw(record, rows[0]["run_id"], rows, keep=True)
                line = f"[hetval batch] {record.stem}: FAILED - {why}"
                print(line, flush=True)
                with Path(entry["log"]).open("a", encoding="utf-8") as fh:  # the run's own log says it too
                    fh.write(line + "\n")
            else:
                remaining.append((entry, part))
        if remaining:
            print(f"[hetval batch] the launch ended ({why}) with {len(remaining)} run(s) not started: launching "
                  "them again", flush=True)
        left = remaining


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
        for k, part in enumerate(entry["parts"]):
            path = Path(part["record"])
            records = part_rows(path)
            if records is None:  # unreadable: gather quarantines it and says why
                if not path.exists():
                    return f"part {path.name} has no record"
                os.replace(path, entry["record"])
                return f"part {path.name} is not a record: moved to the run's record as it is"
            for row in records:
                row["run_id"] = run_id
                row["round"] = k
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
    # a run not measured in rounds is one part: its own record, command and runner
    parts = [e.get("parts") or [{"record": e["record"], "command": e["command"],
                                 **({"runner": e["runner"]} if e.get("runner") else {})}] for e in entries]
    rounds = max((len(p) for p in parts), default=0)
    for e in entries:  # a killed batch's parts and records are stale: this batch measures every one again
        Path(e["record"]).unlink(missing_ok=True)
        for p in e.get("parts") or []:
            Path(p["record"]).unlink(missing_ok=True)
            Path(p["record"]).parent.mkdir(parents=True, exist_ok=True)
        Path(e["log"]).parent.mkdir(parents=True, exist_ok=True)
        Path(e["log"]).write_text("", encoding="utf-8")  # each launch appends its share of the run's output
    where = Path(entries[0]["record"]).parent / ".parts" if entries else Path(".parts")
    tag = stable_hash(sorted(e["record"] for e in entries), 8)
    stopped: set[int] = set()  # runs a failed launch ended: not launched again between the others' rounds
    for k, order in enumerate(round_orders(entries, [len(p) for p in parts])):
        order = [i for i in order if i not in stopped]
        head = f"round {k + 1}/{rounds}, " if rounds > 1 else ""
        # one launch per job shape (its launcher prefix) for the runs whose case gives a runner, in the order their
        # first run comes in this round's shuffle; a run with only a command is a launch of its own
        launches: dict[Any, list[int]] = {}
        for i in order:
            shared = entries[i].get("launch") and parts[i][k].get("runner")
            launches.setdefault(entries[i]["launch"] if shared else ("alone", i), []).append(i)
        for g, (key, members) in enumerate(launches.items(), 1):
            if isinstance(key, str):
                print(f"[hetval batch] {head}launch {g}/{len(launches)}: {len(members)} run(s) in one launch "
                      f"({key}), {time.monotonic() - started:.0f} s elapsed", flush=True)
                shared_launch(key, [(entries[i], parts[i][k]) for i in members], where, f"{tag}-{k}-{g}")
            else:
                entry = entries[members[0]]
                print(f"[hetval batch] {head}launch {g}/{len(launches)}: {Path(entry['record']).stem} "
                      f"(log {entry['log']}), {time.monotonic() - started:.0f} s elapsed", flush=True)
                launch(guard_words(entry, parts[members[0]][k]["record"], parts[members[0]][k]["command"]),
                       Path(entry["log"]), append=True)
        for i in order:
            if entries[i].get("parts") and k + 1 < len(parts[i]) and not part_ok(parts[i][k]["record"]):
                stopped.add(i)
                print(f"[hetval batch] {Path(entries[i]['record']).stem}: round {k + 1} did not measure it: its "
                      "later rounds are not launched", flush=True)
        if rounds > 1:
            took = time.monotonic() - started
            print(f"[hetval batch] round {k + 1}/{rounds} done, {took:.0f} s elapsed, about "
                  f"{took / (k + 1) * (rounds - k - 1):.0f} s to go", flush=True)
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
