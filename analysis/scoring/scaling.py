"""Empirical scaling fits (Extra-P's normal form, :mod:`analysis.equations.extrap`) beside the analytical models.

A *series* is one configuration measured at several scales: for the FDM code one grid, order,
boundary, marshaling design and backend over the rank count (strong scaling; at each rank count
the fastest decomposition's repetitions, the one a user would run); for a two-processor case one
variant over the problem size. Only series measured at three or more scales are fitted (a one-term
hypothesis needs two scales to fit and one to leave out); each gets:

* the fit over every scale (hypothesis, adjusted R², SMAPE, cross-validated SMAPE, flagged when poor),
  and its extrapolation to twice and four times the largest scale with a 95 % prediction interval;
* a **held-out** test: the fit over every scale but the largest, predicting the largest, against the
  analytical model's prediction of the same run. Both errors are ``|predicted - measured| / measured``
  of the median time.

A bound (PerDome/PeaPaw) is not meant as a point prediction: its held-out "error" is how far the run
stays from its bound, reported for comparison only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.equations import extrap
from analysis.scoring.uncertainty import flat_repetitions
from sims.fdm.spec import grid_label

COLUMNS = ["study", "case", "platform", "series", "parameter", "n_scales", "scales", "hypothesis", "adj_r2", "smape",
           "cv_smape", "poor_fit", "fit_note", "extrapolated", "heldout_scale", "heldout_measured_s",
           "heldout_empirical_s", "heldout_empirical_lo_s", "heldout_empirical_hi_s", "heldout_empirical_error",
           "heldout_empirical_hypothesis", "analytical_model", "heldout_analytical_s", "heldout_analytical_error"]
STRINGS = ("study", "case", "platform", "series", "parameter", "scales", "hypothesis", "fit_note", "extrapolated",
           "heldout_empirical_hypothesis", "analytical_model")
#: per series, lists: the scales with their measured medians, the analytical model's prediction and the full fit's
#: relative residual at each; and the fit drawn from the smallest scale to 4x the largest with its 95 % interval
LISTS = ("scale_values", "measured_medians_s", "analytical_s", "fit_residuals", "curve_p", "curve_s", "curve_lo_s",
         "curve_hi_s")
COLUMNS += list(LISTS)
#: points of the drawn curve
CURVE_POINTS = 40


def series_rows(key: dict[str, Any], parameter: str, points: pd.DataFrame,
                predicted: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """A series' rows, one per analytical model: ``points`` has one row per scale (``scale``, ``time_median_s``,
    ``time_reps_s``), ``predicted`` each model's time at those scales in the same order. The empirical fits are
    the same for every model and computed once."""
    order = np.argsort(points["scale"].to_numpy(dtype="float64"), kind="stable")
    points = points.iloc[order]
    predicted = {m: np.asarray(v, dtype="float64")[order] for m, v in predicted.items()}
    row, y = flat_repetitions(points["time_reps_s"].tolist())
    p = points["scale"].to_numpy(dtype="float64")[row]
    scales = [int(s) for s in points["scale"]]
    row: dict[str, Any] = {**key, "parameter": parameter, "n_scales": len(scales),
                           "scales": ", ".join(map(str, scales))}
    if not len(y):
        return [{**row, "analytical_model": m, "fit_note": "no repetitions"} for m in predicted]
    full = extrap.fit(p, y)
    top = float(max(scales))
    ahead = np.array([2 * top, 4 * top])
    mid, (lo, hi) = full.predict(ahead), full.interval(ahead)
    at = points["scale"].to_numpy(dtype="float64")
    medians = points["time_median_s"].to_numpy(dtype="float64")
    curve = np.geomspace(min(at), 4 * top, CURVE_POINTS) if min(at) > 0 else np.linspace(min(at), 4 * top, CURVE_POINTS)
    c_lo, c_hi = full.interval(curve)
    row.update(scale_values=at.tolist(), measured_medians_s=medians.tolist(),
               fit_residuals=((medians - full.predict(at)) / medians).tolist(), curve_p=curve.tolist(),
               curve_s=full.predict(curve).tolist(), curve_lo_s=c_lo.tolist(), curve_hi_s=c_hi.tolist())
    row.update(hypothesis=full.formula(), adj_r2=full.adj_r2, smape=full.smape, cv_smape=full.cv_smape,
               poor_fit=full.poor, fit_note=full.reason,
               extrapolated="; ".join(f"{parameter} {a:g}: {m:.4g} s" + (f" [{lo_:.4g}, {hi_:.4g}]"
                                                                        if np.isfinite(lo_) else " (no interval)")
                                      for a, m, lo_, hi_ in zip(ahead, mid, lo, hi, strict=True)))
    measured = float(medians[-1])
    if len(scales) >= 2:
        train = p < top
        held = extrap.fit(p[train], y[train])
        pred = float(held.predict(top)[0])
        h_lo, h_hi = held.interval(top)
        row.update(heldout_scale=top, heldout_measured_s=measured, heldout_empirical_s=pred,
                   heldout_empirical_lo_s=float(h_lo[0]), heldout_empirical_hi_s=float(h_hi[0]),
                   heldout_empirical_error=abs(pred - measured) / measured,
                   heldout_empirical_hypothesis=held.formula() + (f" ({held.reason})" if held.reason else ""))
    rows = []
    for model, values in predicted.items():
        out = {**row, "analytical_model": model, "analytical_s": values.tolist()}
        if len(scales) >= 2:
            analytical = float(values[-1])
            out.update(heldout_analytical_s=analytical,
                       heldout_analytical_error=abs(analytical - measured) / measured if np.isfinite(analytical)
                       else np.nan)
        rows.append(out)
    return rows


def _aligned(group: pd.DataFrame, chosen: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each model's predicted time of the ``chosen`` runs (one model's rows of ``group``), by run id."""
    return {str(m): g.drop_duplicates("run_id").set_index("run_id")["time_predicted_s"]
            .reindex(chosen["run_id"]).to_numpy(dtype="float64")
            for m, g in group.groupby("model", sort=True)}


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=COLUMNS)
    types = {c: ("string" if c in STRINGS else "float64") for c in COLUMNS if c not in LISTS}
    types.update(n_scales="int64", poor_fit="boolean")
    return out.astype(types)


