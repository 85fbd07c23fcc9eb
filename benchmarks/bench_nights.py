"""Nightly tracking on real nights: false alarms on unchanged code, and real regressions and machine changes caught.

Two steps, because measuring nights takes an hour and judging them takes seconds::

    python benchmarks/bench_nights.py run WORKDIR --study tiny \\
        --plan steady:20,regression:3,undo:2,load:2,unload:2
    python benchmarks/bench_nights.py run WORKDIR-default --study default --plan steady:6
    python benchmarks/bench_nights.py judge WORKDIR WORKDIR-default [--write]

``run`` clones this repository into ``WORKDIR`` (once; its own virtual environment), then measures one night
after another as a nightly job would: ``snakemake -c2 --configfile config/studies/<study>.yaml --forceall`` (every
run and the characterisation measured again) followed by ``hetval track``, whose exit status and findings are
kept in ``WORKDIR/nights.jsonl`` with the night's phase. The phases:

- ``steady``: nothing changes;
- ``regression``: before its first night, a commit in ``WORKDIR`` multiplies the per-operation model's predicted
  time by 1.3 (a change to one model's equation; no other model and no measurement moves);
- ``undo``: before its first night, that commit is reverted;
- ``load``: for the whole night a process streams memory (a 256 MiB triad in a loop, one thread) beside the study,
  taking the other core and a share of the memory bandwidth: a real change of the machine;
- ``unload``: the load is gone.

``judge`` replays the history of each workdir night by night with *this* checkout's ``hetval track`` rule (the
judgement is a pure function of the history, so the replay is what a nightly job running this code would have
printed) and prints:

- false alarms per night on the nights where nothing new changed (``steady``, and ``undo``/``unload`` after their
  first night... every one of them, in fact: a change that is over must not alarm), regressions and drifts apart,
  each with the series it named, over all nights and with the 95 % upper bound on the rate (Clopper-Pearson);
- for each injected change its detection delay (nights until it was named) and attribution (which models, which
  parameters, of what kind), beside Mozilla's published figures;
- from the default nights: how often one night's 95 % scorecard tightness interval holds the next night's median,
  contradictions and same verdicts between consecutive nights, and the pooled verdict of all nights beside each
  night's;
- the between-study spread of every judged figure, and, with ``--write``, the shipped defaults
  (``analysis/resources/between_studies.json``) refreshed from it, and this section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the injected model change: the per-operation model's predicted time x 1.3
PEROP_FILE = "analysis/models/perop.py"
PEROP_FROM = 't_pred = np.fmax(parts["host"], parts["accel"]) if len(have)'
PEROP_TO = 't_pred = 1.3 * np.fmax(parts["host"], parts["accel"]) if len(have)'
PEROP_MODEL = "per-operation (Kannan)"
#: the streaming load: one thread, a triad over arrays far larger than any cache
LOAD = ("import numpy as np\n"
        "a = np.ones(2**25); b = np.ones(2**25); c = np.empty(2**25)\n"
        "while True:\n    np.add(a, b, out=c); np.multiply(c, 0.5, out=a)\n")
PHASES = ("steady", "regression", "undo", "load", "unload")
#: the figures Mozilla published for its t-test alerting (12.5 % false-positive alert groups, 6.8 % missed
#: regressions over 174 expert-labelled series)
MOZILLA = "Mozilla t-test alerting: 12.5 % false-positive alert groups, 6.8 % missed regressions (174 series)"


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{workdir / '.venv' / 'bin'}:{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(workdir / ".venv")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = "1"
    return env


def _sh(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, check=check, text=True, capture_output=True)


def prepare(workdir: Path) -> None:
    """A clone of this repository with its own virtual environment (once)."""
    if not (workdir / ".git").exists():
        print(f"[nights] cloning {ROOT} into {workdir}", flush=True)
        _sh(["git", "clone", "--quiet", str(ROOT), str(workdir)], cwd=ROOT.parent)
    if not (workdir / ".venv" / "bin" / "hetval").exists():
        print("[nights] installing hetval into its own virtual environment", flush=True)
        _sh([sys.executable, "-m", "venv", ".venv"], cwd=workdir)
        _sh([str(workdir / ".venv" / "bin" / "pip"), "install", "--quiet", "-c", "constraints.txt", "-e", ".[mpich]"],
            cwd=workdir)


def _commit(workdir: Path, message: str) -> str:
    _sh(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "--quiet", "-am", message],
        cwd=workdir)
    return _sh(["git", "rev-parse", "--short", "HEAD"], cwd=workdir).stdout.strip()


def change_model(workdir: Path, on: bool) -> str:
    """Apply (``on``) or revert the per-operation model change as a commit in ``workdir``; returns the commit."""
    path = workdir / PEROP_FILE
    text = path.read_text(encoding="utf-8")
    old, new = (PEROP_FROM, PEROP_TO) if on else (PEROP_TO, PEROP_FROM)
    if old not in text:
        if new in text:
            return _sh(["git", "rev-parse", "--short", "HEAD"], cwd=workdir).stdout.strip()
        raise SystemExit(f"{PEROP_FILE}: the line the model change edits is not there")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return _commit(workdir, "bench: per-operation model's predicted time x 1.3" if on else "bench: undo the x 1.3")


def latest_snapshot(workdir: Path, study: str) -> str | None:
    files = sorted((workdir / "results" / "history" / f"study={study}").glob("*.parquet"))
    return files[-1].stem if files else None


def night(workdir: Path, study: str, phase: str, index: int) -> dict:
    """One night: the study measured again from scratch, then ``hetval track``; what it printed, kept."""
    env = _env(workdir)
    config = f"config/studies/{study}.yaml"
    load = None
    if phase == "load":
        load = subprocess.Popen([str(workdir / ".venv" / "bin" / "python"), "-c", LOAD], env=env,
                                start_new_session=True)
    t0 = time.time()
    try:
        study_run = _sh([str(workdir / ".venv" / "bin" / "snakemake"), "-c2", "--configfile", config, "--forceall",
                         "--quiet", "all"], cwd=workdir, env=env, check=False)
    finally:
        if load is not None:
            os.killpg(load.pid, signal.SIGTERM)
            load.wait()
    wall = time.time() - t0
    track = _sh([str(workdir / ".venv" / "bin" / "hetval"), "track", "--configfile", config, "--json"], cwd=workdir,
                env=env, check=False)
    findings = [json.loads(line) for line in track.stdout.splitlines() if line.startswith("{")]
    rec = {"night": index, "phase": phase, "study": study, "start": t0, "wall_s": round(wall, 1),
           "study_rc": study_run.returncode, "track_rc": track.returncode, "snapshot": latest_snapshot(workdir, study),
           "commit": _sh(["git", "rev-parse", "--short", "HEAD"], cwd=workdir).stdout.strip(),
           "live_findings": [f["line"] for f in findings]}
    if study_run.returncode:
        rec["study_error"] = study_run.stderr[-2000:]
    return rec


def parse_plan(text: str) -> list[tuple[str, int]]:
    plan = []
    for part in text.split(","):
        phase, _, n = part.partition(":")
        if phase not in PHASES or not n.isdigit():
            raise SystemExit(f"--plan: {part!r} is not PHASE:NIGHTS with PHASE one of {', '.join(PHASES)}")
        plan.append((phase, int(n)))
    return plan


def cmd_run(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir).resolve()
    prepare(workdir)
    log = workdir / "nights.jsonl"
    done = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    index = len(done)
    for phase, count in parse_plan(args.plan):
        if phase == "regression":
            print(f"[nights] model change committed: {change_model(workdir, True)}", flush=True)
        elif phase == "undo":
            print(f"[nights] model change reverted: {change_model(workdir, False)}", flush=True)
        for _ in range(count):
            index += 1
            rec = night(workdir, args.study, phase, index)
            with log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            print(f"[nights] {args.study} night {index} ({phase}): study {rec['wall_s']:.0f} s rc {rec['study_rc']}, "
                  f"track rc {rec['track_rc']}, {len(rec['live_findings'])} finding(s)", flush=True)
            for line in rec["live_findings"]:
                print(f"    {line}", flush=True)
            if rec["study_rc"]:
                print(rec.get("study_error", ""), file=sys.stderr)
                return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="measure nights into a workdir")
    p.add_argument("workdir")
    p.add_argument("--study", default="tiny")
    p.add_argument("--plan", default="steady:20,regression:3,undo:2,load:2,unload:2")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("judge", help="replay the workdirs' nights with this checkout's rule")
    p.add_argument("workdirs", nargs="+")
    p.set_defaults(func=lambda a: __import__("bench_nights_judge").judge(a))
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
