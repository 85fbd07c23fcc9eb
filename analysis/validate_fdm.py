"""FDM runs in the validation job: per-run medians, the FDM model's prediction, tightness and ranking fidelity.

Pure pandas transforms like those of :mod:`analysis.validate`, lifted onto Dask
there. Tightness is ``predicted time / measured time`` (the model is a
prediction, not a bound: above 1 it was pessimistic). Ranking fidelity is
scored along two axes at each scale (grid, ranks, order, boundary): the
marshaling designs at a fixed decomposition, and the decompositions at a fixed
marshaling design.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from analysis import metrics
from analysis.models import fdm

MODEL = "FDM"
PHASES = ("velocity", "stress", "pack", "unpack", "halo", "h2d")
SCALE_KEYS = ["study", "platform", "grid", "order", "boundary", "ranks"]
FDM_FIDELITY_COLUMNS = [
    *SCALE_KEYS, "axis", "fixed", "model", "n_alternatives", "kendall_tau", "pairwise_agreement", "top1_agreement",
    "selection_penalty", "profile_error", "best_measured", "best_predicted",
    "tightness_median", "tightness_min", "tightness_max",
]


def load_platform_params(platforms_dir: str | Path) -> pd.DataFrame:
    """Per platform and backend: ``t_f``, ``t_b``, ``t_b_shared``, ping-pong ``latency``/``t_net`` and ``cores``.

    A platform file without a ``network`` section (characterised before the
    ping-pong existed) gives null latency and bandwidth: its FDM runs get no
    prediction rather than a guessed one.
    """
    rows = []
    for path in sorted(Path(platforms_dir).glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        procs = doc.get("processors") or {}
        net = doc.get("network") or {}
        for proc in procs.values():
            if not isinstance(proc, dict) or "backend" not in proc:
                continue  # a published machine or a processor no run of ours drives: nothing to predict with
            try:
                rows.append({
                    "platform": str(doc.get("platform", path.stem)),
                    "backend": str(proc["backend"]),
                    "t_f": float(proc["t_f"]["value"]),
                    "t_b": float(proc["t_b"]["value"]),
                    "t_b_shared": float((proc.get("t_b_shared") or proc["t_b"])["value"]),
                    "latency": float(net["latency"]["value"]) if net else np.nan,
                    "t_net": float(net["t_net"]["value"]) if net else np.nan,
                    "cores": float(len(procs)),
                })
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path}: bad processor entry ({exc})") from exc
    cols = ["platform", "backend", "t_f", "t_b", "t_b_shared", "latency", "t_net", "cores"]
    out = pd.DataFrame(rows, columns=cols).drop_duplicates(["platform", "backend"], keep="first")
    return out.astype({"platform": "string", "backend": "string", **{c: "float64" for c in cols[2:]}})


def _pml_width(boundary: str) -> int:
    m = re.match(r"cpml\((\d+)\)", str(boundary))
    return int(m.group(1)) if m else 0


def reduce_fdm(df: pd.DataFrame) -> pd.DataFrame:
    """One row per ok FDM run: medians and spread of ``time_s`` and medians of the per-phase times."""
    ok = df[(df["status"] == "ok") & (df["case"] == "fdm")]
    first_cols = ["study", "variant", "platform", "ranks", "grid", "order", "boundary", "decomposition",
                  "marshaling", "steps", "points", "params"]
    g = ok.groupby("run_id", sort=True)
    first = g[first_cols].first()
    t = g["time_s"]
    out = first.assign(
        n_reps=t.count().astype("int64"),
        time_median_s=t.median().astype("float64"),
        time_min_s=t.min().astype("float64"),
        time_max_s=t.max().astype("float64"),
        time_iqr_s=(t.quantile(0.75) - t.quantile(0.25)).astype("float64"),
        **{f"{p}_median_s": pd.to_numeric(g[f"time_{p}_s"].median()).astype("float64") for p in PHASES},
    ).reset_index()
    out["backend"] = [json.loads(p).get("backend", "numba") if isinstance(p, str) else None for p in out["params"]]
    out = out.drop(columns=["params"])
    for c in ("run_id", "study", "variant", "platform", "grid", "boundary", "decomposition", "marshaling", "backend"):
        out[c] = out[c].astype("string")
    for c in ("ranks", "order", "steps", "points"):
        out[c] = pd.to_numeric(out[c]).astype("int64")
    return out


def predict_fdm(runs: pd.DataFrame) -> pd.DataFrame:
    """Add the FDM model's predicted time and parts; rows carry the platform columns of :func:`load_platform_params`."""
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
    return out.drop(columns=["t_f", "t_b", "t_b_shared", "latency", "t_net", "cores"])


def _score(g: pd.DataFrame, axis: str, fixed: str, names: list[str]) -> dict[str, Any]:
    m = g["time_median_s"].to_numpy(dtype="float64")
    p = g["time_predicted_s"].to_numpy(dtype="float64")
    row: dict[str, Any] = {k: g[k].iloc[0] for k in SCALE_KEYS}
    row.update(axis=axis, fixed=fixed, model=MODEL, n_alternatives=len(g), **metrics.ranking_summary(m, p, names),
               tightness_median=float(np.median(g["tightness"])), tightness_min=float(g["tightness"].min()),
               tightness_max=float(g["tightness"].max()))
    return row


def score_fdm(runs: pd.DataFrame) -> pd.DataFrame:
    """Fidelity of the model's ranking of marshaling designs and of decompositions at each scale."""
    rows = []
    have = runs[np.isfinite(runs["time_predicted_s"].to_numpy(dtype="float64"))]
    for _, scale in have.groupby(SCALE_KEYS, sort=True, dropna=False):
        for axis, other in (("marshaling", "decomposition"), ("decomposition", "marshaling")):
            for fixed, g in scale.groupby(other, sort=True):
                g = g.sort_values(axis, kind="stable")
                if g[axis].nunique() >= 2:
                    rows.append(_score(g, axis, f"{other}={fixed}", g[axis].astype(str).tolist()))
    out = pd.DataFrame(rows, columns=FDM_FIDELITY_COLUMNS)
    floats = ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error",
              "tightness_median", "tightness_min", "tightness_max")
    types = {c: "float64" for c in floats}
    types.update({c: "string" for c in ("study", "platform", "grid", "boundary", "axis", "fixed", "model",
                                         "best_measured", "best_predicted")})
    types.update(order="int64", ranks="int64", n_alternatives="int64")
    return out.astype(types)
