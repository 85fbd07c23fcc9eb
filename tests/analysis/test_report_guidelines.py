"""The report's partitioning-guideline section."""

from __future__ import annotations

import pandas as pd

from analysis import report_guidelines
from analysis.report import PlatformFile


def _proc(t_f, t_b):
    return {"t_f": {"value": t_f}, "t_b": {"value": t_b}, "e_f": None, "e_b": None, "p_s": None}


def test_category_and_guideline_check(tmp_path):
    plat = PlatformFile("pair", "x.yaml", {"processors": {"host": _proc(1e-10, 1e-10), "accel": _proc(1e-11, 5e-11)}})
    runs = pd.DataFrame([
        {"run_id": "a", "platform": "pair", "study": "s", "case": "sa", "size": 10, "variant": "p-DP", "axis_wp": True, "time_median_s": 1.0,
         "intensity": 2.0, "intensity_host": 2.0, "intensity_accel": 2.0},
        {"run_id": "b", "platform": "pair", "study": "s", "case": "sa", "size": 10, "variant": "CP", "axis_wp": True, "time_median_s": 0.5,
         "intensity": 2.0, "intensity_host": 0.1, "intensity_accel": 8.0},
        {"run_id": "b", "platform": "pair", "study": "s", "case": "sa", "size": 10, "variant": "CP", "axis_wp": True, "time_median_s": 0.5,
         "intensity": 2.0, "intensity_host": 0.1, "intensity_accel": 8.0},  # the same run under a second model
        {"run_id": "c", "platform": "pair", "study": "s", "case": "sa", "size": 10, "variant": "DP(0.5)", "axis_wp": False, "time_median_s": 0.1,
         "intensity": 2.0, "intensity_host": 2.0, "intensity_accel": 2.0},
    ])
    runs.to_parquet(tmp_path / "runs.parquet")
    html, lines = report_guidelines.section([plat], tmp_path)
    # BL_C = 1 < BL_G = 5: CPU_MEM-GPU_COMP; CP puts the high-intensity part on the accelerator and is fastest
    assert "CPU_MEM-GPU_COMP" in html and "no energy meter" in html
    assert lines[1].endswith("measured best CP; guideline WPs CP; follows: yes")


def test_no_platform():
    html, lines = report_guidelines.section([], "/nonexistent")
    assert "No characterised platform" in html and lines


def test_least_energy_wp_named_without_energy_parameters(tmp_path):
    """Energy attached from a later trace: the least-energy WP is known even when E-Paw's category is not."""
    plat = PlatformFile("pair", "x.yaml", {"processors": {"host": _proc(1e-10, 1e-10), "accel": _proc(1e-11, 5e-11)}})
    base = {"platform": "pair", "study": "s", "case": "sa", "size": 10, "axis_wp": True, "intensity": 2.0,
            "intensity_host": 2.0, "intensity_accel": 2.0}
    runs = pd.DataFrame([{**base, "run_id": "a", "variant": "CO", "time_median_s": 1.0, "energy_median_j": 3.0},
                         {**base, "run_id": "b", "variant": "GO", "time_median_s": 2.0, "energy_median_j": 2.0}])
    runs.to_parquet(tmp_path / "runs.parquet")
    html, _ = report_guidelines.section([plat], tmp_path)
    assert "GO: n/a (E-Paw category unknown)" in html
    runs["energy_median_j"] = [3.0, None]
    runs.to_parquet(tmp_path / "runs.parquet")
    html, _ = report_guidelines.section([plat], tmp_path)
    assert "n/a: no measured energy" in html
