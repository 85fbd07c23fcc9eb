"""What the FDM case's rows carry beyond its models' predictions: the phase furthest from its measurement, and
the class the scorecard judges a row in."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.scoring.classes import each, scale_band
from sims.vocab import FDM_PHASES


def worst_phase(rows: pd.DataFrame) -> pd.DataFrame:
    """An FDM model's rows with the phase whose prediction is furthest (in seconds) from its measured median
    (``worst_phase``, ``worst_phase_error_s``): which term is wrong when the total is. The analytical model's
    compute is compared with velocity + stress."""
    out = rows.copy()
    errors = {}
    for phase in FDM_PHASES:
        measured = out[f"{phase}_median_s"].to_numpy(dtype="float64") if f"{phase}_median_s" in out else None
        predicted = out[f"{phase}_pred_s"].to_numpy(dtype="float64") if f"{phase}_pred_s" in out else None
        if measured is not None and predicted is not None and np.isfinite(predicted).any():
            errors[phase] = predicted - measured
    if "velocity" not in errors and {"compute_pred_s", "velocity_median_s", "stress_median_s"} <= set(out.columns):
        measured = (out["velocity_median_s"].to_numpy(dtype="float64") + out["stress_median_s"].to_numpy(dtype="float64"))
        errors = {"compute": out["compute_pred_s"].to_numpy(dtype="float64") - measured, **errors}
    names = list(errors)
    phase = np.array([None] * len(out), dtype=object)
    error = np.full(len(out), np.nan)
    if names:
        stack = np.vstack([errors[n] for n in names])
        filled = np.where(np.isfinite(stack), np.abs(stack), -1.0)
        k = np.argmax(filled, axis=0)
        ok = filled[k, np.arange(len(out))] >= 0
        phase[ok] = np.array(names, dtype=object)[k[ok]]
        error[ok] = stack[k[ok], np.arange(len(out))[ok]]
    out["worst_phase"] = pd.array(phase, dtype="string")
    out["worst_phase_error_s"] = error
    return out


def fdm_class(frame: pd.DataFrame) -> pd.Series:
    """An FDM row's class: its scale band, and the backend it ran on (one grid on two backends is two workloads: a
    NumPy stencil moves far more than the compulsory traffic the Numba one does)."""
    band = each(frame["ranks"], scale_band)
    if "backend" not in frame:
        return band
    return (band.astype(str) + " (" + frame["backend"].astype("string").fillna("unknown backend").astype(str)
            + ")").astype(object)

