"""Where a study's time went: each stage's wall time, read from Snakemake's log of the invocation.

Snakemake stamps every job's start and end (``[Sat Nov 28 09:39:29 2026]`` before ``rule x:`` / ``jobid: N`` and
before ``Finished jobid: N``). :func:`stage_times` groups the jobs by the stage their rule belongs to and counts
each stage's wall time as the union of its jobs' intervals (jobs of one stage that overlap count once), which the
workflow prints at the end of a study.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

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


def stage_of(rule: str) -> str:
    return "runs" if rule.startswith("simulate_batch_") else STAGES.get(rule, "other")


def _union(spans: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def stage_times(log: str) -> tuple[dict[str, float], float]:
    """Each stage's wall seconds in the Snakemake log text ``log`` (stages with no job left out), and the
    invocation's from its first stamp to its last."""
    stamp: float | None = None
    first = last = None
    rule_of: dict[str, str] = {}
    started: dict[str, float] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    pending_rule = None
    for line in log.splitlines():
        m = _STAMP.match(line.strip())
        if m:
            stamp = dt.datetime.strptime(m.group(1).replace("  ", " "), "%a %b %d %H:%M:%S %Y").timestamp()
            first = stamp if first is None else first
            last = stamp
            continue
        m = _RULE.match(line.strip())
        if m:
            pending_rule = m.group(1)
            continue
        m = _JOB.match(line)
        if m and pending_rule is not None and stamp is not None:
            rule_of[m.group(1)], started[m.group(1)] = pending_rule, stamp
            pending_rule = None
            continue
        m = _DONE.match(line.strip())
        if m and m.group(1) in started and stamp is not None:
            job = m.group(1)
            spans.setdefault(stage_of(rule_of[job]), []).append((started.pop(job), stamp))
    times = {s: _union(spans[s]) for s in ORDER if s in spans}
    return times, (last - first) if first is not None and last is not None else 0.0


def summary_line(log: str) -> str:
    """One line: each stage's seconds and the invocation's."""
    times, total = stage_times(log)
    if not times:
        return "where the time went: no job ran"
    parts = ", ".join(f"{stage} {seconds:.0f} s" for stage, seconds in times.items())
    return f"where the time went: {parts}; {total:.0f} s from the first job to the last"
