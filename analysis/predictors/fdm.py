"""The FDM scaling model applied to FDM runs: predicted time per run and per part (compute, pack, unpack,
halo, host<->device), from the platform's t_f, t_b, ping-pong latency and bandwidth.

Tightness is ``predicted time / measured time`` (the model is a prediction, not a bound: above 1 it was
pessimistic).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from analysis import metrics
from analysis.models import fdm
from analysis.platforms import BACKEND_COLS
from analysis.registry import Model

MODEL = "FDM"


def _pml_width(boundary: str) -> int:
    m = re.match(r"cpml\((\d+)\)", str(boundary))
    return int(m.group(1)) if m else 0


def predict_fdm(runs: pd.DataFrame) -> pd.DataFrame:
    """Add the FDM model's predicted time and parts; rows carry the platform columns of ``Platforms.backends``."""
    out = runs.copy()
    cols = {k: np.full(len(out), np.nan) for k in ("time_predicted_s", "compute_pred_s", "pack_pred_s",
                                                  "unpack_pred_s", "halo_pred_s", "h2d_pred_s")}
    for i, r in enumerate(out.itertuples(index=False)):
        if not np.isfinite(r.latency) or not np.isfinite(r.t_net):
            continue
        grid = json.loads(r.grid)
        dims = json.loads(r.decomposition)
        sharing = min(int(r.ranks), int(r.cores)) > 1
        pred = fdm.run_time(
            grid["shape"], dims, int(r.order), int(r.steps), str(r.marshaling), _pml_width(r.boundary),
            free_surface=str(r.boundary).endswith("+free-surface"),
            t_f=r.t_f, t_b=r.t_b_shared if sharing else r.t_b, latency=r.latency, t_net=r.t_net,
            on_device=str(r.backend) == "cupy", t_pcie=None, cores=int(r.cores),
        )
        cols["time_predicted_s"][i] = pred["total"]
        for k in ("compute", "pack", "unpack", "halo", "h2d"):
            cols[f"{k}_pred_s"][i] = pred[k]
    for k, v in cols.items():
        out[k] = v
    out["model"] = pd.Series([MODEL] * len(out), index=out.index, dtype="string")
    out["mlups_measured"] = out["points"] * out["steps"] / out["time_median_s"] / 1e6
    out["mlups_predicted"] = out["points"] * out["steps"] / out["time_predicted_s"] / 1e6
    valid = np.isfinite(out["time_predicted_s"].to_numpy())
    tight = np.full(len(out), np.nan)
    if valid.any():
        tight[valid] = metrics.tightness(out.loc[valid, "time_predicted_s"].to_numpy(),
                                         out.loc[valid, "time_median_s"].to_numpy())
    out["tightness"] = tight
    return out.drop(columns=BACKEND_COLS)


class FDMModel(Model):
    """Per-rank roofline of the step's compulsory traffic plus halo messages and marshaling."""

    name = MODEL
    cases = ("fdm",)
    needs = BACKEND_COLS
    table = "fdm_runs"

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_fdm(runs)
