"""Every job's memory estimate against the peak its whole process tree reached, on a real study.

Runs a study with Snakemake in a scratch directory (``-d``) while polling every 20 ms the resident memory
of each job Snakemake starts, summed over the job's process tree (every MPI rank, the Dask workers of
validation), and pairs each job with the ``mem_mb`` it declared (the workflow's estimate, printed in
Snakemake's log). Prints one row per rule (jobs, the largest peak, the smallest estimate / peak ratio)
and exits 1 when any job's peak exceeds its estimate. ::

    python benchmarks/bench_memory.py [--write]                          # the default study
    python benchmarks/bench_memory.py --configfile config/studies/tiny.yaml [--write]

``--write`` replaces its section of ``docs/benchmarks.md`` with the table, the date and the machine.

The tiny study's check also runs in the test suite (``tests/workflow/test_workflow.py``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def declared(log: str) -> list[dict]:
    """Every job of a Snakemake log: rule, outputs and declared ``mem_mb``."""
    jobs, cur = [], None
    for line in log.splitlines():
        m = re.match(r"^(?:local)?rule (\w+):$", line.strip())
        if m:
            cur = {"rule": m.group(1), "outputs": [], "mem_mb": None}
            jobs.append(cur)
        elif cur is not None and line.strip().startswith("output:"):
            cur["outputs"] = [o.strip() for o in line.split(":", 1)[1].split(",") if o.strip()]
        elif cur is not None and line.strip().startswith("resources:"):
            m = re.search(r"\bmem_mb=(\d+)", line)
            cur["mem_mb"] = int(m.group(1)) if m else None
    return jobs


def match(jobs: list[dict], command: str, started: float, workdir: Path) -> dict | None:
    """The job whose output the command names and which it wrote: a command also names its inputs, other jobs'
    outputs, but those were written before it started. A file named wins over a folder (``--out DIR``)."""
    best, rank = None, (0, 0)
    for job in jobs:
        for out in job["outputs"]:
            path = workdir / out
            if path.exists() and path.stat().st_mtime < started:
                continue
            for exact, name in ((1, out), (0, str(Path(out).parent))):
                if (exact, len(name)) > rank and re.search(re.escape(name) + r"(?![\w/.-])", command):
                    best, rank = job, (exact, len(name))
    if best is None:  # a job Snakemake runs in a process of its own (a run: block) names its rule
        target = re.search(r"--target-jobs '(\w+):", command)
        for job in jobs:
            if target and job["rule"] == target.group(1):
                return job
    return best


def probe(args: list[str], workdir: Path, env: dict | None = None, timeout: float = 1800,
          period: float = 0.02) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run ``snakemake <args>`` in ``workdir`` and return it with one row per job: rule, output, estimate, peak."""
    from sims.memory import JobPeaks

    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"), "-d", str(workdir), *args]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT, text=True)
        peaks = JobPeaks(proc.pid)
        start = time.monotonic()
        while proc.poll() is None:
            peaks.poll()
            if time.monotonic() - start > timeout:
                proc.kill()
            time.sleep(period)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())
    jobs = declared(done.stdout + done.stderr)
    rows = []
    for command, peak, started in peaks.jobs():
        job = match(jobs, command, started, workdir)
        if job is None:
            rows.append({"rule": None, "output": command[:200], "estimate_mb": None, "peak_mb": peak / 2**20})
            continue
        rows.append({"rule": job["rule"], "output": job["outputs"][0], "estimate_mb": job["mem_mb"],
                     "peak_mb": peak / 2**20})
    return done, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", default=None, help="a study file (default: the default study)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="also write the table into docs/benchmarks.md")
    args = parser.parse_args(argv)
    study = Path(args.configfile).stem if args.configfile else "default"
    with tempfile.TemporaryDirectory(prefix="hetval-memory-") as tmp:
        extra = ["--configfile", str(Path(args.configfile).resolve())] if args.configfile else []
        print(f"[bench_memory] running the {study} study in {tmp} with the job probe (20 ms) ...", flush=True)
        t0 = time.monotonic()
        done, rows = probe([f"-c{args.cores}", *extra], Path(tmp))
        wall = time.monotonic() - t0
        print(f"[bench_memory] snakemake exit {done.returncode} after {wall:.0f} s, {len(rows)} jobs probed")
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    for r in rows:
        if r["rule"] is None:
            print(f"[bench_memory] a job no rule's output names (not judged): {r['output']}")
    rows = [r for r in rows if r["rule"] is not None]
    by_rule: dict[str, list[dict]] = {}
    for r in rows:
        by_rule.setdefault(r["rule"], []).append(r)
    over = [r for r in rows if r["estimate_mb"] is None or r["peak_mb"] > r["estimate_mb"]]
    table = ["| rule | jobs | largest peak (MB) | its estimate (MB) | smallest estimate / peak |", "|---|---|---|---|---|"]
    for rule, rs in sorted(by_rule.items()):
        top = max(rs, key=lambda r: r["peak_mb"])
        ratio = min((r["estimate_mb"] or 0) / r["peak_mb"] for r in rs if r["peak_mb"] > 0)
        table.append(f"| {rule} | {len(rs)} | {top['peak_mb']:.0f} | {top['estimate_mb'] or 0} | {ratio:.2f} |")
    verdict = ("PASS: every job's peak is within its estimate" if not over else f"FAIL: {len(over)} job(s) over")
    print("\n".join(table))
    for r in over:
        print(f"OVER: {r['rule']} {r['output']}: peak {r['peak_mb']:.0f} MB, estimate {r['estimate_mb']} MB")
    print(verdict)
    if args.write:
        from benchmarks.record import write_section

        write_section(f"bench_memory-{study}", f"Memory: every job's estimate against its peak ({study} study)",
                      f"Peak = resident memory of the job's whole process tree, polled every 20 ms; estimate = the "
                      f"`mem_mb` the job declares. The study took {wall:.0f} s under the probe.\n\n"
                      + "\n".join(table) + f"\n\n{verdict}.")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
