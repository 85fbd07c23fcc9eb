"""FDM benchmark: MLUP/s of the elastic step against a STREAM triad measured in the same run, C-PML cost, memory.

Run from the repository root (takes about two minutes on 2 cores)::

    python benchmarks/bench_fdm.py            # --quick for smaller grids

It launches, under ``mpiexec``, one thread per rank:

1. a STREAM triad on 2 ranks at once (float32, 12 B/element counted) -> the node bandwidth;
2. the bulk step: 160^3, ``boundary: none``, order 2, 2 ranks, numba, every grid point counted;
3. the same with a 12-cell C-PML on every face (184^3: the same interior);
4. a single-rank 256^3 order-2 run for its peak resident memory.

and prints MLUP/s (median and spread of 5 repetitions), effective GB/s at the
step's compulsory traffic (bytes per point inside and outside the layer, from
:mod:`sims.fdm.counts`), and the ratio to the triad bandwidth.
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


def _spec(shape, boundary, steps, reps, ranks):
    n = shape[0]
    c = n * 10.0 / 2
    return {
        "grid": {"shape": list(shape), "spacing": 10.0}, "time": {"steps": steps},
        "medium": {"homogeneous": {"vp": 3000.0, "vs": 1732.0, "rho": 2500.0}},
        "source": {"kind": "explosive", "position": [c, c, c], "f0": 5.0, "moment": 1.0e15},
        "receivers": [[c + 100.0, c, c]], "boundary": boundary, "order": 2, "backend": "numba",
        "repetitions": reps, "warmup": 1, "ranks": ranks,
    }


def _mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def _launch(n: int, args: list[str]) -> str:
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([_mpiexec(), "-n", str(n), sys.executable, "-m", "mpi4py", *args],
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step failed: {' '.join(args)}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def run_fdm(shape, boundary, steps, reps, ranks, tmp: Path) -> dict:
    """Run one spec through the CLI; return its records."""
    import yaml

    name = f"{shape[0]}-{boundary['kind']}-{ranks}"
    spec = tmp / f"{name}.yaml"
    spec.write_text(yaml.safe_dump(_spec(shape, boundary, steps, reps, ranks)))
    _launch(ranks, [str(Path(__file__).resolve()), "--worker", "fdm", str(spec), str(tmp / name)])
    return json.loads((tmp / name / "record.json").read_text())


def worker(kind: str, *args: str) -> None:
    """What runs on the ranks."""
    from sims._threads import limit_threads

    limit_threads(1)
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


def _mlups(records) -> list[float]:
    return [r["points"] * r["steps"] / r["time_s"] / 1e6 for r in records]


def _stats(xs) -> str:
    return f"median {statistics.median(xs):.1f} (min {min(xs):.1f}, max {max(xs):.1f})"


def main() -> None:
    from sims.fdm import counts

    quick = "--quick" in sys.argv
    n_bulk, width = (96, 12) if quick else (160, 12)
    n_rss = 128 if quick else 256
    steps, reps = (10, 5) if quick else (20, 5)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        print("[bench_fdm] STREAM triad, 2 ranks x 1 thread, float32 ...", flush=True)
        triad = json.loads(_launch(2, [str(Path(__file__).resolve()), "--worker", "triad"]).strip().splitlines()[-1])
        bw = statistics.median(triad["triad_Bps"])
        print(f"  triad: {bw / 1e9:.1f} GB/s counted (12 B/element; min {min(triad['triad_Bps']) / 1e9:.1f}, "
              f"max {max(triad['triad_Bps']) / 1e9:.1f})")

        print(f"[bench_fdm] bulk step {n_bulk}^3, boundary none, order 2, 2 ranks, numba ...", flush=True)
        bulk = run_fdm((n_bulk,) * 3, {"kind": "none"}, steps, reps, 2, tmp)
        m_bulk = _mlups(bulk)
        gbs = [m * 1e6 * counts.BYTES_BULK / 1e9 for m in m_bulk]
        print(f"  MLUP/s {_stats(m_bulk)}")
        print(f"  effective GB/s at {counts.BYTES_BULK} B/point: {_stats(gbs)}; "
              f"ratio to triad {statistics.median(gbs) * 1e9 / bw:.2f}")
        phases = json.loads(bulk[0]["phase_times"])
        print("  per phase (slowest rank, repetition 0): "
              + ", ".join(f"{k} {max(v):.3f} s" for k, v in phases.items() if k != "loop" and max(v) > 0))

        n_pml = n_bulk + 2 * width
        print(f"[bench_fdm] with a {width}-cell C-PML: {n_pml}^3 (same {n_bulk}^3 interior), 2 ranks ...", flush=True)
        pml = run_fdm((n_pml,) * 3, {"kind": "cpml", "width": width}, steps, reps, 2, tmp)
        m_pml = _mlups(pml)
        step = counts.step_counts((n_pml,) * 3, 2, width)
        inner = n_bulk**3
        in_layer = step["points"] - inner
        bytes_in = (step["bytes"] - inner * counts.BYTES_BULK) / in_layer
        print(f"  MLUP/s (all {n_pml}^3 points counted) {_stats(m_pml)}")
        print(f"  bytes/point: outside the layer {counts.BYTES_BULK}, inside {bytes_in:.0f} "
              f"(+{counts.BYTES_PML_AXIS} per absorbing axis: the memory variables)")
        t_pt = 1.0 / (statistics.median(m_bulk) * 1e6)  # s per interior point update, both ranks
        t_all = 1.0 / (statistics.median(m_pml) * 1e6) * step["points"]
        cost_in = (t_all - inner * t_pt) / in_layer / t_pt
        print(f"  a layer point costs {cost_in:.2f}x an interior point; its traffic is {bytes_in / counts.BYTES_BULK:.2f}x")
        eff = step["bytes"] / (t_all) / 1e9
        print(f"  effective GB/s at the compulsory traffic: {eff:.1f}; ratio to triad {eff * 1e9 / bw:.2f}")

        print(f"[bench_fdm] memory: {n_rss}^3, order 2, C-PML 10, 1 rank ...", flush=True)
        big = run_fdm((n_rss,) * 3, {"kind": "cpml", "width": 10}, 2, 1, 1, tmp)
        rss = max(big[0]["peak_rss_bytes_per_rank"])
        fields = 9 * 4 * (n_rss + 4) ** 3
        print(f"  peak RSS {rss / 2**30:.2f} GiB (wavefields {fields / 2**30:.2f} GiB); "
              f"target < 1.2 GiB: {'met' if rss < 1.2 * 2**30 else 'NOT met'}")
        target = 300.0
        print(f"[bench_fdm] bulk target >= {target:.0f} MLUP/s: {'met' if statistics.median(m_bulk) >= target else 'NOT met'} "
              f"({statistics.median(m_bulk):.0f})")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], *sys.argv[3:])
    else:
        main()
