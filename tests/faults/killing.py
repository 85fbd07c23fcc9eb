"""Kill a stage of the workflow with SIGKILL at a random point, re-invoke it once, and check what it left.

Shared by ``tests/faults/test_kill.py`` (one kill per stage) and ``benchmarks/bench_faults.py`` (many).
The study is :data:`MICRO` - SA and FDM runs small enough that one invocation takes seconds - run once to
completion (:func:`build_base`); each trial copies that directory, starts an invocation that makes the
stage run, kills the stage's process at a random moment of its expected life, lets the invocation end,
then runs the plain command once and checks (:func:`check`):

* the plain re-invocation exits 0;
* the study's dataset rows are exactly the rows of its raw records (run, repetition and start time), with
  no duplicate (run_id, rep);
* the report is newer than every validation table and the gather manifest, and the validation summary
  counts the dataset's records.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import BIN, REPO, tool_env

MICRO = """\
study: micro
runs: {warmup: 0, repetitions: 2}
characterize: {warmup: 1, repetitions: 5, replicates: 1, llc_factor: 2, llc_mib: 4, gemm_sizes: [128],
               fdm_blocks: [[16, 16, 32], [32, 16, 16], [16, 32, 24]], fdm_widths: [0, 3, 5]}
uncertainty: {resamples: 100}
validate: {workers: 1, connect_timeout: 20}
cases:
  sa: {sizes: [16384], wps: [CO, GO, CP], alphas: [0.0, 1.0]}
  fdm:
    orders: [2]
    steps: 3
    marshaling: [device-pack, host-staging]
    boundary: {kind: cpml, width: 3}
    scales: [{ranks: 2, shape: [16, 16, 16]}]
"""

#: stage -> (what starts it, how its process is recognised); how long it lives is measured (:func:`watch`)
STAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "rank": ("rerun-run", ("python", "-m mpi4py -m sims.launch")),
    "runner": ("rerun-run", ("mpiexec", "-m mpi4py -m sims.launch")),
    "gather": ("forcerun:gather_runs", ("hetval", "gather")),
    "validate": ("forcerun:validate_models", ("hetval", "validate")),
    "report": ("forcerun:report_validation", ("hetval", "report")),
    "snakemake": ("forcerun:gather_runs", ()),
}


def env() -> dict[str, str]:
    return tool_env()


def command(work: Path, *extra: str) -> list[str]:
    return [str(BIN / "snakemake"), "-s", str(REPO / "workflow" / "Snakefile"), "-d", str(work), "-c2",
            "--configfile", str(work / "micro.yaml"), *extra]


def build_base(work: Path, timeout: float = 1800) -> dict[str, float]:
    """The micro study, run to completion in ``work`` (the state every trial starts from), watched: returns how
    long each stage's process lives here (:func:`watch`), so that a kill lands at a random point of its life."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "micro.yaml").write_text(MICRO)
    proc = subprocess.Popen(command(work), env=env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    life = watch(proc, timeout)
    out, _ = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"the micro study failed:\n{out[-6000:]}")
    return life


def _matches(cmdline: list[str], pattern: tuple[str, ...]) -> bool:
    joined = " ".join(cmdline)
    return all(p in joined for p in pattern)


def _descendants(pid: int) -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def _commands(root: int) -> list[tuple[int, list[str]]]:
    """(pid, command line) of ``root``'s descendants, shells left out (the stage's own processes, not the shell
    that started them)."""
    import psutil

    found = []
    for pid in _descendants(root):
        try:
            cmd = psutil.Process(pid).cmdline()
        except psutil.Error:
            continue
        if cmd and Path(cmd[0]).name not in ("bash", "sh"):
            found.append((pid, cmd))
    return found


def _find(root: int, pattern: tuple[str, ...]) -> int | None:
    """The stage's own process among ``root``'s descendants: the newest, a rank rather than its launcher."""
    return max((pid for pid, cmd in _commands(root) if _matches(cmd, pattern)), default=None)


@dataclass
class Trial:
    stage: str
    killed: bool = False  # the process was alive when the signal went
    waited_s: float = 0.0
    attempts: int = 1  # invocations started until one was killed in time
    first_rc: int | None = None
    rc: int | None = None
    problems: list[str] | None = None
    output: str = ""

    @property
    def healed(self) -> bool:
        return self.rc == 0 and not self.problems


