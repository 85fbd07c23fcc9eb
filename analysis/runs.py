"""Per-run reduction of repetitions and per-group ranking fidelity: the pure pandas steps every case shares.

Each function is a typed pure pandas transform, tested with pandas and lifted
onto Dask by the validation engine (:mod:`analysis.validate`) with
``map_partitions(..., meta=...)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics
from analysis.uncertainty import UNCERTAINTY_COLUMNS, Settings, group_uncertainty, run_interval

#: Keys that identify one comparison group of the WP cases (SA, LA and their kind).
GROUP_KEYS = ["study", "case", "platform", "size"]
#: The ranking-fidelity metrics of :func:`analysis.metrics.ranking_summary`, in table order.
RANKING_METRICS = ["kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error"]
#: Columns of every fidelity table after its own keys: the metrics, the picks and the tightness summary.
FIDELITY_TAIL = ["n_alternatives", *RANKING_METRICS, "best_measured", "best_predicted",
                 "tightness_median", "tightness_min", "tightness_max", *UNCERTAINTY_COLUMNS]
#: The list columns :func:`reduce_repetitions` keeps: every ok repetition's value, in ``rep`` order.
SAMPLE_COLUMNS = {"time": "time_reps_s", "energy": "energy_reps_j"}
_COUNT_COLS = ["flops", "bytes", "flops_host", "bytes_host", "flops_accel", "bytes_accel"]
_ENERGY = ["energy_j", "energy_host_j", "energy_accel_j"]
REDUCED_ENERGY = ["energy_median_j", "energy_host_median_j", "energy_accel_median_j", "energy_iqr_j", "energy_source"]


def fidelity_types(columns: list[str], strings: tuple[str, ...] = ()) -> dict[str, str]:
    """pandas dtypes of a fidelity table: metrics and tightness float64, counts int64, the named keys strings."""
    floats = (*RANKING_METRICS, "tightness_median", "tightness_min", "tightness_max", "size", "top1_noise_aware",
              "selection_penalty_noise_aware", *(c for c in UNCERTAINTY_COLUMNS if c.endswith(("_lo", "_hi"))))
    types = {c: "float64" for c in columns if c in floats}
    types.update({c: "string" for c in columns if c in (*strings, "best_measured", "best_predicted",
                                                        "best_measured_noise_aware")})
    types.update({c: "int64" for c in columns if c in ("n_alternatives", "n_reps_min")})
    types.update({c: "bool" for c in columns if c == "distinguishable"})
    return types


def score_alternatives(keys: dict[str, Any], measured: np.ndarray, predicted: np.ndarray, names: list[str],
                       tightness: pd.Series, samples: list[Any] | None = None,
                       settings: Settings | None = None) -> dict[str, Any]:
    """One fidelity row: the group's keys, the ranking metrics of ``names``, the tightness summary and
    every figure's interval and the noise-aware picks (:func:`analysis.uncertainty.group_uncertainty`)
    from the alternatives' repetitions ``samples``."""
    t = tightness.astype("float64")
    return {**keys, "n_alternatives": len(names), **metrics.ranking_summary(measured, predicted, names),
            "tightness_median": float(np.median(t)) if len(t) else np.nan,
            "tightness_min": float(t.min()) if len(t) else np.nan,
            "tightness_max": float(t.max()) if len(t) else np.nan,
            **group_uncertainty(tuple(keys.values()), measured, predicted, names, samples, settings or Settings(),
                                t.to_numpy() if len(t) else None)}


def tightness_intervals(runs: pd.DataFrame, settings: Settings | None = None,
                        median: str = "time_median_s", samples: str = "time_reps_s") -> pd.DataFrame:
    """``runs`` with ``tightness_lo``/``tightness_hi``: each run's tightness interval from its repetitions.

    Rows ranked by energy (``quantity == "energy"``) resample their energy repetitions instead.
    """
    s = settings or Settings()
    out = runs.copy()
    lo, hi = [], []
    for row in out.itertuples(index=False):
        r = row._asdict()
        energy = r.get("quantity") == "energy"
        med = r.get("energy_median_j") if energy else r.get(median)
        reps = r.get(SAMPLE_COLUMNS["energy"]) if energy else r.get(samples)
        a, b = run_interval(r.get("tightness", np.nan), med if med is not None else np.nan, reps, s,
                            (r.get("run_id"), r.get("model"), r.get("processor")))
        lo.append(a)
        hi.append(b)
    out["tightness_lo"] = np.asarray(lo, dtype="float64")
    out["tightness_hi"] = np.asarray(hi, dtype="float64")
    return out


