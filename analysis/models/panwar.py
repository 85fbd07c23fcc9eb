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
:func:`device_selection`).
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


def alone_on(runs: pd.DataFrame, role: str) -> pd.Series:
    """Rows whose whole workload ran on processor ``role`` (the other did no work)."""
    other = "accel" if role == "host" else "host"
    return ((runs[f"flops_{other}"] <= 0) & (runs[f"bytes_{other}"] <= 0)
            & ((runs[f"flops_{role}"] > 0) | (runs[f"bytes_{role}"] > 0)))


def device_selection(runs: pd.DataFrame, noise_alpha: float) -> pd.DataFrame:
    """The thesis' scoring (§3.4.2) per workload (study, case, platform, size) that ran alone on each processor:
    measured and projected times per processor, the pick, the device-selection penalty and the relative
    error. ``distinguishable`` says whether the two processors' repetitions differ beyond noise (one-sided
    Mann-Whitney at ``noise_alpha``, either way): where they do not, a wrong pick costs nothing measurable.

    Computed as arrays over every workload at once (a million-run validation has 10^5 of them): the
    medians by group, the tests batched by sample sizes (:func:`analysis.scoring.uncertainty.mann_whitney_rows`)."""
    from analysis.scoring.uncertainty import flat_repetitions, mann_whitney_rows

    mine = runs[runs["model"] == MODEL] if len(runs) and "model" in runs else runs.iloc[:0]
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
    out["model"] = MODEL
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
