"""FDM benchmark: the elastic step against a STREAM triad measured in the same run; C-PML; threads; Devito.

Run from the repository root (about 30 s on 2 cores, 40 s with Devito; ``--quick`` for smaller grids)::

    python benchmarks/bench_fdm.py                      # hetval alone
    python benchmarks/bench_fdm.py --compare devito     # and Devito's operator side by side

Everything is launched under ``mpiexec`` (``mpiexec -n 1`` for one rank), one thread per rank unless said:

1. a STREAM triad on 2 ranks at once (float32, 12 B/element counted): the node's streaming bandwidth,
   measured before and after each bulk measurement (it drifts within minutes on a shared machine);
2. the bulk step, 160^3, ``boundary: none``, orders 2 and 4, 2 ranks x 1 thread: MLUP/s, and the fraction
   of the triad bandwidth reached (the mean of the triads just before and just after) counting the step's
   compulsory traffic (108 B/point: the velocity half-step reads 9 fields and writes 3, the stress
   half-step reads 9 and writes 6); targets >= 0.9 (order 2) and >= 0.8 (order 4);
3. the same order-2 grid on 1 rank x 2 threads (Numba parallel loops) against 2 ranks x 1 thread;
4. 184^3 with a 12-cell C-PML on every face against 184^3 without, in 5 interleaved pairs of runs (the
   order within a pair alternating): per
   pair the rate ratio (target >= 0.8) and what a layer point costs against an interior point (target
   <= 1.5x; its traffic is about 1.5x), their medians over the pairs with the range;
5. a single-rank 256^3 order-2 run with a C-PML for its peak resident memory (target <= 1.2 GiB);
6. with ``--compare devito``: per order, Devito's elastic operator for the same grid, order and medium on
   2 OpenMP threads; first both codes on a 48^3 grid for 200 steps, whose receiver seismograms must
   correlate >= 0.99 (the same physics), then the rates on the benchmark grid and their ratio.

Every rate is the median of 5 repetitions with its range; ratios are of medians measured in this run, or
medians of ratios of interleaved pairs (the C-PML).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _spec(shape, boundary, steps, reps, ranks, order=2, threads=1):
    n = shape[0]
    c = n * 10.0 / 2
    doc = {
        "grid": {"shape": list(shape), "spacing": 10.0}, "time": {"steps": steps},
        "medium": {"homogeneous": {"vp": 3000.0, "vs": 1732.0, "rho": 2500.0}},
        "source": {"kind": "explosive", "position": [c, c, c], "f0": 5.0, "moment": 1.0e15},
        "receivers": [[c + 100.0, c + 30.0, c - 20.0]], "boundary": boundary, "order": order, "backend": "numba",
        "repetitions": reps, "warmup": 1, "ranks": ranks,
    }
    if threads > 1:
        doc["threads_per_rank"] = threads
    return doc


def _mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def _launch(n: int, args: list[str], threads: int = 1, env: dict | None = None) -> str:
    base = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
                HETVAL_THREADS_PER_RANK=str(threads))
    proc = subprocess.run([_mpiexec(), "-n", str(n), sys.executable, "-m", "mpi4py", *args],
                          capture_output=True, text=True, env=dict(base, **(env or {})), cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step failed: {' '.join(args)}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def run_fdm(shape, boundary, steps, reps, ranks, tmp: Path, order: int = 2, threads: int = 1) -> list[dict]:
    """Run one spec through the solver's driver under ``mpiexec``; return its records (one per repetition)."""
    import yaml

    name = f"{shape[0]}-{boundary['kind']}-o{order}-{ranks}x{threads}"
    spec = tmp / f"{name}.yaml"
    spec.write_text(yaml.safe_dump(_spec(shape, boundary, steps, reps, ranks, order, threads)))
    _launch(ranks, [str(Path(__file__).resolve()), "--worker", "fdm", str(spec), str(tmp / name)], threads)
    return json.loads((tmp / name / "record.json").read_text())


def worker(kind: str, *args: str) -> None:
    """What runs on the ranks."""
    from sims._threads import limit_threads, threads_per_rank

    limit_threads(threads_per_rank())
    import resource

    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if kind == "triad":
        from sims.backends import get_backend
        from sims.bench import kernels

        backend = get_backend("numba")
        n = kernels.triad_elements(factor=8)
        state = kernels.triad_setup(backend, n, seed=1 + comm.Get_rank())
        rates = []
        for rep in range(8):
            comm.Barrier()
            t0 = MPI.Wtime()
            nbytes = kernels.triad(backend, state)
            comm.Barrier()
            dt = MPI.Wtime() - t0
            if rep >= 2:
                rates.append(comm.Get_size() * nbytes / dt)
        if comm.Get_rank() == 0:
            print(json.dumps({"triad_Bps": rates, "elements_per_rank": n}), flush=True)
    elif kind == "fdm":
        from sims.fdm.driver import execute

        spec, out = args
        result = execute(comm, spec)
        rss = comm.gather(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, root=0)
        if comm.Get_rank() == 0:
            if result.records[0]["status"] != "ok":
                raise SystemExit(result.records[0]["error"])
            for r in result.records:
                r["peak_rss_bytes_per_rank"] = rss  # not a record field: only in this benchmark's copy
            Path(out).mkdir(parents=True, exist_ok=True)
            Path(out, "record.json").write_text(json.dumps(result.records, default=str))
    elif kind == "devito":
        devito_worker(*args)


