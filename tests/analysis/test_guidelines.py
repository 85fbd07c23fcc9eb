"""PeaPaw's partitioning guidelines: checked in validation (analysis.scoring.guidelines), shown by the report section."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.common import Inputs
from analysis.report.sections.guidelines import GuidelinesSection
from analysis.scoring.guidelines import evaluate


def processors(**energy) -> pd.DataFrame:
    row = {"platform": "pair", "t_f_host": 1e-10, "t_b_host": 1e-10, "t_f_accel": 1e-11, "t_b_accel": 5e-11,
           "e_f_host": np.nan, "e_b_host": np.nan, "p_s_host": np.nan, "e_f_accel": np.nan, "e_b_accel": np.nan,
           "p_s_accel": np.nan, "energy_problem_host": "", "energy_problem_accel": ""}
    return pd.DataFrame([{**row, **energy}])


BASE = {"platform": "pair", "study": "s", "case": "sa", "size": 10, "axis_wp": True}


def test_category_and_guideline_check(tmp_path):
    runs = pd.DataFrame([
        {**BASE, "run_id": "a", "variant": "p-DP", "time_median_s": 1.0, "intensity": 2.0, "intensity_host": 2.0,
         "intensity_accel": 2.0},
        {**BASE, "run_id": "b", "variant": "CP", "time_median_s": 0.5, "intensity": 2.0, "intensity_host": 0.1,
         "intensity_accel": 8.0},
        {**BASE, "run_id": "c", "variant": "DP(0.5)", "axis_wp": False, "time_median_s": 0.1, "intensity": 2.0,
         "intensity_host": 2.0, "intensity_accel": 2.0},  # not a WP: the alpha axis
    ])
    g = evaluate(runs, processors())
    # BL_C = 1 < BL_G = 5: CPU_MEM-GPU_COMP; CP puts the high-intensity part on the accelerator and is fastest
    [row] = g.to_dict("records")
    assert row["p_category"] == "CPU_MEM-GPU_COMP" and row["best_measured"] == "CP"
    assert row["guideline_wps"] == "CP" and row["follows"] == "yes"
    assert row["e_category"].startswith("not determined") and "no energy meter" in row["e_category"]
    g.to_parquet(tmp_path / "guidelines.parquet")
    out = GuidelinesSection().build(Inputs(tmp_path, None, "missing", []), tmp_path)
    assert out.lines[-1].endswith("measured best CP; guideline WPs CP; follows: yes")
    assert any(b["kind"] == "table" and "CPU_MEM-GPU_COMP" in b["rows"][0] for b in out.blocks)


def test_no_wp_runs_says_so(tmp_path):
    assert evaluate(pd.DataFrame(columns=["axis_wp"]), processors()).empty
    out = GuidelinesSection().build(Inputs(tmp_path, None, "missing", []), tmp_path)
    assert any("no partitioning categories" in line for line in out.lines)


def test_least_energy_wp_named_without_energy_parameters():
    """Energy attached from a later trace: the least-energy WP is known even when E-Paw's category is not."""
    base = {**BASE, "intensity": 2.0, "intensity_host": 2.0, "intensity_accel": 2.0}
    runs = pd.DataFrame([{**base, "run_id": "a", "variant": "CO", "time_median_s": 1.0, "energy_median_j": 3.0},
                         {**base, "run_id": "b", "variant": "GO", "time_median_s": 2.0, "energy_median_j": 2.0}])
    assert evaluate(runs, processors())["least_energy"].iloc[0] == "GO: n/a (E-Paw category unknown)"
    runs["energy_median_j"] = [3.0, None]
    assert evaluate(runs, processors())["least_energy"].iloc[0] == "n/a: no measured energy"


def test_an_unphysical_energy_fit_is_named():
    g = evaluate(pd.DataFrame([{**BASE, "run_id": "a", "variant": "CO", "time_median_s": 1.0, "intensity": 2.0,
                                "intensity_host": 2.0, "intensity_accel": 0.0}]),
                 processors(energy_problem_accel="unphysical energy fit (e_f = -1e-10)"))
    assert "accel: unphysical energy fit" in g["e_category"].iloc[0]