def reps_list(values: pd.Series) -> list[float]:
    return [float(v) for v in pd.to_numeric(values, errors="coerce") if pd.notna(v)]


def _energy_source(sources: pd.Series) -> str:
    """The run's energy source: the one its repetitions share, or 'mixed: a, b' when they differ."""
    found = sorted(set(sources.dropna().astype(str)))
    return found[0] if len(found) == 1 else ("none" if not found else "mixed: " + ", ".join(found))


def reduce_repetitions(df: pd.DataFrame) -> pd.DataFrame:
    """Per run (all repetitions in this frame): medians and spread of the measured times.

    Only ``ok`` rows are reduced; the result has one row per ``run_id``.
    """
    ok = df[df["status"] == "ok"].copy()
    for c in _ENERGY:
        ok[c] = pd.to_numeric(ok[c], errors="coerce").astype("float64") if c in ok else np.nan
    if "energy_source" not in ok:
        ok["energy_source"] = "none"
    keys = ["run_id", "study", "case", "variant", "platform", "size", "alpha", "params", *_COUNT_COLS]
    base = ok[keys].copy()
    base["size"] = pd.to_numeric(base["size"]).astype("float64")
    for c in ("alpha", *_COUNT_COLS):
        base[c] = pd.to_numeric(base[c]).astype("float64")
    grouped = ok.sort_values(["run_id", "rep"], kind="stable").groupby("run_id", sort=True)
    first = base.groupby("run_id", sort=True).first()
    t = grouped["time_s"]
    out = pd.DataFrame(
        {
            "n_reps": t.count().astype("int64"),
            "time_median_s": t.median().astype("float64"),
            "time_min_s": t.min().astype("float64"),
            "time_max_s": t.max().astype("float64"),
            "time_iqr_s": (t.quantile(0.75) - t.quantile(0.25)).astype("float64"),
            "time_host_median_s": pd.to_numeric(grouped["time_host_s"].median()).astype("float64"),
            "time_accel_median_s": pd.to_numeric(grouped["time_accel_s"].median()).astype("float64"),
            **{f"{c[:-2]}_median_j": pd.to_numeric(grouped[c].median()).astype("float64") for c in _ENERGY},
            "energy_iqr_j": pd.to_numeric(grouped["energy_j"].quantile(0.75) - grouped["energy_j"].quantile(0.25)
                                          ).astype("float64"),
            "energy_source": grouped["energy_source"].agg(_energy_source).astype("string"),
            "time_reps_s": grouped["time_s"].agg(reps_list).astype(object),
            "energy_reps_j": grouped["energy_j"].agg(reps_list).astype(object),
        }
    )
    out = first.join(out).reset_index()
    for c in ("run_id", "study", "case", "variant", "platform", "params"):
        out[c] = out[c].astype("string")
    return out[["run_id", "study", "case", "variant", "platform", "size", "alpha", "params", *_COUNT_COLS,
                "n_reps", "time_median_s", "time_min_s", "time_max_s", "time_iqr_s",
                "time_host_median_s", "time_accel_median_s", *REDUCED_ENERGY, "time_reps_s", "energy_reps_j"]]


def _intensity(flops: pd.Series, nbytes: pd.Series) -> np.ndarray:
    f = flops.to_numpy(dtype="float64")
    b = nbytes.to_numpy(dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, f / b, np.nan)


def failed_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Runs whose newest record is ``failed`` or ``skipped`` (all records of a run in this frame), with the reason."""
    cols = ["run_id", "study", "case", "variant", "platform", "status", "error", "started_at"]
    newest = df.sort_values("started_at", kind="stable").groupby("run_id", sort=True).tail(1)
    out = newest[newest["status"].isin(["failed", "skipped"])][cols].reset_index(drop=True)
    return out.astype({c: "string" for c in cols if c != "started_at"})