def devito_worker(spec_path: str, threads: str, mode: str) -> None:
    """Devito's operator for the spec on ``threads`` OpenMP threads; ``check``: also hetval on one rank, and both
    codes' receiver traces; ``rate``: 5 timed repetitions. Prints one JSON line."""
    import devito_elastic
    import numpy as np
    from mpi4py import MPI

    from sims.fdm.driver import load_doc
    from sims.fdm.solver import Simulation
    from sims.fdm.spec import parse

    spec = parse(load_doc(spec_path))
    if mode == "check":
        sim = Simulation(spec, MPI.COMM_SELF)
        sim.run()
        ours = np.asarray(sim.traces)[0]
        theirs = devito_elastic.run(spec, int(threads))["traces"][:, 0, :]
        corr = [devito_elastic.correlation(ours[c], theirs[c]) for c in range(3)]
        amp = [float(np.max(np.abs(theirs[c])) / np.max(np.abs(ours[c]))) for c in range(3)]
        print(json.dumps({"correlation": corr, "amplitude_ratio": amp}), flush=True)
    else:
        out = devito_elastic.run(spec, int(threads), repetitions=5)
        print(json.dumps({"mlups": out["mlups"]}), flush=True)


def _mlups(records) -> list[float]:
    return [r["points"] * r["steps"] / r["time_s"] / 1e6 for r in records]


def _stats(xs) -> str:
    return f"median {statistics.median(xs):.1f} (min {min(xs):.1f}, max {max(xs):.1f})"


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _devito(tmp: Path, n: int, steps: int, threads: int, hetval: dict[int, float]) -> None:
    """The Devito side by side, per order: the seismogram check, then both rates and their ratio."""
    import devito_elastic
    import yaml

    why = devito_elastic.missing()
    if why:
        print(f"[bench_fdm] Devito comparison skipped: {why}")
        return
    env = {"OMP_NUM_THREADS": str(threads), "DEVITO_LANGUAGE": "openmp", "DEVITO_LOGGING": "WARNING"}
    script = str(Path(__file__).resolve())
    for order in (2, 4):
        small = tmp / f"devito-check-{order}.yaml"
        small.write_text(yaml.safe_dump(_spec((48,) * 3, {"kind": "none"}, 200, 1, 1, order)))
        print(f"[bench_fdm] Devito {order=}: seismograms of both codes, 48^3, 200 steps ...", flush=True)
        check = json.loads(_launch(1, [script, "--worker", "devito", str(small), str(threads), "check"],
                                   env=env).strip().splitlines()[-1])
        corr = min(check["correlation"])
        print(f"  receiver correlation vx, vy, vz: {', '.join(f'{c:.6f}' for c in check['correlation'])} "
              f"(>= 0.99: {_met(corr >= 0.99)}); amplitude ratio Devito/hetval "
              f"{', '.join(f'{a:.4f}' for a in check['amplitude_ratio'])}")
        if corr < 0.99:
            print("  the two codes do not compute the same wavefield: no rate comparison for this order")
            continue
        big = tmp / f"devito-rate-{order}.yaml"
        big.write_text(yaml.safe_dump(_spec((n,) * 3, {"kind": "none"}, steps, 5, 1, order)))
        print(f"[bench_fdm] Devito {order=}: {n}^3, {steps} steps, {threads} OpenMP threads ...", flush=True)
        rate = json.loads(_launch(1, [script, "--worker", "devito", str(big), str(threads), "rate"],
                                  env=env).strip().splitlines()[-1])
        m = statistics.median(rate["mlups"])
        print(f"  Devito MLUP/s {_stats(rate['mlups'])}; hetval (2 ranks x 1 thread) {hetval[order]:.1f}; "
              f"hetval / Devito {hetval[order] / m:.2f}")


def _triad() -> float:
    """A STREAM triad on 2 ranks at once: the median of its repetitions, B/s (12 B/element counted)."""
    print("[bench_fdm] STREAM triad, 2 ranks x 1 thread, float32 ...", flush=True)
    triad = json.loads(_launch(2, [str(Path(__file__).resolve()), "--worker", "triad"]).strip().splitlines()[-1])
    bw = statistics.median(triad["triad_Bps"])
    print(f"  triad: {bw / 1e9:.1f} GB/s counted (12 B/element; min {min(triad['triad_Bps']) / 1e9:.1f}, "
          f"max {max(triad['triad_Bps']) / 1e9:.1f})")
    return bw


