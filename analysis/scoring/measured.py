"""Where every model's predictions meet the measurements: the one place tightness is computed.

A model (:class:`analysis.registry.Model`) only predicts. Its rows are the runs it could predict, with the case's
columns as the case's ``join`` gave them and its prediction: ``time_predicted_s`` (and ``perf_predicted``), or
for an energy model ``energy_predicted_j`` (and ``efficiency_predicted``). :func:`predicted` runs a model and
:func:`attach` adds, for every model alike, what was measured beside what it predicted and the **tightness**:
predicted over measured time, or energy (1 where the model is exact; for a bound, the share of it the run
reached). The two-processor cases' own measured columns (performance, intensities, the axes a run lies on) are
part of the case's joined runs (:func:`run_measures`), so that no model computes a measured figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.equations import roofline
from sims.vocab import WPS

if TYPE_CHECKING:
    from analysis.registry import Model


def _ratio(num: pd.Series | np.ndarray, den: pd.Series | np.ndarray) -> np.ndarray:
    """``num / den`` where both are finite and positive, else NaN."""
    a = np.asarray(num, dtype="float64")
    b = np.asarray(den, dtype="float64")
    ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    out = np.full(len(a), np.nan)
    out[ok] = a[ok] / b[ok]
    return out


def run_measures(runs: pd.DataFrame) -> pd.DataFrame:
    """A two-processor case's joined runs with the columns every per-run model's rows carry: the intensities (flops
    over the traffic the bounds count: ``traffic*``, else ``bytes*``), the measured performance (whole run and
    each processor's part) and the two axes a run lies on (``axis_wp``, ``axis_alpha``)."""
    out = runs.copy()
    traffic = {k: f"traffic{k}" if f"traffic{k}" in out else f"bytes{k}" for k in ("", "_host", "_accel")}
    for k in ("", "_host", "_accel"):  # PerDome eq. 1
        out[f"intensity{k}"] = roofline.intensity(out[f"flops{k}"].to_numpy(), out[traffic[k]].to_numpy())
    out["perf_measured"] = out["flops"] / out["time_median_s"]
    out["perf_host_measured"] = out["flops_host"].where(out["flops_host"] > 0) / out["time_host_median_s"]
    out["perf_accel_measured"] = out["flops_accel"].where(out["flops_accel"] > 0) / out["time_accel_median_s"]
    out["axis_wp"] = out["variant"].isin(WPS).astype("bool")
    out["axis_alpha"] = out["variant"].astype("string").str.startswith("DP(").fillna(False).astype("bool")
    return out


def _insert(out: pd.DataFrame, column: str, values: np.ndarray, after: str | None = None,
            before: str | None = None) -> None:
    """Set ``column`` of ``out`` in place, placed after (or before) another column where that one is there."""
    if column in out:
        out[column] = values
        return
    anchor = after if after in out else before if before in out else None
    where = len(out.columns) if anchor is None else out.columns.get_loc(anchor) + (anchor == after)
    out.insert(int(where), column, values)


def _share_measured(rows: pd.DataFrame, runs: pd.DataFrame) -> np.ndarray:
    """Per row about one ``processor`` of a run (``host``, ``accel`` or the whole ``node``), that processor's
    measured energy: the run's ``energy_<processor>_median_j``, or ``energy_median_j`` for the node."""
    out = np.full(len(rows), np.nan)
    by_run = runs.drop_duplicates("run_id").set_index("run_id")
    for proc in rows["processor"].dropna().unique().tolist():
        column = "energy_median_j" if proc == "node" else f"energy_{proc}_median_j"
        if column not in by_run:
            continue
        at = (rows["processor"] == proc).to_numpy(dtype=bool, na_value=False)
        out[at] = by_run[column].reindex(rows.loc[at, "run_id"]).to_numpy(dtype="float64")
    return out


def attach(rows: pd.DataFrame | None, quantity: str = "time", runs: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """A model's rows with what was measured beside each prediction and the tightness (predicted over measured
    time, or energy for ``quantity == "energy"``), in place; NaN where either is not a positive number. Rows
    about one processor's share of a run's energy (a ``processor`` column) find it in the ``runs`` predicted."""
    if rows is None or not isinstance(rows, pd.DataFrame):
        return rows
    want = ("energy_predicted_j",) if quantity == "energy" else ("time_predicted_s", "time_median_s")
    if not set(want) <= set(rows.columns):  # not yet per run (PEACH's curves): the case attaches once it is
        return rows
    out = rows
    if quantity == "energy":
        if "efficiency_predicted" in out:
            _insert(out, "efficiency_measured", (out["flops"] / out["energy_median_j"]).to_numpy(dtype="float64"),
                    before="efficiency_predicted")
        if "processor" in out and "energy_measured_j" not in out and runs is not None:
            _insert(out, "energy_measured_j", _share_measured(out, runs), before="energy_predicted_j")
        own = "energy_measured_j" in out  # a row about one processor's share (or the node's) of a run's energy
        measured = out["energy_measured_j" if own else "energy_median_j"]
        tight = _ratio(out["energy_predicted_j"], measured) if len(out) else np.zeros(0)
        _insert(out, "tightness", tight, after="time_predicted_s" if "time_predicted_s" in out else "energy_predicted_j")
        if own:
            m = measured.to_numpy(dtype="float64")
            _insert(out, "rel_error", (out["energy_predicted_j"].to_numpy(dtype="float64") - m) / m, after="tightness")
        return out
    if {"points", "steps"} <= set(out.columns):  # a stencil's throughput, measured and predicted
        work = out["points"].to_numpy(dtype="float64") * out["steps"].to_numpy(dtype="float64") / 1e6
        _insert(out, "mlups_measured", work / out["time_median_s"].to_numpy(dtype="float64"))
        _insert(out, "mlups_predicted", work / out["time_predicted_s"].to_numpy(dtype="float64"),
                after="mlups_measured")
    tight = _ratio(out["time_predicted_s"], out["time_median_s"]) if len(out) else np.zeros(0)
    _insert(out, "tightness", tight, after="mlups_predicted" if "mlups_predicted" in out else "time_predicted_s")
    if "time_predicted_rounds_s" in out:  # a model calibrated at each round of the study: each round's tightness
        t = out["time_median_s"].to_numpy(dtype="float64").tolist()
        rounds = [[p / m for p in ps] for ps, m in zip(out["time_predicted_rounds_s"].tolist(), t, strict=True)]
        at = out.columns.get_loc("time_predicted_rounds_s")
        del out["time_predicted_rounds_s"]
        out.insert(int(at), "tightness_rounds", pd.Series(rounds, index=out.index, dtype=object))
    return out


def predicted(model: Model, runs: pd.DataFrame) -> pd.DataFrame | None:
    """``model``'s predictions of ``runs`` with the measurements and tightness attached (:func:`attach`)."""
    return attach(model.predict(runs), model.quantity, runs)
