"""Model benchmark: every model family evaluated over a 10^6-point grid on one core (target <= 0.5 s each).

Run from the repository root::

    python benchmarks/bench_models.py

Prints, per model, the median, min and max seconds of 7 evaluations and PASS/FAIL
against 0.5 s. Threads are pinned to one before NumPy loads.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

N = 1_000_000
TARGET_S = 0.5
REPS = 7


def cases():
    import numpy as np

    from analysis.equations import fdm, hetero, peach, perop, roofline

    rng = np.random.default_rng(0)
    intensity = np.logspace(-2, 3, N)
    host = hetero.Processor(t_f=9.5e-12, t_b=65.9e-12, e_f=118e-12, e_b=462e-12, p_s=26.8)
    accel = hetero.Processor(t_f=0.4e-12, t_b=4.2e-12, e_f=57e-12, e_b=187e-12, p_s=64.1)
    # code partitions: I_C below I, I_G above it (Lemma 2)
    i_c, i_g = intensity * rng.uniform(0.05, 0.95, N), intensity * rng.uniform(1.05, 20.0, N)
    alpha = np.linspace(0.0, 1.0, N)
    counts = {"add": rng.uniform(0, 1e6, N), "mul": rng.uniform(0, 1e6, N), "random": rng.uniform(0, 1e4, N)}
    tau = {"add": 3e-10, "mul": 5e-10, "random": 8e-9}
    geom = fdm.RankGeometry(points=rng.uniform(1e5, 1e7, N), padded_points=rng.uniform(1e5, 1e7, N),
                            pml_axis_points=rng.uniform(0, 1e6, N), face_points=rng.uniform(1e3, 1e5, (N, 3)),
                            neighbours=rng.integers(0, 3, (N, 3)).astype(float))
    return {
        "roofline.attainable": lambda: roofline.attainable(intensity, 1e-11, 1e-10),
        "roofline.energy (Choi et al.)": lambda: roofline.energy(intensity * 1e9, 1e9, 1e-10, 5e-10, 30.0, 1e-11, 1e-10),
        "hetero.performance p-DP (eq. 19)": lambda: hetero.performance(intensity, intensity, intensity, host, accel),
        "hetero.performance CP (eq. 20)": lambda: hetero.performance(intensity, i_c, i_g, host, accel),
        "hetero.energy_efficiency (eq. 24-26)": lambda: hetero.energy_efficiency(intensity, i_c, i_g, host, accel),
        "peach.rate (eq. 7)": lambda: peach.rate(alpha, 293.0, 1052.4, T_OH=1e-4),
        "peach.efficiency (eq. 12)": lambda: peach.efficiency(alpha, 293.0, 1052.4, 165.7, 239.4, 128.6, 30.0),
        "perop.time (Kannan et al.)": lambda: perop.time(counts, tau, B_to=counts["add"], Q_there=1e-10),
        "fdm.step_time (10^6 ranks)": lambda: fdm.step_time(geom, 2, "device-pack", t_f=1e-11, t_b=5e-11,
                                                            latency=5e-6, t_net=2e-10),
    }


def main() -> int:
    print(f"[bench_models] each model over {N:,} points, one core, {REPS} evaluations (median [min-max] s)")
    failed = 0
    for name, fn in cases().items():
        fn()  # warm-up (first-touch allocation, imports)
        ts = []
        for _ in range(REPS):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        med = statistics.median(ts)
        ok = med <= TARGET_S
        failed += not ok
        print(f"  {name:40s} {med:.4f} [{min(ts):.4f}-{max(ts):.4f}]  {'PASS' if ok else 'FAIL'} (<= {TARGET_S} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("bench_models", "Model evaluation throughput", main))