def main() -> None:
    from sims.fdm import counts

    quick = "--quick" in sys.argv
    compare = sys.argv[sys.argv.index("--compare") + 1] if "--compare" in sys.argv else None
    if compare not in (None, "devito"):
        raise SystemExit(f"--compare: only 'devito' is known, got {compare!r}")
    n_bulk, width = (96, 12) if quick else (160, 12)
    n_rss = 128 if quick else 256
    steps, reps = (10, 5) if quick else (20, 5)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        before = _triad()
        bulk_rate = {}
        for order, target in ((2, 0.9), (4, 0.8)):
            print(f"[bench_fdm] bulk step {n_bulk}^3, boundary none, order {order}, 2 ranks x 1 thread ...", flush=True)
            bulk = run_fdm((n_bulk,) * 3, {"kind": "none"}, steps, reps, 2, tmp, order)
            after = _triad()
            bw = (before + after) / 2  # the bandwidth drifts within minutes: the triads just before and just after
            m = _mlups(bulk)
            bulk_rate[order] = statistics.median(m)
            gbs = [x * 1e6 * counts.BYTES_BULK / 1e9 for x in m]
            frac = statistics.median(gbs) * 1e9 / bw
            print(f"  MLUP/s {_stats(m)} (decomposition {bulk[0]['decomposition']}, the automatic one)")
            print(f"  GB/s at the compulsory {counts.BYTES_BULK} B/point: {_stats(gbs)}; fraction of the triad "
                  f"(mean of {before / 1e9:.1f} before and {after / 1e9:.1f} after) {frac:.2f} "
                  f"(target >= {target}: {_met(frac >= target)})")
            before = after
            phases = json.loads(bulk[0]["phase_times"])
            print("  per phase (slowest rank, repetition 0): "
                  + ", ".join(f"{k} {max(v):.3f} s" for k, v in phases.items() if k != "loop" and max(v) > 0))

        print(f"[bench_fdm] threads: {n_bulk}^3 order 2 on 1 rank x 2 threads ...", flush=True)
        threaded = _mlups(run_fdm((n_bulk,) * 3, {"kind": "none"}, steps, reps, 1, tmp, 2, threads=2))
        print(f"  1 rank x 2 threads MLUP/s {_stats(threaded)}; 2 ranks x 1 thread {bulk_rate[2]:.1f}; "
              f"(1x2) / (2x1) {statistics.median(threaded) / bulk_rate[2]:.2f}")

        n_pml = n_bulk + 2 * width
        print(f"[bench_fdm] C-PML: {n_pml}^3 without and with a {width}-cell layer on every face, 2 ranks, "
              f"{reps} pairs of runs ...", flush=True)
        plain, pml = [], []
        for rep in range(reps):  # interleaved pairs (the bandwidth drifts within minutes), in ABBA order
            pair = [({"kind": "none"}, plain), ({"kind": "cpml", "width": width}, pml)]
            for boundary, into in pair if rep % 2 == 0 else pair[::-1]:
                into += _mlups(run_fdm((n_pml,) * 3, boundary, steps, 1, 2, tmp))
        step = counts.step_counts((n_pml,) * 3, 2, width)
        inner = n_bulk**3
        in_layer = step["points"] - inner
        bytes_in = (step["bytes"] - inner * counts.BYTES_BULK) / in_layer
        ratios = [b / a for a, b in zip(plain, pml, strict=True)]
        # what a layer point costs in units of an interior point: (t_with - inner t_point) / in_layer / t_point
        costs = [(step["points"] / b - inner / a) / in_layer * a for a, b in zip(plain, pml, strict=True)]
        ratio, cost_in = statistics.median(ratios), statistics.median(costs)
        print(f"  MLUP/s (all {n_pml}^3 points counted) without {_stats(plain)}; with {_stats(pml)}")
        print(f"  rate with / without the layer, median of the pairs: {ratio:.2f} (min {min(ratios):.2f}, "
              f"max {max(ratios):.2f}; target >= 0.8: {_met(ratio >= 0.8)})")
        print(f"  a layer point costs {cost_in:.2f}x an interior point (pairs: min {min(costs):.2f}, max "
              f"{max(costs):.2f}; target <= 1.5: {_met(cost_in <= 1.5)}); "
              f"its compulsory traffic is {bytes_in / counts.BYTES_BULK:.2f}x ({bytes_in:.0f} B: "
              f"+{counts.BYTES_PML_AXIS} per absorbing axis, the memory variables)")

        print(f"[bench_fdm] memory: {n_rss}^3, order 2, C-PML 10, 1 rank ...", flush=True)
        big = run_fdm((n_rss,) * 3, {"kind": "cpml", "width": 10}, 2, 1, 1, tmp)
        rss = max(big[0]["peak_rss_bytes_per_rank"])
        fields = 9 * 4 * (n_rss + 4) ** 3
        print(f"  peak RSS {rss / 2**30:.2f} GiB (wavefields {fields / 2**30:.2f} GiB); "
              f"target <= 1.2 GiB: {_met(rss <= 1.2 * 2**30)}")

        if compare == "devito":
            _devito(tmp, n_bulk, steps, 2, bulk_rate)
        else:
            print("[bench_fdm] (add --compare devito for Devito's operator side by side)")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], *sys.argv[3:])
    else:
        from record import run_writing

        sys.exit(run_writing("bench_fdm", "FDM kernels against Devito", main))