def _start(work: Path, how: str, rng: random.Random) -> subprocess.Popen:
    extra: list[str] = []
    if how == "rerun-run":
        raws = sorted((work / "results" / "raw" / "micro").glob("*.json"))
        matrix = json.loads((work / "results" / "micro" / "matrix.json").read_text())["runs"]
        measured = [p for p in raws if matrix.get(p.stem) in ("sa", "fdm")]
        rng.choice(measured).unlink()
    else:
        extra = ["--forcerun", how.split(":", 1)[1]]
    return subprocess.Popen(command(work, *extra), env=env(), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _alive(pid: int, group: bool = False) -> bool:
    """The process ``pid`` (with ``group``, any process of the group it leads) is still there."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return False
    return True


def watch(proc: subprocess.Popen, timeout: float) -> dict[str, float]:
    """Each stage's life in the invocation ``proc`` runs to completion: the first process of each stage, from when
    it is seen until it is gone. A study built from nothing lives through every stage (runs, then gather,
    validate and report), so one build times them all. Snakemake's own life when only the last stages are
    forced (its trigger) is its start-up until its first job plus the time from gather's start to its end."""
    patterns = {s: p for s, (_, p) in STAGES.items() if p}
    started = time.monotonic()
    first_job: float | None = None
    seen: dict[str, tuple[int, float]] = {}
    out: dict[str, float] = {}
    while proc.poll() is None and time.monotonic() - started < timeout:
        now = time.monotonic()
        for stage, (pid, since) in list(seen.items()):
            if stage not in out and not _alive(pid):
                out[stage] = max(0.05, now - since)
        if len(seen) < len(patterns):
            running = _commands(proc.pid)  # one scan of the process tree for every stage not yet seen
            if running and first_job is None:
                first_job = now
            for stage, pattern in patterns.items():
                if stage not in seen:
                    pid = max((p for p, cmd in running if _matches(cmd, pattern)), default=None)
                    if pid is not None:
                        seen[stage] = (pid, now)
        time.sleep(0.02)
    end = time.monotonic()
    for stage in patterns:  # a stage still alive when the invocation ended, or never seen
        out.setdefault(stage, max(0.05, end - (seen[stage][1] if stage in seen else started)))
    out["snakemake"] = ((first_job or end) - started) + (end - seen["gather"][1] if "gather" in seen else 0.0)
    return out


def _kill_once(t: Trial, proc: subprocess.Popen, stage: str, pattern: tuple[str, ...], rng: random.Random,
               within: float, deadline: float) -> None:
    """SIGKILL the stage's process (Snakemake itself for ``snakemake``) at a random point of its first ``within``
    seconds; ``t.killed`` says whether it was alive when the signal went."""
    if stage == "snakemake":
        t.waited_s = rng.uniform(0.5, max(0.6, within))
        time.sleep(t.waited_s)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            t.killed = True
        return
    target = None
    while target is None and proc.poll() is None and time.monotonic() < deadline:
        target = _find(proc.pid, pattern)
        if target is None:
            time.sleep(0.01)
    if target is not None:
        t.waited_s = rng.uniform(0.0, within)
        time.sleep(t.waited_s)
        try:
            os.kill(target, signal.SIGKILL)
            t.killed = True
        except ProcessLookupError:
            pass


def trial(base: Path, work: Path, stage: str, seed: int, life: float, timeout: float = 900,
          reach: float = 0.9, attempts: int = 3) -> Trial:
    """Copy ``base`` to ``work``, kill ``stage`` at a random point of the first ``reach`` of its ``life`` (s),
    re-invoke once, check. A stage's duration varies by 20-50 % between runs here (and a forced gather of records
    already gathered is shorter than the first), so a process that ended before its kill is let finish and the
    trial starts again from a fresh copy, aiming at half as far into its life, up to ``attempts`` times
    (``killed`` False if every attempt missed)."""
    how, pattern = STAGES[stage]
    rng = random.Random(seed)
    deadline = time.monotonic() + timeout
    for attempt in range(attempts):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work, symlinks=True)
        t = Trial(stage, attempts=attempt + 1)
        proc = _start(work, how, rng)
        _kill_once(t, proc, stage, pattern, rng, reach * life * 0.5 ** attempt, deadline)
        if t.killed or attempt + 1 == attempts:
            break
        try:
            proc.communicate(timeout=max(1.0, deadline - time.monotonic()))  # missed: it ran to its end
        except subprocess.TimeoutExpired:
            break  # out of time: the checks below report it
        while _alive(proc.pid, group=True) and time.monotonic() < deadline:
            time.sleep(0.2)
    out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    t.first_rc = proc.returncode
    while _alive(proc.pid, group=True) and time.monotonic() < deadline:  # orphans of a killed Snakemake finish first
        time.sleep(0.2)
    again = subprocess.run(command(work), env=env(), capture_output=True, text=True, cwd=REPO,
                           timeout=max(1.0, deadline - time.monotonic()))
    t.rc = again.returncode
    t.output = (out or "")[-2000:] + "\n--- re-invocation ---\n" + again.stdout[-3000:] + again.stderr[-3000:]
    t.problems = check(work) if t.rc == 0 else ["the re-invocation failed"]
    return t


