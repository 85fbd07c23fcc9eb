"""Tracking benchmark: false alarms and detection power of ``hetval track`` on this machine's noise, and its speed.

Run from the repository root after a validated study (the default study, ``snakemake -c2``)::

    python benchmarks/bench_track.py [--study default] [--histories 400] [--trials 200] [--snapshots 20]

1. **Noise model.** Every run of the study's validation tables (``runs.parquet``,
   ``fdm_runs.parquet``) keeps its repetitions. Their relative deviations from
   their run's median, pooled, are this machine's real repetition spread.
2. **Pure-noise histories.** Each synthetic snapshot redraws every run: an
   invocation-level shift and then each repetition, both drawn from the pool
   (so a snapshot differs from the last as much as two invocations here can).
   The snapshot is scored by the production code (``score_groups`` /
   ``score_fdm`` with the bootstrap, the FDM drift floor included) and turned
   into history rows. A history is a *false alarm* when ``track`` flags a
   regression on its last night (independent across histories: the target);
   the rate over every night of the first ``--every`` histories is printed too.
3. **Steps.** A step makes one group's predictions a stated fraction less
   accurate (tightness moved that much further from 1) from a chosen snapshot
   on. Every prediction of the group scales by one factor, so its median
   tightness and interval scale by it and no other figure moves; the benchmark
   checks this on the real snapshot with the production scoring (and stops if
   it does not hold) and then applies the step to the pure-noise histories'
   rows. *Caught* = a regression of a stepped series whose reported start is
   the step's first snapshot.
4. **Detection, small step.** A ``--step`` (25 %) step from a random snapshot
   with at least ``--earlier`` (10) earlier ones, judged on each of its first
   nights; the target is on the night the rule can first claim a step (its
   third: the later segment of the step test holds at least
   ``history.after`` snapshots).
5. **Detection, large step, second snapshot.** The first two snapshots of a
   history, the second with one group's tightness moved ``--large`` (3x)
   further from 1.
6. **Speed.** A history of ``--scale`` snapshots (10^4 by default) of the real
   snapshot's size is written to a temporary store with the production
   writer; ``hetval track`` on it is timed over 3 runs (a fresh process each).

Histories are built and judged in ``--jobs`` processes, each seeded from
``--seed`` and its index (the figures do not depend on ``--jobs``);
``--keep DIR`` keeps every synthetic history (Parquet, one per history).

Prints the rates with their 95 % Wilson intervals, the timing, and PASS/FAIL
against the targets (false alarms: upper bound <= 1 %; detection >= 95 %; track <= 5 s).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a rate of ``k`` in ``n`` (SciPy's)."""
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def load(validation: Path):
    import pandas as pd

    from analysis.models.peapaw import MODEL as PEAPAW

    runs = pd.read_parquet(validation / "runs.parquet")
    runs = runs[runs["model"] == PEAPAW].reset_index(drop=True)
    fdm_path = validation / "fdm_runs.parquet"
    fdm = pd.read_parquet(fdm_path) if fdm_path.exists() else pd.DataFrame()
    for frame in (runs, fdm):
        if len(frame) and "time_reps_s" not in frame:
            raise SystemExit(f"{validation}: the tables carry no repetitions (time_reps_s); re-validate with this "
                             "version of hetval")
    return runs, fdm


def deviation_pool(*frames):
    import numpy as np

    devs = []
    for frame in frames:
        for reps in frame.get("time_reps_s", []):
            r = np.asarray(reps, dtype=float)
            if len(r) >= 2:
                devs.extend(r / np.median(r) - 1.0)
    return np.asarray(devs)


def redraw(frame, pool, rng, reps_n):
    """One invocation's measurements of every run in ``frame``."""
    import numpy as np

    out = frame.copy()
    n = len(out)
    shift = 1.0 + rng.choice(pool, n)
    new_reps = [float(m) * s * (1.0 + rng.choice(pool, reps_n)) for m, s in zip(out["time_median_s"], shift,
                                                                                 strict=True)]
    med = np.array([np.median(r) for r in new_reps])
    out["tightness"] = out["tightness"].to_numpy() * out["time_median_s"].to_numpy() / med
    out["time_median_s"] = med
    out["time_reps_s"] = new_reps
    return out


def snapshot_rows(runs, fdm, settings):
    from analysis.cases.fdm import score_fdm
    from analysis.cases.wp import score_groups
    from analysis.tracking import history

    tables = {"fidelity": score_groups(runs, settings)}
    if len(fdm):
        tables["fdm_fidelity"] = score_fdm(fdm, settings)
    return history.model_rows(tables)


