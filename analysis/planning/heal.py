"""What the workflow checks each time it starts, so that a plain re-invocation heals what a kill left behind.

Snakemake decides what to redo from files' presence and times. Three things a killed or tampered run
leaves are invisible to that, and :func:`at_start` (called by ``workflow/rules/common.smk`` while the
workflow is parsed, before Snakemake builds its job graph) turns each into something it sees:

* **A stale lock.** A Snakemake killed with SIGKILL leaves ``.snakemake/locks/``, and every later
  invocation stops with "Directory cannot be locked". Each invocation that finds no lock records its
  process (pid and start time) in ``.snakemake/hetval-owner.json``; one that finds a lock whose recorded
  owner is gone from this host removes it, saying so. A lock whose owner is alive, or unknown, is left
  for Snakemake to report.
* **A dataset that differs from what gather wrote.** The gather manifest lists every data file of the
  study with its checksum (:func:`analysis.storage.manifest.check_manifest`). A file missing, added or changed
  makes the manifest older than its inputs (its time is set to the epoch), so gather - and everything
  after it - runs again and rebuilds the dataset from the raw records.
* **Runs given up after repeated failures** (:mod:`analysis.planning.retry`) are retried again when the user asks
  (config ``retry_failed``) or when the code changed since their last attempt.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sims.atomic import atomic_write_text

OWNER = "hetval-owner.json"


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, from /proc) or None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def clear_stale_lock(snakemake_dir: str | Path = ".snakemake", log: Any = print) -> bool:
    """Remove ``<snakemake_dir>/locks`` when the Snakemake that recorded itself as its owner is gone."""
    root = Path(snakemake_dir)
    locks = root / "locks"
    if not locks.is_dir() or not any(locks.iterdir()):
        return False
    try:
        owner = json.loads((root / OWNER).read_text(encoding="utf-8"))
        pid, started, host = int(owner["pid"]), str(owner["started"]), str(owner["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return False  # no record of who holds it: Snakemake reports it as it always does
    if host != socket.gethostname() or _start_time(pid) == started:
        return False  # held by a live Snakemake (or one on another host: not ours to judge)
    shutil.rmtree(locks, ignore_errors=True)
    log(f"hetval: removed the lock left in {locks} by a Snakemake that is gone (pid {pid}, killed?)")
    return True


def claim_lock(snakemake_dir: str | Path = ".snakemake") -> None:
    """Record this process as the next lock's owner (only when no lock is held: never over a live one)."""
    root = Path(snakemake_dir)
    if (root / "locks").is_dir() and any((root / "locks").iterdir()):
        return
    atomic_write_text(root / OWNER, json.dumps({"pid": os.getpid(), "started": _start_time(os.getpid()),
                                                "host": socket.gethostname()}) + "\n")


def stale_manifest(manifest: str | Path, runs_dir: str | Path, study: str, log: Any = print) -> list[str]:
    """When ``study``'s data files differ from what ``manifest`` records, say how and age the manifest to the
    epoch, so that Snakemake reruns gather (an output older than its inputs) and what follows it."""
    from analysis.storage.manifest import check_manifest

    problems = check_manifest(manifest, runs_dir, study)
    if problems:
        for line in problems[:5]:
            log(f"hetval: {line}")
        if len(problems) > 5:
            log(f"hetval: ... and {len(problems) - 5} more")
        log(f"hetval: the dataset differs from what gather recorded in {manifest}: gathering again")
        os.utime(manifest, (0, 0))
    return problems


def missing_records(study: str, run_ids: Iterable[str], results: str | Path = "results",
                    log: Any = print) -> list[str]:
    """The study's runs that have no raw record although others have (a job lost with its node, killed, or
    cancelled): say which, since this invocation measures them again. A study never run says nothing."""
    raw = Path(results) / "raw" / study
    run_ids = list(run_ids)
    have = {p.stem for p in raw.glob("*.json")} if raw.is_dir() else set()
    missing = [r for r in run_ids if r not in have]
    if len(missing) in (0, len(run_ids)):  # complete, or never run
        return []
    log(f"hetval: {len(missing)} of {len(run_ids)} run(s) of study {study!r} have no record (a job lost with "
        f"its node, killed or cancelled): measuring them again: {', '.join(missing[:8])}"
        + (", ..." if len(missing) > 8 else ""))
    return missing


def retry_new_failures(study: str, max_attempts: int, results: str | Path = "results", log: Any = print,
                       code_version: str | None = None) -> list[str]:
    """Failed records written since the last gather (a run that lost its node, or whose job ended in an
    invocation that stopped before gathering): count each attempt now and ask for a retry, so that this
    invocation redoes them rather than the next one. Gather counts the same attempts later as seen."""
    from analysis.planning.retry import note_attempt
    from analysis.storage.dataset import failure_attempt, read_raw_file
    from analysis.storage.schema import RecordError

    results = Path(results)
    raw = results / "raw" / study
    if not raw.is_dir():
        return []
    manifest = results / study / "gathered.json"
    since = manifest.stat().st_mtime if manifest.exists() else 0.0
    retried = []
    for path in sorted(raw.glob("*.json")):
        try:
            if path.stat().st_mtime <= since:
                continue
            run_id, records = read_raw_file(path)
        except (OSError, RecordError):
            continue  # gather quarantines it and says why
        if records[0]["status"] != "failed":
            continue
        token, why = failure_attempt(records[0])
        if note_attempt(results / "retry", study, run_id, token, why, max_attempts, code_version) == "retry":
            retried.append(run_id)
    if retried:
        log(f"hetval: {len(retried)} run(s) of study {study!r} failed since the last gather: measuring them again "
            f"now: {', '.join(retried[:8])}" + (", ..." if len(retried) > 8 else ""))
    return retried


def at_start(study: str, retry_failed: bool, dryrun: bool, log: Any = print, results: str | Path = "results",
             snakemake_dir: str | Path = ".snakemake", runs: Iterable[str] = (), max_attempts: int = 2) -> None:
    """Everything above, for one invocation of the workflow on ``study`` (a dry run changes nothing but the
    manifest's time, so that it shows what the real run will redo)."""
    from analysis.planning.retry import revive
    from sims.record import git_state

    results = Path(results)
    if not dryrun:
        clear_stale_lock(snakemake_dir, log)
        claim_lock(snakemake_dir)
    stale_manifest(results / study / "gathered.json", results / "runs", study, log)
    missing_records(study, runs, results, log)
    if dryrun:
        return
    sha, dirty = git_state()
    code = f"{sha}-dirty" if sha and dirty else sha
    retry_new_failures(study, max_attempts, results, log, code)
    revived = revive(results / "retry", study, everything=retry_failed, code_version=code)
    if revived:
        why = "retry_failed is set" if retry_failed else "the code changed since they last failed"
        log(f"hetval: retrying {len(revived)} run(s) that had been given up ({why}): {', '.join(revived[:5])}"
            + (", ..." if len(revived) > 5 else ""))
