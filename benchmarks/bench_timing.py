"""The README's two commands and the FDM scaling study as a new user meets them: wall times, where the time goes,
and the longest silence, on this machine (its reported last-level cache printed beside them).

Run from the repository root::

    python benchmarks/bench_timing.py [--fdm-scaling] [--suite] [--memory-gib 12] [--write]

(``--suite`` as root with Debian's slurm-wlm and chromium installed runs the SLURM and browser tests too, as CI
does.)

Clones this checkout's HEAD into a new directory and there runs README command 1 as written (a new virtual
environment, ``pip install -c constraints.txt -e '.[mpich,test]'``, then ``snakemake -c2``), timing the set-up and
the study apart and every output line's arrival, and prints the study's own account of where its time went (the
line it ends with). ``--fdm-scaling`` also runs ``snakemake -c2 --configfile config/studies/fdm-scaling.yaml`` in
the same clone; ``--suite`` runs README command 2's set-up and ``pytest`` (with ``--durations=10``: its ten longest
test phases are printed, and how busy the cores were, minute by minute). ``--memory-gib`` runs them all under a
memory cgroup of that size (tests/memory_ceiling.py), as a smaller machine would. The longest silence is the
longest time between two lines of output (the set-up's pip is quiet by itself and is left out).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def timed(words: list[str] | str, cwd: Path, prefix: list[str], env: dict[str, str] | None = None) -> dict:
    """Run a command, reading its output line by line: wall seconds, the longest gap between two lines (and the
    line after it), the output, the exit status."""
    shell = isinstance(words, str)
    cmd = [*prefix, "bash", "-c", words] if shell else [*prefix, *words]
    started = last = time.monotonic()
    gap, after, lines = 0.0, "", []
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.monotonic()
        if now - last > gap:
            gap, after = now - last, line.strip()[:120]
        last = now
        lines.append(line)
    proc.wait()
    return {"wall_s": time.monotonic() - started, "gap_s": gap, "gap_before": after, "out": "".join(lines),
            "rc": proc.returncode}


class CpuBusy:
    """The machine's CPU use while a command runs: ``/proc/stat`` read every ``period`` seconds in a thread, each
    interval's busy share of all the cores kept (empty where there is no ``/proc/stat``)."""

    def __init__(self, period: float = 2.0) -> None:
        import threading

        self.period, self.samples = period, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        except (OSError, ValueError):
            return None
        return sum(fields), fields[3] + fields[4]  # all jiffies, idle + iowait

    def _run(self) -> None:
        last = self._read()
        while last is not None and not self._stop.wait(self.period):
            now = self._read()
            if now is None:
                return
            total, idle = now[0] - last[0], now[1] - last[1]
            if total > 0:
                self.samples.append(1.0 - idle / total)
            last = now

    def __enter__(self) -> CpuBusy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self, wall_s: float) -> str:
        """The mean busy share, the core-seconds left idle, and the busy share minute by minute."""
        if not self.samples:
            return "CPU use not sampled here (no /proc/stat)"
        cores = os.cpu_count() or 1
        per = max(1, round(60 / self.period))
        minutes = [sum(self.samples[i:i + per]) / len(self.samples[i:i + per])
                   for i in range(0, len(self.samples), per)]
        mean = sum(self.samples) / len(self.samples)
        busy = mean * cores * wall_s  # the work done: no schedule on these cores ends before busy / cores
        return (f"the {cores} cores {100 * mean:.0f} % busy on average: {busy:.0f} core-seconds of work, so "
                f"{busy / cores:.0f} s at best with every core busy throughout, and {(1 - mean) * cores * wall_s:.0f} "
                f"core-seconds idle; busy minute by minute: " + " ".join(f"{100 * m:.0f}" for m in minutes))


def fresh_clone(base: Path) -> tuple[Path, str, dict[str, str]]:
    """This checkout's HEAD cloned into ``base / "clone"``: the clone, its short commit, and an environment that
    sees no virtual environment of the caller's (as a new user's shell)."""
    clone = base / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    sha = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return clone, sha, env


