"""What the workflow checks each time it starts, so that a plain re-invocation heals what a kill left behind.

Snakemake decides what to redo from files' presence and times. Four things a killed or tampered run
leaves are invisible to that, and :func:`at_start` (called by ``workflow/rules/common.smk`` while the
workflow is parsed, before Snakemake builds its job graph) turns each into something it sees:

* **A stale lock.** A Snakemake killed with SIGKILL leaves ``.snakemake/locks/``, and every later
  invocation stops with "Directory cannot be locked". Each invocation that finds no lock records its
  process (pid and start time) in ``.snakemake/hetval-owner.json``; one that finds a lock whose recorded
  owner is gone from this host removes it, saying so. A lock whose owner is alive, or unknown, is left
  for Snakemake to report.
* **A dataset that differs from what gather wrote.** The gather manifest lists every data file of the
  study with its checksum (:func:`analysis.storage.manifest.check_manifest`). A file missing, added or changed
  (or a manifest that does not read) sets the manifest aside into ``results/quarantine/<study>/`` with its
  reason, so that Snakemake finds gather's output missing and runs gather - and everything after it - in this
  same invocation, rebuilding the dataset from the raw records. (An older time would not do: Snakemake
  compares an output's time with its inputs' only when the time is not the epoch, and reruns a job for a newer
  input only when the input's recorded checksum changed.)
* **A characterised file that does not read.** A replicate's raw samples or document, or a pooled platform
  file, that does not parse is set aside the same way, so that its replicate is characterised (or its
  platform pooled) again in this invocation.
* **Runs given up after repeated failures** (:mod:`analysis.planning.retry`) are retried again when the user asks
  (config ``retry_failed``) or when the code changed since their last attempt.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
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


def set_aside(path: Path, quarantine: Path, why: str) -> Path:
    """Move ``path`` out of Snakemake's sight into ``quarantine`` with its reason (nothing is deleted): an output
    that is missing is one Snakemake makes again."""
    quarantine.mkdir(parents=True, exist_ok=True)
    dst = quarantine / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}"
    shutil.move(str(path), dst)
    atomic_write_text(dst.with_name(dst.name + ".reason.txt"), why + "\n")
    return dst


def stale_manifest(manifest: str | Path, runs_dir: str | Path, study: str, log: Any = print,
                   quarantine: str | Path | None = None) -> list[str]:
    """When ``study``'s data files differ from what ``manifest`` records, say how and set the manifest aside
    (into ``quarantine``, default ``results/quarantine/<study>`` beside ``runs_dir``), so that Snakemake reruns
    gather and what follows it in this invocation."""
    from analysis.storage.manifest import check_manifest

    manifest = Path(manifest)
    problems = check_manifest(manifest, runs_dir, study)
    if problems:
        for line in problems[:5]:
            log(f"hetval: {line}")
        if len(problems) > 5:
            log(f"hetval: ... and {len(problems) - 5} more")
        where = Path(quarantine) if quarantine is not None else Path(runs_dir).parent / "quarantine" / study
        dst = set_aside(manifest, where, problems[0])
        log(f"hetval: the dataset differs from what gather recorded in {manifest}: gathering again (the manifest "
            f"is kept as {dst})")
    return problems


def _platform_problem(path: Path) -> str | None:
    """Why a characterised platform file (pooled or one replicate's) cannot serve, or None (also when absent)."""
    from sims.platform_file import PlatformFileError, read_raw, roofline_rates

    if not path.exists():
        return None
    try:
        roofline_rates(read_raw(path), str(path))
    except (PlatformFileError, OSError, RecursionError) as exc:
        return f"{path}: not a readable platform file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    return None


def _raw_samples_problem(path: Path) -> str | None:
    """Why a replicate's raw samples (``<platform>.<k>.json``) cannot be pooled, or None (also when absent)."""
    from sims.bench import RAW_FORMAT

    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        return f"{path}: not valid JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if not isinstance(doc, dict) or doc.get("format") != RAW_FORMAT:
        return f"{path}: not a replicate's raw samples (format {RAW_FORMAT})"
    return None


def corrupt_platforms(study: str, platforms: Iterable[str], replicates: int, results: str | Path = "results",
                      log: Any = print) -> list[str]:
    """Characterised files that do not read (a kill, a full disk, an edit): each replicate's pair (raw samples
    and document, one job's outputs) and each pooled platform file is set aside into
    ``results/quarantine/<study>/platforms/`` with its reason, so that Snakemake characterises or pools that
    platform again in this invocation. Returns the reasons."""
    results = Path(results)
    out, quarantine = results / study / "platforms", results / "quarantine" / study / "platforms"
    found = []
    for platform in platforms:
        pooled = out / f"{platform}.yaml"
        why = None
        for k in range(1, replicates + 1):
            pair = [out / "replicates" / f"{platform}.{k}.{kind}" for kind in ("json", "yaml")]
            bad = _raw_samples_problem(pair[0]) or _platform_problem(pair[1])
            if bad:
                for f in pair:
                    if f.exists():
                        set_aside(f, quarantine, bad)
                log(f"hetval: {bad}: set aside, characterising replicate {k} of {platform} again")
                found.append(bad)
                # the pooled file holds that replicate's samples: pooled again, which makes Snakemake (asking for
                # the pooled file) characterise the replicate again
                why = why or f"{pooled}: pooled from replicate {k}, which was set aside"
        why = why if why and pooled.exists() else _platform_problem(pooled)
        if why:
            set_aside(pooled, quarantine, why)
            log(f"hetval: {why}: set aside, pooling {platform}'s replicates again")
            found.append(why)
    return found


def corrupt_matrix(matrix: Path, study: str, results: Path, log: Any = print) -> str | None:
    """A study matrix that does not read (or is another study's) is set aside, so the workflow writes it again
    before gather reads it; returns why."""
    from analysis.storage.dataset import Matrix

    if not matrix.exists() and not matrix.is_symlink():
        return None
    try:
        why = None if Matrix.read(matrix).study == study else f"{matrix}: the matrix of another study"
    except ValueError as exc:
        why = str(exc).splitlines()[0]
    if why:
        set_aside(matrix, results / "quarantine" / study, why)
        log(f"hetval: {why}: set aside, writing the study's matrix again")
    return why


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
             snakemake_dir: str | Path = ".snakemake", runs: Iterable[str] = (), max_attempts: int = 2,
             platforms: Iterable[str] = (), replicates: int = 0) -> None:
    """Everything above, for one invocation of the workflow on ``study`` (a dry run changes nothing but setting
    a stale manifest aside, so that it shows what the real run will redo)."""
    from analysis.planning.retry import revive
    from sims.record import git_state

    results = Path(results)
    if not dryrun:
        clear_stale_lock(snakemake_dir, log)
        claim_lock(snakemake_dir)
    corrupt_matrix(results / study / "matrix.json", study, results, log)
    stale_manifest(results / study / "gathered.json", results / "runs", study, log)
    corrupt_platforms(study, platforms, replicates, results, log)
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
