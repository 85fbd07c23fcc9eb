"""Characterisation's time and memory on this machine, as if its last-level cache were larger, and how its
parameters compare with the previous way of sizing and repeating it.

Runs the default study's characterisation (``python -m mpi4py -m sims.bench`` on its two ranks, FDM
calibration included) as the machine reports its cache and for each ``--llc-mib`` override, each as the study
runs it - two replicates (the second measuring what the first sized), the triad at its memory plateau, each
replicate's share of the repetitions - and, with ``--compare``, the previous way: the triad at the cache rule's
length (4 x the LLC per array, capped by the memory budget), 7 repetitions, three transpose rounds, also twice.
Each run under a 20 ms probe of the whole process tree's resident memory; per run it prints the triad's length
and why, the wall time, the time of each step (from the progress lines) and the peak memory against the job's
estimate; with ``--compare``, per parameter, the two ways' values and each one's spread between its replicates. ::

    python benchmarks/bench_characterize.py [--llc-mib 260 480] [--compare] [--memory-gib 3] [--write]

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


def run(spec: dict, words: list[str], out: Path, choices: Path | None = None) -> dict:
    """One characterisation under the probe: wall time, peak tree RSS, steps' start times, sizing; its raw samples
    beside ``out`` (``.json``), measuring what ``choices`` (an earlier replicate's raw samples) sized."""
    from sims.memory import JobPeaks

    cmd = [*words, "mpiexec", "-n", "2", sys.executable, "-m", "mpi4py", "-m", "sims.bench", "--spec",
           json.dumps(spec), "--out", str(out), "--raw", str(out.with_suffix(".json")),
           *(["--choices", str(choices)] if choices else [])]
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
            "sizing": doc["sizing"]["host"], "raw": out.with_suffix(".json")}


def previous(spec: dict) -> dict:
    """The spec characterised the previous way: the cache rule's length, 2 warm-ups and 7 repetitions of everything
    (fixed counts, no stopping once narrow), three transpose rounds."""
    return {**spec, "plateau": False, "repetitions": 7, "transpose_rounds": 3, "precision": None, "warmup": 2}


