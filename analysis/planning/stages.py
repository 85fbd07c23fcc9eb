"""Where a study's time went: each stage's wall time, read from Snakemake's log of the invocation.

Snakemake stamps every job's start and end (``[Sat Nov 28 09:39:29 2026]`` before ``rule x:`` / ``jobid: N`` and
before ``Finished jobid: N``). :func:`stage_times` groups the jobs by the stage their rule belongs to and counts
each stage's wall time as the union of its jobs' intervals (jobs of one stage that overlap count once), which the
workflow prints at the end of a study. The characterisation's share that compiled the FDM kernels (once per
machine: Numba's cache keeps them) is read from its jobs' own logs, which Snakemake's log names.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from pathlib import Path

from sims.bench import KERNELS_READY

#: the stage of each rule (a rule not named here is "other"; batch rules are simulate_batch_<k>)
STAGES = {"characterize_platform": "characterisation", "pool_platform": "characterisation",
          "characterize_inter_node": "characterisation", "simulate_run": "runs", "ingest_run": "runs",
          "study_matrix": "gather", "gather_runs": "gather", "validate_models": "validation",
          "report_validation": "report"}
ORDER = ("characterisation", "runs", "gather", "validation", "report", "other")
_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?(?:checkpoint|rule) (\w+):$")
_JOB = re.compile(r"^\s+jobid: (\d+)$")
_DONE = re.compile(r"^Finished jobid: (\d+)")
_LOG = re.compile(r"^\s+log: (.+)$")
_READY = re.compile(re.escape(KERNELS_READY).replace(re.escape("{seconds:.1f}"), r"([0-9.]+)"))


def stage_of(rule: str) -> str:
    return "runs" if rule.startswith("simulate_batch_") else STAGES.get(rule, "other")


def _union(spans: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _jobs(log: str) -> tuple[list[tuple[str, float, float, list[str]]], float]:
    """Every job the Snakemake log text ``log`` saw finish, as ``(rule, start, end, its log files)``, and the seconds
    from the log's first stamp to its last."""
    stamp: float | None = None
    first = last = None
    pending: str | None = None  # the rule of the job being announced
    logs: list[str] = []
    started: dict[str, tuple[str, float, list[str]]] = {}
    done = []
    for line in log.splitlines():
        m = _STAMP.match(line.strip())
        if m:
            stamp = dt.datetime.strptime(m.group(1).replace("  ", " "), "%a %b %d %H:%M:%S %Y").timestamp()
            first = stamp if first is None else first
            last = stamp
            continue
        m = _RULE.match(line.strip())
        if m:
            pending, logs = m.group(1), []
            continue
        m = _LOG.match(line)
        if m and pending is not None:
            logs = [p.strip() for p in m.group(1).split(",") if p.strip()]
            continue
        m = _JOB.match(line)
        if m and pending is not None and stamp is not None:
            started[m.group(1)] = (pending, stamp, logs)
            pending = None
            continue
        m = _DONE.match(line.strip())
        if m and m.group(1) in started and stamp is not None:
            rule, began, named = started.pop(m.group(1))
            done.append((rule, began, stamp, named))
    return done, (last - first) if first is not None and last is not None else 0.0


def stage_times(log: str) -> tuple[dict[str, float], float]:
    """Each stage's wall seconds in the Snakemake log text ``log`` (stages with no job left out), and the
    invocation's from its first stamp to its last."""
    jobs, total = _jobs(log)
    return _stage_times(jobs), total


def _stage_times(jobs: list[tuple[str, float, float, list[str]]]) -> dict[str, float]:
    spans: dict[str, list[tuple[float, float]]] = {}
    for rule, began, ended, _ in jobs:
        spans.setdefault(stage_of(rule), []).append((began, ended))
    return {s: _union(spans[s]) for s in ORDER if s in spans}


def compiling_seconds(log: str, root: Path | str = ".") -> float:
    """The seconds this invocation's characterisations spent making the FDM kernels ready, from each finished
    characterisation job's own log (a path in ``log`` relative to ``root``; one that cannot be read adds nothing)."""
    return _compiling_seconds(_jobs(log)[0], root)


def _compiling_seconds(jobs: list[tuple[str, float, float, list[str]]], root: Path | str) -> float:
    seconds = 0.0
    for rule, _, _, logs in jobs:
        if stage_of(rule) != "characterisation":
            continue
        for path in logs:
            try:
                text = (Path(root) / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            seconds += sum(float(m.group(1)) for m in _READY.finditer(text))
    return seconds


def summary_line(log: str, root: Path | str = ".") -> str:
    """One line: each stage's seconds and the invocation's; the characterisation's share that compiled the FDM
    kernels, where it took a second or more (a fresh clone's: Numba's cache keeps them for the next study)."""
    jobs, total = _jobs(log)
    times = _stage_times(jobs)
    if not times:
        return "where the time went: no job ran"
    compiling = _compiling_seconds(jobs, root)

    def part(stage: str, seconds: float) -> str:
        if stage == "characterisation" and compiling >= 1.0:
            return (f"{stage} {seconds:.0f} s ({compiling:.0f} s of it compiling the FDM kernels, which Numba's cache "
                    f"keeps for the next study)")
        return f"{stage} {seconds:.0f} s"

    parts = ", ".join(part(stage, seconds) for stage, seconds in times.items())
    return f"where the time went: {parts}; {total:.0f} s from the first job to the last"
