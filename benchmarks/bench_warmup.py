"""Whether every round needs its warm-up: a study's batch measured again with its warm-up and without it.

Run from the repository root, on a directory where a study ran (``snakemake -c2``)::

    python benchmarks/bench_warmup.py --study-dir DIR [--study default] [--write]

Each round of a batch is a fresh MPI launch that sets every run up again, and the run's first execution in it pays
first-execution costs (a kernel's first call in the launch, an output array's first writes) that the SA, LA and
PEACH jobs' rehearsal takes in setup (:meth:`sims.job.PhaseJob.rehearse`); ``runs.warmup`` adds whole untimed
executions. This measures the study's batch twice more, in a scratch directory of its own (the study's records are
not touched): with one warm-up per run and round, and with none (the default study's setting). For each
run and each round of two repetitions it takes the first repetition
over the second: about 1 when the first is already warm, above 1 when it still carries first-execution costs.
Printed per case (SA by size) as the median, the upper quartile and the largest over the run-rounds, with each
batch's wall time. The ratios are within one round of one run, so the
machine's drift between the two batches does not enter them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_WARMUP = re.compile(r'(\\*"warmup\\*"\s*:\s*)\d+')


def with_warmup(value: Any, warmup: int) -> Any:
    """``value`` (a batch entry, or part of one) with every run's warm-up set to ``warmup``: in its spec
    mappings and in the spec JSON its command lines carry."""
    if isinstance(value, dict):
        return {k: (warmup if k == "warmup" else with_warmup(v, warmup)) for k, v in value.items()}
    if isinstance(value, list):
        return [with_warmup(v, warmup) for v in value]
    if isinstance(value, str):
        return _WARMUP.sub(lambda m: f"{m.group(1)}{warmup}", value)
    return value


def measure(study_dir: Path, study: str, warmup: int, scratch: Path) -> tuple[float, list[dict]]:
    """The study's batches measured in ``scratch`` with ``warmup``: wall seconds and the records."""
    scratch.mkdir(parents=True)
    shutil.copytree(study_dir / "results" / study / "platforms", scratch / "results" / study / "platforms")
    files = sorted((study_dir / "logs" / study / "simulate").glob("batch-*.runs.json"))
    if not files:
        raise SystemExit(f"no batch file under {study_dir / 'logs' / study / 'simulate'}: run the study there first")
    # the batch's launches find this interpreter's mpiexec, as in an activated environment
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    started = time.monotonic()
    for i, path in enumerate(files):
        entries = with_warmup(json.loads(path.read_text(encoding="utf-8")), warmup)
        runs_file = scratch / f"batch-{i}.runs.json"
        runs_file.write_text(json.dumps(entries), encoding="utf-8")
        with (scratch / f"batch-{i}.log").open("w", encoding="utf-8") as log:
            done = subprocess.run([sys.executable, "-m", "sims.batch", "--runs-file", str(runs_file)], cwd=scratch,
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
        if done.returncode:
            raise SystemExit(f"the batch with warm-up {warmup} failed: see {scratch / f'batch-{i}.log'}")
    took = time.monotonic() - started
    records = []
    for path in sorted((scratch / "results" / "raw" / study).glob("*.json")):
        records += [r for r in json.loads(path.read_text(encoding="utf-8"))["records"] if r["status"] == "ok"]
    if not records:
        raise SystemExit(f"the batch with warm-up {warmup} measured no run: see {scratch}/batch-*.log")
    return took, records


def first_over_second(records: list[dict]) -> dict[str, list[float]]:
    """Per case (SA by size): each run-round of two repetitions' first time over its second."""
    rounds: dict[tuple[str, Any], list[dict]] = {}
    for r in records:
        rounds.setdefault((r["run_id"], r.get("round")), []).append(r)
    out: dict[str, list[float]] = {}
    for rows in rounds.values():
        if len(rows) != 2:
            continue
        first, second = sorted(rows, key=lambda r: r["rep"])
        case = first["case"] if first["case"] != "sa" else f"sa {int(first['size']):,}"
        out.setdefault(case, []).append(first["time_s"] / second["time_s"])
    return out


def quartile(values: list[float]) -> float:
    return statistics.quantiles(values, n=4)[2] if len(values) > 1 else values[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study-dir", type=Path, required=True, help="where the study ran (its results/ and logs/)")
    ap.add_argument("--study", default="default", help="the study's name (default: default)")
    ap.add_argument("--keep", type=Path, help="measure in this new directory (default: a temporary one)")
    ap.add_argument("--write", action="store_true", help="write the figures into docs/benchmarks.md")
    args = ap.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-warmup-"))
    arms = {}
    for warmup in (1, 0):
        print(f"[bench_warmup] the {args.study} study's batch with warm-up {warmup} ...", flush=True)
        took, records = measure(args.study_dir.resolve(), args.study, warmup, base / f"warmup-{warmup}")
        arms[warmup] = (took, first_over_second(records))
    lines = [f"the {args.study} study's batch (from {args.study_dir}), measured twice: {arms[1][0]:.0f} s with one "
             f"warm-up per run and round, {arms[0][0]:.0f} s without",
             "",
             "| case | run-rounds | first / second repetition, warm-up 1: median [upper quartile] largest | warm-up 0 |",
             "|---|---|---|---|"]
    for case in sorted(set(arms[1][1]) | set(arms[0][1])):
        cells = []
        for warmup in (1, 0):
            ratios = arms[warmup][1].get(case, [])
            cells.append(f"{statistics.median(ratios):.3f} [{quartile(ratios):.3f}] {max(ratios):.2f}" if ratios
                         else "n/a")
        count = len(arms[1][1].get(case, []))
        lines.append(f"| {case} | {count} | {cells[0]} | {cells[1]} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        from benchmarks.record import write_section

        write_section("bench_warmup", "Whether every round needs its warm-up", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
