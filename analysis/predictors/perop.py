"""The per-operation model (Kannan et al.) applied to SA runs, from the characterised add/mul costs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analysis import metrics
from analysis.models import perop
from analysis.platforms import TAU_COLS
from analysis.predictors.peapaw import predict_sa
from analysis.registry import Model
from sims.sa.counts import PHASE_COUNTS, PHASE_OPERATIONS

PEROP_MODEL = "per-operation (Kannan)"


def predict_perop(runs: pd.DataFrame) -> pd.DataFrame:
    """The per-operation model (Kannan et al.) for SA runs with characterised ``tau_add``/``tau_mul``.

    Each processor's part takes the basic-block form ``max(sum_op v_op tau_op,
    bytes t_b)`` over its elements and phases (VecAdd: 1 add; PowAdd: 2016
    multiplications and 32 adds per element, 12 and 256 bytes); the parts run
    concurrently, so the run's time is the longer part. Runs without
    per-operation costs for their platform are dropped (no prediction).
    """
    have = runs.dropna(subset=TAU_COLS) if set(TAU_COLS) <= set(runs.columns) else runs.iloc[:0]
    out = predict_sa(have) if len(have) else predict_sa(runs.iloc[:0])
    t_pred = np.full(len(have), np.nan)
    for i, row in enumerate(have.itertuples(index=False)):
        desc = json.loads(row.params) if isinstance(row.params, str) else {}
        elements, phases = desc.get("elements") or {}, desc.get("phases") or {}
        parts = []
        for role in ("host", "accel"):
            n = float(elements.get(role, 0) or 0)
            if n <= 0 or not phases.get(role):
                continue
            counts = {op: n * sum(PHASE_OPERATIONS[p][op] for p in phases[role]) for op in ("add", "mul")}
            tau = {"add": getattr(row, f"tau_add_{role}"), "mul": getattr(row, f"tau_mul_{role}")}
            nbytes = n * sum(PHASE_COUNTS[p][1] for p in phases[role])
            parts.append(float(perop.basic_block_time(counts, tau, nbytes, getattr(row, f"t_b_{role}"))))
        t_pred[i] = max(parts) if parts else np.nan
    out["model"] = pd.Series([PEROP_MODEL] * len(out), index=out.index, dtype="string")
    out["time_predicted_s"] = t_pred
    out["perf_predicted"] = out["flops"] / out["time_predicted_s"]
    ok = np.isfinite(t_pred)
    tight = np.full(len(out), np.nan)
    if ok.any():
        tight[ok] = metrics.tightness(out["perf_measured"].to_numpy()[ok], out["perf_predicted"].to_numpy()[ok])
    out["tightness"] = tight
    return out[ok] if len(out) else out


class PerOperation(Model):
    """Basic-block max form over each processor's operation counts and bytes (SA runs)."""

    name = PEROP_MODEL
    cases = ("sa",)
    needs = (*TAU_COLS, "t_b_host", "t_b_accel")

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_perop(runs)
