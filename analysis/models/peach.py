"""PEACH on measured curves: ``R(alpha)`` (eq. 7) and ``eta(alpha)`` (eq. 12) from each curve's own end points.

One *curve* is the set of runs of one PEACH workload (MatrixMultiply or
MatrixTranspose) at one size, on one platform, at one ``(f_C, f_G)`` setting,
over the configured ``alpha`` grid. The model's parameters come from the curve's
own end points, as PEACH obtains them (§VI: "we run MatrixMultiply 100% on the
CPU and then 100% on the GPU"):

* ``R_C = W / T(alpha=0)`` and ``R_G = W / T(alpha=1)`` (eq. 1-5); ``T_OH = 0``
  here because each processor owns its data (nothing is copied inside the
  measured region);
* with measured energy: ``P0`` = the platform's measured idle power,
  ``Pd_C = E(0)/T(0) - P0`` and ``Pd_G = E(1)/T(1) - P0`` (eq. 9-11; ``P_OH`` is
  folded into ``Pd_G`` because a system meter cannot separate them).

The interior points are then predictions, scored by the PEACH case
(:mod:`analysis.cases.peach`). The end points reproduce themselves by
construction; their error is reported but they say nothing about the model.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pandas as pd

from analysis.equations import peach
from analysis.registry import Model
from analysis.storage.schema import params_doc

CURVE_KEYS = ["study", "platform", "workload", "size", "frequency"]
MODEL = "PEACH (end-point calibrated)"


def curves(reduced: pd.DataFrame) -> pd.DataFrame:
    """Reduced PEACH runs (one row per run) with the curve keys, the work ``W`` and the ``precision`` unpacked
    from ``params``; a
    two-processor case's DP(alpha) sweep (SA's: its params name no PEACH workload) is a curve too, its workload
    the case's name and ``W`` its counted flops."""
    if len(reduced) and "case" in reduced and (reduced["case"].astype(str) != "peach").all():
        return sweep_curves(reduced)
    out = reduced.copy()
    codes, texts = pd.factorize(out["params"], use_na_sentinel=False)  # each distinct params parsed once
    docs = [params_doc(text) for text in texts]

    def column(of: Any) -> list[Any]:
        values = [of(d) for d in docs]
        return [values[c] for c in codes]

    out["workload"] = pd.array(column(lambda d: d.get("workload")), dtype="string")
    out["frequency"] = pd.array(column(lambda d: json.dumps(d.get("frequency"), sort_keys=True)
                                       if d.get("frequency") else "default"), dtype="string")
    out["work_unit"] = pd.array(column(lambda d: d.get("work_unit")), dtype="string")
    out["work"] = np.array(column(lambda d: float(sum((d.get("work") or {}).values())) if d.get("work") else np.nan),
                           dtype="float64")
    out["precision"] = pd.array(column(lambda d: d.get("dtype") or "float64"), dtype="string")
    return out


def sweep_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """A two-processor case's DP(alpha) runs as PEACH curves: ``workload`` the case (``SA``), ``frequency`` the
    default, ``W`` the run's counted flops (the same at every alpha: the split moves work, it adds none)."""
    dp = runs[runs["variant"].astype(str).str.startswith("DP(")].copy()
    dp["workload"] = dp["case"].astype(str).str.upper().astype("string")
    dp["frequency"] = pd.array(["default"] * len(dp), dtype="string")
    dp["work_unit"] = pd.array(["flop"] * len(dp), dtype="string")
    dp["work"] = pd.to_numeric(dp["flops"]).astype("float64")
    return dp


