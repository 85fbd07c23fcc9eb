"""Panwar's online performance projection (thesis ch. 3) applied to the two-processor cases' runs.

Each processor's part of a run is projected as ``max(t_compute, t_global, t_local)``
(§3.3.4, :func:`analysis.equations.panwar.project`) from the platform's characterised profile
(``t_f``: seconds per flop of the kernels the processor ran; ``t_b``: seconds per byte of
memory traffic) and the part's counted flops and traffic. None of the built-in kernels stages
data through an on-chip local memory, so ``t_local`` is 0 and never binds. The thesis projects
a kernel on one device; a run split across both processors runs its parts concurrently, so its
projected time is the longer part (the same composition the other models use).

Scored two ways: per run like every model (tightness, ranking of a group's alternatives, in
``runs``/``fidelity``), and as the thesis scores it (§3.4.2), per workload: the projected and
measured time of the whole workload on each processor alone, the processor the projection
picks, the device-selection penalty and the relative error (``projection.parquet``,
:func:`analysis.scoring.projection.device_selection`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.equations import panwar
from analysis.registry import SCALE_BANDS, Model
from analysis.storage.platforms import BACKEND_COLS, FDM_CALIBRATION_COL, PLATFORM_COLS, PROBLEM_COLS

MODEL = "Panwar projection"
ROLES = ("host", "accel")


def part_times(runs: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each processor's projected part (s) for every row of ``runs`` (0 where it has no work, NaN where its
    profile was not measured)."""
    parts = {}
    for role in ROLES:
        flops = runs[f"flops_{role}"].to_numpy(dtype="float64")
        traffic = runs[f"traffic_{role}" if f"traffic_{role}" in runs else f"bytes_{role}"].to_numpy(dtype="float64")
        t_f = runs[f"t_f_{role}"].to_numpy(dtype="float64")
        t_b = runs[f"t_b_{role}"].to_numpy(dtype="float64")
        with np.errstate(invalid="ignore"):
            part = panwar.project(flops, t_f, traffic, t_b)
        idle = (flops <= 0) & (traffic <= 0)
        bad = ~(np.isfinite(t_f) & np.isfinite(t_b) & (t_f > 0) & (t_b > 0))
        parts[role] = np.where(idle, 0.0, np.where(bad, np.nan, part))
    return parts


def predict_panwar(runs: pd.DataFrame) -> pd.DataFrame:
    """The projection of every run with both processors' profiles: the longer of its projected parts."""
    parts = part_times(runs) if len(runs) else {r: np.zeros(0) for r in ROLES}
    projected = pd.Series(np.fmax(parts["host"], parts["accel"]), index=runs.index)
    projected[np.isnan(parts["host"]) | np.isnan(parts["accel"])] = np.nan
    out = runs.drop(columns=[*PLATFORM_COLS, *PROBLEM_COLS], errors="ignore")
    out["quantity"] = pd.Series(["time"] * len(out), index=out.index, dtype="string")
    t = projected.reindex(out.index).to_numpy(dtype="float64")
    ok = np.isfinite(t) & (t > 0)
    out = out[ok].copy()
    t = t[ok]
    out["model"] = pd.Series([MODEL] * len(out), index=out.index, dtype="string")
    out["time_predicted_s"] = t
    out["perf_predicted"] = out["flops"] / t
    return out


def predict_fdm_panwar(runs: pd.DataFrame) -> pd.DataFrame:
    """The projection of each one-rank FDM run (a kernel on one device, as the thesis projects it) that counts its
    work on one of the platform's processors: that processor's part, from the solver's counts."""
    if not len(runs) or "flops_host" not in runs:
        return runs.iloc[:0].assign(model=pd.Series([], dtype="string"), time_predicted_s=np.zeros(0))
    one = runs[(runs["ranks"] == 1) & runs["flops_host"].notna() & runs["flops_accel"].notna()].copy()
    parts = part_times(one) if len(one) else {r: np.zeros(0) for r in ROLES}
    t = np.fmax(parts["host"], parts["accel"])
    t[np.isnan(parts["host"]) | np.isnan(parts["accel"])] = np.nan
    ok = np.isfinite(t) & (t > 0)
    out, t = one[ok].copy(), t[ok]
    out["model"] = pd.Series([MODEL] * len(out), index=out.index, dtype="string")
    out["time_predicted_s"] = t
    # the platform's parameters were inputs, not results
    return out.drop(columns=[*BACKEND_COLS, FDM_CALIBRATION_COL, *(f"{p}_{r}" for r in ROLES for p in ("t_f", "t_b"))],
                    errors="ignore")


class PanwarProjection(Model):
    """Panwar's three-component projection per processor (thesis §3.3.4); the run's time is the longer part."""

    name = MODEL
    cases = ("sa", "la", "peach", "fdm")
    needs = ("t_f_host", "t_b_host", "t_f_accel", "t_b_accel")
    not_for = {f"fdm/{band}": "the thesis projects a kernel on one device; a run of several ranks shares the node's "
               "cores and links (the FDM models price those)" for _, band in SCALE_BANDS[1:]}

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        if "grid" in runs.columns:  # an FDM run: one backend's ranks, its counts on that backend's processor
            return predict_fdm_panwar(runs)
        return predict_panwar(runs)
