"""The FDM models across fresh studies: tightness and ranking fidelity, each with its interval, study by study.

Run from the repository root::

    python benchmarks/bench_fdm_studies.py --studies 3 [--config config/studies/fdm-scaling.yaml] [--write]
    python benchmarks/bench_fdm_studies.py --from DIR [DIR ...]   # studies already run (their working dirs)
    python benchmarks/bench_fdm_studies.py --brief --from DIR [DIR ...]   # one row per study, and the tally

Each fresh study runs the whole workflow (``snakemake -c2``, characterisation included) in a new directory,
one after the other. Per study and FDM model it prints the scorecard's figures (tightness median with its
bootstrap interval, Kendall tau median over the distinguishable groups with its interval, noise-aware top-1
rate with its Clopper-Pearson interval), and where the calibrated model's top-1 misses: per axis (marshaling design,
decomposition) and rank count, the groups it picks wrong, and which phase misses most across the runs.

``--brief`` gives every study found under each directory (a working directory holds one per study it ran) one
row: the code that measured it, the calibrated model's 2-4-rank tightness with its interval and ranking, whether
the median lies in [0.8, 1.25]; then per study kind how many do, and the median of their medians: how often one
study's verdict on the calibrated model lands in the band, measured over many studies rather than assumed.
"""

from __future__ import annotations

import argparse
import collections
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

MODELS = ("FDM", "FDM-calibrated")


def run_study(config: Path, work: Path) -> float:
    """Run the study in ``work`` (fresh); return its wall seconds."""
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(work), "-c2",
                          "--configfile", str(config)], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"the study in {work} failed:\n{out.stderr[-3000:]}")
    return time.monotonic() - started


def validation_dir(work: Path) -> Path:
    found = sorted(work.glob("results/*/validation/fdm_fidelity.parquet"))
    if not found:
        raise SystemExit(f"no FDM validation under {work}/results")
    return found[0].parent


def summarize(work: Path) -> list[str]:
    import pandas as pd

    v = validation_dir(work)
    card = pd.read_parquet(v / "scorecard.parquet")
    card = card[card["case"] == "fdm"]
    lines = [f"- `{work.name}` ({v.parent.name}):"]
    def interval(r, col: str, lo: str, hi: str) -> str:
        return "n/a" if pd.isna(r[col]) else f"{r[col]:.2f} [{r[lo]:.2f}, {r[hi]:.2f}]"

    for _, r in card.iterrows():
        lines.append(f"  - {r['model']}, {r['workload_class']}: {r['runs']} runs, tightness "
                     f"{interval(r, 'tightness_median', 'tightness_lo', 'tightness_hi')}; "
                     f"{r['distinguishable_groups']} of {r['groups']} groups distinguishable; tau "
                     f"{interval(r, 'kendall_tau_median', 'kendall_tau_lo', 'kendall_tau_hi')}; top-1 "
                     f"{interval(r, 'top1_noise_aware_rate', 'top1_noise_aware_lo', 'top1_noise_aware_hi')}")
    fid = pd.read_parquet(v / "fdm_fidelity.parquet")
    cal = fid[(fid["model"] == "FDM-calibrated") & fid["distinguishable"]]
    misses = collections.Counter()
    totals = collections.Counter()
    for _, g in cal.iterrows():
        key = (g["axis"], int(g["ranks"]))
        totals[key] += 1
        if g["top1_noise_aware"] < 1:
            misses[key] += 1
    lines.append("  - calibrated model, distinguishable groups picked wrong (axis, ranks): "
                 + (", ".join(f"{a} at {n} ranks {misses[(a, n)]} of {totals[(a, n)]}" for a, n in sorted(totals))
                    or "none distinguishable"))
    runs = pd.read_parquet(v / "fdm_runs.parquet")
    worst = runs[runs["model"] == "FDM-calibrated"]["worst_phase"].value_counts()
    floor = float(fid["noise_floor"].iloc[0]) if len(fid) else float("nan")
    lines.append(f"  - phase that misses most per run: {dict(worst)}; drift floor {floor:.2f}")
    return lines


#: the tightness band the calibrated FDM model is held to on multi-rank runs
BAND = (0.8, 1.25)


