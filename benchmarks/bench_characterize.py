"""Characterisation's time and memory on this machine, and as if its last-level cache were larger.

Runs the default study's characterisation (``python -m mpi4py -m sims.bench`` on its two ranks, FDM
calibration included) once as the machine reports its cache and once for each ``--llc-mib`` override, each
under a 20 ms probe of the whole process tree's resident memory, and prints per run: the triad's length and
whether the memory budget capped it, the wall time, the time of each step (from the progress lines) and the
peak memory against the job's estimate. ::

    python benchmarks/bench_characterize.py [--llc-mib 480 2048] [--memory-gib 3] [--write]

``--memory-gib`` runs the overrides under a memory cgroup of that size (as root with cgroup v1 or v2; an
address-space rlimit elsewhere), as a smaller machine or a SLURM allocation would hold them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def run(spec: dict, words: list[str], out: Path) -> dict:
    """One characterisation under the probe: wall time, peak tree RSS, steps' start times, sizing."""
    from sims.memory import JobPeaks

    cmd = [*words, "mpiexec", "-n", "2", sys.executable, "-m", "mpi4py", "-m", "sims.bench", "--spec",
           json.dumps(spec), "--out", str(out)]
    peaks = JobPeaks(os.getpid())
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, text=True)
        while proc.poll() is None:
            peaks.poll()
            time.sleep(0.02)
        wall = time.monotonic() - t0
        log.seek(0)
        text = log.read()
    if proc.returncode != 0:
        raise SystemExit(f"characterisation failed ({proc.returncode}):\n{text[-3000:]}")
    steps: dict[str, float] = {}
    for m in re.finditer(r"step (\d) of 7: .*\[(\d+) s\]", text):
        steps.setdefault(m.group(1), float(m.group(2)))
    import yaml

    doc = yaml.safe_load(out.read_text())
    return {"wall_s": wall, "peak_bytes": max((p for _, p, _ in peaks.jobs()), default=0), "steps": steps,
            "sizing": doc["sizing"]["host"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llc-mib", type=float, nargs="*", default=[480.0], help="cache sizes to run as (MiB)")
    parser.add_argument("--memory-gib", type=float, default=None, help="run the overrides under this memory ceiling")
    parser.add_argument("--write", action="store_true", help="also write the table into docs/benchmarks.md")
    args = parser.parse_args(argv)
    from analysis.planning.config import characterize_spec, load_config
    from analysis.planning.estimates import characterize_layout

    config = load_config()
    platform = config["platforms"][0]["name"]
    rows = []
    for llc in [None, *args.llc_mib]:
        spec = characterize_spec(config, platform)
        spec["llc_mib"] = llc
        config["characterize"]["llc_mib"] = llc
        ceiling = args.memory_gib if llc is not None else None
        estimate_mb = characterize_layout(config, platform, ceiling * 1024 if ceiling else None).mem_mb_per_node
        label = "as detected" if llc is None else f"as if {llc:g} MiB" + (f", {ceiling:g} GiB ceiling" if ceiling
                                                                              else "")
        print(f"[bench_characterize] characterising {label} ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            if ceiling:
                from tests.memory_ceiling import memory_ceiling

                with memory_ceiling(int(ceiling * 2**30)) as c:
                    got = run(spec, c.words, Path(tmp) / "p.yaml")
            else:
                got = run(spec, [], Path(tmp) / "p.yaml")
        s = got["sizing"]
        steps = got["steps"]
        order = sorted(steps, key=int)
        spans = {k: (steps[order[i + 1]] if i + 1 < len(order) else got["wall_s"]) - steps[k]
                 for i, k in enumerate(order)}
        rows.append(f"| {label} | {s['llc_bytes'] / 2**20:.0f} | {4 * s['elements'] / 2**20:.0f} / "
                    f"{4 * s['wanted_elements'] / 2**20:.0f} | {'yes' if s['capped'] else 'no'} | "
                    f"{'yes' if s['below_stream_rule'] else 'no'} | {got['wall_s']:.0f} | "
                    + " / ".join(f"{spans[k]:.0f}" for k in order)
                    + f" | {got['peak_bytes'] / 2**30:.2f} | {estimate_mb / 1024:.2f} |")
        print(rows[-1], flush=True)
    head = ["| run | LLC (MiB) | triad array used / wanted (MiB) | capped | below 4 x LLC | wall (s) | "
            "steps 1-7 (s) | peak, both ranks (GiB) | estimate (GiB) |", "|---" * 9 + "|"]
    print("\n".join(head + rows))
    if args.write:
        from benchmarks.record import write_section

        write_section("bench_characterize", "Characterisation: time and memory, and other caches",
                      "The default study's characterisation (FDM calibration included; Numba's cache warm). Steps: "
                      "1 triad and FMA chains, 2 idle windows, 3 intensity sweep, 4 per-operation, 5 compute "
                      "ceilings, 6 FDM kernels, 7 ping-pong. Peak = resident memory of the whole process tree, "
                      "polled every 20 ms; estimate = the job's `mem_mb`.\n\n" + "\n".join(head + rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