def llc_line() -> str:
    from sims.bench.plan import llc_detected

    size, source = llc_detected()
    return f"last-level cache reported: {size / 2**20:.0f} MiB ({source})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fdm-scaling", action="store_true", help="also run the fdm-scaling study in the clone")
    ap.add_argument("--suite", action="store_true", help="also run README command 2 (set-up and pytest)")
    ap.add_argument("--no-study", action="store_true", help="skip README command 1's study (set-up only)")
    ap.add_argument("--memory-gib", type=float, default=None, help="under a memory cgroup of this size")
    ap.add_argument("--keep", type=Path, help="clone into this new directory (default: a temporary one)")
    ap.add_argument("--write", action="store_true", help="write the figures into docs/benchmarks.md")
    args = ap.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-timing-"))
    clone, sha, env = fresh_clone(base)
    rows = [llc_line(), f"code: the checkout's HEAD ({sha}), cloned afresh"]
    ceiling = contextlib.nullcontext(None)
    if args.memory_gib:
        from tests.memory_ceiling import memory_ceiling

        ceiling = memory_ceiling(int(args.memory_gib * 2**30))
        rows.append(f"under a memory cgroup of {args.memory_gib:g} GiB")
    with ceiling as c:
        prefix = c.words if c is not None else []
        setup = timed("python3 -m venv .venv && . .venv/bin/activate && pip install -q -c constraints.txt "
                      "-e '.[mpich,test]'", clone, prefix, env)
        if setup["rc"]:
            raise SystemExit(f"set-up failed:\n{setup['out'][-3000:]}")
        study = (timed(". .venv/bin/activate && snakemake -c2", clone, prefix, env) if not args.no_study
                 else {"rc": 0, "wall_s": float("nan"), "gap_s": float("nan"), "gap_before": "", "out": "skipped"})
        if study["rc"]:
            raise SystemExit(f"the default study failed:\n{study['out'][-3000:]}")
        where = re.search(r"^where the time went: .*$", study["out"], re.M)
        rows += [f"README command 1: set-up {setup['wall_s']:.0f} s, study {study['wall_s']:.0f} s, "
                 f"{setup['wall_s'] + study['wall_s']:.0f} s in all; {where.group(0) if where else 'no account'}",
                 f"- the longest silence of the study: {study['gap_s']:.1f} s, before \"{study['gap_before']}\""]
        print("\n".join(rows), flush=True)
        if args.fdm_scaling:
            fdm = timed(". .venv/bin/activate && snakemake -c2 --configfile config/studies/fdm-scaling.yaml", clone,
                        prefix, env)
            where = re.search(r"^where the time went: .*$", fdm["out"], re.M)
            rows += [f"fdm-scaling: {fdm['wall_s']:.0f} s (exit {fdm['rc']}); {where.group(0) if where else ''}",
                     f"- its longest silence: {fdm['gap_s']:.1f} s, before \"{fdm['gap_before']}\""]
            print("\n".join(rows[-2:]), flush=True)
        if args.suite:
            extra = timed(". .venv/bin/activate && pip install -q -c constraints.txt -e '.[mpich,test,slurm]'", clone,
                          prefix, env)
            with CpuBusy() as busy:
                suite = timed(". .venv/bin/activate && pytest -q -p no:cacheprovider --durations=10", clone, prefix,
                              env)
            (base / "pytest.log").write_text(suite["out"], encoding="utf-8")
            for line in suite["out"].splitlines():
                if line.startswith(("FAILED", "ERROR")):
                    print(f"  {line}", flush=True)
            took = re.search(r"in ([0-9.]+)s", suite["out"].strip().splitlines()[-1] if suite["out"].strip() else "")
            rows += [f"README command 2 (the set-up above, the slurm extra {extra['wall_s']:.0f} s more, then pytest): "
                     f"pytest {suite['wall_s']:.0f} s (exit "
                     f"{suite['rc']}; pytest's own count {took.group(1) if took else '?'} s): "
                     + (suite["out"].strip().splitlines()[-1] if suite["out"].strip() else "no output")]
            print(rows[-1], flush=True)
            # where its CPU-seconds went: how busy the machine was, minute by minute (an idle stretch is work
            # waiting on something serial)
            rows.append(f"- its CPU use: {busy.summary(suite['wall_s'])}")
            print(rows[-1], flush=True)
            # where the suite's wall time went: its ten longest phases (a test that waits for a study running in the
            # background carries that wait)
            slowest = re.findall(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)", suite["out"], re.M)
            if slowest:
                rows.append("- its ten longest test phases: " + "; ".join(
                    f"{float(sec):.0f} s {phase} {name.split('::', 1)[-1]} ({name.split('::', 1)[0]})"
                    for sec, phase, name in slowest[:10]))
                print(rows[-1], flush=True)
    text = "\n".join(f"- {r}" if not r.startswith("-") else f"  {r}" for r in rows)
    print(text)
    if args.write:
        from benchmarks.record import write_section

        write_section("bench_timing", "The two commands and fdm-scaling, from a fresh clone", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
