"""Verdicts that hold tomorrow: several fresh default studies in a row, their scorecards side by side.

Run from the repository root::

    python benchmarks/bench_reproducibility.py --studies 4 [--baseline REF] [--write]
    python benchmarks/bench_reproducibility.py --from DIR [DIR ...] [--revalidate]   # studies already run

Each fresh study runs the whole default study (``snakemake -c2``, both characterisation replicates included) in
a new working directory, one after the other, on this checkout's code. Over every pair of studies and every
scorecard row (model, case, platform, workload class) it counts

- **contradictions**: an aspect (tightness or ranking) trusted in one study and not trusted in the other;
- **the same verdict**, *undecided* included;
- **coverage**: one study's 95 % tightness interval (and, separately, its tau interval) holding the other's
  median, over ordered pairs;

prints every row's verdicts and intervals study by study, the verdict pooled over all the studies (as the history
pools nights: :mod:`analysis.tracking.pooled`), and each study's wall time. ``--baseline REF`` also times one
default study of the code at git ``REF`` (its own virtual environment, in a temporary worktree) on this machine.
Each study keeps its wall time in its directory (``wall_s``), the baseline's in ``baseline/`` beside them, so
``--from`` (with ``--revalidate``: the same measurements judged by this checkout's code) reports them again.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The issue's targets: contradictions at most, the same verdict at least, coverage at least (fractions).
TARGETS = {"contradictions": 0.05, "same_verdict": 0.80, "coverage": 0.90}


def run_study(work: Path, snakefile: Path = ROOT / "Snakefile", python: str = sys.executable) -> float:
    """Run the default study in ``work`` (fresh); return its wall seconds."""
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    out = subprocess.run([python, "-m", "snakemake", "-s", str(snakefile), "-d", str(work), "-c2"],
                         capture_output=True, text=True, cwd=snakefile.parent)
    (work / "snakemake.log").write_text(out.stdout + out.stderr, encoding="utf-8")
    if out.returncode != 0:
        raise SystemExit(f"the study in {work} failed:\n{out.stderr[-3000:]}")
    wall = time.monotonic() - started
    (work / "wall_s").write_text(f"{wall:.1f}\n", encoding="utf-8")  # what --from reports again
    return wall


def recorded_wall(work: Path) -> float | None:
    """The wall seconds :func:`run_study` kept in ``work`` (None when it kept none)."""
    try:
        return float((work / "wall_s").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def baseline(ref: str, base: Path) -> float:
    """Wall seconds of one default study of the code at git ``ref``, in its own worktree and environment."""
    tree = base / "baseline-tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref], check=True,
                   capture_output=True)
    try:
        venv = tree / ".venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-c", "constraints.txt", "-e", ".[mpich]"],
                       cwd=tree, check=True, capture_output=True)
        env_path = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        os.environ["PATH"], saved = env_path, os.environ["PATH"]
        try:
            return run_study(base / "baseline", tree / "Snakefile", str(venv / "bin" / "python"))
        finally:
            os.environ["PATH"] = saved
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def revalidate(work: Path) -> None:
    """Validate a finished study's measurements again with this checkout's code (its validation tables replaced,
    its snapshot in a history of its own: ``results/history-revalidated``)."""
    import shutil

    from analysis.planning.config import load_config, uncertainty_settings
    from analysis.resources import PUBLISHED_MACHINES
    from analysis.scoring.validate import DaskSettings, validate

    config = load_config(ROOT / "config" / "config.yaml")
    study = config["study"]
    history_path = work / "results" / "history-revalidated"
    shutil.rmtree(history_path, ignore_errors=True)
    validate(work / "results" / "runs", work / "results" / study / "platforms", work / "results" / study / "validation",
             studies=[study], log=lambda *_: None, dask_settings=DaskSettings(workers=1),
             published_dir=PUBLISHED_MACHINES, uncertainty=uncertainty_settings(), history_path=history_path,
             platform_files=sorted((work / "results" / study / "platforms").glob("*.yaml")))


def scorecard(work: Path):
    import pandas as pd

    found = sorted(work.glob("results/*/validation/scorecard.parquet"))
    if not found:
        raise SystemExit(f"no scorecard under {work}/results")
    return pd.read_parquet(found[0])


def history(work: Path):
    from analysis.tracking import history as hist
    from analysis.tracking.pooled import COLUMNS

    path = work / "results" / "history-revalidated"
    path = path if path.exists() else work / "results" / "history"
    return hist.read(path, columns=COLUMNS) if path.exists() else None


KEYS = ["case", "model", "platform", "workload_class"]


def _interval(mid, lo, hi) -> str:
    import math

    if mid is None or (isinstance(mid, float) and math.isnan(mid)):
        return "n/a"
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return f"{mid:.2f}"
    return f"{mid:.2f} [{lo:.2f}, {hi:.2f}]"


def compare(cards: list) -> tuple[dict[str, tuple[int, int]], list]:
    """The counts over pairs of studies (see the module notes) and each row's figures per study."""
    import math

    from analysis.scoring.compare import contradicts

    rows: dict[tuple, list] = {}
    for i, card in enumerate(cards):
        for r in card.to_dict("records"):
            rows.setdefault(tuple(str(r[k]) for k in KEYS), [None] * len(cards))[i] = r
    counts = {"contradictions": [0, 0], "same_verdict": [0, 0], "coverage": [0, 0], "coverage_tau": [0, 0]}

    def inside(r: dict, mid_of: dict, mid: str, lo: str, hi: str) -> bool | None:
        m, a, b = mid_of.get(mid), r.get(lo), r.get(hi)
        if any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (m, a, b)):
            return None
        return a <= m <= b

    for per_study in rows.values():
        for a, b in itertools.combinations([r for r in per_study if r is not None], 2):
            counts["contradictions"][0] += contradicts(a, b)
            counts["contradictions"][1] += 1
            counts["same_verdict"][0] += a["verdict"] == b["verdict"]
            counts["same_verdict"][1] += 1
            for x, y in ((a, b), (b, a)):
                for key, (mid, lo, hi) in (("coverage", ("tightness_median", "tightness_lo", "tightness_hi")),
                                           ("coverage_tau", ("kendall_tau_median", "kendall_tau_lo", "kendall_tau_hi"))):
                    got = inside(x, y, mid, lo, hi)
                    if got is not None:
                        counts[key][0] += got
                        counts[key][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}, sorted(rows.items())


