"""The tiny study's two characterisation replicates (tests/workflow/tiny.py): pooled into its platform file, each
parameter with its replicates' values, and carried into validation's figures and the scorecard's intervals."""

from __future__ import annotations

import json
import statistics

import pyarrow.parquet as pq
import yaml

from analysis.scoring.intervals import LEVELS
from analysis.storage.platforms import Platforms
from sims.bench.characterize import MOMENTS
from sims.bench.replicates import merge


def _replicates(tiny_study):
    where = tiny_study.study / "platforms"
    return where, [json.loads((where / "replicates" / f"cpu-pair-numpy-numba.{k}.json").read_text()) for k in (1, 2)]


def test_the_platform_file_pools_both_replicates_samples_and_keeps_each_ones_value(tiny_study):
    assert tiny_study.first.returncode == 0, tiny_study.first.stderr[-3000:]
    where, raws = _replicates(tiny_study)
    # the second replicate measured what the first sized: the triad's length, the sweep's points, the ops' passes
    assert raws[1]["elements"] == raws[0]["elements"]
    assert [r["sweep_elements"] for r in raws[1]["ranks"]] == [r["sweep_elements"] for r in raws[0]["ranks"]]
    assert [r["op_passes"] for r in raws[1]["ranks"]] == [r["op_passes"] for r in raws[0]["ranks"]]
    # the triad and the FMA chains alone on each processor, and the shared triad, at MOMENTS moments of each
    # replicate; every measurement took at least the replicate's share of the repetitions and at most the cap, and
    # the platform file's tally counts each sample
    for raw in raws:
        steps = raw["repetitions"]["steps"]
        shared = steps["shared triad"]
        assert shared["measurements"] == MOMENTS
        for r in raw["ranks"]:  # both ranks stream in every shared measurement
            assert len(r["t_b_shared"]) == sum(int(n) * k for n, k in shared["repetitions"].items())
        for kind, name in (("triad alone", "t_b"), ("fma alone", "t_f")):
            assert steps[kind]["measurements"] == MOMENTS * len(raw["ranks"])  # each processor in turn
            assert sum(len(r[name]) for r in raw["ranks"]) == sum(
                int(n) * k for n, k in steps[kind]["repetitions"].items())
            assert all(len(r[name]) >= MOMENTS * 3 for r in raw["ranks"])
        for step in steps.values():
            assert sum(step["stopped"].values()) == step["measurements"]
            assert all(3 <= int(n) <= 6 for n in step["repetitions"]), step
    doc = yaml.safe_load((where / "cpu-pair-numpy-numba.yaml").read_text())
    singles = [yaml.safe_load((where / "replicates" / f"cpu-pair-numpy-numba.{k}.yaml").read_text()) for k in (1, 2)]
    t_f = doc["processors"]["host"]["t_f"]
    assert t_f["samples"] == raws[0]["ranks"][0]["t_f"] + raws[1]["ranks"][0]["t_f"]  # every sample of both
    assert t_f["value"] == 1.0 / statistics.median(t_f["samples"])
    assert t_f["replicates"] == [s["processors"]["host"]["t_f"]["value"] for s in singles]
    assert t_f["replicate_spread"] == max(t_f["replicates"]) / min(t_f["replicates"])
    assert doc["replicates"]["count"] == 2
    assert [f["file"] for f in doc["replicates"]["files"]] == [f"replicates/cpu-pair-numpy-numba.{k}.yaml" for k in (1, 2)]
    # the first replicate was measured before the runs, the second after them (the runs' permanent copies: the
    # study's own records are rewritten by the end-to-end checks going on beside this test)
    first_run = min(r["measured_at"] for p in (tiny_study.work / "results" / "raw" / "tiny" / ".measurements").rglob(
        "*.json") for r in _records(p) if r.get("round") is not None)
    assert singles[0]["measured_at"] < first_run < singles[1]["measured_at"]


def _records(path):
    try:
        return json.loads(path.read_text())["records"]
    except (OSError, ValueError, KeyError):
        return []


def test_a_replicate_that_moved_is_flagged_and_the_flag_names_it(tiny_study, tmp_path):
    where, raws = _replicates(tiny_study)
    moved = json.loads(json.dumps(raws[1]))
    # the accel's FMA rate a third of the first replicate's, measured tightly: the tiny study runs beside other
    # tests, so its own samples may spread by more than a halving (then no gap could lie beyond their range)
    centre = statistics.median(raws[0]["ranks"][1]["t_f"])
    moved["ranks"][1]["t_f"] = [3.0 * centre * (1.0 + 0.001 * k) for k in range(len(moved["ranks"][1]["t_f"]))]
    paths = []
    for k, raw in enumerate((raws[0], moved), 1):
        paths.append(tmp_path / f"p.{k}.json")
        paths[-1].write_text(json.dumps(raw))
    spec = {"platform": "cpu-pair-numpy-numba", "layout": {"host": {"backend": "numpy", "cores": [0]},
                                                           "accel": {"backend": "numba", "cores": [1]}}}
    doc = merge([str(p) for p in paths], spec, str(tmp_path / "pooled.yaml"))
    assert "processors.accel.t_f" in doc["replicates"]["disagree"]
    assert doc["processors"]["accel"]["t_f"]["replicates_disagree"] is True
    assert doc["processors"]["accel"]["t_f"]["replicate_spread"] > 1.9


def test_validation_carries_each_replicates_figures_into_the_scorecards_intervals(tiny_study):
    study = tiny_study.study
    platforms = Platforms.from_files([study / "platforms" / "cpu-pair-numpy-numba.yaml"])
    assert len(platforms.replicates) == 2
    runs = pq.read_table(study / "validation" / "runs.parquet").to_pandas()
    assert runs["tightness_replicates"].map(len).eq(2).all()
    assert runs["rounds_reps"].map(len).eq(runs["n_reps"]).all()  # each repetition's round beside its time
    card = pq.read_table(study / "validation" / "scorecard.parquet").to_pandas()
    judged = card[card["runs"] >= 3]
    assert len(judged) and (judged["replicates"] == 2).all()
    # whichever level is widest on this study's figures: the between-study level too, where the runs agree closely
    assert set(judged["interval_level"]) <= set(LEVELS) and set(LEVELS) == {"characterisation", "runs",
                                                                              "repetitions", "study"}
    assert (judged["tightness_lo"] <= judged["tightness_median"]).all()
    assert (judged["tightness_median"] <= judged["tightness_hi"]).all()
