"""Where the test suite's CPU-seconds go: each of its heavy parts run alone in a fresh clone, then everything else.

Run from the repository root::

    python benchmarks/bench_suite_parts.py [--keep DIR] [--write]

(as root with Debian's slurm-wlm and chromium installed, as CI does, so that the SLURM and browser tests run.)

Clones this checkout's HEAD, sets it up as README command 2 does, then runs each part below with ``pytest`` on
its own, one after another, on an otherwise idle machine: its wall seconds and the machine's busy core-seconds
(``/proc/stat``: the SLURM daemons' and every job's work included). The FDM kernels' compile comes first, from
an empty Numba cache as in a fresh clone (the suite runs it in the background from its start); the parts after
it find the kernels compiled. In the suite the parts share the cores, so their walls overlap and contention
lengthens them: their core-seconds, not their walls, add up. The sum over the parts is the work a 2-core
suite has to fit in: no schedule of it ends before that sum divided by the cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_timing import CpuBusy, fresh_clone, llc_line, timed  # noqa: E402

#: the suite's heavy parts: (what, the pytest arguments that run it alone). The tiny study's end-to-end test builds
#: the study too: its checks are the difference from the build alone.
PARTS = [
    ("the FDM kernels' compile, from an empty cache (with the FDM spec tests, which wait for it)",
     ["tests/fdm/test_spec.py"]),
    ("the tiny study, built alone (with the tests that read it)",
     ["tests/workflow/test_replicates.py", "tests/workflow/test_browser.py"]),
    ("the tiny study built, then its end-to-end checks", ["tests/workflow/test_workflow.py::test_tiny_study_end_to_end"]),
    ("the kill trials (their micro study built first)", ["tests/faults/test_kill.py"]),
    ("the plugin's study end to end", ["tests/test_plugin.py::test_a_plugin_study_end_to_end"]),
    ("the cluster study through the emulated SLURM cluster", ["tests/workflow/test_cluster_study.py"]),
    ("the validation on real Dask clusters", ["tests/analysis/test_dask_clusters.py"]),
]


def rest() -> list[str]:
    """The pytest arguments that run every test no part above runs."""
    args = []
    for _, words in PARTS:
        for w in words:
            args += ["--deselect", w] if "::" in w else ["--ignore", w]
    return args


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="clone into this new directory (default: a temporary one)")
    ap.add_argument("--write", action="store_true", help="write the figures into docs/benchmarks.md")
    args = ap.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-suite-parts-"))
    clone, sha, env = fresh_clone(base)
    if os.geteuid() == 0:  # as .ci/run does where it could install them
        env.update(HETVAL_REQUIRE_SLURM="1", HETVAL_REQUIRE_BROWSER="1")
    setup = timed("python3 -m venv .venv && . .venv/bin/activate && pip install -q -c constraints.txt "
                  "-e '.[mpich,test,slurm]'", clone, [], env)
    if setup["rc"]:
        raise SystemExit(f"set-up failed:\n{setup['out'][-3000:]}")
    cores = os.cpu_count() or 1
    print(f"{llc_line()}; code: the checkout's HEAD ({sha}), cloned afresh; {cores} cores", flush=True)
    rows, work = [], {}
    for what, words in [*PARTS, ("everything else", rest())]:
        with CpuBusy(period=1.0) as busy:
            got = timed(". .venv/bin/activate && pytest -q -p no:cacheprovider " + " ".join(words), clone, [], env)
        mean = sum(busy.samples) / len(busy.samples) if busy.samples else float("nan")
        core_s = mean * cores * got["wall_s"]
        last = got["out"].strip().splitlines()[-1] if got["out"].strip() else "no output"
        work[what] = core_s
        rows.append((what, got["wall_s"], core_s, mean, got["rc"], last))
        print(f"{what}: {got['wall_s']:.0f} s, {core_s:.0f} core-seconds ({100 * mean:.0f} % busy); exit {got['rc']}: "
              f"{last}", flush=True)
    tiny_alone, tiny_all = work[PARTS[1][0]], work[PARTS[2][0]]
    total = sum(work.values()) - tiny_alone  # the end-to-end part builds the study again
    lines = ["| part, run alone | wall (s) | busy core-seconds | busy | pytest |", "|---|---|---|---|---|"]
    lines += [f"| {w} | {s:.0f} | {c:.0f} | {100 * b:.0f} % | {last} |" for w, s, c, b, _, last in rows]
    text = "\n".join([
        f"- {llc_line()}; code: the checkout's HEAD ({sha}), cloned afresh; set up as README command 2 does; "
        f"{cores} cores, each part alone on an otherwise idle machine",
        "",
        *lines,
        "",
        f"- the tiny study's end-to-end checks alone: {tiny_all - tiny_alone:.0f} core-seconds (the end-to-end part "
        f"less the build)",
        f"- the whole suite's work: {total:.0f} core-seconds (the parts, the tiny study built once), so no schedule on "
        f"{cores} cores ends before {total / cores:.0f} s",
    ])
    print(text)
    if args.write:
        from benchmarks.record import write_section

        write_section("bench_suite_parts", "Where the suite's CPU-seconds go", text)
    return 0 if all(r[4] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