def compared(new: dict, old: dict) -> list[str]:
    """Per parameter with samples: the previous way's value and replicates' spread, the new way's, the ratio, and
    whether the new value lies within the larger of the two spreads of the previous one's."""
    from sims.platform_file import parameter_at, parameters

    rows = []
    for path, param in parameters(new):
        if not param.get("samples") or not param.get("replicate_spread"):
            continue
        other = parameter_at(old, path)
        if not isinstance(other, dict) or not other.get("replicate_spread"):
            continue
        ratio = param["value"] / other["value"]
        spread = max(param["replicate_spread"], other["replicate_spread"])
        within = max(ratio, 1 / ratio) <= spread
        rows.append(f"| {'.'.join(p for p in path if p not in ('processors', 'ceilings'))} | {other['value']:.3g} "
                    f"({other['replicate_spread']:.3f}) | {param['value']:.3g} ({param['replicate_spread']:.3f}) | "
                    f"{ratio:.3f} | {'yes' if within else 'NO'} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llc-mib", type=float, nargs="*", default=[480.0], help="cache sizes to run as (MiB)")
    parser.add_argument("--memory-gib", type=float, default=None, help="run the overrides under this memory ceiling")
    parser.add_argument("--compare", action="store_true",
                        help="also characterise the previous way (the cache rule's length, 7 repetitions) and compare")
    parser.add_argument("--write", action="store_true", help="also write the table into docs/benchmarks.md")
    args = parser.parse_args(argv)
    from analysis.planning.config import characterize_spec, load_config
    from analysis.planning.estimates import characterize_layout

    config = load_config()
    platform = config["platforms"][0]["name"]
    rows, comparisons = [], []
    for llc in [None, *args.llc_mib]:
        spec = characterize_spec(config, platform)
        spec["llc_mib"] = llc
        config["characterize"]["llc_mib"] = llc
        ceiling = args.memory_gib if llc is not None else None
        estimate_mb = characterize_layout(config, platform, ceiling * 1024 if ceiling else None).mem_mb_per_node
        pooled = {}
        for way, way_spec in (("study's", spec), *((("previous", previous(spec)),) if args.compare else ())):
            label = ("as detected" if llc is None else f"as if {llc:g} MiB") + f", the {way} way" + (
                f", {ceiling:g} GiB ceiling" if ceiling else "")
            with tempfile.TemporaryDirectory() as tmp:
                got = []
                for k in (1, 2):
                    print(f"[bench_characterize] characterising {label}, replicate {k} of 2 ...", flush=True)
                    out = Path(tmp) / f"p.{k}.yaml"
                    first = got[0]["raw"] if got else None
                    if ceiling:
                        from tests.memory_ceiling import memory_ceiling

                        with memory_ceiling(int(ceiling * 2**30)) as c:
                            got.append(run(way_spec, c.words, out, first))
                    else:
                        got.append(run(way_spec, [], out, first))
                    s = got[-1]["sizing"]
                    steps = got[-1]["steps"]
                    order = sorted(steps, key=int)
                    spans = {k2: (steps[order[i + 1]] if i + 1 < len(order) else got[-1]["wall_s"]) - steps[k2]
                             for i, k2 in enumerate(order)}
                    length = 4 * s.get("elements", 0) / 2**20
                    rows.append(f"| {label}, replicate {k} | {s['llc_bytes'] / 2**20:.0f} | {length:.0f} / "
                                f"{4 * s['wanted_elements'] / 2**20:.0f} | {(s.get('plateau') or {}).get('how', 'n/a')} | "
                                f"{got[-1]['wall_s']:.0f} | " + " / ".join(f"{spans[k2]:.0f}" for k2 in order)
                                + f" | {got[-1]['peak_bytes'] / 2**30:.2f} | {estimate_mb / 1024:.2f} |")
                    print(rows[-1], flush=True)
                from sims.bench.replicates import merge

                pooled[way] = merge([str(g["raw"]) for g in got], way_spec, str(Path(tmp) / "p.yaml"))
        if args.compare:
            lines = compared(pooled["study's"], pooled["previous"])
            inside = sum(line.endswith("yes |") for line in lines)
            comparisons += [f"\n{'As detected' if llc is None else f'As if {llc:g} MiB'}: {inside} of {len(lines)} "
                            "parameters within the larger spread between replicates of either way.\n",
                            "| parameter | previous way (its replicates' spread) | the study's way (spread) | ratio "
                            "| within |", "|---|---|---|---|---|", *lines]
    head = ["| run | LLC (MiB) | triad array used / the cache rule's (MiB) | how its length was chosen | wall (s) | "
            "steps 1-7 (s) | peak, both ranks (GiB) | estimate (GiB) |", "|---" * 8 + "|"]
    print("\n".join(head + rows + comparisons))
    if args.write:
        from benchmarks.record import write_section

        write_section("bench_characterize", "Characterisation: time and memory, and other caches",
                      "The default study's characterisation (FDM calibration included; Numba's cache warm). Steps: "
                      "1 triad and FMA chains, 2 idle windows, 3 intensity sweep, 4 per-operation, 5 compute "
                      "ceilings, 6 FDM kernels, 7 ping-pong. Peak = resident memory of the whole process tree, "
                      "polled every 20 ms; estimate = the job's `mem_mb`. The previous way: the triad at the "
                      "cache rule's length, 2 warm-ups and 7 repetitions of each measurement, 3 transpose rounds, per replicate; "
                      "the study's way: its share of the repetitions, more while a cheap measurement is not yet "
                      "narrow (the platform file's `repetitions`).\n\n"
                      + "\n".join(head + rows + comparisons))
    return 0


if __name__ == "__main__":
    sys.exit(main())
