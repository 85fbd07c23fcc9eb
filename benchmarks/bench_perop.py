"""Per-operation fits: their R² and how far three characterisations in a row agree, with fixed and sized passes.

Runs characterisation's per-operation step (:mod:`sims.bench.ops`: every operation and precision at every
operation count, a warm-up call and ``--reps`` measured calls each, least squares ``T = tau * ops + c``) on
one core, ``--rounds`` times in a row, three ways per round: the block passed over a fixed
:data:`sims.bench.ops.PASSES` times with every repetition of one fit after another (the earlier design);
passes sized so that one operation per element takes at least :data:`sims.bench.ops.MIN_REGION_S`
(:func:`sims.bench.ops.passes_for`); and sized passes with the repetitions interleaved across operations
(:func:`sims.bench.ops.schedule`) - what characterisation does. Prints per operation and precision each round's R² and ``tau``, the spread of
``tau`` over the rounds (largest / smallest), and PASS/FAIL against the targets: R² >= 0.95 in every round
and the rounds within 20 % of each other. ::

    python benchmarks/bench_perop.py [--rounds 3] [--reps 5] [--write]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

R2_TARGET = 0.95
SPREAD_TARGET = 1.2


def one_round(states, reps: int, sized: bool, interleaved: bool) -> dict[str, dict]:
    """Every (op, dtype)'s fit from one pass over the per-operation step, in characterisation's order
    (:func:`sims.bench.ops.schedule`) or, ``interleaved`` False, every repetition of one fit after another."""
    from sims.bench import ops

    passes = {(op, dt): ops.passes_for(states[dt], op) if sized else ops.PASSES for op in ops.OPS for dt in ops.DTYPES}
    order = ops.schedule(reps) if interleaved else sorted(ops.schedule(reps), key=lambda c: (
        ops.OPS.index(c[1]), ops.DTYPES.index(c[2]), ops.N_OPS.index(c[3]), c[0]))
    rows = []
    for rep, op, dt, n_ops in order:
        if rep == 0:  # a warm-up call before each count's first repetition, as characterisation makes
            ops.run(states[dt], op, n_ops, "numba", passes[op, dt])
        t0 = time.perf_counter()
        ops.run(states[dt], op, n_ops, "numba", passes[op, dt])
        rows.append({"op": op, "dtype": dt, "n_ops": n_ops, "ops": ops.BLOCK * passes[op, dt] * n_ops,
                     "time_s": time.perf_counter() - t0, "passes": passes[op, dt]})
    out = {}
    for op in ops.OPS:
        for dt in ops.DTYPES:
            sel = [r for r in rows if r["op"] == op and r["dtype"] == dt]
            out[f"{op}/{dt}"] = {**ops.fit(sel), "passes": sel[0]["passes"],
                                 "seconds": sum(r["time_s"] for r in sel)}
    return out


def main() -> int:
    import numpy as np

    from sims.bench import ops
    from sims.bench.plan import cache_size

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5, help="measured calls per operation count (characterisation's)")
    args = ap.parse_args()
    llc, _ = cache_size(None)
    table = int(llc)  # elements, as characterisation's triad: 4 x the LLC in float32
    states = {dt: ops.setup(dt, table, seed=11) for dt in ops.DTYPES}
    print(f"per-operation step: block {ops.BLOCK} elements, n_ops {list(ops.N_OPS)}, {args.reps} repetitions, random "
          f"table {table * 8 / 2**20:.0f} MiB (float64); {args.rounds} rounds, each with fixed passes ({ops.PASSES}) "
          f"and with passes sized to >= {ops.MIN_REGION_S * 1e3:g} ms per one-operation call")
    ways = {"fixed passes, one fit after another": (False, False), "sized passes, one fit after another": (True, False),
            "sized passes, repetitions interleaved": (True, True)}
    results: dict[str, list[dict]] = {how: [] for how in ways}
    for k in range(args.rounds):
        for how, (sized, interleaved) in ways.items():
            results[how].append(one_round(states, args.reps, sized, interleaved))
            took = sum(f["seconds"] for f in results[how][-1].values())
            print(f"round {k + 1}, {how}: {took:.1f} s measured", flush=True)
    for how, rounds in results.items():
        print(f"\n{how}: R² per round, tau (ns per element-operation) per round, spread of tau (max / min)\n")
        print("| op/dtype | passes | R² | tau (ns) | spread | |")
        print("|---|---|---|---|---|---|")
        fails = 0
        for key in rounds[0]:
            r2 = [r[key]["r2"] for r in rounds]
            tau = np.array([r[key]["tau"] for r in rounds]) * 1e9
            spread = float(tau.max() / tau.min()) if tau.min() > 0 else float("inf")
            ok = min(r2) >= R2_TARGET and spread <= SPREAD_TARGET
            fails += not ok
            passes = sorted({r[key]["passes"] for r in rounds})
            print(f"| {key} | {'/'.join(map(str, passes))} | {' '.join(f'{x:.3f}' for x in r2)} | "
                  f"{' '.join(f'{x:.4g}' for x in tau)} | {spread:.2f} | {'PASS' if ok else 'FAIL'} |")
        print(f"\n{how}: {len(rounds[0]) - fails} of {len(rounds[0])} operation/precision pairs with R² >= "
              f"{R2_TARGET} in every round and tau within {SPREAD_TARGET - 1:.0%} over the rounds")
    return 0


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("bench_perop", "Per-operation fits: R² and agreement over characterisations", main))