#: a series needs this many scales: a one-term hypothesis needs two to fit and one to leave out
MIN_SCALES = 3


def _series(frame: pd.DataFrame, keys: list[str], scale: str) -> pd.DataFrame:
    """The rows of the series (``keys``) measured at :data:`MIN_SCALES` or more distinct ``scale`` values, found
    with one vectorised count (a large study has many short series; only the long ones are fitted)."""
    if not len(frame):
        return frame
    distinct = frame.groupby(keys, sort=False, dropna=False)[scale].transform("nunique").to_numpy()
    return frame[distinct >= MIN_SCALES]


def fdm_fits(runs: pd.DataFrame) -> pd.DataFrame:
    """Strong-scaling series of FDM runs over ranks (the fastest decomposition at each rank count), measured at
    :data:`MIN_SCALES` or more rank counts; one row per series and FDM model (the runs carry ``model``)."""
    keys = ["study", "platform", "grid", "order", "boundary", "marshaling", "backend"]
    rows: list[dict[str, Any]] = []
    runs = _series(runs, keys, "ranks")
    if not len(runs):
        return frame(rows)
    have = runs.sort_values([*keys, "ranks", "time_median_s"], kind="stable")
    for vals, g in have.groupby(keys, sort=True, dropna=False):
        k = dict(zip(keys, vals, strict=True))
        first = g[g["model"] == g["model"].min()]  # the measurements are every model's: take them from one
        best = first.drop_duplicates("ranks", keep="first")
        series = f"grid {grid_label(k['grid'])}, order {k['order']}, {k['boundary']}, {k['marshaling']}, {k['backend']}"
        pts = best.assign(scale=best["ranks"].astype("float64"))[["scale", "time_median_s", "time_reps_s"]]
        rows += series_rows({"study": k["study"], "case": "fdm", "platform": k["platform"], "series": series},
                            "ranks", pts, _aligned(g, best))
    return frame(rows)


#: The columns of a two-processor case's runs :func:`size_fits` reads.
SIZE_FIT_COLUMNS = ("study", "case", "platform", "variant", "size", "quantity", "model", "run_id", "time_median_s",
                    "time_reps_s", "time_predicted_s")


def size_fits(runs: pd.DataFrame) -> pd.DataFrame:
    """Series of a two-processor case's runs over the problem size, one per (platform, variant), measured at
    :data:`MIN_SCALES` or more sizes; one row per series and analytical model."""
    keys = ["study", "case", "platform", "variant"]
    rows: list[dict[str, Any]] = []
    if not len(runs) or "size" not in runs:
        return frame(rows)
    time_only = runs[runs["quantity"].astype(str) == "time"] if "quantity" in runs else runs
    for vals, g in _series(time_only, keys, "size").groupby(keys, sort=True, dropna=False):
        k = dict(zip(keys, vals, strict=True))
        first = g[g["model"] == g["model"].min()].sort_values("size", kind="stable").drop_duplicates("size")
        pts = first.assign(scale=first["size"].astype("float64"))[["scale", "time_median_s", "time_reps_s"]]
        rows += series_rows({"study": k["study"], "case": k["case"], "platform": k["platform"],
                             "series": f"{k['variant']}"}, "size", pts, _aligned(g, first))
    return frame(rows)
