"""Faults: SIGKILL each stage of the workflow at a random point, many times, and count what healed.

Run from the repository root (about 20 s per trial on 2 cores; the default 20 trials per stage take
about 45 minutes)::

    python benchmarks/bench_faults.py [--per-stage 20] [--stages rank runner gather validate report snakemake]

Each trial (``tests/faults/killing.py``) copies a completed micro study, starts an invocation that makes
the stage run (a deleted raw record for a rank or the MPI launcher; ``--forcerun`` for gather, validate
and the report; a forced re-gather for Snakemake itself), sends SIGKILL to the stage's process at a
uniformly random moment of its life (measured once per stage beforehand), lets that invocation end, runs the plain command once, and
checks: exit 0, the dataset's rows = the raw records' (no duplicates), the report newer than the data
and counting the same records. Prints per stage: trials, how many kills hit a live process, how many
first invocations failed because of it, how many re-invocations healed, and every failure's reason.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tests.faults import killing

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-stage", type=int, default=20)
    ap.add_argument("--stages", nargs="+", default=list(killing.STAGES), choices=list(killing.STAGES))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        base = Path(tmp) / "base"
        t0 = time.perf_counter()
        life = killing.build_base(base)
        print(f"micro study built and timed in {time.perf_counter() - t0:.0f} s; {args.per_stage} trial(s) per stage; "
              "life of each stage's process (s): " + ", ".join(f"{k} {v:.2f}" for k, v in life.items()), flush=True)
        print(f"{'stage':>10} {'trials':>7} {'killed live':>12} {'1st failed':>11} {'healed':>7} {'s/trial':>8}")
        all_ok = True
        for stage in args.stages:
            trials, t0 = [], time.perf_counter()
            for i in range(args.per_stage):
                trials.append(killing.trial(base, Path(tmp) / "work", stage, seed=args.seed * 1000 + i,
                                            life=life[stage]))
            took = (time.perf_counter() - t0) / max(1, len(trials))
            healed = sum(t.healed for t in trials)
            all_ok &= healed == len(trials)
            print(f"{stage:>10} {len(trials):>7} {sum(t.killed for t in trials):>12} "
                  f"{sum(t.first_rc != 0 for t in trials):>11} {healed:>7} {took:>8.1f}", flush=True)
            for t in trials:
                if not t.healed:
                    print(f"    FAILED after a kill at {t.waited_s:.2f} s: rc {t.rc}, {t.problems}\n{t.output[-1500:]}")
        print("every killed stage healed in one plain invocation" if all_ok else "SOME TRIALS DID NOT HEAL")
        return 0 if all_ok else 1


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("bench_faults", "Faults: stages killed at random points", main))
