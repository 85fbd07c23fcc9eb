"""How to split one workload between the two processors: each paper's answer beside the measured best.

For every alpha sweep (a PEACH curve, a two-processor case's DP(alpha) runs) the table ``splits`` holds one row
per answer:

* ``measured best``: the swept alpha of the smallest median time;
* ``PEACH (rate, eq. 13)``: ``alpha_perf = R_G / (R_C + R_G)`` with ``R_C = W / T(0)`` and ``R_G = W / T(1)``, the
  sweep's own end points (:func:`analysis.equations.peach.best_alphas`); ``PEACH (energy, eq. 15)`` likewise
  from the end points' energies, where a meter measured them;
* ``PerDome/PeaPaw p-DP (eq. 19)``: the share that balances the two processors' bounds, ``alpha = P_G / (P_C +
  P_G)`` with ``P_C`` and ``P_G`` the model's bound of the whole workload on each processor alone (its rows at
  alpha 0 and 1);
* ``per-operation (Kannan)``: the swept alpha of the model's smallest predicted time.

Each answer is run at the swept alpha nearest it (what a user of the grid would run); its ``selection_penalty`` is
that alpha's measured median time over the best one's, less 1. Intervals resample every point's repetitions
(``uncertainty.resamples`` times): the measured best and PEACH's answers move with them, the models' do not (they
come from the characterisation). An answer a model cannot give says why in ``note``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.equations import peach
from analysis.scoring.uncertainty import Settings

SWEEP_KEYS = ["study", "case", "platform", "size", "size_label"]
COLUMNS = [*SWEEP_KEYS, "method", "alpha", "alpha_lo", "alpha_hi", "alpha_run", "time_s", "selection_penalty",
           "selection_penalty_lo", "selection_penalty_hi", "note"]
MEASURED = "measured best"
PEACH_RATE, PEACH_ENERGY = "PEACH (rate, eq. 13)", "PEACH (energy, eq. 15)"
PDP = "PerDome/PeaPaw p-DP (eq. 19)"
PEROP = "per-operation (Kannan)"
#: the per-run models whose predictions give an answer, by method
MODEL_OF = {PDP: "PerDome/PeaPaw", PEROP: "per-operation (Kannan)"}


def _nearest(grid: np.ndarray, alpha: float) -> int:
    """The position of the swept alpha nearest ``alpha`` (the smaller on a tie)."""
    return int(np.argmin(np.abs(grid - alpha) + 1e-12 * grid))


def _resampled_medians(reps: Sequence[Any], medians: np.ndarray, resamples: int, rng: np.random.Generator
                       ) -> np.ndarray:
    """``resamples`` x points: each point's median over a resample of its repetitions (its median where it has
    fewer than two)."""
    out = np.empty((resamples, len(medians)))
    for j, r in enumerate(reps):
        x = np.asarray(r if r is not None else [], dtype="float64")
        x = x[np.isfinite(x)]
        if len(x) < 2:
            out[:, j] = medians[j]
            continue
        out[:, j] = np.median(x[rng.integers(0, len(x), (resamples, len(x)))], axis=1)
    return out


def _peach_alpha(t: np.ndarray, grid: np.ndarray, W: float) -> float:
    """PEACH's alpha_perf (eq. 13) from the sweep's end points (NaN without both)."""
    i0, i1 = np.flatnonzero(np.isclose(grid, 0.0)), np.flatnonzero(np.isclose(grid, 1.0))
    if not len(i0) or not len(i1) or not (t[i0[0]] > 0 and t[i1[0]] > 0):
        return np.nan
    return float(peach.best_alphas("performance", np.array([W / t[i0[0]]]), np.array([W / t[i1[0]]]))[0][0])


def one_sweep(keys: dict[str, Any], sweep: pd.DataFrame, settings: Settings, not_for: dict[str, str]
              ) -> list[dict[str, Any]]:
    """The answers for one sweep: ``sweep`` holds its runs (any model's rows; the measurements are the same) with
    ``alpha``, ``time_median_s``, ``time_reps_s``, ``model``, ``time_predicted_s`` and the work ``W``
    (``work``), and optionally ``energy_median_j`` and ``idle_w``."""
    runs = sweep.drop_duplicates("alpha").sort_values("alpha")
    grid = runs["alpha"].to_numpy(dtype="float64")
    t = runs["time_median_s"].to_numpy(dtype="float64")
    if len(grid) < 2 or not np.isfinite(t).all():
        return []
    W = float(runs["work"].iloc[0])
    rng = np.random.default_rng(settings.seed)
    B = max(int(settings.resamples), 0)
    boot = _resampled_medians(runs["time_reps_s"].tolist() if "time_reps_s" in runs else [None] * len(t), t, B,
                              rng) if B else np.empty((0, len(t)))
    level = (1.0 - settings.level) / 2.0

    def interval(values: np.ndarray) -> tuple[float, float]:
        v = values[np.isfinite(values)]
        return (float(np.quantile(v, level)), float(np.quantile(v, 1 - level))) if len(v) else (np.nan, np.nan)

    def row(method: str, alpha: float, alphas_b: np.ndarray | None, note: str = "") -> dict[str, Any]:
        out = {**keys, "method": method, "alpha": alpha, "alpha_lo": np.nan, "alpha_hi": np.nan, "alpha_run": np.nan,
               "time_s": np.nan, "selection_penalty": np.nan, "selection_penalty_lo": np.nan,
               "selection_penalty_hi": np.nan, "note": note}
        if not np.isfinite(alpha):
            return out
        k = _nearest(grid, alpha)
        out.update(alpha_run=float(grid[k]), time_s=float(t[k]), selection_penalty=float(t[k] / t.min() - 1.0))
        if B:
            picks = (np.array([_nearest(grid, a) if np.isfinite(a) else -1 for a in alphas_b]) if alphas_b is not None
                     else np.full(B, k))
            ok = picks >= 0
            pen = np.full(B, np.nan)
            pen[ok] = boot[ok, picks[ok]] / boot[ok].min(axis=1) - 1.0
            out["selection_penalty_lo"], out["selection_penalty_hi"] = interval(pen)
            if alphas_b is not None:
                out["alpha_lo"], out["alpha_hi"] = interval(np.asarray(alphas_b, dtype="float64"))
            else:
                out["alpha_lo"] = out["alpha_hi"] = alpha
        return out

    best_b = grid[np.argmin(boot, axis=1)] if B else None
    rows = [row(MEASURED, float(grid[int(np.argmin(t))]), best_b)]
    rows.append(row(PEACH_RATE, _peach_alpha(t, grid, W),
                    np.array([_peach_alpha(b, grid, W) for b in boot]) if B else None,
                    "" if np.isfinite(_peach_alpha(t, grid, W)) else "the sweep lacks alpha 0 or 1 to calibrate from"))
    e = runs["energy_median_j"].to_numpy(dtype="float64") if "energy_median_j" in runs else np.full(len(t), np.nan)
    idle = float(runs["idle_w"].iloc[0]) if "idle_w" in runs else np.nan
    i0, i1 = np.flatnonzero(np.isclose(grid, 0.0)), np.flatnonzero(np.isclose(grid, 1.0))
    if len(i0) and len(i1) and np.isfinite([e[i0[0]], e[i1[0]], idle]).all():
        a, b = i0[0], i1[0]
        alpha_e = float(peach.best_alphas("energy", np.array([W / t[a]]), np.array([W / t[b]]), np.array([idle]),
                                          np.array([max(e[a] / t[a] - idle, 0.0)]),
                                          np.array([max(e[b] / t[b] - idle, 0.0)]))[0][0])
        energy_row = row(PEACH_ENERGY, alpha_e, None)
        k = _nearest(grid, alpha_e)  # its penalty in energy, the quantity it optimises
        energy_row.update(time_s=float(t[k]), selection_penalty=float(e[k] / np.nanmin(e) - 1.0),
                          selection_penalty_lo=np.nan, selection_penalty_hi=np.nan)
        rows.append(energy_row)
    else:
        rows.append(row(PEACH_ENERGY, np.nan, None, "no energy measured at the sweep's end points (no meter)"))
    for method, model in MODEL_OF.items():
        mine = sweep[sweep["model"].astype(str) == model].sort_values("alpha")
        if method == PDP:
            ends = {float(a): float(tp) for a, tp in zip(mine["alpha"], mine["time_predicted_s"], strict=True)}
            t0, t1 = ends.get(0.0, np.nan), ends.get(1.0, np.nan)
            alpha = (1.0 / t1) / (1.0 / t0 + 1.0 / t1) if np.isfinite([t0, t1]).all() and t0 > 0 and t1 > 0 else np.nan
        else:
            tp = mine["time_predicted_s"].to_numpy(dtype="float64")
            alpha = float(mine["alpha"].to_numpy(dtype="float64")[int(np.nanargmin(tp))]) if np.isfinite(tp).any() \
                else np.nan
        note = "" if np.isfinite(alpha) else (not_for.get(model) or f"{model} predicted no run of this sweep")
        rows.append(row(method, alpha, None, note))
    return rows


def with_idle(sweeps: pd.DataFrame, platforms: Any) -> pd.DataFrame:
    """``sweeps`` with each run's platform's measured idle power (``idle_w``; PEACH's P0 of eq. 15), where the
    platforms have it."""
    procs = getattr(platforms, "processors", None)
    if not len(sweeps) or procs is None or "idle_w" not in procs:
        return sweeps
    idle = dict(zip(procs["platform"].astype(str), procs["idle_w"].astype("float64"), strict=True))
    return sweeps.assign(idle_w=sweeps["platform"].astype(str).map(idle).astype("float64"))


def splits(sweeps: pd.DataFrame, settings: Settings, not_for: dict[str, str] | None = None) -> pd.DataFrame:
    """The ``splits`` table of every sweep in ``sweeps`` (rows of DP(alpha) runs keyed by :data:`SWEEP_KEYS`; see
    :func:`one_sweep`). ``not_for``: model name -> why it gives no answer for these sweeps."""
    rows: list[dict[str, Any]] = []
    if len(sweeps):
        for key, sweep in sweeps.groupby(SWEEP_KEYS, sort=True, dropna=False):
            rows += one_sweep(dict(zip(SWEEP_KEYS, key, strict=True)), sweep, settings, dict(not_for or {}))
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.astype({**{c: "string" for c in ("study", "case", "platform", "size_label", "method", "note")},
                       "size": "Int64", **{c: "float64" for c in COLUMNS if c.startswith(("alpha", "time", "selection"))}})
