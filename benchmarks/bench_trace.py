"""Live power-meter trace: cost of one region's energy while a logger keeps appending to the CSV.

Run from the repository root (about a minute)::

    python benchmarks/bench_trace.py            # --hours 0.5 for a longer trace

A synthetic 1 kHz, two-channel logger (current clamps on host and accelerator)
appends one second of samples, then a region's energy over the last 0.5 s is
asked for - as :class:`sims.meters.trace.TraceMeter` does after every metered
repetition of a live study. It prints, at several points of the trace's growth,
the median time of that read for the incremental meter and for re-parsing the
whole file (what a naive reader does), and their ratio, measured in this run. Then a finished trace of
``--big-mb`` (33) MB is read by two fresh processes, as two runs of a study would: time and peak memory
against the samples' numeric size, the second starting from the first one's cached parse.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    from sims.meters.trace import TraceMeter, integrate, read_trace

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=0.25, help="trace length to grow to (default 0.25 h)")
    ap.add_argument("--rate", type=int, default=1000, help="samples per second per channel (default 1000)")
    ap.add_argument("--big-mb", type=float, default=33.0, help="size of the finished trace read at the end (MB)")
    args = ap.parse_args(argv)
    seconds = int(args.hours * 3600)
    checkpoints = sorted({max(1, seconds * f // 4) for f in (1, 2, 3, 4)})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "live.csv"
        t0 = 1.8e9
        with open(path, "w") as fh:
            fh.write("timestamp,channel,watts\n")
            fh.write(f"{t0:.3f},host,40\n{t0:.3f},accel,60\n")
        meter = TraceMeter(str(path), channels={"host": "host", "accel": "accel"}, wait_s=0.0)
        step = 1.0 / args.rate
        inc: list[float] = []
        print(f"trace: {args.rate} Hz x 2 channels, growing to {seconds} s ({2 * seconds * args.rate:,} samples)")
        print(f"{'trace length':>14} {'incremental ms':>15} {'full re-read ms':>16} {'ratio':>7}")
        for sec in range(seconds):
            with open(path, "a") as fh:
                fh.write("".join(f"{t0 + sec + (i + 1) * step:.3f},host,40\n{t0 + sec + (i + 1) * step:.3f},accel,60\n"
                                 for i in range(args.rate)))
            end = t0 + sec + 1.0
            start = time.perf_counter()
            e = meter.energy_between(end - 0.5, end)
            inc.append(time.perf_counter() - start)
            assert abs(e["host"] - 20.0) < 1e-6 and abs(e["accel"] - 30.0) < 1e-6, e
            if sec + 1 in checkpoints:
                full = []
                for _ in range(3):
                    start = time.perf_counter()
                    data = read_trace(path)
                    integrate(data["host"], end - 0.5, end)
                    full.append(time.perf_counter() - start)
                recent = statistics.median(inc[-min(len(inc), 20):])
                print(f"{sec + 1:>12} s {recent * 1e3:>15.2f} {statistics.median(full) * 1e3:>16.1f} "
                      f"{statistics.median(full) / recent:>6.0f}x")
        big_file(Path(tmp), args.big_mb)
    return 0


PARSE = """
import os, resource, sys, time
os.environ["HETVAL_CACHE_DIR"] = sys.argv[2]
import numpy as np
from sims.meters.trace import TraceMeter
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
m = TraceMeter(sys.argv[1], channels={"host": "host", "accel": "accel"}, wait_s=0.0)
took = time.perf_counter() - t
samples = sum(c.t.size for c in m._data.values())
print(took, samples, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def big_file(tmp: Path, megabytes: float) -> None:
    """A finished trace of ``megabytes`` read by a fresh process (each run of a study is one): the first
    parses it, the second starts from the first one's cached parse."""
    import subprocess

    path = tmp / "big.csv"
    t0, rate = 1.8e9, 1000
    with open(path, "w") as fh:
        fh.write("timestamp,channel,watts\n")
        sec = 0
        while fh.tell() < megabytes * 2**20:
            fh.write("".join(f"{t0 + sec + i / rate:.3f},host,{40 + i % 7}\n{t0 + sec + i / rate:.3f},accel,"
                             f"{60 + i % 5}\n" for i in range(rate)))
            sec += 1
    size = path.stat().st_size
    cache = tmp / "cache"
    print(f"a finished trace of {size / 2**20:.1f} MB, read by fresh processes (peak memory: the growth of the "
          "process's maximum resident set while reading)")
    print(f"{'reader':>22} {'time s':>8} {'samples':>11} {'numeric MB':>11} {'peak growth MB':>15} {'x numeric':>10}")
    for label in ("first (parses)", "second (from cache)"):
        out = subprocess.run([sys.executable, "-c", PARSE, str(path), str(cache)], capture_output=True, text=True,
                             check=True, cwd=REPO, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
        took, samples, grew = (float(x) for x in out.stdout.split())
        numeric = samples * 16  # a float64 time and a float64 power per sample
        print(f"{label:>22} {took:>8.2f} {int(samples):>11,} {numeric / 2**20:>11.1f} {grew / 2**20:>15.1f} "
              f"{grew / numeric:>9.1f}x")


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("bench_trace", "Energy traces attached after a study", main))
