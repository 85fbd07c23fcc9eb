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
   into history rows. ``track`` judges every night of the history (each prefix
   of 2 or more snapshots), as a nightly job would. A history is a *false
   alarm* when its last night flags a regression (independent across
   histories: the target); the rate over every night is printed too.
3. **Detection, small step.** The same histories with one step injected: from a
   random snapshot with at least 10 earlier ones, one model's predictions for
   one group become ``--step`` (25 %) less accurate (tightness moved that much
   further from 1). *Caught* = a regression of that group and model whose
   reported start is the injected snapshot, on the last night; the nights the
   step had lasted when it was first caught are printed as well.
4. **Detection, large step, second snapshot.** Histories of 2 snapshots, the
   second with one group's tightness moved ``--large`` (3x) further from 1.
5. **Speed.** A history of ``--scale`` snapshots (10^4 by default) of the real
   snapshot's size is written to a temporary store with the production
   writer; ``hetval track`` on it is timed over 3 runs (a fresh process each).

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


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


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


def redraw(frame, pool, rng, reps_n, step=None):
    """One invocation's measurements of every run in ``frame`` (and the injected step, if any)."""
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
    if step is not None:
        mask, factor = step
        out.loc[mask, "time_predicted_s"] *= factor
        out.loc[mask, "tightness"] *= factor
    return out


def snapshot_rows(runs, fdm, settings):
    from analysis.cases.fdm import score_fdm
    from analysis.cases.wp import score_groups
    from analysis.tracking import history

    tables = {"fidelity": score_groups(runs, settings)}
    if len(fdm):
        tables["fdm_fidelity"] = score_fdm(fdm, settings)
    return history.model_rows(tables)


def one_history(runs, fdm, pool, rng, settings, snapshots, reps_n, inject=None):
    """A history frame of ``snapshots`` synthetic snapshots (with the step from snapshot ``inject[0]`` on)."""
    import pandas as pd

    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    frames = []
    for i in range(snapshots):
        step_r = step_f = None
        if inject is not None and i >= inject[0]:
            _, which, mask, factor = inject
            if which == "runs":
                step_r = (mask, factor)
            else:
                step_f = (mask, factor)
        r = redraw(runs, pool, rng, reps_n, step_r)
        f = redraw(fdm, pool, rng, reps_n, step_f) if len(fdm) else fdm
        rows = snapshot_rows(r, f, settings)
        rows["snapshot"] = f"s{i:04d}"
        rows["time"] = t0 + pd.Timedelta(hours=i)
        frames.append(rows)
    frame = pd.concat(frames, ignore_index=True)
    frame["study"] = "bench"
    frame["fingerprint"] = "bench"
    return frame


def groups_to_break(runs, fdm):
    """(table, mask, group label, model, tightness) of every group a step can be injected into."""
    from analysis.cases.fdm import SCALE_KEYS
    from analysis.models.fdm import MODEL as FDM_MODEL

    out = []
    for key, g in runs.groupby(["case", "size"], sort=True):
        out.append(("runs", runs.index.isin(g.index), key, str(g["model"].iloc[0]), float(g["tightness"].median())))
    if len(fdm):
        for key, g in fdm.groupby(SCALE_KEYS, sort=True):
            out.append(("fdm", fdm.index.isin(g.index), key, FDM_MODEL, float(g["tightness"].median())))
    return out


def main() -> int:
    import numpy as np

    from analysis.planning.config import uncertainty_settings
    from analysis.tracking.track import history_rule

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default="default")
    ap.add_argument("--validation", help="validation directory (default results/<study>/validation)")
    ap.add_argument("--histories", type=int, default=400,
                    help="pure-noise histories (0 errors in 380 put the upper 95 %% bound under 1 %%)")
    ap.add_argument("--trials", type=int, default=200, help="histories per detection test")
    ap.add_argument("--snapshots", type=int, default=20)
    ap.add_argument("--step", type=float, default=0.25, help="the small loss of accuracy injected (relative)")
    ap.add_argument("--earlier", type=int, default=10, help="earlier snapshots before the small step at least")
    ap.add_argument("--large", type=float, default=2 / 3,
                    help="the large loss judged from the second snapshot (2/3: tightness moved 3x)")
    ap.add_argument("--resamples", type=int, default=200,
                    help="bootstrap resamples per group (the config default is 1000; 200 gives the same interval "
                         "widths to about 5 %% and keeps the benchmark to minutes)")
    ap.add_argument("--scale", type=int, default=10_000, help="snapshots in the speed test (0 = skip)")
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args()
    validation = Path(args.validation or ROOT / "results" / args.study / "validation")
    if not (validation / "runs.parquet").exists():
        raise SystemExit(f"no {validation}/runs.parquet: run the study first (snakemake -c2)")
    runs, fdm = load(validation)
    pool = deviation_pool(runs, fdm)
    reps_n = int(np.median([len(r) for r in runs["time_reps_s"]]))
    settings = uncertainty_settings(resamples=args.resamples)
    rule = history_rule()
    q = np.percentile(np.abs(pool), [50, 90, 99])
    print(f"noise: {len(pool)} real repetitions of {len(runs) + len(fdm)} runs in {validation}; |deviation from "
          f"the run median| p50 {q[0]:.1%}, p90 {q[1]:.1%}, p99 {q[2]:.1%}; {reps_n} repetitions per run")
    print(f"rule: {rule}; bootstrap {settings.resamples} resamples; {args.histories} histories x "
          f"{args.snapshots} snapshots")
    rng = np.random.default_rng(args.seed)
    if args.histories > 0:
        false_alarms(runs, fdm, pool, rng, settings, rule, args.histories, args.snapshots, reps_n)
    targets = groups_to_break(runs, fdm)
    if args.trials > 0:
        detection(runs, fdm, pool, rng, settings, rule, targets, args.step, args.trials, args.snapshots, reps_n,
                  first=args.earlier)
        detection(runs, fdm, pool, rng, settings, rule, targets, args.large, args.trials, 2, reps_n, first=1)
    if args.scale:
        speed(runs, fdm, settings, args.scale)
    return 0


