"""The workflow's cost through SLURM: the tiny study locally, and through the SLURM profile with and without batching.

Run as root from the repository root, with Debian's ``slurm-wlm`` installed and no SLURM running (it brings up the
test suite's emulated cluster, ``tests/slurm_cluster.py``, and stops it afterwards)::

    python benchmarks/bench_slurm.py [--rounds 3] [--write]

Each round runs, each in a fresh directory and in turn:

- ``local``: ``snakemake -c 2 --configfile <tiny>`` (the README's way on a 2-core machine);
- ``slurm, one node``: ``snakemake --workflow-profile workflow/profiles/slurm --configfile <tiny> -j 8`` (short
  runs batched, the profile's ``batch_runs``);
- ``slurm, two nodes``: the same with ``config/studies/tiny.yaml`` itself, whose jobs go to the default
  partition ``cpu`` (two emulated nodes, so up to two jobs at once on the machine's two cores);
- ``slurm, one node, a job per run``: the first with ``batch_runs=1``.

``<tiny>`` is ``config/studies/tiny.yaml`` with its platform on partition ``big``: one emulated node of the
machine's cores, so SLURM has the cores the local run has and the ratio is the plumbing's cost (submission,
start, status polls, the workflow's start inside each job), not a difference in parallelism. Prints each
round's wall times, their medians with min-max, and the ratios to the local time measured in the same round.
The target: the batched SLURM run on one node within 1.5x the local one.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = 1.5


def study_file(where: Path) -> Path:
    """The tiny study with its one platform on partition ``big`` (one node)."""
    from analysis.planning.config import load_config

    doc = yaml.safe_load((ROOT / "config" / "studies" / "tiny.yaml").read_text())
    platform = dict(load_config(ROOT / "config" / "studies" / "tiny.yaml")["platforms"][0])
    platform["slurm"] = {"partition": "big"}
    doc["platforms"] = [{k: platform[k] for k in ("name", "description", "host", "accel", "slurm")}]
    out = where / "tiny-big.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def timed(args: list[str], workdir: Path, env: dict[str, str]) -> float:
    workdir.mkdir(parents=True)
    started = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-d", str(workdir), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=3600)
    took = time.monotonic() - started
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return took


def main() -> int:
    from tests import slurm_cluster
    from tests.conftest import tool_env

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    why = slurm_cluster.unavailable()
    if why:
        print(f"bench_slurm: cannot bring up the emulated cluster: {why}", file=sys.stderr)
        return 2
    env = tool_env()
    profile = ["--workflow-profile", "workflow/profiles/slurm"]
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp:
        tmp = Path(tmp)
        study = ["--configfile", str(study_file(tmp))]
        ways = {
            "local": [*study, "-c", "2"],
            "slurm, one node": [*profile, *study, "-j", "8"],
            "slurm, two nodes": [*profile, "--configfile", "config/studies/tiny.yaml", "-j", "8"],
            "slurm, one node, a job per run": [*profile, *study, "-j", "8", "--config", "launcher=srun --mpi=pmi2",
                                               "batch_runs=1"],
        }
        base = tmp / "slurm"
        base.mkdir()
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed benchmark still stops its cluster
        slurm_cluster.start(base)
        times: dict[str, list[float]] = {w: [] for w in ways}
        try:
            for r in range(args.rounds):
                for way, words in ways.items():
                    took = timed(words, tmp / f"{r}-{way.replace(' ', '_').replace(',', '')}", env)
                    times[way].append(took)
                    print(f"round {r + 1}: {way:<22} {took:6.1f} s", flush=True)
                    shutil.rmtree(tmp / f"{r}-{way.replace(' ', '_').replace(',', '')}", ignore_errors=True)
        finally:
            slurm_cluster.stop(base)
    print()
    print("| way | median s | min-max s | ratio to local (median) | ratio min-max |")
    print("|---|---|---|---|---|")
    verdict = ""
    for way, ts in times.items():
        ratios = [t / loc for t, loc in zip(ts, times["local"], strict=True)]
        print(f"| {way} | {statistics.median(ts):.1f} | {min(ts):.1f}-{max(ts):.1f} | "
              f"{statistics.median(ratios):.2f} | {min(ratios):.2f}-{max(ratios):.2f} |")
        if way == "slurm, one node":
            verdict = (f"target: batched SLURM on one node within {TARGET}x the local time: "
                       f"{'PASS' if statistics.median(ratios) <= TARGET else 'FAIL'} (median ratio "
                       f"{statistics.median(ratios):.2f}, worst round {max(ratios):.2f})")
    print()
    print(verdict)
    return 0


if __name__ == "__main__":
    from benchmarks.record import run_writing

    sys.exit(run_writing("bench_slurm", "SLURM: the tiny study locally and through the profile", main))
