"""Panwar's scoring of a projection as the thesis does it (§3.4.2): per workload that ran alone on each processor,
which processor the projection picks against the one measured fastest, the device-selection penalty and the
relative error (``projection.parquet``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.equations import panwar
from analysis.scoring.uncertainty import flat_repetitions, mann_whitney_rows

ROLES = ("host", "accel")


def alone_on(runs: pd.DataFrame, role: str) -> pd.Series:
    """Rows whose whole workload ran on processor ``role`` (the other did no work)."""
    other = "accel" if role == "host" else "host"
    return ((runs[f"flops_{other}"] <= 0) & (runs[f"bytes_{other}"] <= 0)
            & ((runs[f"flops_{role}"] > 0) | (runs[f"bytes_{role}"] > 0)))


def device_selection(runs: pd.DataFrame, noise_alpha: float, model: str) -> pd.DataFrame:
    """The thesis' scoring (§3.4.2) per workload (study, case, platform, size) that ran alone on each processor:
    measured and projected times per processor, the pick, the device-selection penalty and the relative
    error. ``distinguishable`` says whether the two processors' repetitions differ beyond noise (one-sided
    Mann-Whitney at ``noise_alpha``, either way): where they do not, a wrong pick costs nothing measurable.

    Computed as arrays over every workload at once (a million-run validation has 10^5 of them): the
    medians by group, the tests batched by sample sizes (:func:`analysis.scoring.uncertainty.mann_whitney_rows`)."""
    mine = runs[runs["model"] == model] if len(runs) and "model" in runs else runs.iloc[:0]
    if not len(mine):
        return pd.DataFrame(columns=PROJECTION_COLUMNS)
    sides = []
    for role in ROLES:
        alone = mine[alone_on(mine, role)]
        keys = [alone[k] for k in workload_keys(mine)]
        grouped = alone.groupby(keys, sort=True)
        side = grouped.agg(measured=("time_median_s", "median"), projected=("time_predicted_s", "median"))
        # each workload's finite repetitions, its runs' in row order: one flat array split by workload
        row, flat = flat_repetitions(alone["time_reps_s"].tolist())
        gid = grouped.ngroup().to_numpy(dtype="float64", na_value=np.nan)[row]
        kept = np.isfinite(gid)  # rows of a key with a missing value belong to no workload
        flat, gid = flat[kept], gid[kept].astype(np.int64)
        order = np.argsort(gid, kind="stable")
        bounds = np.cumsum(np.bincount(gid, minlength=len(side)))[:-1]
        side["reps"] = pd.Series(np.split(flat[order], bounds) if len(side) else [], index=side.index, dtype=object)
        sides.append(side.add_suffix(f"_{role}"))
    both = sides[0].join(sides[1], how="inner").reset_index()
    if not len(both):
        return pd.DataFrame(columns=PROJECTION_COLUMNS)
    a = both[[f"measured_{r}" for r in ROLES]].to_numpy(dtype="float64")
    p = both[[f"projected_{r}" for r in ROLES]].to_numpy(dtype="float64")
    best, pick = np.argmin(a, axis=1), np.argmin(p, axis=1)
    # the slower processor's repetitions tested against the faster one's
    reps = {r: both[f"reps_{r}"].tolist() for r in ROLES}
    slow = [reps[ROLES[1 - b]][i] for i, b in enumerate(best.tolist())]
    fast = [reps[ROLES[b]][i] for i, b in enumerate(best.tolist())]
    p_value = np.full(len(both), np.nan)
    shapes = np.array([(len(s), len(f)) for s, f in zip(slow, fast, strict=True)]).reshape(-1, 2)
    for n, m in {tuple(x) for x in shapes.tolist() if min(x) >= 2}:
        sel = np.flatnonzero((shapes[:, 0] == n) & (shapes[:, 1] == m))
        p_value[sel] = mann_whitney_rows(np.stack([slow[i] for i in sel]), np.stack([fast[i] for i in sel]))
    out = both[workload_keys(mine)].copy()
    out["model"] = model
    out["time_host_measured_s"], out["time_accel_measured_s"] = a[:, 0], a[:, 1]
    out["time_host_projected_s"], out["time_accel_projected_s"] = p[:, 0], p[:, 1]
    out["best_measured"] = np.array(ROLES, dtype=object)[best]
    out["picked"] = np.array(ROLES, dtype=object)[pick]
    out["distinguishable"] = np.isfinite(p_value) & (p_value < noise_alpha)
    out["selection_penalty"] = panwar.selection_penalty(a, p)
    out["relative_error"] = panwar.relative_error(a, p)
    if "size_label" not in out:
        out["size_label"] = out["size"].astype(str)
    return out[PROJECTION_COLUMNS]


WORKLOAD = ["study", "case", "platform", "size", "size_label"]


def workload_keys(runs: pd.DataFrame) -> list[str]:
    """What identifies one workload among ``runs``: :data:`WORKLOAD`, ``size_label`` where the rows have it (two
    PEACH workloads of one ``n`` differ only there)."""
    return [k for k in WORKLOAD if k in runs.columns]


PROJECTION_COLUMNS = ["study", "case", "platform", "size", "size_label", "model", "time_host_measured_s", "time_accel_measured_s",
                      "time_host_projected_s", "time_accel_projected_s", "best_measured", "picked",
                      "distinguishable", "selection_penalty", "relative_error"]
