"""PEACH validation on measured runs: ``R(alpha)``, ``eta(alpha)``, ``alpha_perf`` and ``alpha_eff`` against measurement.

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

The interior points are then predictions (eq. 7 for the rate, eq. 12 for the
efficiency), scored by relative error, and the grid's best ``alpha`` by time
(``alpha_perf``, eq. 13) and by energy (``alpha_eff``, eq. 15) is compared with
the measured best. The end points reproduce themselves by construction; their
error is reported but they say nothing about the model.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics
from analysis.models import peach

CURVE_KEYS = ["study", "platform", "workload", "size", "frequency"]
MODEL = "PEACH (end-point calibrated)"

RUN_COLUMNS = [*CURVE_KEYS, "run_id", "variant", "alpha", "work", "work_unit", "time_median_s", "time_iqr_s",
               "time_predicted_s", "rate_measured", "rate_predicted", "time_rel_error", "energy_median_j",
               "energy_source", "eta_measured", "eta_predicted", "energy_rel_error", "endpoint"]
FIDELITY_COLUMNS = [*CURVE_KEYS, "quantity", "model", "n_alternatives", "kendall_tau", "pairwise_agreement",
                    "top1_agreement", "selection_penalty", "profile_error", "best_measured", "best_predicted",
                    "alpha_best_measured", "alpha_best_predicted", "alpha_continuous", "error_median",
                    "error_max", "R_C", "R_G", "P0", "Pd_C", "Pd_G"]


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


def _score(g: pd.DataFrame, quantity: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if quantity == "time":
        m, p = g["time_median_s"].to_numpy(float), g["time_predicted_s"].to_numpy(float)
        err = g.loc[~g["endpoint"], "time_rel_error"]
    else:
        W = params["W"]
        m, p = W / g["eta_measured"].to_numpy(float), W / g["eta_predicted"].to_numpy(float)
        err = g.loc[~g["endpoint"], "energy_rel_error"]
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(p)) and np.all(m > 0) and np.all(p > 0)) or len(g) < 2:
        return None
    names = g["variant"].astype(str).tolist()
    summary = metrics.ranking_summary(m, p, names)
    alphas = g["alpha"].to_numpy(float)
    objective = "performance" if quantity == "time" else "energy"
    cont = peach.best_alpha(objective, params["R_C"], params["R_G"],
                            *((params["P0"], params["Pd_C"], params["Pd_G"]) if quantity == "energy" else ()))[0]
    return {
        **{k: g[k].iloc[0] for k in CURVE_KEYS}, "quantity": quantity, "model": MODEL, "n_alternatives": len(g),
        **summary,
        "alpha_best_measured": float(alphas[int(np.argmin(m))]),
        "alpha_best_predicted": float(alphas[int(np.argmin(p))]),
        "alpha_continuous": float(cont),
        "error_median": float(err.median()) if len(err) else np.nan,
        "error_max": float(err.max()) if len(err) else np.nan,
        **{k: float(params[k]) for k in ("R_C", "R_G", "P0", "Pd_C", "Pd_G")},
    }


def validate_peach(reduced: pd.DataFrame, idle_w: dict[str, float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-run predictions and per-curve fidelity (by time, and by energy where it was measured)."""
    runs, fid = [], []
    if len(reduced):
        for _, g in curves(reduced).groupby(CURVE_KEYS, sort=True, dropna=False):
            rows, params = predict_curve(g, idle_w.get(str(g["platform"].iloc[0])))
            if rows.empty:
                continue
            runs.append(rows)
            for quantity in ("time", "energy"):
                scored = _score(rows, quantity, params)
                if scored:
                    fid.append(scored)
    run_df = pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(columns=RUN_COLUMNS)
    for c in RUN_COLUMNS:
        if c not in run_df.columns:
            run_df[c] = np.nan
    run_df = run_df[RUN_COLUMNS]
    fid_df = pd.DataFrame(fid, columns=FIDELITY_COLUMNS)
    strings = [*[k for k in CURVE_KEYS if k != "size"], "run_id", "variant", "work_unit", "energy_source",
               "quantity", "model", "best_measured", "best_predicted"]
    run_df = run_df.astype({c: "string" for c in strings if c in run_df.columns})
    run_df = run_df.astype({c: "float64" for c in RUN_COLUMNS if c not in strings and c != "endpoint"})
    run_df["endpoint"] = run_df["endpoint"].astype("bool")
    fid_df = fid_df.astype({c: "string" for c in strings if c in fid_df.columns})
    fid_df["n_alternatives"] = fid_df["n_alternatives"].astype("int64")
    fid_df = fid_df.astype({c: "float64" for c in FIDELITY_COLUMNS if c not in strings and c != "n_alternatives"})
    return run_df, fid_df
