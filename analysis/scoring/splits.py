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


#: bootstrap work per chunk of sweeps (points x sweeps x resamples), bounding peak memory
CHUNK_ELEMENTS = 4_000_000


def _nearest(grid: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Per row, the position of the swept alpha (``grid``, ascending) nearest ``alpha`` (the smaller on a tie;
    -1 where ``alpha`` is NaN). ``alpha`` may carry a trailing axis of resamples."""
    a = np.asarray(alpha, dtype="float64")
    g = grid if a.ndim == 1 else grid[:, :, None]
    x = a[:, None] if a.ndim == 1 else a[:, None, :]
    # a tie (the answer halfway between two swept alphas, up to rounding) goes to the smaller: each position's
    # distance is raised by a rounding's worth per position
    tie = 1e-12 * np.arange(grid.shape[1]).reshape((1, -1) + (1,) * (a.ndim - 1))
    with np.errstate(invalid="ignore"):
        near = np.argmin(np.abs(g - np.nan_to_num(x, nan=np.inf)) + tie, axis=1)
    return np.where(np.isfinite(a), near, -1)


def _peach(objective: str, T: np.ndarray, E: np.ndarray | None, W: np.ndarray, i0: np.ndarray, i1: np.ndarray,
           idle: np.ndarray | None = None) -> np.ndarray:
    """PEACH's optimum (eq. 13 for ``performance``, eq. 15 for ``energy``) of every row from its end points'
    times (and energies), rows ``(S, k)`` or ``(S, k, B)``; NaN where a row lacks them."""
    rows = np.arange(len(T))
    t0, t1 = T[rows, i0], T[rows, i1]
    Wb = W if T.ndim == 2 else W[:, None]
    ok = (i0 >= 0) & (i1 >= 0)
    ok = (ok if T.ndim == 2 else ok[:, None]) & (t0 > 0) & (t1 > 0) & np.isfinite(t0) & np.isfinite(t1) & (Wb > 0)
    extra: tuple[np.ndarray, ...] = ()
    if objective == "energy":
        e0, e1 = E[rows, i0], E[rows, i1]
        P0 = idle if T.ndim == 2 else idle[:, None]
        ok &= np.isfinite(e0) & np.isfinite(e1) & np.isfinite(P0) & (P0 >= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            extra = (P0, np.maximum(e0 / t0 - P0, 0.0), np.maximum(e1 / t1 - P0, 0.0))
    out = np.full(t0.shape, np.nan)
    if objective == "performance" and T.ndim == 3:
        # the resamples: eq. 13 itself, alpha_perf = R_G / (R_C + R_G) = T(0) / (T(0) + T(1)) (T_OH = 0), which
        # best_alphas gives for every row (its candidates scored) at a thousand times the cost
        with np.errstate(divide="ignore", invalid="ignore"):
            out[ok] = t0[ok] / (t0[ok] + t1[ok])
        return out
    if ok.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            R_C, R_G = np.broadcast_to(Wb, t0.shape)[ok] / t0[ok], np.broadcast_to(Wb, t0.shape)[ok] / t1[ok]
        out[ok] = peach.best_alphas(objective, R_C, R_G, *(np.broadcast_to(v, t0.shape)[ok] for v in extra))[0]
    return out


def _sweep_arrays(points: pd.DataFrame, k: int) -> dict[str, np.ndarray]:
    """The sweeps of ``k`` points among ``points`` (sorted by sweep, then alpha) as ``(S, k)`` arrays."""
    from analysis.scoring.uncertainty import pad_sorted

    def grid(col: str) -> np.ndarray:
        return (points[col].to_numpy(dtype="float64") if col in points else np.full(len(points), np.nan)).reshape(-1, k)

    XS, n = pad_sorted(points["time_reps_s"].tolist() if "time_reps_s" in points else [None] * len(points))
    return {"A": grid("alpha"), "T": grid("time_median_s"), "E": grid("energy_median_j"),
            "W": grid("work")[:, 0], "idle": grid("idle_w")[:, 0], "XS": XS.reshape(-1, k, XS.shape[1]),
            "n": n.reshape(-1, k)}


def _answers(keys: pd.DataFrame, x: dict[str, np.ndarray], model_alpha: dict[str, np.ndarray],
             settings: Settings, not_for: dict[str, str]) -> pd.DataFrame:
    """The rows of every method for the sweeps of one size (``keys``: their :data:`SWEEP_KEYS`, ``x``:
    :func:`_sweep_arrays`, ``model_alpha``: each model method's answer per sweep)."""
    A, T, S = x["A"], x["T"], len(x["A"])
    rows = np.arange(S)
    has0, has1 = np.isclose(A, 0.0), np.isclose(A, 1.0)
    i0 = np.where(has0.any(axis=1), np.argmax(has0, axis=1), -1)
    i1 = np.where(has1.any(axis=1), np.argmax(has1, axis=1), -1)
    best = np.argmin(np.where(np.isfinite(T), T, np.inf), axis=1)
    answer = {MEASURED: A[rows, best], PEACH_RATE: _peach("performance", T, None, x["W"], i0, i1),
              PEACH_ENERGY: _peach("energy", T, x["E"], x["W"], i0, i1, x["idle"]),
              **model_alpha}
    B = max(int(settings.resamples), 0)
    alpha_iv, pen_iv = ({}, {}) if not B else _resampled(x, answer, i0, i1, settings)
    frames = []
    notes = {PEACH_RATE: "the sweep lacks alpha 0 or 1 to calibrate from",
             PEACH_ENERGY: "no energy measured at the sweep's end points (no meter)",
             **{m: not_for.get(model) or f"{model} predicted no run of this sweep" for m, model in MODEL_OF.items()}}
    for method in (MEASURED, PEACH_RATE, PEACH_ENERGY, PDP, PEROP):
        alpha = answer[method]
        near = _nearest(A, alpha)
        got = near >= 0
        quantity = x["E"] if method == PEACH_ENERGY else T
        finite = np.isfinite(quantity)
        low = np.where(finite.any(axis=1), np.min(np.where(finite, quantity, np.inf), axis=1), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            pen = np.where(got, quantity[rows, np.maximum(near, 0)] / low - 1.0, np.nan)
        out = keys.copy()
        out["method"] = method
        out["alpha"] = alpha
        if method in alpha_iv:
            out["alpha_lo"], out["alpha_hi"] = alpha_iv[method]
        else:
            out["alpha_lo"] = out["alpha_hi"] = np.where(got, alpha, np.nan)
        out["alpha_run"] = np.where(got, A[rows, np.maximum(near, 0)], np.nan)
        out["time_s"] = np.where(got, T[rows, np.maximum(near, 0)], np.nan)
        out["selection_penalty"] = pen
        if method in pen_iv:
            lo, hi = pen_iv[method]
            out["selection_penalty_lo"], out["selection_penalty_hi"] = np.where(got, lo, np.nan), np.where(got, hi, np.nan)
        else:
            out["selection_penalty_lo"] = out["selection_penalty_hi"] = np.nan
        out["note"] = np.where(got, "", notes.get(method, ""))
        frames.append(out)
    return pd.concat(frames, ignore_index=True)


Interval = tuple[np.ndarray, np.ndarray]


def _resampled(x: dict[str, np.ndarray], answer: dict[str, np.ndarray], i0: np.ndarray, i1: np.ndarray,
               settings: Settings) -> tuple[dict[str, Interval], dict[str, Interval]]:
    """The intervals of the answers that move with the repetitions (the measured best's and PEACH eq. 13's
    alpha) and of every answer's selection penalty but PEACH eq. 15's, from ``settings.resamples`` resamples
    of every point's repetitions: ``(alpha intervals, penalty intervals)`` by method. Above
    :data:`analysis.scoring.uncertainty.JIT_MIN_ELEMENTS` resampled points, one compiled pass per sweep
    (:func:`analysis.scoring.bootstrap_jit.splits_kernel`: no plane of resamples is held, the same bits);
    below it, NumPy planes of :data:`CHUNK_ELEMENTS`."""
    from analysis.scoring import uncertainty as unc

    A, T = x["A"], x["T"]
    S, k = A.shape
    B = int(settings.resamples)
    moving = (MEASURED, PEACH_RATE)
    fixed = [m for m in answer if m not in moving and m != PEACH_ENERGY]
    if S * k * B >= unc.JIT_MIN_ELEMENTS:
        from analysis.scoring import bootstrap_jit

        n = x["n"]
        lo_pos, hi_pos = unc.median_position_tables(n, settings)
        dense = np.ascontiguousarray
        fixed_alpha = (np.stack([answer[m] for m in fixed]) if fixed else np.empty((0, S))).astype(np.float64)
        a_iv, p_iv = bootstrap_jit.splits_kernel(
            dense(x["XS"], dtype=np.float64), dense(n, dtype=np.int64), dense(T, dtype=np.float64),
            dense(A, dtype=np.float64), dense(x["W"], dtype=np.float64), dense(i0, dtype=np.int64),
            dense(i1, dtype=np.int64), dense(fixed_alpha), lo_pos, hi_pos, float(settings.level))
        return ({m: (a_iv[j, 0], a_iv[j, 1]) for j, m in enumerate(moving)},
                {m: (p_iv[j, 0], p_iv[j, 1]) for j, m in enumerate([*moving, *fixed])})
    boot_alpha = {m: np.full((S, B), np.nan) for m in moving}
    boot_pen = {m: np.full((S, B), np.nan) for m in (*moving, *fixed)}
    step = max(1, CHUNK_ELEMENTS // max(1, k * B))
    for c in range(0, S, step):
        sl = slice(c, c + step)
        M = np.moveaxis(unc.bootstrap_rows(x["XS"][sl], x["n"][sl], T[sl], settings), 0, 1)  # (s, k, B)
        low = M.min(axis=1)
        grid = A[sl]
        r = np.arange(len(grid))[:, None]
        b = np.arange(B)[None, :]
        boot_alpha[MEASURED][sl] = grid[r, np.argmin(M, axis=1)]
        boot_alpha[PEACH_RATE][sl] = _peach("performance", M, None, x["W"][sl], i0[sl], i1[sl])
        for m in boot_pen:
            a = boot_alpha[m][sl] if m in boot_alpha else np.broadcast_to(answer[m][sl][:, None], (len(grid), B))
            near = _nearest(grid, a)
            with np.errstate(invalid="ignore", divide="ignore"):
                boot_pen[m][sl] = np.where(near >= 0, M[r, np.maximum(near, 0), b] / low - 1.0, np.nan)
    return ({m: unc.interval_rows(v, settings.level) for m, v in boot_alpha.items()},
            {m: unc.interval_rows(v, settings.level) for m, v in boot_pen.items()})


def _model_alphas(sweeps: pd.DataFrame, gid: pd.Series, S: int) -> dict[str, np.ndarray]:
    """Each model method's answer per sweep (``gid``: each row's sweep): PerDome/PeaPaw's p-DP balance
    ``(1 / T1) / (1 / T0 + 1 / T1)`` from its bounds at alpha 0 and 1, the per-operation model's fastest alpha."""
    out = {}
    for method, model in MODEL_OF.items():
        mine = sweeps["model"].astype(str).to_numpy() == model
        a = sweeps["alpha"].to_numpy(dtype="float64")[mine]
        tp = sweeps["time_predicted_s"].to_numpy(dtype="float64")[mine]
        g = gid.to_numpy()[mine]
        ans = np.full(S, np.nan)
        ok = np.isfinite(tp) & (tp > 0)
        if method == PDP:
            t0, t1 = np.full(S, np.nan), np.full(S, np.nan)
            at0, at1 = ok & np.isclose(a, 0.0), ok & np.isclose(a, 1.0)
            t0[g[at0]], t1[g[at1]] = tp[at0], tp[at1]
            with np.errstate(invalid="ignore", divide="ignore"):
                ans = (1.0 / t1) / (1.0 / t0 + 1.0 / t1)
        elif ok.any():
            frame = pd.DataFrame({"g": g[ok], "a": a[ok], "t": tp[ok]}).sort_values(["g", "t", "a"], kind="stable")
            first = frame.drop_duplicates("g")
            ans[first["g"].to_numpy()] = first["a"].to_numpy()
        out[method] = ans
    return out


def with_idle(sweeps: pd.DataFrame, platforms: Any) -> pd.DataFrame:
    """``sweeps`` with each run's platform's measured idle power (``idle_w``; PEACH's P0 of eq. 15), where the
    platforms have it."""
    procs = getattr(platforms, "processors", None)
    if not len(sweeps) or procs is None or "idle_w" not in procs:
        return sweeps
    idle = dict(zip(procs["platform"].astype(str), procs["idle_w"].astype("float64"), strict=True))
    return sweeps.assign(idle_w=sweeps["platform"].astype(str).map(idle).astype("float64"))


def splits(sweeps: pd.DataFrame, settings: Settings, not_for: dict[str, str] | None = None) -> pd.DataFrame:
    """The ``splits`` table of every sweep in ``sweeps``: rows of DP(alpha) runs (any model's; the measurements
    are the same) keyed by :data:`SWEEP_KEYS` with ``alpha``, ``time_median_s``, ``time_reps_s``, ``model``,
    ``time_predicted_s``, the work ``work`` and optionally ``energy_median_j`` and ``idle_w``. ``not_for``: model
    name -> why it gives no answer for these sweeps. Every sweep at once, as arrays: sweeps of the same number of
    points together, their repetitions resampled in chunks (a million-run validation has 10^4-10^5 sweeps)."""
    if not len(sweeps):
        return _typed(pd.DataFrame(columns=COLUMNS))
    sweeps = sweeps.reset_index(drop=True)
    gid = sweeps.groupby(SWEEP_KEYS, sort=True, dropna=False).ngroup()
    S = int(gid.max()) + 1
    # each sweep's points once (the models' rows repeat them), by sweep then alpha: the order found on two
    # arrays, then only the columns read here taken
    g, a = gid.to_numpy(), sweeps["alpha"].to_numpy(dtype="float64")
    order = np.lexsort((a, g))
    gs, as_ = g[order], a[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (gs[1:] != gs[:-1]) | ~((as_[1:] == as_[:-1]) | (np.isnan(as_[1:]) & np.isnan(as_[:-1])))
    cols = [c for c in (*SWEEP_KEYS, "alpha", "time_median_s", "time_reps_s", "energy_median_j", "work", "idle_w")
            if c in sweeps]
    points = sweeps[cols].take(order[first]).assign(_g=gs[first])
    model_alpha = _model_alphas(sweeps, gid, S)
    k = pd.Series(np.bincount(gs[first], minlength=S)).loc[lambda c: c > 0]
    frames = []
    for size in sorted(set(k.tolist())):
        if size < 2:
            continue
        which = k.index[k == size].to_numpy()
        mine = points[points["_g"].isin(which)]
        keys = mine.drop_duplicates("_g")[SWEEP_KEYS].reset_index(drop=True)
        x = _sweep_arrays(mine, size)
        if not np.isfinite(x["T"]).all(axis=1).any():
            continue
        frames.append(_answers(keys, x, {m: a[which] for m, a in model_alpha.items()}, settings, dict(not_for or {})))
    if not frames:
        return _typed(pd.DataFrame(columns=COLUMNS))
    order = {m: i for i, m in enumerate((MEASURED, PEACH_RATE, PEACH_ENERGY, PDP, PEROP))}
    out = pd.concat(frames, ignore_index=True)
    out = out.assign(_m=out["method"].map(order)).sort_values([*SWEEP_KEYS, "_m"], kind="stable")
    return _typed(out.drop(columns="_m").reset_index(drop=True)[COLUMNS])


def _typed(out: pd.DataFrame) -> pd.DataFrame:
    return out.astype({**{c: "string" for c in ("study", "case", "platform", "size_label", "method", "note")},
                       "size": "Int64", **{c: "float64" for c in COLUMNS if c.startswith(("alpha", "time", "selection"))}})