def pooled_verdicts(works: list[Path]):
    """Each row's verdict pooled over all the studies' snapshots (one history of them all)."""
    import pandas as pd

    from analysis.tracking.pooled import pool

    frames = [h for h in (history(w) for w in works) if h is not None and len(h)]
    if not frames:
        return None
    nights = pd.concat(frames, ignore_index=True)
    card = scorecard(works[-1])
    return pool(card, nights[nights["snapshot"].isin(set(nights["snapshot"]))], 0.95)


def _rounds(work: Path) -> int | None:
    """The most rounds any run of the study at ``work`` was measured in (from its repetitions' rounds)."""
    import pandas as pd

    path = work / "results" / "default" / "validation" / "runs.parquet"
    if not path.exists():
        return None
    col = pd.read_parquet(path, columns=["rounds_reps"])["rounds_reps"]
    found = [int(max(x for x in r if x == x)) + 1 for r in col if r is not None and any(x == x for x in r)]
    return max(found, default=None)


def report(works: list[Path], walls: list[float | None], base_wall: float | None) -> str:
    cards = [scorecard(w) for w in works]
    counts, rows = compare(cards)
    rounds = sorted({n for n in (_rounds(w) for w in works) if n})
    lines = [f"{len(works)} studies of the default study, one after the other on the same code and machine; "
             f"each run's repetitions measured in {' or '.join(map(str, rounds)) or 'an unknown number of'} "
             f"rounds (runs.rounds).", ""]
    lines.append("| row | " + " | ".join(f"study {i + 1}" for i in range(len(works))) + " | all studies pooled |")
    lines.append("|---|" + "---|" * (len(works) + 1))
    pooled = pooled_verdicts(works)
    for key, per_study in rows:
        cells = []
        for r in per_study:
            if r is None:
                cells.append("-")
                continue
            cells.append(f"{r['verdict']}: {_interval(r['tightness_median'], r['tightness_lo'], r['tightness_hi'])}"
                         + (f", tau {_interval(r['kendall_tau_median'], r['kendall_tau_lo'], r['kendall_tau_hi'])}"
                            if r["distinguishable_groups"] else ""))
        p = "-"
        if pooled is not None:
            hit = pooled[(pooled["case"].astype(str) == key[0]) & (pooled["model"].astype(str) == key[1])
                         & (pooled["platform"].astype(str) == key[2]) & (pooled["workload_class"].astype(str) == key[3])]
            if len(hit):
                h = hit.iloc[0]
                p = (f"{h['pooled_verdict']}: {_interval(h['pooled_tightness_median'], h['pooled_tightness_lo'], h['pooled_tightness_hi'])}"
                     f" ({int(h['pooled_snapshots'])} snapshots)") if int(h["pooled_snapshots"]) >= 2 else "-"
        lines.append(f"| {key[1]}, {key[0]}, {key[3]} | " + " | ".join(cells) + f" | {p} |")
    lines.append("")

    def rate(name: str) -> str:
        hits, total = counts[name]
        return f"{hits} of {total} ({hits / total:.0%})" if total else "none"

    c, s, v = counts["contradictions"], counts["same_verdict"], counts["coverage"]
    lines += [
        f"- contradictions (an aspect trusted in one study, not trusted in another): {rate('contradictions')} of row "
        f"pairs; target at most {TARGETS['contradictions']:.0%}: "
        f"{'met' if c[1] and c[0] / c[1] <= TARGETS['contradictions'] else 'NOT met'}",
        f"- the same verdict, undecided included: {rate('same_verdict')} of row pairs; target at least "
        f"{TARGETS['same_verdict']:.0%}: {'met' if s[1] and s[0] / s[1] >= TARGETS['same_verdict'] else 'NOT met'}",
        f"- one study's 95 % tightness interval holding another's median: {rate('coverage')} of ordered pairs; target "
        f"at least {TARGETS['coverage']:.0%}: {'met' if v[1] and v[0] / v[1] >= TARGETS['coverage'] else 'NOT met'}",
        f"- the same for the Kendall tau intervals: {rate('coverage_tau')}",
    ]
    if any(w is not None for w in walls):
        lines.append("- wall time of each study (snakemake -c2, characterisation included): "
                     + ", ".join(f"{w:.0f} s" for w in walls if w is not None))
    if base_wall is not None:
        mine = [w for w in walls if w is not None]
        lines.append(f"- the baseline code's default study on this machine: {base_wall:.0f} s; these studies' median "
                     f"{sorted(mine)[len(mine) // 2]:.0f} s ({sorted(mine)[len(mine) // 2] / base_wall:.2f}x)")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=4, help="fresh default studies to run, one after the other")
    ap.add_argument("--from", dest="dirs", nargs="+", type=Path, help="compare these studies' directories instead")
    ap.add_argument("--keep", type=Path, help="run the studies under this new or empty directory (default: temporary)")
    ap.add_argument("--baseline", help="also time one default study of the code at this git ref (e.g. a tag)")
    ap.add_argument("--revalidate", action="store_true",
                    help="with --from: validate the studies' measurements again with this checkout's code first")
    ap.add_argument("--write", action="store_true", help="write the figures into docs/benchmarks.md")
    args = ap.parse_args()
    walls: list[float | None] = []
    base_wall = None
    if args.dirs:
        works = list(args.dirs)
        walls = [recorded_wall(w) for w in works]
        base_wall = recorded_wall(works[0].parent / "baseline")
        if args.revalidate:
            for work in works:
                revalidate(work)
                print(f"[bench_reproducibility] {work} validated again", flush=True)
    else:
        base = args.keep or Path(tempfile.mkdtemp(prefix="bench-reproducibility-"))
        if base.exists() and any(base.iterdir()):
            raise SystemExit(f"--keep {base} is not empty: the studies would not be fresh (use --from)")
        works = []
        if args.baseline:
            base_wall = baseline(args.baseline, base)
            print(f"[bench_reproducibility] baseline {args.baseline}: {base_wall:.0f} s", flush=True)
        for i in range(args.studies):
            work = base / f"study{i + 1}"
            walls.append(run_study(work))
            print(f"[bench_reproducibility] study {i + 1} of {args.studies}: {walls[-1]:.0f} s", flush=True)
            works.append(work)
    text = report(works, walls, base_wall)
    print(text)
    if args.write:
        from benchmarks.record import write_section

        write_section("bench_reproducibility", "Verdicts across fresh default studies", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