def predict_curve(g: pd.DataFrame, idle_w: float | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Predictions for one curve: per-run rows and the calibrated parameters (empty rows without both end points)."""
    g = g.sort_values("alpha", kind="stable")
    a = g["alpha"].to_numpy(dtype="float64")
    W = float(g["work"].iloc[0])
    t = g["time_median_s"].to_numpy(dtype="float64")
    ends = {0.0: np.flatnonzero(np.isclose(a, 0.0)), 1.0: np.flatnonzero(np.isclose(a, 1.0))}
    if not (len(ends[0.0]) and len(ends[1.0])) or not np.isfinite(W) or W <= 0:
        return g.iloc[:0], {}
    i0, i1 = ends[0.0][0], ends[1.0][0]
    R_C, R_G = W / t[i0], W / t[i1]
    rate_p = peach.rate(a, R_C, R_G, 0.0, W)
    out = g.copy()
    out["rate_measured"] = W / t
    out["rate_predicted"] = rate_p
    out["time_predicted_s"] = W / rate_p
    out["time_rel_error"] = np.abs(out["time_predicted_s"] - t) / t
    out["endpoint"] = np.isclose(a, 0.0) | np.isclose(a, 1.0)
    e = g["energy_median_j"].to_numpy(dtype="float64")
    params: dict[str, Any] = {"R_C": R_C, "R_G": R_G, "P0": np.nan, "Pd_C": np.nan, "Pd_G": np.nan, "W": W}
    out["eta_measured"] = W / e
    out["eta_predicted"] = np.nan
    if idle_w is not None and np.isfinite(idle_w) and np.isfinite(e[i0]) and np.isfinite(e[i1]):
        pd_c = max(e[i0] / t[i0] - idle_w, 0.0)
        pd_g = max(e[i1] / t[i1] - idle_w, 0.0)
        params.update(P0=idle_w, Pd_C=pd_c, Pd_G=pd_g)
        out["eta_predicted"] = peach.efficiency(a, R_C, R_G, idle_w, pd_c, pd_g, 0.0, 0.0, W)
    out["energy_rel_error"] = np.abs(out["eta_predicted"] - out["eta_measured"]) / out["eta_measured"]
    return out, params


def _end_point_rounds(reps: list[Any], rounds: list[Any], i0: np.ndarray,
                      i1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per curve, its end points' median times in each round both were measured in (the median of each one's
    repetitions of that round), rounds ascending: ``(T0, T1)``, ``(curves, most shared rounds)``, NaN-padded; a
    curve whose end points share fewer than two rounds, or whose medians are not all positive, is all NaN. Every
    curve at once: the end points' repetitions flattened, one grouped median."""
    n = len(i0)
    curve = np.flatnonzero((i0 >= 0) & (i1 >= 0))
    sel = np.concatenate([i0[curve], i1[curve]]).tolist()
    seqs = (list, tuple, np.ndarray)
    lens = [min(len(reps[j]), len(rounds[j])) if isinstance(reps[j], seqs) and isinstance(rounds[j], seqs) else 0
            for j in sel]

    def flat(column: list[Any]) -> np.ndarray:
        values = itertools.chain.from_iterable(column[j][:k] for j, k in zip(sel, lens, strict=True) if k)
        return np.fromiter((np.nan if v is None else v for v in values), dtype=np.float64, count=sum(lens))

    x, r = flat(reps), flat(rounds)
    owner = np.repeat(np.arange(len(sel)), lens)
    keep = np.isfinite(x) & np.isfinite(r)
    med = pd.DataFrame({"o": owner[keep], "r": r[keep], "x": x[keep]}).groupby(["o", "r"], sort=True)["x"].median()
    o, at, value = med.index.get_level_values(0).to_numpy(), med.index.get_level_values(1).to_numpy(), med.to_numpy()
    half = len(curve)
    sides = [pd.DataFrame({"c": curve[o[m] - shift], "r": at[m], f"t{k}": value[m]})
             for k, (m, shift) in enumerate(((o < half, 0), (o >= half, half)))]
    both = sides[0].merge(sides[1], on=["c", "r"], how="inner").sort_values(["c", "r"], kind="stable")
    width = int(both.groupby("c").size().max()) if len(both) else 0
    T0, T1 = np.full((n, max(width, 0)), np.nan), np.full((n, max(width, 0)), np.nan)
    if width < 2:
        return T0, T1
    c = both["c"].to_numpy()
    count = np.bincount(c, minlength=n)
    good = (count >= 2) & (np.bincount(c, weights=(both["t0"].to_numpy() > 0) & (both["t1"].to_numpy() > 0),
                                       minlength=n) == count)
    use = good[c]
    pos = both.groupby("c").cumcount().to_numpy()
    T0[c[use], pos[use]], T1[c[use], pos[use]] = both["t0"].to_numpy()[use], both["t1"].to_numpy()[use]
    return T0, T1


def round_predictions(c: pd.DataFrame, i0: np.ndarray, i1: np.ndarray, out: pd.DataFrame, g: np.ndarray,
                      W: np.ndarray) -> list[list[float]]:
    """Per predicted run, its predicted time with the curve calibrated from the end points' repetitions of each
    round alone: the model's calibration is a measurement of the study's, made at each moment the study measured
    (its rounds), and the scorecard resamples those calibrations as it resamples a platform's characterisation
    replicates. Empty where the end points share fewer than two rounds."""
    if "time_reps_s" not in c or "rounds_reps" not in c:
        return [[] for _ in range(len(out))]
    T0, T1 = _end_point_rounds(c["time_reps_s"].tolist(), c["rounds_reps"].tolist(), i0, i1)
    if T0.shape[1] < 2:
        return [[] for _ in range(len(out))]
    a = out["alpha"].to_numpy(dtype="float64")[:, None]
    w = np.asarray(W, dtype="float64")[:, None]
    ok = np.isfinite(T0[g]) & np.isfinite(T1[g]) & (w > 0)
    R_C, R_G = np.where(ok, w / np.where(ok, T0[g], 1.0), 1.0), np.where(ok, w / np.where(ok, T1[g], 1.0), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # every run x round at once (padding masked out)
        T = np.where(ok, np.where(ok, w, 1.0) / peach.rate(a, R_C, R_G, 0.0, np.where(ok, w, 1.0)), np.nan)
    finite = np.isfinite(T)
    values = iter(T[finite].tolist())  # row by row, each row's finite values in order
    return [list(itertools.islice(values, k)) for k in finite.sum(axis=1).tolist()]


class PEACHModel(Model):
    """End-point calibrated PEACH curves; needs whole curves, so it runs on the computed frame."""

    name = MODEL
    kind = "predictor"
    cases = ("peach", "sa", "la")
    needs = ("idle_w",)
    not_for = {"la": "no DP(alpha) sweep of LA with both end points ran (cases.la.alphas)",
               "fdm": "an FDM run is one grid on one backend's ranks: no alpha split to calibrate from its end points"}
    table = "peach_runs"
    rowwise = False

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        """Per-run rows of every curve with both end points; the calibration in ``attrs["params"]``.

        Every curve at once (:func:`predict_curve`'s rules as arrays): curves in key order, each sorted by
        ``alpha``; a curve's end points are its first rows at ``alpha`` 0 and 1.
        """
        params: dict[tuple[str, ...], dict[str, Any]] = {}
        if not len(runs):
            out = curves(runs.iloc[:0])
            out.attrs["params"] = params
            return out
        c = curves(runs).sort_values([*CURVE_KEYS, "alpha"], kind="stable").reset_index(drop=True)
        if not len(c):  # a two-processor case with no DP(alpha) sweep
            c.attrs["params"] = params
            return c
        gid = c.groupby(CURVE_KEYS, sort=False, dropna=False).ngroup().to_numpy()
        n_curves = int(gid.max()) + 1
        first = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]])
        a = c["alpha"].to_numpy(dtype="float64")
        t = c["time_median_s"].to_numpy(dtype="float64")
        e = c["energy_median_j"].to_numpy(dtype="float64")
        W_c = c["work"].to_numpy(dtype="float64")[first]
        idle_c = (c["idle_w"].to_numpy(dtype="float64") if "idle_w" in c else np.full(len(c), np.nan))[first]

        def first_at(mask: np.ndarray) -> np.ndarray:
            pos = np.full(n_curves, -1)
            hits = np.flatnonzero(mask)
            g, at = np.unique(gid[hits], return_index=True)
            pos[g] = hits[at]
            return pos

        i0, i1 = first_at(np.isclose(a, 0.0)), first_at(np.isclose(a, 1.0))
        good = (i0 >= 0) & (i1 >= 0) & np.isfinite(W_c) & (W_c > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t0, t1 = t[np.maximum(i0, 0)], t[np.maximum(i1, 0)]
            e0, e1 = e[np.maximum(i0, 0)], e[np.maximum(i1, 0)]
            R_C, R_G = W_c / t0, W_c / t1
            metered = good & np.isfinite(idle_c) & np.isfinite(e0) & np.isfinite(e1)
            Pd_C = np.where(metered, np.maximum(e0 / t0 - idle_c, 0.0), np.nan)
            Pd_G = np.where(metered, np.maximum(e1 / t1 - idle_c, 0.0), np.nan)
        keep = good[gid]
        out = c[keep].reset_index(drop=True)
        g, a = gid[keep], a[keep]
        W = W_c[g]
        with np.errstate(divide="ignore", invalid="ignore"):
            rate_p = peach.rate(a, R_C[g], R_G[g], 0.0, W)
            out["rate_predicted"] = rate_p
            out["time_predicted_s"] = W / rate_p
            out["endpoint"] = np.isclose(a, 0.0) | np.isclose(a, 1.0)
            eta = np.full(len(out), np.nan)
            m = metered[g]
            if m.any():
                gm = g[m]
                eta[m] = peach.efficiency(a[m], R_C[gm], R_G[gm], idle_c[gm], Pd_C[gm], Pd_G[gm], 0.0, 0.0, W[m])
            out["eta_predicted"] = eta
        out["time_predicted_rounds_s"] = round_predictions(c, i0, i1, out, g, W)
        heads = c.loc[first, CURVE_KEYS].itertuples(index=False, name=None)
        for k, key in enumerate(heads):
            if good[k]:
                params[tuple(str(v) for v in key)] = {
                    "R_C": float(R_C[k]), "R_G": float(R_G[k]), "W": float(W_c[k]),
                    "P0": float(idle_c[k]) if metered[k] else np.nan,
                    "Pd_C": float(Pd_C[k]), "Pd_G": float(Pd_G[k])}
        out.attrs["params"] = params
        return out
