"""The FDM scaling model applied to FDM runs: predicted time per run and per part (compute, pack, unpack,
halo, host<->device), from the platform's t_f, t_b, ping-pong latency and bandwidth.

Tightness is ``predicted time / measured time`` (the model is a prediction, not a bound: above 1 it was
pessimistic).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

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


PARTS = ("compute_pred_s", "pack_pred_s", "unpack_pred_s", "halo_pred_s", "h2d_pred_s")


def _shape(grid: str) -> tuple[int, ...]:
    return tuple(int(n) for n in json.loads(grid)["shape"])


@lru_cache(maxsize=1 << 16)
def _run_time(shape: tuple[int, ...], decomposition: str, order: int, steps: int, marshaling: str, boundary: str,
              t_f: float, t_b: float, latency: float, t_net: float, on_device: bool, cores: int, nodes: int,
              latency_inter: float | None, t_net_inter: float | None) -> tuple[float, ...]:
    """:func:`analysis.models.fdm.run_time` of one run's inputs: total and parts. Cached: a campaign repeats
    the same scale on the same platform many times, and the model depends on nothing else."""
    pred = fdm.run_time(list(shape), json.loads(decomposition), order, steps, marshaling,
                        _pml_width(boundary), free_surface=boundary.endswith("+free-surface"), nodes=nodes,
                        t_f=t_f, t_b=t_b, latency=latency, t_net=t_net, on_device=on_device, t_pcie=None,
                        cores=cores, latency_inter=latency_inter, t_net_inter=t_net_inter)
    return (float(pred["total"]), *(float(pred[k]) for k in ("compute", "pack", "unpack", "halo", "h2d")))


def predict_fdm(runs: pd.DataFrame) -> pd.DataFrame:
    """Add the FDM model's predicted time and parts; rows carry the platform columns of ``Platforms.backends``."""
    out = runs.copy()
    cols = {k: np.full(len(out), np.nan) for k in ("time_predicted_s", *PARTS)}
    nodes = out["nodes"].to_numpy() if "nodes" in out else np.ones(len(out), dtype=int)
    for i, r in enumerate(out.itertuples(index=False)):
        if not np.isfinite(r.latency) or not np.isfinite(r.t_net):
            continue
        spans = int(nodes[i]) > 1
        lat_inter, t_net_inter = getattr(r, "latency_inter", np.nan), getattr(r, "t_net_inter", np.nan)
        if spans and not (np.isfinite(lat_inter) and np.isfinite(t_net_inter)):
            continue  # across nodes without an inter-node ping-pong: no prediction rather than a guessed one
        sharing = min(-(-int(r.ranks) // int(nodes[i])), int(r.cores)) > 1
        pred = _run_time(_shape(str(r.grid)), str(r.decomposition), int(r.order), int(r.steps), str(r.marshaling),
                         str(r.boundary), float(r.t_f), float(r.t_b_shared if sharing else r.t_b),
                         float(r.latency), float(r.t_net), str(r.backend) == "cupy", int(r.cores), int(nodes[i]),
                         float(lat_inter) if spans else None, float(t_net_inter) if spans else None)
        for k, v in zip(("time_predicted_s", *PARTS), pred, strict=True):
            cols[k][i] = v
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
    return out.drop(columns=BACKEND_COLS, errors="ignore")


class FDMModel(Model):
    """Per-rank roofline of the step's compulsory traffic plus halo messages and marshaling."""

    name = MODEL
    cases = ("fdm",)
    needs = BACKEND_COLS
    table = "fdm_runs"

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_fdm(runs)
