"""PEACH on measured curves: ``R(alpha)`` (eq. 7) and ``eta(alpha)`` (eq. 12) from each curve's own end points.

One *curve* is the set of runs of one PEACH workload (MatrixMultiply or
MatrixTranspose) at one size, on one platform, at one ``(f_C, f_G)`` setting,
over the configured ``alpha`` grid. The model's parameters come from the curve's
own end points, as PEACH obtains them (§VI: "we run MatrixMultiply 100% on the
CPU and then 100% on the GPU"):

* ``R_C = W / T(alpha=0)`` and ``R_G = W / T(alpha=1)`` (eq. 1-5); ``T_OH = 0``
  here because each processor owns its data (nothing is copied inside the
  measured region);
* with measured energy: ``P0`` = the platform's measured idle power,
  ``Pd_C = E(0)/T(0) - P0`` and ``Pd_G = E(1)/T(1) - P0`` (eq. 9-11; ``P_OH`` is
  folded into ``Pd_G`` because a system meter cannot separate them).

The interior points are then predictions, scored by the PEACH case
(:mod:`analysis.cases.peach`). The end points reproduce themselves by
construction; their error is reported but they say nothing about the model.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from analysis.models import peach
from analysis.registry import Model

CURVE_KEYS = ["study", "platform", "workload", "size", "frequency"]
MODEL = "PEACH (end-point calibrated)"


def _params(text: str) -> dict[str, Any]:
    try:
        return json.loads(text) if isinstance(text, str) else {}
    except json.JSONDecodeError:
        return {}


def curves(reduced: pd.DataFrame) -> pd.DataFrame:
    """Reduced PEACH runs (one row per run) with the curve keys and the work ``W`` unpacked from ``params``."""
    out = reduced.copy()
    p = out["params"].map(_params)
    out["workload"] = p.map(lambda d: d.get("workload")).astype("string")
    out["frequency"] = p.map(lambda d: json.dumps(d.get("frequency"), sort_keys=True) if d.get("frequency")
                             else "default").astype("string")
    out["work_unit"] = p.map(lambda d: d.get("work_unit")).astype("string")
    out["work"] = p.map(lambda d: float(sum((d.get("work") or {}).values())) if d.get("work") else np.nan)
    return out


def predict_curve(g: pd.DataFrame, idle_w: float | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Predictions for one curve: per-run rows and the calibrated parameters (empty rows without both end points)."""
    g = g.sort_values("alpha", kind="stable")
    a = g["alpha"].to_numpy(dtype="float64")
    W = float(g["work"].iloc[0])
    t = g["time_median_s"].to_numpy(dtype="float64")
    ends = {0.0: np.flatnonzero(np.isclose(a, 0.0)), 1.0: np.flatnonzero(np.isclose(a, 1.0))}
    if not (len(ends[0.0]) and len(ends[1.0])) or not np.isfinite(W) or W <= 0:
        return g.iloc[:0], {}
    i0, i1 = ends[0.0][0], ends[1.0][0]
    R_C, R_G = W / t[i0], W / t[i1]
    rate_p = peach.rate(a, R_C, R_G, 0.0, W)
    out = g.copy()
    out["rate_measured"] = W / t
    out["rate_predicted"] = rate_p
    out["time_predicted_s"] = W / rate_p
    out["time_rel_error"] = np.abs(out["time_predicted_s"] - t) / t
    out["endpoint"] = np.isclose(a, 0.0) | np.isclose(a, 1.0)
    e = g["energy_median_j"].to_numpy(dtype="float64")
    params: dict[str, Any] = {"R_C": R_C, "R_G": R_G, "P0": np.nan, "Pd_C": np.nan, "Pd_G": np.nan, "W": W}
    out["eta_measured"] = W / e
    out["eta_predicted"] = np.nan
    if idle_w is not None and np.isfinite(idle_w) and np.isfinite(e[i0]) and np.isfinite(e[i1]):
        pd_c = max(e[i0] / t[i0] - idle_w, 0.0)
        pd_g = max(e[i1] / t[i1] - idle_w, 0.0)
        params.update(P0=idle_w, Pd_C=pd_c, Pd_G=pd_g)
        out["eta_predicted"] = peach.efficiency(a, R_C, R_G, idle_w, pd_c, pd_g, 0.0, 0.0, W)
    out["energy_rel_error"] = np.abs(out["eta_predicted"] - out["eta_measured"]) / out["eta_measured"]
    return out, params


class PEACHModel(Model):
    """End-point calibrated PEACH curves; needs whole curves, so it runs on the computed frame."""

    name = MODEL
    cases = ("peach",)
    needs = ("idle_w",)
    table = "peach_runs"
    rowwise = False

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        """Per-run rows of every curve with both end points; the calibration in ``attrs["params"]``."""
        parts, params = [], {}
        if len(runs):
            for key, g in curves(runs).groupby(CURVE_KEYS, sort=True, dropna=False):
                idle = g["idle_w"].iloc[0] if "idle_w" in g else np.nan
                rows, p = predict_curve(g, float(idle) if pd.notna(idle) else None)
                if not rows.empty:
                    parts.append(rows)
                    params[tuple(str(k) for k in key)] = p
        out = pd.concat(parts, ignore_index=True) if parts else curves(runs.iloc[:0])
        out.attrs["params"] = params
        return out