def one_history(runs, fdm, pool, rng, settings, snapshots, reps_n):
    """A pure-noise history frame of ``snapshots`` synthetic snapshots (ids ``s0000``, ``s0001``, ...)."""
    import pandas as pd

    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    frames = []
    for i in range(snapshots):
        r = redraw(runs, pool, rng, reps_n)
        f = redraw(fdm, pool, rng, reps_n) if len(fdm) else fdm
        rows = snapshot_rows(r, f, settings)
        rows["snapshot"] = f"s{i:04d}"
        rows["time"] = t0 + pd.Timedelta(hours=i)
        frames.append(rows)
    frame = pd.concat(frames, ignore_index=True)
    frame["study"] = "bench"
    frame["fingerprint"] = "bench"
    return frame


SERIES = ["case", "platform", "group", "model"]


def step_targets(runs, fdm, settings, factors):
    """The groups a step can be injected into: per (case, size) of ``runs`` and FDM scale, the tightness of the
    group and the history series a step moves, checked with the production scoring for every factor in
    ``factors``: the stepped snapshot's median tightness and interval are the unstepped ones times the factor,
    and nothing else moves (else the post-hoc injection would not be what scoring the step gives)."""
    import numpy as np

    from analysis.cases.fdm import SCALE_KEYS

    base = snapshot_rows(runs, fdm, settings).reset_index(drop=True)
    groups = [("runs", runs.index.isin(g.index), g) for _, g in runs.groupby(["case", "size"], sort=True)]
    if len(fdm):
        groups += [("fdm", fdm.index.isin(g.index), g) for _, g in fdm.groupby(SCALE_KEYS, sort=True)]
    out = []
    for which, mask, g in groups:
        tight = float(g["tightness"].median())
        moved = None
        for size in factors:
            factor = (1.0 - size) if tight <= 1.0 else 1.0 / (1.0 - size)
            r = redraw_step(runs, mask, factor) if which == "runs" else runs
            f = redraw_step(fdm, mask, factor) if which == "fdm" else fdm
            stepped = snapshot_rows(r, f, settings).reset_index(drop=True)
            if not stepped[[*SERIES, "metric"]].equals(base[[*SERIES, "metric"]]):
                raise SystemExit("a step changed which figures a snapshot holds: the post-hoc injection does not apply")
            same = np.isclose(stepped["value"], base["value"], rtol=1e-9, equal_nan=True)
            tightness = (base["metric"] == "tightness_median").to_numpy()
            scaled = tightness & np.all([np.isclose(stepped[c], base[c] * factor, rtol=1e-9, equal_nan=True)
                                         for c in ("value", "lo", "hi")], axis=0)
            if not np.all(same | scaled) or not scaled.any():
                raise SystemExit(f"a step of {size:.0%} on {which} group {g.iloc[0].get('case', '')} moved figures other "
                                 "than median tightness: the post-hoc injection does not apply")
            keys = set(map(tuple, base.loc[scaled & ~same, SERIES].astype(str).to_numpy()))
            if moved is not None and keys != moved:
                raise SystemExit("steps of two sizes moved different series")
            moved = keys
        out.append({"which": which, "tightness": tight, "series": moved})
    return out


def redraw_step(frame, mask, factor):
    out = frame.copy()
    out.loc[mask, "time_predicted_s"] *= factor
    out.loc[mask, "tightness"] *= factor
    return out


def inject(frame, target, start, size):
    """``frame`` with ``target``'s median tightness moved ``size`` further from 1 from snapshot ``start`` on."""
    import numpy as np

    factor = (1.0 - size) if target["tightness"] <= 1.0 else 1.0 / (1.0 - size)
    out = frame.copy()
    keys = out[SERIES].astype(str).apply(tuple, axis=1)
    sel = ((out["metric"] == "tightness_median") & keys.isin(target["series"])
           & (out["snapshot"] >= f"s{start:04d}")).to_numpy()
    for c in ("value", "lo", "hi"):
        out.loc[sel, c] = out.loc[sel, c].to_numpy(dtype=np.float64) * factor
    return out


def prefix(frame, n):
    """The history as it stood on night ``n`` (its first ``n`` snapshots)."""
    return frame[frame["snapshot"] < f"s{n:04d}"]


def caught(found, target, start) -> bool:
    return any(f.kind == "regression" and tuple(str(f.series[k]) for k in SERIES) in target["series"]
               and f.began == f"s{start:04d}" for f in found)


