"""Nightly tracking on real nights: false alarms on unchanged code, and real regressions and machine changes caught.

Two steps, because measuring nights takes an hour and judging them takes seconds::

    python benchmarks/bench_nights.py run WORKDIR --study tiny \\
        --plan steady:20,regression:3,undo:2,load:2,unload:2
    python benchmarks/bench_nights.py run WORKDIR-default --study default --plan steady:6
    python benchmarks/bench_nights.py judge WORKDIR WORKDIR-default [--write]

``run`` clones this repository into ``WORKDIR`` (once; its own virtual environment), then measures one night
after another as a nightly job would: ``snakemake -c2 --configfile config/studies/<study>.yaml --forceall`` (every
run and the characterisation measured again) followed by ``hetval track``, whose exit status and findings are
kept in ``WORKDIR/nights.jsonl`` with the night's phase. The phases:

- ``steady``: nothing changes;
- ``regression``: before its first night, a commit in ``WORKDIR`` multiplies the per-operation model's predicted
  time by 1.3 (a change to one model's equation; no other model and no measurement moves);
- ``undo``: before its first night, that commit is reverted;
- ``load``: for the whole night a process streams memory (a 256 MiB triad in a loop, one thread) beside the study,
  taking the other core and a share of the memory bandwidth: a real change of the machine;
- ``quota``: for the whole night the study runs in a CPU cgroup allowed one core's time in every millisecond
  (cgroup v1 ``cpu.cfs_quota_us`` = ``cpu.cfs_period_us`` = 1000, or v2 ``cpu.max``; root only): whatever runs
  on both cores at once - two ranks, the two processors of a split - gets half of each, whatever runs alone is
  untouched. The same every night it is on, unlike a load whose effect depends on what it meets;
- ``unload``: the load (or the quota) is gone.

``judge`` replays the history of each workdir night by night with *this* checkout's ``hetval track`` rule (the
judgement is a pure function of the history, so the replay is what a nightly job running this code would have
printed) and prints:

- false alarms per night on the nights where nothing new changed (``steady``, and ``undo``/``unload`` after their
  first night... every one of them, in fact: a change that is over must not alarm), regressions and drifts apart,
  each with the series it named, over all nights and with the 95 % upper bound on the rate (Clopper-Pearson);
- for each injected change its detection delay (nights until it was named) and attribution (which models, which
  parameters, of what kind), beside Mozilla's published figures;
- from the default nights: how often one night's 95 % scorecard tightness interval holds the next night's median,
  contradictions and same verdicts between consecutive nights, and the pooled verdict of all nights beside each
  night's;
- the between-study spread of every judged figure (its series' root mean square deviation from their median), and, with ``--write``, the shipped defaults
  (``analysis/resources/between_studies.json``) refreshed from it, and this section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the injected model change: the per-operation model's predicted time x 1.3
PEROP_FILE = "analysis/models/perop.py"
PEROP_FROM = 't_pred = np.fmax(parts["host"], parts["accel"]) if len(have)'
PEROP_TO = 't_pred = 1.3 * np.fmax(parts["host"], parts["accel"]) if len(have)'
PEROP_MODEL = "per-operation (Kannan)"
#: the streaming load: one thread, a triad over arrays far larger than any cache
LOAD = ("import numpy as np\n"
        "a = np.ones(2**25); b = np.ones(2**25); c = np.empty(2**25)\n"
        "while True:\n    np.add(a, b, out=c); np.multiply(c, 0.5, out=a)\n")
PHASES = ("steady", "regression", "undo", "load", "quota", "unload")
#: the quota phase's cgroup: one core's time per period of this many microseconds
QUOTA_PERIOD_US = 1000
#: the figures Mozilla published for its t-test alerting (12.5 % false-positive alert groups, 6.8 % missed
#: regressions over 174 expert-labelled series)
MOZILLA = "Mozilla t-test alerting: 12.5 % false-positive alert groups, 6.8 % missed regressions (174 series)"


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{workdir / '.venv' / 'bin'}:{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(workdir / ".venv")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = "1"
    return env


def _sh(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, check=check, text=True, capture_output=True)


def prepare(workdir: Path) -> None:
    """A clone of this repository with its own virtual environment (once)."""
    if not (workdir / ".git").exists():
        print(f"[nights] cloning {ROOT} into {workdir}", flush=True)
        _sh(["git", "clone", "--quiet", str(ROOT), str(workdir)], cwd=ROOT.parent)
    if not (workdir / ".venv" / "bin" / "hetval").exists():
        print("[nights] installing hetval into its own virtual environment", flush=True)
        _sh([sys.executable, "-m", "venv", ".venv"], cwd=workdir)
        _sh([str(workdir / ".venv" / "bin" / "pip"), "install", "--quiet", "-c", "constraints.txt", "-e", ".[mpich]"],
            cwd=workdir)


def _commit(workdir: Path, message: str) -> str:
    _sh(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "--quiet", "-am", message],
        cwd=workdir)
    return _sh(["git", "rev-parse", "--short", "HEAD"], cwd=workdir).stdout.strip()


def change_model(workdir: Path, on: bool) -> str:
    """Apply (``on``) or revert the per-operation model change as a commit in ``workdir``; returns the commit."""
    path = workdir / PEROP_FILE
    text = path.read_text(encoding="utf-8")
    old, new = (PEROP_FROM, PEROP_TO) if on else (PEROP_TO, PEROP_FROM)
    if old not in text:
        if new in text:
            return _sh(["git", "rev-parse", "--short", "HEAD"], cwd=workdir).stdout.strip()
        raise SystemExit(f"{PEROP_FILE}: the line the model change edits is not there")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return _commit(workdir, "bench: per-operation model's predicted time x 1.3" if on else "bench: undo the x 1.3")


def quota_words(name: str) -> tuple[list[str], Path]:
    """The words that run a command in a new CPU cgroup ``name`` allowed one core's time per
    :data:`QUOTA_PERIOD_US`, and the cgroup's directory (removed by the caller once the command is done)."""
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").exists():
        group = v1 / name
        group.mkdir(exist_ok=True)
        (group / "cpu.cfs_period_us").write_text(str(QUOTA_PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(QUOTA_PERIOD_US))
    elif "cpu" in (Path("/sys/fs/cgroup") / "cgroup.controllers").read_text().split():
        group = Path("/sys/fs/cgroup") / name
        group.mkdir(exist_ok=True)
        (group / "cpu.max").write_text(f"{QUOTA_PERIOD_US} {QUOTA_PERIOD_US}")
    else:
        raise SystemExit("--plan quota: this machine has no CPU cgroup controller to set a quota with")
    return ["sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh"], group


def latest_snapshot(workdir: Path, study: str) -> str | None:
    files = sorted((workdir / "results" / "history" / f"study={study}").glob("*.parquet"))
    return files[-1].stem if files else None


def night(workdir: Path, study: str, phase: str, index: int) -> dict:
    """One night: the study measured again from scratch, then ``hetval track``; what it printed, kept."""
    env = _env(workdir)
    config = "config/config.yaml" if study == "default" else f"config/studies/{study}.yaml"  # the default study
    load = None
    if phase == "load":
        load = subprocess.Popen([str(workdir / ".venv" / "bin" / "python"), "-c", LOAD], env=env,
                                start_new_session=True)
    words, group = quota_words(f"hetval-night-{os.getpid()}") if phase == "quota" else ([], None)
    t0 = time.time()
    try:
        study_run = _sh([*words, str(workdir / ".venv" / "bin" / "snakemake"), "-c2", "--configfile", config,
                         "--forceall", "--quiet", "all"], cwd=workdir, env=env, check=False)
    finally:
        if load is not None:
            os.killpg(load.pid, signal.SIGTERM)
            load.wait()
        if group is not None:
            for _ in range(50):  # the cgroup empties once the study's last process has exited
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
    wall = time.time() - t0
    track = _sh([str(workdir / ".venv" / "bin" / "hetval"), "track", "--configfile", config, "--json"], cwd=workdir,
                env=env, check=False)
    findings = [json.loads(line) for line in track.stdout.splitlines() if line.startswith("{")]
    card = workdir / "results" / study / "validation" / "scorecard.parquet"
    if card.exists():  # each night's scorecard, for the coverage of the next night's medians
        (workdir / "scorecards").mkdir(exist_ok=True)
        shutil.copyfile(card, workdir / "scorecards" / f"night-{index:03d}.parquet")
    rec = {"night": index, "phase": phase, "study": study, "start": t0, "wall_s": round(wall, 1),
           "study_rc": study_run.returncode, "track_rc": track.returncode, "snapshot": latest_snapshot(workdir, study),
           "commit": _sh(["git", "rev-parse", "--short", "HEAD"], cwd=workdir).stdout.strip(),
           "live_findings": [f["line"] for f in findings]}
    if study_run.returncode:
        rec["study_error"] = study_run.stderr[-2000:]
    return rec


def parse_plan(text: str) -> list[tuple[str, int]]:
    plan = []
    for part in text.split(","):
        phase, _, n = part.partition(":")
        if phase not in PHASES or not n.isdigit():
            raise SystemExit(f"--plan: {part!r} is not PHASE:NIGHTS with PHASE one of {', '.join(PHASES)}")
        plan.append((phase, int(n)))
    return plan


def cmd_run(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir).resolve()
    prepare(workdir)
    log = workdir / "nights.jsonl"
    done = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    index = len(done)
    for phase, count in parse_plan(args.plan):
        if phase == "regression":
            print(f"[nights] model change committed: {change_model(workdir, True)}", flush=True)
        elif phase == "undo":
            print(f"[nights] model change reverted: {change_model(workdir, False)}", flush=True)
        for _ in range(count):
            index += 1
            rec = night(workdir, args.study, phase, index)
            with log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            print(f"[nights] {args.study} night {index} ({phase}): study {rec['wall_s']:.0f} s rc {rec['study_rc']}, "
                  f"track rc {rec['track_rc']}, {len(rec['live_findings'])} finding(s)", flush=True)
            for line in rec["live_findings"]:
                print(f"    {line}", flush=True)
            if rec["study_rc"]:
                print(rec.get("study_error", ""), file=sys.stderr)
                return 1
    return 0


# ---------------------------------------------------------------------------------------------------- judging


def load_nights(workdir: Path):
    """The nights a workdir measured (``nights.jsonl``, study runs that failed left out) and its history."""
    from analysis.tracking import history

    log = workdir / "nights.jsonl"
    if not log.exists():
        raise SystemExit(f"{workdir}: no nights.jsonl (run `bench_nights.py run {workdir}` first)")
    nights = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x.strip()]
    nights = [n for n in nights if n["study_rc"] == 0 and n.get("snapshot")]
    if not nights:
        raise SystemExit(f"{workdir}: no night finished")
    study = nights[0]["study"]
    frame = history.read(workdir / "results" / "history", study, columns=[*history.TRACK_COLUMNS, "config_hash"],
                         log=lambda _line: None)
    # a history written before groups stopped being named by their replicates' values: name them as now
    frame["group"] = frame["group"].astype(str).str.replace(r" \w+_replicates=\[[^\]]*\]", "", regex=True)
    seen, kept = set(), []
    for n in nights:  # a night whose validation appended nothing new repeats the last snapshot: not a night
        if n["snapshot"] not in seen and n["snapshot"] in set(frame["snapshot"]):
            seen.add(n["snapshot"])
            kept.append(n)
    return study, kept, frame


