"""The noise test behind the noise-aware best: hetval's batched Mann-Whitney against SciPy's, on one batch.

Prints, for ``--pairs`` pairs of repetition sets (``--reps`` each, rounded so that ties occur as with a
timer's resolution), the median and min-max over ``--repeat`` timings of: ``mann_whitney_rows`` (the
batched arrays validation uses), SciPy's tie-exact permutation method (what the one-pair
``mann_whitney_greater`` calls), and SciPy's ``"exact"`` method (fast, but it assumes no ties), with the
largest p-value difference and how many decisions at alpha 0.05 each changes. ``--write`` records them
in ``docs/benchmarks.md``.

    python benchmarks/bench_uncertainty.py [--pairs 20000] [--reps 5] [--repeat 5] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(fn, repeat: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="record the figures in docs/benchmarks.md")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from scipy import stats

    from analysis.scoring.uncertainty import mann_whitney_rows

    rng = np.random.default_rng(0)
    X = np.round(rng.normal(1.00, 0.1, (args.pairs, args.reps)), 2)
    Y = np.round(rng.normal(0.95, 0.1, (args.pairs, args.reps)), 2)
    ours_t, ours = timed(lambda: mann_whitney_rows(X, Y), args.repeat)
    perm_t, perm = timed(lambda: stats.mannwhitneyu(X, Y, alternative="greater", axis=1,
                                                    method=stats.PermutationMethod(n_resamples=np.inf)).pvalue,
                         max(1, min(args.repeat, 3)))
    exact_t, exact = timed(lambda: stats.mannwhitneyu(X, Y, alternative="greater", axis=1, method="exact").pvalue,
                           args.repeat)

    def row(name: str, times: list[float], p: np.ndarray) -> str:
        diff = float(np.nanmax(np.abs(p - ours)))
        flips = int(np.sum((p <= 0.05) != (ours <= 0.05)))
        return (f"| {name} | {statistics.median(times):.3f} [{min(times):.3f}-{max(times):.3f}] | "
                f"{statistics.median(times) / statistics.median(ours_t):.1f} | {diff:.2g} | {flips} |")

    lines = [f"{args.pairs:,} pairs of {args.reps} vs {args.reps} repetitions (rounded: ties occur), "
             f"{args.repeat} timings each (the permutation method {max(1, min(args.repeat, 3))}).", "",
             "| method | seconds, median [min-max] | × hetval's | largest p difference | decisions changed at 0.05 |",
             "|---|---|---|---|---|",
             row("hetval `mann_whitney_rows` (batched arrays)", ours_t, ours),
             row("SciPy, permutation method (exact with ties)", perm_t, perm),
             row("SciPy, `\"exact\"` (assumes no ties)", exact_t, exact)]
    print("\n".join(lines))
    if args.write:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from record import write_section

        write_section("bench_uncertainty", "The noise test: batched Mann-Whitney against SciPy", "\n".join(lines))


if __name__ == "__main__":
    main()