def brief_rows(work: Path) -> list[dict]:
    """One row per study with an FDM validation under ``work``: its calibrated 2-4-rank scorecard figures."""
    import pandas as pd

    rows = []
    for v in sorted(work.glob("results/*/validation/fdm_fidelity.parquet")):
        v = v.parent
        card = pd.read_parquet(v / "scorecard.parquet")
        row = card[(card["model"] == "FDM-calibrated") & card["workload_class"].str.startswith("2-4 ranks")]
        if row.empty:
            continue
        r = row.iloc[0]
        shas = pd.read_parquet(work / "results" / "runs", columns=["study", "git_sha"],
                               filters=[("study", "=", v.parent.name)])["git_sha"].dropna().unique()
        rows.append({"dir": str(work), "study": v.parent.name, "code": ", ".join(sorted(s[:7] for s in shas)) or "?",
                     "runs": int(r["runs"]), "median": float(r["tightness_median"]), "lo": float(r["tightness_lo"]),
                     "hi": float(r["tightness_hi"]), "tau": r["kendall_tau_median"]})
    return rows


def brief(dirs: list[Path]) -> list[str]:
    """The table of :func:`brief_rows` over ``dirs`` and the tally per study kind."""
    import statistics

    import pandas as pd

    rows = [r for d in dirs for r in brief_rows(d)]
    if not rows:
        raise SystemExit("no study with a calibrated FDM 2-4-rank scorecard row under the directories given")
    lines = ["| directory | study | code | runs | calibrated 2-4 ranks tightness [interval] | tau | in "
             f"[{BAND[0]}, {BAND[1]}] |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        tau = "n/a" if pd.isna(r["tau"]) else f"{r['tau']:.2f}"
        inside = BAND[0] <= r["median"] <= BAND[1]
        lines.append(f"| `{r['dir']}` | {r['study']} | {r['code']} | {r['runs']} | {r['median']:.2f} "
                     f"[{r['lo']:.2f}, {r['hi']:.2f}] | {tau} | {'yes' if inside else 'NO'} |")
    lines.append("")
    for study in sorted({r["study"] for r in rows}):
        meds = [r["median"] for r in rows if r["study"] == study]
        inside = sum(BAND[0] <= m <= BAND[1] for m in meds)
        lines.append(f"- {study}: {inside} of {len(meds)} studies' medians in [{BAND[0]}, {BAND[1]}]; median of "
                     f"the medians {statistics.median(meds):.2f}, range {min(meds):.2f}-{max(meds):.2f}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=3, help="fresh studies to run, one after the other")
    ap.add_argument("--config", type=Path, default=ROOT / "config" / "studies" / "fdm-scaling.yaml")
    ap.add_argument("--from", dest="dirs", nargs="+", type=Path, help="summarize these studies' directories instead")
    ap.add_argument("--keep", type=Path, help="run the studies under this new or empty directory (default: a temporary one)")
    ap.add_argument("--brief", action="store_true", help="one row per study (every study under each directory) "
                    "and the tally, instead of each study's every scorecard row")
    ap.add_argument("--write", action="store_true", help="write the figures into docs/benchmarks.md")
    args = ap.parse_args()
    lines = []
    if args.dirs:
        dirs = list(args.dirs)
    else:
        base = args.keep or Path(tempfile.mkdtemp(prefix="bench-fdm-studies-"))
        if base.exists() and any(base.iterdir()):  # Snakemake would find its studies done: nothing fresh
            raise SystemExit(f"--keep {base} is not empty: the studies would not be fresh (use --from to summarize it)")
        dirs = []
        for i in range(args.studies):
            work = base / f"study{i + 1}"
            took = run_study(args.config, work)
            print(f"[bench_fdm_studies] study {i + 1} of {args.studies}: {took:.0f} s", flush=True)
            dirs.append(work)
    if args.brief:
        lines = brief(dirs)
    else:
        for work in dirs:
            lines += summarize(work)
    text = "\n".join(lines)
    print(text)
    if args.write:
        from benchmarks.record import write_section

        if args.brief:
            write_section("bench_fdm_studies-brief", "The calibrated FDM model across many studies",
                          "Every finished study given (`--brief --from`), one row each: the calibrated FDM model's "
                          "tightness on its 2-4-rank runs (measured / predicted performance, median over the runs "
                          "with its bootstrap interval) and Kendall's tau; `code` is the commit that measured it. "
                          "How often a single study's median lands in the band, not whether one did.\n\n" + text)
            return 0
        what = (f"{len(dirs)} finished studies ({', '.join(sorted({validation_dir(d).parent.name for d in dirs}))})"
                if args.dirs else f"{args.studies} fresh studies of {args.config.name}")
        write_section("bench_fdm_studies", "FDM models across fresh studies",
                      f"{what}; tightness = measured / predicted performance, median over the runs with its "
                      "bootstrap interval; tau and top-1 over the groups whose alternatives differ by more than "
                      "the study's drift floor (noise-aware top-1, Clopper-Pearson interval).\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