def judge_history(task):
    """Build pure-noise history ``index`` and judge it: the last night, every night (when asked), a small step and a
    large step. Runs in a worker process; everything it draws comes from ``(seed, index)``."""
    import numpy as np

    from analysis.planning.config import uncertainty_settings
    from analysis.tracking.track import history_rule, track

    MIN_AFTER = history_rule().after

    a = task["args"]
    runs, fdm = load(Path(a["validation"]))
    pool = deviation_pool(runs, fdm)
    settings = uncertainty_settings(resamples=a["resamples"])
    rule = history_rule()
    targets = task["targets"]
    n_snap = a["snapshots"]
    results = []
    for index in task["indices"]:
        rng = np.random.default_rng([a["seed"], index])
        frame = one_history(runs, fdm, pool, rng, settings, n_snap, task["reps_n"])
        if a["keep"]:
            out = Path(a["keep"]) / f"history-{index:05d}.parquet"
            frame.to_parquet(out.with_suffix(".tmp"))
            out.with_suffix(".tmp").replace(out)
        res = {"index": index}
        found, _ = track(frame, rule)
        regs = [f for f in found if f.kind == "regression"]
        res["last"] = bool(regs)
        res["last_tests"] = [f.test for f in regs]
        if index < a["every"]:
            res["every"] = [bool([f for f in track(prefix(frame, n), rule)[0] if f.kind == "regression"])
                            for n in range(2, n_snap + 1)]
        if index < a["trials"]:
            target = targets[int(rng.integers(len(targets)))]
            nights = MIN_AFTER + 2
            start = int(rng.integers(a["earlier"], n_snap - nights + 1))
            stepped = inject(frame, target, start, a["step"])
            res["small"] = [caught(track(prefix(stepped, start + k), rule)[0], target, start)
                            for k in range(1, nights + 1)]
            target = targets[int(rng.integers(len(targets)))]
            res["large"] = caught(track(prefix(inject(frame, target, 1, a["large"]), 2), rule)[0], target, 1)
        results.append(res)
    return results


def main() -> int:
    import multiprocessing as mp

    import numpy as np

    from analysis.planning.config import uncertainty_settings
    from analysis.tracking.track import history_rule

    MIN_AFTER = history_rule().after

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default="default")
    ap.add_argument("--validation", help="validation directory (default results/<study>/validation)")
    ap.add_argument("--histories", type=int, default=600,
                    help="pure-noise histories (0 false alarms in 600 put the upper 95 %% bound at 0.64 %%, 1 at "
                         "0.94 %%)")
    ap.add_argument("--trials", type=int, default=600, help="histories a step is injected into (at most --histories)")
    ap.add_argument("--every", type=int, default=50, help="histories judged on every night, not only the last")
    ap.add_argument("--snapshots", type=int, default=20)
    ap.add_argument("--step", type=float, default=0.25, help="the small loss of accuracy injected (relative)")
    ap.add_argument("--earlier", type=int, default=10, help="earlier snapshots before the small step at least")
    ap.add_argument("--large", type=float, default=2 / 3,
                    help="the large loss judged from the second snapshot (2/3: tightness moved 3x)")
    ap.add_argument("--resamples", type=int, default=200,
                    help="bootstrap resamples per group (the config default is 1000; 200 gives the same interval "
                         "widths to about 5 %% and keeps the benchmark to minutes)")
    ap.add_argument("--scale", type=int, default=10_000, help="snapshots in the speed test (0 = skip)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--keep", help="directory to keep every synthetic history in (Parquet)")
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args()
    validation = Path(args.validation or ROOT / "results" / args.study / "validation")
    if not (validation / "runs.parquet").exists():
        raise SystemExit(f"no {validation}/runs.parquet: run the study first (snakemake -c2)")
    if args.snapshots < args.earlier + MIN_AFTER + 2:
        raise SystemExit(f"--snapshots must leave room for --earlier {args.earlier} and a step of "
                         f"{MIN_AFTER + 2} nights")
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
    runs, fdm = load(validation)
    pool = deviation_pool(runs, fdm)
    reps_n = int(np.median([len(r) for r in runs["time_reps_s"]]))
    settings = uncertainty_settings(resamples=args.resamples)
    rule = history_rule()
    q = np.percentile(np.abs(pool), [50, 90, 99])
    print(f"noise: {len(pool)} real repetitions of {len(runs) + len(fdm)} runs in {validation}; |deviation from "
          f"the run median| p50 {q[0]:.1%}, p90 {q[1]:.1%}, p99 {q[2]:.1%}, max {np.abs(pool).max():.1%}; "
          f"{reps_n} repetitions per run")
    print(f"rule: {rule}; a step is claimed once it has held {MIN_AFTER} nights; bootstrap {settings.resamples} "
          f"resamples; {args.histories} histories x {args.snapshots} snapshots in {args.jobs} process(es)")
    t = time.perf_counter()
    targets = step_targets(runs, fdm, settings, (args.step, args.large))
    print(f"steps: {len(targets)} groups; for each, scoring a stepped snapshot moved its median tightness and "
          f"interval by exactly the step and nothing else", flush=True)
    shared = {"validation": str(validation), "resamples": args.resamples, "seed": args.seed,
              "snapshots": args.snapshots, "keep": args.keep, "every": args.every,
              "trials": min(args.trials, args.histories), "earlier": args.earlier, "step": args.step,
              "large": args.large}
    chunk = 5
    tasks = [{"args": shared, "targets": targets, "reps_n": reps_n,
              "indices": list(range(i, min(i + chunk, args.histories)))} for i in range(0, args.histories, chunk)]
    results = []
    with mp.get_context("spawn").Pool(max(1, args.jobs)) as workers:
        for done in workers.imap_unordered(judge_history, tasks):
            results.extend(done)
            if len(results) % 100 < chunk:
                print(f"  {len(results)} of {args.histories} histories judged ({time.perf_counter() - t:.0f} s)",
                      file=sys.stderr, flush=True)
    results.sort(key=lambda r: r["index"])
    report(results, args, time.perf_counter() - t)
    if args.scale:
        speed(runs, fdm, settings, args.scale)
    return 0