def replay(nights: list[dict], frame, rule, spreads: dict[str, float] | None):
    """``hetval track`` after every night, on the history as it stood then."""
    from analysis.tracking.track import track

    order = [n["snapshot"] for n in nights]
    out = []
    for k, n in enumerate(nights):
        found, stats = track(frame[frame["snapshot"].isin(order[:k + 1])], rule, spreads=spreads)
        out.append((n, found, stats))
    return out


def _name(f) -> str:
    s = f.series
    return (f"{s['group']} {s['metric']}" if s["kind"] == "machine" else
            f"{s['model']} [{s['case']} {s['group'][:40]}] {s['metric']}")


def upper_bound(k: int, n: int) -> float:
    """One-sided 95 % Clopper-Pearson upper bound on a rate of ``k`` in ``n``."""
    from scipy.stats import beta

    return 1.0 if n == 0 else float(beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


def steady_spreads(nights: list[dict], frame, quantile: float) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each judged series' robust between-night spread over the first steady phase, grouped by the key its shipped
    spread is looked up by, and the ``quantile`` of each group (and of each kind's fallback)."""
    import numpy as np

    from analysis.tracking.track import JUDGED, own_spread, resolution, scale, spread_key

    steady = [n["snapshot"] for n in nights[:next((i for i, n in enumerate(nights) if n["phase"] != "steady"),
                                                  len(nights))]]
    sub = frame[frame["snapshot"].isin(steady) & frame["kind"].isin(["model", "machine"])]
    groups: dict[str, list[float]] = {}
    for key, series in sub.groupby(["kind", "case", "platform", "group", "model", "metric"], sort=True):
        kind, case, _, group, _, metric = (str(k) for k in key)
        if kind == "model" and metric not in JUDGED:
            continue
        y = scale(metric, kind, series["value"].to_numpy(dtype=float))
        y = y[np.isfinite(y)]
        if len(y) < 5:
            continue
        sd = max(own_spread(y), resolution(metric, series))
        for where in (spread_key(kind, case, group), "*"):
            groups.setdefault(f"{kind}/{where}/{metric}", []).append(sd)
    return groups, {k: float(np.quantile(v, quantile)) for k, v in groups.items()}


def scorecard_spreads(nights: list[dict], frame, shipped_before: float, quantile: float, level: float = 0.95):
    """Per case, what two studies' scorecard medians differ by beyond what their intervals' within-study levels
    show: per row the between-night variance of log median tightness less one study's share of its interval's
    noise (total half-width squared less the runs' half-width squared, over z squared, halved: the interval
    differences two studies), the ``quantile`` over rows of its root (0 where the levels explain it)."""
    import numpy as np
    from scipy import stats

    from analysis.tracking.track import own_spread

    z = float(stats.norm.ppf(0.5 + level / 2.0))
    steady = [n["snapshot"] for n in nights if n["phase"] == "steady"]
    rows = frame[frame["snapshot"].isin(steady) & (frame["kind"] == "scorecard")]
    by_case: dict[str, list[float]] = {}
    for (case, _, _, _), g in rows.groupby(["case", "platform", "group", "model"], sort=True):
        t = g[g["metric"] == "tightness_median"].drop_duplicates("snapshot").set_index("snapshot")
        w = g[g["metric"] == "width_runs"].drop_duplicates("snapshot").set_index("snapshot")["value"]
        t = t[(t["value"] > 0) & (t["lo"] > 0) & (t["hi"] > 0)]
        if len(t) < 5:
            continue
        y = np.log(t["value"].to_numpy(dtype=float))
        between = own_spread(y) ** 2
        half = np.log(t["hi"].to_numpy(dtype=float) / t["lo"].to_numpy(dtype=float)) / 2.0
        runs = (w.reindex(t.index).to_numpy(dtype=float) / t["value"].to_numpy(dtype=float)) / 2.0
        noise = np.maximum(half**2 - np.nan_to_num(runs, nan=0.0) ** 2, 0.0) / z**2 / 2.0 - shipped_before**2
        within = float(np.median(np.maximum(noise, 0.0)))
        by_case.setdefault(str(case), []).append(math.sqrt(max(between - within, 0.0)))
    out = {f"scorecard/{c}/tightness_median": float(np.quantile(v, quantile)) for c, v in by_case.items()}
    every = [x for v in by_case.values() for x in v]
    if every:
        out["scorecard/*/tightness_median"] = float(np.quantile(every, quantile))
    return out, by_case


def history_coverage(nights: list[dict], frame) -> tuple[int, int]:
    """Over consecutive steady nights, both ways: one night's scorecard tightness interval holding the other's
    median (rows of the history)."""
    steady = [n["snapshot"] for n in nights if n["phase"] == "steady"]
    rows = frame[frame["snapshot"].isin(steady) & (frame["kind"] == "scorecard")
                 & (frame["metric"] == "tightness_median")]
    keyed = {s: g.set_index(["case", "platform", "group", "model"]) for s, g in rows.groupby("snapshot")}
    hit = total = 0
    for a, b in zip(steady, steady[1:], strict=False):
        if a not in keyed or b not in keyed:
            continue
        for x, y in ((keyed[a], keyed[b]), (keyed[b], keyed[a])):
            both = x.join(y[["value"]].rename(columns={"value": "value_next"}), how="inner").dropna(
                subset=["lo", "hi", "value_next"])
            hit += int(((both["lo"] <= both["value_next"]) & (both["value_next"] <= both["hi"])).sum())
            total += len(both)
    return hit, total


def card_figures(workdir: Path, nights: list[dict]):
    """From the nights' saved scorecards: consecutive-pair counts (contradictions, same verdict, coverage) and the
    last night's rows with their pooled verdict."""
    import pandas as pd
    from bench_reproducibility import compare

    cards = [pd.read_parquet(p) for p in (workdir / "scorecards" / f"night-{n['night']:03d}.parquet"
                                          for n in nights if n["phase"] == "steady") if p.exists()]
    if len(cards) < 2:
        return None, cards
    total: dict[str, list[int]] = {}
    for a, b in zip(cards, cards[1:], strict=False):
        counts, _ = compare([a, b])
        for k, (hit, n) in counts.items():
            total.setdefault(k, [0, 0])
            total[k][0] += hit
            total[k][1] += n
    return {k: tuple(v) for k, v in total.items()}, cards


def straddle(row) -> str:
    """How an undecided pooled interval straddles its band's edge."""
    from analysis.scoring.scorecard import BANDS

    lo, hi = row.get("pooled_tightness_lo"), row.get("pooled_tightness_hi")
    band = BANDS.get(str(row.get("model_kind") or "bound"), BANDS["bound"])
    for e in band:
        if lo < e < hi:
            return f"pooled [{lo:.3f}, {hi:.3f}] straddles {e:g}: {100 * (e - lo) / e:.1f} % below, {100 * (hi - e) / e:.1f} % above"
    return ""


def cmd_judge(args: argparse.Namespace) -> int:
    from analysis.tracking.track import history_rule

    rule = history_rule()
    lines: list[str] = []
    say = lines.append
    shipped_now = json.loads((ROOT / "analysis" / "resources" / "between_studies.json").read_text())
    refreshed: dict[str, float] = {}
    all_false: list[tuple[str, int, str]] = []
    false_better: list[tuple[str, int]] = []
    judged_nights = 0
    delays: list[str] = []
    for wd in args.workdirs:
        workdir = Path(wd).resolve()
        study, nights, frame = load_nights(workdir)
        groups, spreads = steady_spreads(nights, frame, args.quantile)
        before_sc = float(json.loads((workdir / "analysis" / "resources" / "between_studies.json").read_text())
                          ["spread"].get("scorecard/*/tightness_median", 0.0)) \
            if (workdir / "analysis" / "resources" / "between_studies.json").exists() else 0.0
        sc_spreads, _ = scorecard_spreads(nights, frame, before_sc, args.quantile)
        for k, v in {**spreads, **sc_spreads}.items():  # the larger where two studies measured the same key
            refreshed[k] = max(refreshed.get(k, 0.0), v)
        phases = [n["phase"] for n in nights]
        say(f"{study}: {len(nights)} nights in {workdir.name} ({', '.join(f'{p} {phases.count(p)}' for p in PHASES if p in phases)}); "
            f"median night {sorted(n['wall_s'] for n in nights)[len(nights) // 2]:.0f} s")
        for label, use in (("the shipped spreads", None), ("spreads from these nights", {**shipped_now["spread"], **spreads})):
            results = replay(nights, frame, rule, use)
            say(f"  judged with {label}:")
            first_of: dict[str, int] = {}
            for i, (n, found, _stats) in enumerate(results):
                first_of.setdefault(n["phase"], i)
                phase = n["phase"]
                alarms = [f for f in found if f.kind in ("regression", "drift", "follows")]
                night_in_phase = i - first_of[phase] + 1
                tag = f"night {i + 1} ({phase} {night_in_phase})"
                if i == 0:
                    continue
                if phase in ("steady", "undo", "unload"):
                    if label == "the shipped spreads":
                        judged_nights += 1
                    if alarms:
                        names = "; ".join(f"{f.kind} {_name(f)}" for f in alarms)
                        say(f"    FALSE ALARM {tag}: {names}")
                        if label == "the shipped spreads":
                            all_false.append((study, i + 1, names))
                    better = [f for f in found if f.kind == "improvement"]
                    if better:  # exits 0, but nothing changed either
                        say(f"    false improvement {tag}: " + "; ".join(_name(f) for f in better))
                        if label == "the shipped spreads":
                            false_better.append((study, i + 1))
                elif phase == "regression":
                    regs = [f for f in found if f.kind == "regression"]
                    ok = bool(regs) and all(f.series["model"] == PEROP_MODEL for f in regs) and not any(
                        f.kind in ("drift", "follows") for f in found)
                    say(f"    {tag}: {'CAUGHT' if ok else 'not named' if not regs else 'MISATTRIBUTED'}: "
                        + ("; ".join(f"{f.kind} {_name(f)}" for f in found) or "nothing flagged"))
                elif phase in ("load", "quota"):
                    drifts = [f for f in found if f.kind == "drift"]
                    regs = [f for f in found if f.kind == "regression"]
                    ok = bool(drifts) and not regs
                    say(f"    {tag}: {'CAUGHT' if ok else 'not named' if not drifts else 'MISATTRIBUTED'}: "
                        + ("; ".join(f"{f.kind} {_name(f)}" for f in found) or "nothing flagged"))
                if label == "the shipped spreads" and phase in ("regression", "load", "quota") and night_in_phase <= 3:
                    delays.append(f"{study} {phase} night {night_in_phase}: " + (
                        "; ".join(f"{f.kind} {_name(f)}" for f in found) or "nothing flagged"))
            noisy = sorted({f"{n.series['model'] or n.series['platform']} {n.series['case']} {n.series['metric']}"
                            f" ({math.exp(n.spread):.2f}x)" for n in results[-1][2]["noisy"]})
            say(f"    noisy on the last night: {', '.join(noisy) if noisy else 'none'}")
        live = sum(n["track_rc"] == 1 for n in nights[1:] if n["phase"] in ("steady", "undo", "unload"))
        say(f"  live `hetval track` after each night (the code each night ran): exit-1 findings on {live} of "
            f"{sum(n['phase'] in ('steady', 'undo', 'unload') for n in nights[1:])} unchanged nights")
        hit, total = history_coverage(nights, frame)
        if total:
            say(f"  scorecard coverage (history rows, consecutive steady nights both ways): {hit} of {total} = "
                f"{hit / total:.0%} (target >= 90 %)")
        counts, cards = card_figures(workdir, nights)
        if counts:
            c, v, cov = counts["contradictions"], counts["same_verdict"], counts["coverage"]
            say(f"  saved scorecards of {len(cards)} steady nights, consecutive pairs: contradictions {c[0]} of {c[1]}; "
                f"same verdict {v[0]} of {v[1]} = {v[0] / max(v[1], 1):.0%} (target >= 80 %); coverage {cov[0]} of "
                f"{cov[1]} = {cov[0] / max(cov[1], 1):.0%} (target >= 90 %)")
            last = cards[-1]
            if "pooled_verdict" in last:
                say(f"  verdicts night by night and pooled over {int(last['pooled_snapshots'].max())} nights:")
                keys = ["case", "model", "platform", "workload_class"]
                per = {tuple(str(r[k]) for k in keys): [] for r in last.to_dict("records")}
                for card in cards:
                    for r in card.to_dict("records"):
                        per.setdefault(tuple(str(r[k]) for k in keys), []).append(str(r["verdict"]))
                for r in last.to_dict("records"):
                    key = tuple(str(r[k]) for k in keys)
                    extra = f"; {straddle(r)}" if r["pooled_verdict"] == "undecided" else ""
                    say(f"    {r['case']} {r['model']} {r['workload_class']}: nights {' | '.join(per[key])} -> "
                        f"pooled {r['pooled_verdict']}{extra}")
    n_false = len({(s, i) for s, i, _ in all_false})
    say(f"false alarms over all {judged_nights} unchanged nights judged with the shipped spreads: {n_false} "
        f"(95 % upper bound on the rate per night {upper_bound(n_false, judged_nights):.1%}; target: none); "
        f"improvements found where nothing changed (exit 0): {len(set(false_better))} night(s)")
    say("injected changes, detection and attribution (shipped spreads):")
    for d in delays:
        say(f"  {d}")
    say(f"  published for comparison: {MOZILLA}")
    say("between-study spreads measured on the steady nights (the shipped value is the "
        f"{args.quantile:.0%} quantile over a key's series):")
    for k in sorted(refreshed):
        say(f"  {k}: {refreshed[k]:.3f} (shipped {shipped_now['spread'].get(k, float('nan')):.3f})")
    text = "\n".join(lines)
    print(text)
    if args.write and args.section:  # a run of its own beside the main one: its section only
        from record import write_section

        command = " ".join(["python", "benchmarks/bench_nights.py", *sys.argv[1:]])
        write_section(f"bench_nights-{args.section}", f"Tracking on real nights: {args.section}",
                      f"`{command}`\n\n```\n{text}\n```")
    elif args.write:
        from record import write_section

        merged = {**shipped_now["spread"], **{k: round(v, 4) for k, v in refreshed.items()}}
        shipped_now["spread"] = dict(sorted(merged.items()))
        shipped_now["measured"] = (f"the {args.quantile:.0%} quantile over each key's series of their robust spread "
                                   f"over the steady nights of benchmarks/bench_nights.py ({', '.join(Path(w).name for w in args.workdirs)})")
        target = ROOT / "analysis" / "resources" / "between_studies.json"
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(shipped_now, indent=2) + "\n", encoding="utf-8")
        tmp.replace(target)
        command = " ".join(["python", "benchmarks/bench_nights.py", *sys.argv[1:]])
        write_section("bench_nights", "Tracking on real nights", f"`{command}`\n\n```\n{text}\n```")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="measure nights into a workdir")
    p.add_argument("workdir")
    p.add_argument("--study", default="tiny")
    p.add_argument("--plan", default="steady:20,regression:3,undo:2,load:2,unload:2")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("judge", help="replay the workdirs' nights with this checkout's rule")
    p.add_argument("workdirs", nargs="+")
    p.add_argument("--write", action="store_true", help="refresh the shipped spreads and docs/benchmarks.md")
    p.add_argument("--section", help="with --write: write this run into a section of its own (named after this word) "
                   "and leave the shipped spreads and the main section as they are")
    p.add_argument("--quantile", type=float, default=0.9,
                   help="the shipped spread of a kind of figure: this quantile of its series' spreads (default 0.9)")
    p.set_defaults(func=cmd_judge)
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
