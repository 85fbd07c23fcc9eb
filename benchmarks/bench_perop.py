"""Per-operation fits: their R² and how far three characterisations in a row agree, on both CPU backends.

Runs characterisation's per-operation step (:mod:`sims.bench.ops`: every operation and precision at every
chain length, passes sized by :func:`sims.bench.ops.passes_for`, repetitions interleaved across operations as
:func:`sims.bench.ops.schedule` orders them, a warm-up call before each first repetition, least squares
``T = tau * ops + c``) on one core, ``--rounds`` times in a row, for the numba and the numpy backend. Prints per
backend, operation and precision each round's R² and ``tau``, the spread of ``tau`` over the rounds (largest /
smallest) and PASS/FAIL against the targets: R² >= 0.95 in every round and the rounds within 20 % of each other.

Then, per backend and round, what the per-operation model makes of the SA PowAdd kernel from that round's
costs, against the kernel's measured time in the same round: the ratio predicted / measured (median of
``--reps`` calls). Numba: the paper's counts in one basic block (float32: 2016 multiplications and 32 adds per
element). NumPy: both the paper's counts alone and the kernel's basic blocks
(:func:`analysis.models.perop.numpy_part_time`: the counted flops plus the copy and fill moves, the adds at
the length of their calls), with ``t_b`` from characterisation's triad timed in the same round. ::

    python benchmarks/bench_perop.py [--rounds 3] [--reps 5] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

R2_TARGET = 0.95
SPREAD_TARGET = 1.2
SA_ELEMENTS = 1 << 20


def one_round(states, reps: int, backend: str) -> dict[str, dict]:
    """Every (op, dtype)'s fit from one pass over the per-operation step, in characterisation's order."""
    from sims.bench import ops

    passes = {(op, dt): ops.passes_for(states[dt], op) for op in ops.ops_for(backend) for dt in ops.DTYPES}
    rows = []
    for rep, op, dt, n_ops in ops.schedule(reps, backend):
        if rep == 0:  # a warm-up call before each count's first repetition, as characterisation makes
            ops.run(states[dt], op, n_ops, passes[op, dt])
        t0 = time.perf_counter()
        done = ops.run(states[dt], op, n_ops, passes[op, dt])
        rows.append({"op": op, "dtype": dt, "n_ops": n_ops, "ops": done, "time_s": time.perf_counter() - t0,
                     "passes": passes[op, dt]})
    out = {}
    for op in ops.ops_for(backend):
        for dt in ops.DTYPES:
            sel = [r for r in rows if r["op"] == op and r["dtype"] == dt]
            out[f"{op}/{dt}"] = {**ops.fit(sel), "passes": sel[0]["passes"], "seconds": sum(r["time_s"] for r in sel)}
    return out


def powadd_seconds(backend_name: str, reps: int) -> float:
    """Median time of one SA PowAdd over :data:`SA_ELEMENTS` float32 elements on ``backend_name``."""
    from sims.backends import get_backend
    from sims.sa import kernels

    backend = get_backend(backend_name)
    arrays = kernels.allocate(backend, SA_ELEMENTS, ["powadd"], seed=3)
    kernels.powadd(backend, arrays)  # warm-up (and compilation)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        kernels.powadd(backend, arrays)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def stream_t_b(reps: int) -> float:
    """``t_b`` as characterisation measures it (the NumPy triad, :func:`sims.bench.kernels.triad`) over 32 Mi
    elements, the median of ``reps``: the copy block's memory cost in the model."""
    from sims.backends import get_backend
    from sims.bench import kernels

    backend = get_backend("numpy")
    state = kernels.triad_setup(backend, 1 << 25, seed=1)
    kernels.triad(backend, state)  # first touch
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        counted = kernels.triad(backend, state)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) / counted


def main() -> int:
    import numpy as np

    from sims.bench import ops
    from sims.bench.plan import cache_size
    from sims.sa.counts import PHASE_OPERATIONS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5, help="measured calls per operation count (characterisation's)")
    args = ap.parse_args()
    llc, _ = cache_size(None)
    table = int(llc)  # elements, as characterisation's triad: 4 x the LLC in float32
    print(f"per-operation step: blocks {ops.BLOCKS} elements, chains of n_ops {list(ops.N_OPS)}, {args.reps} "
          f"repetitions, random table {table * 8 / 2**20:.0f} MiB (float64); {args.rounds} rounds per backend; "
          f"SA PowAdd over {SA_ELEMENTS} elements")
    counts = PHASE_OPERATIONS["powadd"]
    from analysis.models.perop import numpy_part_time

    for backend in ops.BACKENDS:
        states = ops.states(table, seed=11, backend=backend)
        rounds, sa, blocks = [], [], []
        for k in range(args.rounds):
            rounds.append(one_round(states, args.reps, backend))
            measured = powadd_seconds(backend, args.reps)
            f = rounds[-1]
            predicted = SA_ELEMENTS * (counts["mul"] * f["mul/float32"]["tau"] + counts["add"] * f["add/float32"]["tau"])
            sa.append((predicted, measured))
            took = sum(v["seconds"] for v in f.values())
            line = (f"{backend}, round {k + 1}: {took:.1f} s measured; SA PowAdd predicted {predicted:.4f} s, "
                    f"measured {measured:.4f} s, ratio {predicted / measured:.2f}")
            if backend == "numpy":
                tau = {op: f[f"{op}/float32"]["tau"] for op in ops.ops_for(backend)}
                composed = float(numpy_part_time(np.array([float(SA_ELEMENTS)]), ("powadd",), tau,
                                                 stream_t_b(args.reps))[0])
                blocks.append(composed / measured)
                line += f"; by the kernel's basic blocks {composed:.4f} s, ratio {composed / measured:.2f}"
            print(line, flush=True)
        print(f"\n{backend}: R² per round, tau (ns per element-operation) per round, spread of tau (max / min)\n")
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
        ratios = [p / m for p, m in sa]
        print(f"\n{backend}: {len(rounds[0]) - fails} of {len(rounds[0])} operation/precision pairs with R² >= "
              f"{R2_TARGET} in every round and tau within {SPREAD_TARGET - 1:.0%} over the rounds; SA PowAdd "
              f"predicted / measured per round: {' '.join(f'{r:.2f}' for r in ratios)}"
              + (f" (paper's counts); {' '.join(f'{r:.2f}' for r in blocks)} (the kernel's basic blocks)"
                 if blocks else "") + "\n")
    return 0


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("bench_perop", "Per-operation fits: R² and agreement over characterisations", main))