def nights(frame, rule):
    """``track`` on every prefix of the history of 2 or more snapshots: (night index, findings) oldest first."""
    from analysis.tracking.track import track

    order = frame["snapshot"].drop_duplicates().tolist()
    for n in range(2, len(order) + 1):
        found, _ = track(frame[frame["snapshot"].isin(order[:n])], rule)
        yield n - 1, found


def false_alarms(runs, fdm, pool, rng, settings, rule, histories, snapshots, reps_n) -> None:
    t = time.perf_counter()
    last = every = judged_nights = 0
    tests = {"step": 0, "large": 0}
    for _ in range(histories):
        frame = one_history(runs, fdm, pool, rng, settings, snapshots, reps_n)
        for night, found in nights(frame, rule):
            regressions = [f for f in found if f.kind == "regression"]
            judged_nights += 1
            every += bool(regressions)
            for f in regressions:
                tests[f.test] += 1
            if night == snapshots - 1:
                last += bool(regressions)
    lo, hi = wilson(last, histories)
    e_lo, e_hi = wilson(every, judged_nights)
    print(f"false alarms: the last night of {histories} pure-noise histories of {snapshots} snapshots flagged a "
          f"regression in {last} = {last / histories:.1%} [{lo:.1%}, {hi:.1%}]  {'PASS' if hi <= 0.01 else 'FAIL'} "
          f"(target: upper bound <= 1 %); over every night (2 to {snapshots} snapshots; nights of one history are "
          f"not independent): {every} of {judged_nights} = {every / judged_nights:.2%} [{e_lo:.2%}, {e_hi:.2%}] "
          f"(step test {tests['step']}, large-change test {tests['large']} findings) "
          f"({time.perf_counter() - t:.0f} s)", flush=True)


def detection(runs, fdm, pool, rng, settings, rule, targets, step, trials, snapshots, reps_n, first) -> None:
    """Inject a ``step`` into one group from a snapshot with at least ``first`` earlier ones; count catches."""
    t = time.perf_counter()
    caught = 0
    lasted: list[int] = []
    for _ in range(trials):
        which, mask, key, model, tight = targets[rng.integers(len(targets))]
        start = int(rng.integers(first, snapshots))
        factor = (1.0 - step) if tight <= 1.0 else 1.0 / (1.0 - step)
        frame = one_history(runs, fdm, pool, rng, settings, snapshots, reps_n, (start, which, mask, factor))
        first_caught = None
        for night, found in nights(frame, rule):
            if night < start:
                continue
            hits = [f for f in found if f.kind == "regression" and f.series["model"] == model
                    and _matches(f.series["group"], which, key) and f.began == f"s{start:04d}"]
            if hits and first_caught is None:
                first_caught = night - start + 1
            if night == snapshots - 1:
                caught += bool(hits)
        lasted.append(first_caught if first_caught is not None else 0)
    lo, hi = wilson(caught, trials)
    rate = caught / trials
    size = f"{1 / (1 - step):.3g}x" if step >= 0.5 else f"{step:.0%}"
    by = ", ".join(f"{k}: {sum(0 < d <= k for d in lasted) / trials:.0%}" for k in (1, 2, 3, 5))
    print(f"detection of a {size} loss of accuracy (one group's tightness moved {size} further from 1 from a random "
          f"snapshot with >= {first} earlier, judged at snapshot {snapshots}): caught with its start named in "
          f"{caught} of {trials} = {rate:.1%} [{lo:.1%}, {hi:.1%}]  {'PASS' if rate >= 0.95 else 'FAIL'} "
          f"(target >= 95 %); caught by the time the step had lasted k nights: {by} "
          f"({time.perf_counter() - t:.0f} s)", flush=True)


def _matches(group: str, which: str, key) -> bool:
    if which == "runs":
        case, size = key
        return f"size={int(size)}" in group
    return all(f"{k}=" in group for k in ("grid", "order")) and f"ranks={int(key[-1])}" in group


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