def check(work: Path) -> list[str]:
    """What is wrong with the study in ``work`` (empty: dataset = raw records, report newer and consistent)."""
    import pyarrow.compute as pc

    from analysis.storage.dataset import read_runs

    results = work / "results"
    problems = []
    matrix = json.loads((results / "micro" / "matrix.json").read_text())["runs"]
    raw: set[tuple[str, int, str]] = set()
    for rid in matrix:
        path = results / "raw" / "micro" / f"{rid}.json"
        if not path.exists():
            problems.append(f"raw record {rid} missing")
            continue
        for r in json.loads(path.read_text())["records"]:
            raw.add((r["run_id"], r["rep"], r["started_at"].replace("Z", "")[:26]))
    table = read_runs(results / "runs")
    table = table.filter(pc.equal(table["study"], "micro"))
    rows = [(r, int(k), s.strftime("%Y-%m-%dT%H:%M:%S.%f")) for r, k, s in zip(
        table["run_id"].to_pylist(), table["rep"].to_pylist(), table["started_at"].to_pylist(), strict=True)]
    if len(rows) != len(set(rows)) or len({(r, k) for r, k, _ in rows}) != len(rows):
        problems.append("duplicate (run_id, rep) rows in the dataset")
    if set(rows) != raw:
        problems.append(f"dataset rows differ from the raw records: {len(set(rows) - raw)} extra, "
                        f"{len(raw - set(rows))} missing")
    report = results / "micro" / "report" / "index.html"
    validation = sorted((results / "micro" / "validation").glob("*"))
    newest = max([p.stat().st_mtime for p in validation] + [(results / "micro" / "gathered.json").stat().st_mtime])
    if not report.exists() or report.stat().st_mtime < newest:
        problems.append("the report is older than the data it shows")
    summary = json.loads((results / "micro" / "validation" / "summary.json").read_text())
    if summary["records"] != len(rows):
        problems.append(f"validation counted {summary['records']} records, the dataset holds {len(rows)}")
    return problems


def run_trials(tmp_path_factory: Any, stages: list[str], work: Path,
               life: dict[str, float]) -> tuple[dict[str, Trial], dict[str, float]]:
    """One trial per stage of ``stages``, two at a time, in directories of ``tmp_path_factory``, from the micro
    study built in ``work`` whose stages lived ``life`` (:func:`build_base`): ``(trial by stage, each stage's
    life)``. A trial is a chain of one-core processes (Snakemake, then one stage), so two share this machine's two
    cores; each kill lands in the first half of its stage's life as timed when the study was built (a stage's
    duration varies by 20-50 % between runs here, and with the seed fixed a late point, 0.86 of its life, once
    missed a stage that ran faster than when timed)."""
    order = sorted(STAGES)

    def one(stage: str) -> Trial:
        return trial(work, tmp_path_factory.mktemp(f"kill-{stage}") / "work", stage, seed=order.index(stage),
                     life=life[stage], reach=0.5)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(stages, pool.map(one, stages), strict=True)), life