def report(results, args, seconds) -> None:
    from analysis.tracking.track import history_rule

    MIN_AFTER = history_rule().after

    n = len(results)
    last = sum(r["last"] for r in results)
    tests = [t for r in results for t in r["last_tests"]]
    lo, hi = wilson(last, n)
    every = [e for r in results if "every" in r for e in r["every"]]
    e_lo, e_hi = wilson(sum(every), len(every))
    print(f"false alarms: the last night of {n} pure-noise histories of {args.snapshots} snapshots flagged a "
          f"regression in {last} = {last / n:.2%} [{lo:.2%}, {hi:.2%}]  {'PASS' if hi <= 0.01 else 'FAIL'} "
          f"(target: upper bound <= 1 %; step test {tests.count('step')}, large-change test {tests.count('large')} "
          f"findings); over every night of the first {args.every} histories (2 to {args.snapshots} snapshots; nights "
          f"of one history are not independent): {sum(every)} of {len(every)} = {sum(every) / max(len(every), 1):.2%} "
          f"[{e_lo:.2%}, {e_hi:.2%}]")
    small = [r["small"] for r in results if "small" in r]
    k = MIN_AFTER
    hit = sum(s[k - 1] for s in small)
    lo, hi = wilson(hit, len(small))
    by = ", ".join(f"{j + 1}: {sum(s[j] for s in small) / len(small):.1%}" for j in range(len(small[0])))
    print(f"detection of a {args.step:.0%} loss of accuracy (one group's tightness moved {args.step:.0%} further "
          f"from 1 from a random snapshot with >= {args.earlier} earlier): caught with its start named on the "
          f"step's night {k} in {hit} of {len(small)} = {hit / len(small):.1%} [{lo:.1%}, {hi:.1%}]  "
          f"{'PASS' if hit / len(small) >= 0.95 else 'FAIL'} (target >= 95 %); caught on night k of the step: {by}")
    large = [r["large"] for r in results if "large" in r]
    hit = sum(large)
    lo, hi = wilson(hit, len(large))
    size = f"{1 / (1 - args.large):.3g}x"
    print(f"detection of a {size} loss of accuracy (one group's tightness moved {size} further from 1 on the second "
          f"snapshot, judged there): caught with its start named in {hit} of {len(large)} = {hit / len(large):.1%} "
          f"[{lo:.1%}, {hi:.1%}]  {'PASS' if hit / len(large) >= 0.95 else 'FAIL'} (target >= 95 %)")
    print(f"({n} histories built and judged in {seconds:.0f} s)")


def speed(runs, fdm, settings, n: int) -> None:
    import datetime as dt

    import numpy as np

    from analysis.tracking import history

    rows = snapshot_rows(runs, fdm, settings)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history"
        t = time.perf_counter()
        base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        rng = np.random.default_rng(1)
        meta = history.snapshot_meta([], "bench", settings.as_dict(), when=base)
        for i in range(n):
            r = rows.copy()
            r["value"] = r["value"] * (1 + rng.normal(0, 0.01, len(r)))
            when = base + dt.timedelta(minutes=i)
            meta.update(snapshot=when.strftime("%Y%m%dT%H%M%S.%fZ") + f"-{i:08x}", time=when)
            history.append(path, "bench", history.snapshot_table(meta, r))
        write = time.perf_counter() - t
        times = []
        for _ in range(3):
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "analysis.cli", "track", "--history", str(path),
                                   "--study", "bench"], capture_output=True, text=True, cwd=ROOT, check=False)
            times.append(time.perf_counter() - t)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"hetval track failed: {proc.stderr}")
        med = statistics.median(times)
        print(f"speed: {n} snapshots x {len(rows)} rows written in {write:.0f} s; hetval track (a fresh process, "
              f"import included) median {med:.2f} s [{min(times):.2f}, {max(times):.2f}] over 3 runs  "
              f"{'PASS' if med <= 5.0 else 'FAIL'} (target <= 5 s)")
        print("  last line: " + proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("bench_track", "Tracking: false alarms and detection power", main))
