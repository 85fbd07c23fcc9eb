"""The per-operation model (Kannan et al.) applied to SA runs, from the characterised per-operation costs."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from analysis.equations import perop
from analysis.registry import Model
from analysis.storage.platforms import PLATFORM_COLS, PROBLEM_COLS, TAU_COLS
from analysis.storage.schema import params_docs
from sims.sa.counts import NUMPY_POWADD_BLOCKS, PHASE_COUNTS, PHASE_OPERATIONS

PEROP_MODEL = "per-operation (Kannan)"
#: a per-operation fit below this R² is flagged on every run whose prediction used it (``perop_fit_r2``, ``fit_note``)
TRUSTED_R2 = 0.95
#: a multiplication cost that moved more than this (largest / smallest over the characterisation's repetitions)
#: is flagged likewise (``perop_fit_spread``): the prediction is uncertain by as much
TRUSTED_SPREAD = 1.2


def predict_perop(runs: pd.DataFrame) -> pd.DataFrame:
    """The per-operation model (Kannan et al.) for SA runs with characterised ``tau_add``/``tau_mul``.

    Each processor's part takes the basic-block form ``max(sum_op v_op tau_op,
    bytes t_b)`` over its elements and phases (VecAdd: 1 add; PowAdd: 2016
    multiplications and 32 adds per element, 12 and 256 bytes), compiled code
    being one basic block per element loop. A processor characterised with the
    NumPy costs (``tau_move``, ``tau_short_add``) runs the NumPy kernels, whose every
    ufunc call is a basic block of its own: its part is the sum of its blocks'
    times (:func:`numpy_part_time`). The parts run concurrently, so the run's
    time is the longer part. Runs without per-operation costs for their
    platform are dropped (no prediction).
    """
    have = runs.dropna(subset=TAU_COLS) if set(TAU_COLS) <= set(runs.columns) else runs.iloc[:0]
    have = have[have["flops"].to_numpy(dtype="float64") > 0]  # a time per operation: none for a run of no operations
    out = have.copy()
    descs = params_docs(have["params"]) if len(have) else []
    parts, fit_r2, fit_spread = {}, {}, {}
    for role in ("host", "accel"):
        n = np.array([float((d.get("elements") or {}).get(role, 0) or 0) for d in descs], dtype=np.float64)
        r2 = have[f"tau_r2_{role}"].to_numpy(dtype=np.float64) if f"tau_r2_{role}" in have else np.full(len(n), np.nan)
        fit_r2[role] = np.where(n > 0, r2, np.nan)  # only the fits of a processor the run used
        sp = have[f"tau_spread_{role}"].to_numpy(dtype=np.float64) if f"tau_spread_{role}" in have \
            else np.full(len(n), np.nan)
        fit_spread[role] = np.where(n > 0, sp, np.nan)
        phases = [tuple((d.get("phases") or {}).get(role) or ()) for d in descs]
        part = np.full(len(have), np.nan)
        kind = pd.Series(phases, dtype=object).astype(str).to_numpy() if len(have) else np.empty(0, dtype=object)
        costs_of = {f"tau_{op}_{role}": op for op in ("add", "mul", "move", "short_add")}
        cols = [c for c in (*costs_of, f"t_b_{role}") if c in have]
        platform = have.groupby(cols, sort=False, dropna=False).ngroup().to_numpy() if len(have) else kind
        # one call of the model's array function per (platform, phase list) of this processor
        for key in set(zip(platform.tolist(), kind.tolist(), strict=True)):
            rows = np.flatnonzero((platform == key[0]) & (kind == key[1]) & (n > 0))
            if not len(rows) or not phases[rows[0]]:
                continue
            ph = phases[rows[0]]
            costs = {costs_of[c]: float(have[c].iloc[rows[0]]) for c in cols if c in costs_of}
            t_b = float(have[f"t_b_{role}"].iloc[rows[0]])
            tau = {op: v for op, v in costs.items() if np.isfinite(v)}
            if {"move", "short_add"} <= set(tau):
                part[rows] = numpy_part_time(n[rows], ph, tau, t_b)
            else:
                counts = {op: n[rows] * sum(PHASE_OPERATIONS[p][op] for p in ph) for op in ("add", "mul")}
                nbytes = n[rows] * sum(PHASE_COUNTS[p][1] for p in ph)
                part[rows] = perop.basic_block_time(counts, {"add": tau["add"], "mul": tau["mul"]}, nbytes, t_b)
        parts[role] = part
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t_pred = np.fmax(parts["host"], parts["accel"]) if len(have) else np.full(0, np.nan)
    out["model"] = pd.Series([PEROP_MODEL] * len(out), index=out.index, dtype="string")
    out["perf_predicted"] = out["flops"] / t_pred if len(out) else np.zeros(0)
    out["time_predicted_s"] = t_pred
    out["quantity"] = pd.Series(["time"] * len(out), index=out.index, dtype="string")
    ok = np.isfinite(t_pred)
    out["perop_fit_r2"], out["perop_fit_spread"], out["fit_note"] = _fit_flags(fit_r2, fit_spread, out.index)
    out = out.drop(columns=[*PLATFORM_COLS, *PROBLEM_COLS], errors="ignore")  # inputs, not results
    return out[ok] if len(out) else out


def numpy_part_time(n: np.ndarray, phases: tuple[str, ...], tau: dict[str, float], t_b: float) -> np.ndarray:
    """One NumPy processor's time for ``n`` elements of its ``phases``, run one after the other: the sum over the
    kernels' basic blocks of ``max(sum_op v_op tau_op, sigma tau_transfer)`` (Kannan et al.'s basic-block form,
    each ufunc call one block). VecAdd is one call over its elements (1 add, 12 bytes each); PowAdd the blocks of
    :data:`sims.sa.counts.NUMPY_POWADD_BLOCKS`."""
    total = np.zeros(len(n))
    for phase in phases:
        if phase == "powadd":
            blocks = [({op: n * v for op, v in b["ops"].items()}, n * b["bytes"]) for b in NUMPY_POWADD_BLOCKS]
        else:
            blocks = [({op: n * v for op, v in PHASE_OPERATIONS[phase].items()}, n * PHASE_COUNTS[phase][1])]
        for counts, nbytes in blocks:
            total = total + perop.basic_block_time(counts, tau, nbytes, t_b)
    return total


def _fit_flags(fit_r2: dict[str, np.ndarray], fit_spread: dict[str, np.ndarray],
               index: pd.Index) -> tuple[np.ndarray, np.ndarray, pd.Series]:
    """Per run: the smallest R² of the cost fits of the processors it used and the largest spread of their
    multiplication cost, and a note where the R² is below :data:`TRUSTED_R2` (the costs were measured too
    noisily to trust the prediction as the model's) or the spread above :data:`TRUSTED_SPREAD` (the cost moved
    that much while it was measured, so the machine's speed, not only the model, decides the tightness)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a run with neither processor's figure: NaN
        r2 = np.fmin(fit_r2["host"], fit_r2["accel"])
        spread = np.fmax(fit_spread["host"], fit_spread["accel"])
    moved = np.round(spread, 2) > TRUSTED_SPREAD  # as the note shows it
    flagged = np.flatnonzero((r2 < TRUSTED_R2) | moved)
    # one note per distinct (R², spread, processors) - a study of 10^6 runs has a few platforms' worth of them
    keys = pd.DataFrame({"r2": r2[flagged], "spread": spread[flagged],
                         "r2_host": fit_r2["host"][flagged] == r2[flagged],
                         "spread_host": fit_spread["host"][flagged] == spread[flagged]})
    code = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()
    texts = []
    for k in keys.drop_duplicates().itertuples(index=False):
        said = []
        if k.r2 < TRUSTED_R2:
            said.append(f"per-operation fit R² {k.r2:.3g} < {TRUSTED_R2} on the {'host' if k.r2_host else 'accel'}: "
                        "costs too noisy to trust")
        if round(k.spread, 2) > TRUSTED_SPREAD:
            said.append(f"the {'host' if k.spread_host else 'accel'}'s multiplication cost moved {k.spread:.2f}x "
                        f"between the characterisation's repetitions (> {TRUSTED_SPREAD}): the prediction is "
                        "uncertain by as much")
        texts.append("; ".join(said))
    notes = np.full(len(r2), "", dtype=object)
    notes[flagged] = np.asarray(texts, dtype=object)[code] if len(flagged) else []
    return r2, spread, pd.Series(notes, index=index, dtype="string")


class PerOperation(Model):
    """Basic-block max form over each processor's operation counts and bytes (SA runs)."""

    name = PEROP_MODEL
    kind = "predictor"
    cases = ("sa",)
    not_for = {c: "its costs are per arithmetic operation of SA's kernels; these runs call library kernels (a BLAS "
                  "product, a transpose) whose operation mix is not counted" for c in ("la", "peach")}
    not_for["fdm"] = ("no per-operation costs of the stencil kernels are measured (the FDM-calibrated model prices "
                      "them per phase)")
    needs = (*TAU_COLS, "t_b_host", "t_b_accel")

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_perop(runs)
