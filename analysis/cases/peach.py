"""PEACH's workloads (MatrixMultiply, MatrixTranspose) split by alpha over a grid, optionally at (f_C, f_G).

Config ``cases.peach``: ``workloads`` (``{name, n, dtype}``), ``alphas``, ``frequencies``, ``seed``. The
job is :class:`sims.cases.job.MatrixRun`. Validation scores each *curve* (one workload, size, platform and
frequency pair over the alpha grid) with the end-point calibrated PEACH model
(:mod:`analysis.predictors.peach`): relative error at the interior points, ranking of the grid by time
and by energy, measured best alpha against ``alpha_perf`` (eq. 13) and ``alpha_eff`` (eq. 15).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import yaml

from analysis import metrics
from analysis.cases.wp import run_command, two_processor_spec
from analysis.config import platform_layouts
from analysis.models import peach
from analysis.predictors.energy_roofline import ROOFLINE_ENERGY_MODEL
from analysis.predictors.peach import CURVE_KEYS, MODEL
from analysis.registry import Case
from analysis.runs import SAMPLE_COLUMNS, fidelity_types, reduce_repetitions
from analysis.uncertainty import UNCERTAINTY_COLUMNS, Settings, group_uncertainty
from sims.cases.matrix import PEACH_WORKLOADS
from sims.vocab import dp_variant

SCHEMA = yaml.safe_load(f"""
type: object
additionalProperties: false
default: {{}}
description: PEACH's MatrixMultiply and MatrixTranspose split by alpha, optionally at (f_C, f_G) pairs
properties:
  workloads:
    type: array
    minItems: 1
    items:
      type: object
      additionalProperties: false
      required: [name, n]
      properties:
        name: {{enum: [{", ".join(PEACH_WORKLOADS)}]}}
        n: {{type: integer, minimum: 1, maximum: 131072}}
        dtype: {{enum: [float32, float64], default: float64}}
    default: [{{name: MatrixMultiply, n: 3200}}, {{name: MatrixTranspose, n: 10240}}]
  alphas:
    type: array
    minItems: 2
    uniqueItems: true
    items: {{type: number, minimum: 0, maximum: 1}}
    default: [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
  frequencies:
    type: array
    description: "(f_C GHz, f_G MHz) pairs; empty = the processors' default speeds. A pair the platform cannot set is recorded as skipped"
    items:
      type: object
      additionalProperties: false
      properties:
        f_C: {{type: ["number", "null"], exclusiveMinimum: 0}}
        f_G: {{type: ["number", "null"], exclusiveMinimum: 0}}
    default: []
  seed:
    type: integer
    minimum: 0
    default: 1
""")


RUN_COLUMNS = [*CURVE_KEYS, "run_id", "variant", "alpha", "work", "work_unit", "time_median_s", "time_iqr_s",
               "time_predicted_s", "rate_measured", "rate_predicted", "time_rel_error", "energy_median_j",
               "energy_source", "eta_measured", "eta_predicted", "energy_rel_error", "endpoint"]


FIDELITY_COLUMNS = [*CURVE_KEYS, "quantity", "model", "n_alternatives", "kendall_tau", "pairwise_agreement",
                    "top1_agreement", "selection_penalty", "profile_error", "best_measured", "best_predicted",
                    "alpha_best_measured", "alpha_best_predicted", "alpha_continuous", "error_median",
                    "error_max", "R_C", "R_G", "P0", "Pd_C", "Pd_G", *UNCERTAINTY_COLUMNS]


def _score(g: pd.DataFrame, quantity: str, params: dict[str, Any],
           settings: Settings | None = None) -> dict[str, Any] | None:
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
    reps = SAMPLE_COLUMNS[quantity]
    key = (*(str(g[k].iloc[0]) for k in CURVE_KEYS), quantity)
    spread = group_uncertainty(key, m, p, names, g[reps].tolist() if reps in g else None, settings or Settings())
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
        **spread,
    }


def score_curves(predicted: pd.DataFrame, settings: Settings | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-run rows and per-curve fidelity (by time, and by energy where it was measured).

    ``predicted`` is the PEACH model's output: per-run rows of every curve with both end points, and
    each curve's calibration in ``predicted.attrs["params"]`` keyed by its :data:`CURVE_KEYS` values.
    """
    fid = []
    calib = predicted.attrs.get("params", {})
    # pandas deep-copies ``attrs`` into every frame derived from this one: with one calibration per curve
    # that made scoring quadratic in the curves (90 s of 156 at 10^4 runs). Score a frame without them.
    predicted = predicted.copy(deep=False)
    predicted.attrs = {}
    if len(predicted):
        for key, rows in predicted.groupby(CURVE_KEYS, sort=True, dropna=False):
            params = calib.get(tuple(str(k) for k in key))
            for quantity in ("time", "energy"):
                scored = _score(rows, quantity, params, settings) if params else None
                if scored:
                    fid.append(scored)
    run_df = predicted.copy() if len(predicted) else pd.DataFrame(columns=RUN_COLUMNS)
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
    typed = fidelity_types(FIDELITY_COLUMNS)
    fid_df = fid_df.astype({**{c: "float64" for c in FIDELITY_COLUMNS if c not in strings and c not in typed},
                            **typed})
    return run_df, fid_df


class PEACHCase(Case):
    name = "peach"
    title = "PEACH matrix workloads split by alpha (Ge et al. 2014)"
    order = 30
    schema = SCHEMA
    tables = ("peach_runs", "peach_fidelity", "energy_roofline")
    sections = ("analysis.report.sections.peach:PEACHSection",)
    job = "sims.cases.job:MatrixRun"

    def data_bytes(self, spec: Mapping[str, Any]) -> float:
        p = spec["params"]  # three n x n matrices for the multiply, two for the transpose
        n, width = int(p["n"]), (4 if p.get("dtype") == "float32" else 8)
        return (3 if p.get("workload") == "MatrixMultiply" else 2) * n * n * width

    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        section = config["cases"][self.name]
        out = []
        for w in section["workloads"]:
            for pair in section["frequencies"] or [None]:
                params = {"workload": w["name"], "n": int(w["n"]), "dtype": w.get("dtype", "float64")}
                if pair and (pair.get("f_C") is not None or pair.get("f_G") is not None):
                    params["frequency"] = {k: pair.get(k) for k in ("f_C", "f_G")}
                for alpha in section["alphas"]:
                    for platform in platform_layouts(config):
                        out.append(two_processor_spec(config, self.name, dp_variant(float(alpha)), params,
                                                      int(section["seed"]), platform, self.job, int(w["n"])))
        return out

    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        return run_command(spec, record, platform_file, launch)

    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        return reduce_repetitions(records)

    def score(self, predictions: dict[str, pd.DataFrame], context: Any) -> dict[str, pd.DataFrame]:
        predicted = predictions.get(MODEL)
        runs, fid = score_curves(predicted if predicted is not None else pd.DataFrame(columns=RUN_COLUMNS),
                                 getattr(context, "uncertainty", None))
        roofline = predictions.get(ROOFLINE_ENERGY_MODEL)
        return {"peach_runs": runs, "peach_fidelity": fid,
                "energy_roofline": roofline if roofline is not None else pd.DataFrame()}


CASE = PEACHCase()
