"""benchmarks/bench_nights.py's judging, on a history made here: false alarms, a caught model change, the
between-study spreads it ships; and that its injected model change still finds the line it edits."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis.tracking import history
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_nights  # noqa: E402


def test_the_injected_change_edits_the_per_operation_models_prediction():
    text = (REPO / bench_nights.PEROP_FILE).read_text(encoding="utf-8")
    assert text.count(bench_nights.PEROP_FROM) == 1
    from analysis.models.perop import PEROP_MODEL

    assert PEROP_MODEL == bench_nights.PEROP_MODEL


def _night_rows(rng, perop_factor: float, load: float) -> pd.DataFrame:
    rows = []
    for model, base in (("per-operation (Kannan)", 0.9), ("PerDome/PeaPaw", 0.7)):
        v = base * perop_factor ** (model.startswith("per-op")) * np.exp(rng.normal(0, 0.03))
        rows.append({"kind": "model", "case": "sa", "platform": "p", "group": "size=1 axis=wp", "model": model,
                     "metric": "tightness_median", "value": v, "lo": v * 0.98, "hi": v * 1.02, "n_reps": 3,
                     "n_alternatives": 5})
    for model, base in (("per-operation (Kannan)", 2.0), ("PerDome/PeaPaw", 0.45)):  # fixed runs: no noise
        v = base * perop_factor ** (model.startswith("per-op"))
        rows.append({"kind": "reference", "case": "sa", "platform": "ref", "group": "reference runs", "model": model,
                     "metric": "tightness_median", "value": v, "lo": np.nan, "hi": np.nan, "n_reps": 32,
                     "n_alternatives": None})
    for metric, base in (("t_b", 1e-10), ("t_f", 2e-11)):
        v = base * load * np.exp(rng.normal(0, 0.02))
        rows.append({"kind": "machine", "case": "", "platform": "p", "group": "host", "model": "", "metric": metric,
                     "value": v, "lo": v * 0.99, "hi": v * 1.01, "n_reps": 2, "n_alternatives": None})
    return pd.DataFrame(rows, columns=history.ROW_COLUMNS)


def test_judge_counts_false_alarms_and_names_the_injected_changes(tmp_path, capsys, monkeypatch):
    # the benchmarks pin their threads in os.environ when imported; this process's later tests must not inherit it
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        if var in os.environ:
            monkeypatch.setenv(var, os.environ[var])  # restored as it is now at teardown
        else:
            monkeypatch.setenv(var, "1")
            monkeypatch.delenv(var)  # absent again at teardown
    rng = np.random.default_rng(7)
    plan = ["steady"] * 20 + ["regression"] * 3 + ["undo"] * 2 + ["load"] * 2 + ["unload"] * 2
    _history(tmp_path, plan, rng)
    args = bench_nights.argparse.Namespace(workdirs=[str(tmp_path)], write=False, quantile=0.9, section=None)
    assert bench_nights.cmd_judge(args) == 0
    out = capsys.readouterr().out
    assert "false alarms over all 23 unchanged nights judged with the shipped spreads: 0" in out
    # its code changed: named the first night, by its figure on the reference runs (rule 7)
    assert "regression night 1: regression per-operation (Kannan)" in out
    assert "CAUGHT" in out and "MISATTRIBUTED" not in out
    assert "load night 2: drift host t_b" in out or "load night 2: drift host t_f" in out
    # the spreads it would ship: the steady nights' robust spread (0.03 and 0.02 drawn), not the replicates'
    groups, spreads = bench_nights.steady_spreads(*bench_nights.load_nights(tmp_path)[1:], 0.9)
    assert 0.005 < spreads["model/sa/tightness_median"] < 0.08
    assert 0.003 < spreads["machine/host/t_b"] < 0.06 and len(groups["model/*/tightness_median"]) == 2


def _history(tmp_path, plan, rng) -> None:
    base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    nights = []
    for i, phase in enumerate(plan):
        meta = history.snapshot_meta([], "c", {}, when=base + dt.timedelta(days=i))
        rows = _night_rows(rng, 1.6 if phase == "regression" else 1.0, 1.8 if phase in ("load", "quota") else 1.0)
        history.append(tmp_path / "results" / "history", "tiny", history.snapshot_table(meta, rows))
        nights.append({"night": i + 1, "phase": phase, "study": "tiny", "start": 0, "wall_s": 60.0, "study_rc": 0,
                       "track_rc": 0, "snapshot": meta["snapshot"], "commit": "x", "live_findings": []})
    (tmp_path / "nights.jsonl").write_text("".join(json.dumps(n) + "\n" for n in nights))


def test_judge_counts_a_quota_night_as_an_injected_machine_change(tmp_path, capsys):
    _history(tmp_path, ["steady"] * 12 + ["quota"] * 2 + ["unload"] * 2, np.random.default_rng(3))
    args = bench_nights.argparse.Namespace(workdirs=[str(tmp_path)], write=False, quantile=0.9, section=None)
    assert bench_nights.cmd_judge(args) == 0
    out = capsys.readouterr().out
    assert "false alarms over all 13 unchanged nights judged with the shipped spreads: 0" in out
    assert "quota night 2: drift host t_b" in out or "quota night 2: drift host t_f" in out
    assert "MISATTRIBUTED" not in out


def test_the_quota_phase_runs_its_command_in_a_cpu_cgroup_of_one_cores_time():
    if os.geteuid() != 0:
        pytest.skip("a CPU cgroup needs root")
    try:
        words, group = bench_nights.quota_words(f"hetval-test-{os.getpid()}")
    except (SystemExit, OSError) as e:
        pytest.skip(f"no CPU cgroup to set a quota in here: {e}")
    try:
        out = subprocess.run([*words, "cat", "/proc/self/cgroup"], capture_output=True, text=True, check=True).stdout
        assert group.name in out
        if (group / "cpu.cfs_quota_us").exists():
            assert (group / "cpu.cfs_quota_us").read_text().strip() == str(bench_nights.QUOTA_PERIOD_US)
            assert (group / "cpu.cfs_period_us").read_text().strip() == str(bench_nights.QUOTA_PERIOD_US)
        else:
            assert (group / "cpu.max").read_text().split() == [str(bench_nights.QUOTA_PERIOD_US)] * 2
    finally:
        group.rmdir()
