"""PEACH's workloads (MatrixMultiply, MatrixTranspose) split by alpha over a grid, optionally at (f_C, f_G).

Config ``cases.peach``: ``workloads`` (``{name, n, dtype}``), ``alphas``, ``frequencies``, ``seed``. The
job is :class:`sims.la.job.MatrixRun`. Validation scores each *curve* (one workload, size, platform and
frequency pair over the alpha grid) with the end-point calibrated PEACH model
(:mod:`analysis.models.peach`): relative error at the interior points, ranking of the grid by time
and by energy, measured best alpha against ``alpha_perf`` (eq. 13) and ``alpha_eff`` (eq. 15).

The runs carry their counted flops and traffic per processor, so every per-run model that names this case
(PerDome/PeaPaw's bound for the run's split, Panwar's projection) scores the same curves: its rows join
``peach_runs`` and ``peach_fidelity`` under its own ``model``, and Panwar's device selection of each
workload (its alpha 0 and 1 runs) joins ``projection``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import yaml

from analysis.cases.wp import run_command, run_runner, two_processor_spec
from analysis.equations import peach
from analysis.models.energy_roofline import ROOFLINE_ENERGY_MODEL
from analysis.models.panwar import MODEL as PANWAR
from analysis.models.peach import CURVE_KEYS, MODEL, curves
from analysis.planning.config import platform_layouts
from analysis.registry import GROUP_COLUMNS, Case, Context, Scored, join_on, models, models_for
from analysis.scoring import ceilings
from analysis.scoring.classes import WIDTH, bound_class, with_rounds
from analysis.scoring.measured import attach, run_measures
from analysis.scoring.projection import device_selection
from analysis.scoring.runs import SAMPLE_COLUMNS, fidelity_types, reduce_repetitions, score_batch
from analysis.scoring.splits import splits, with_idle
from analysis.scoring.uncertainty import UNCERTAINTY_COLUMNS, Settings
from analysis.storage.schema import params_doc
from sims.la.matrix import PEACH_WORKLOADS
from sims.vocab import dp_variant

SCHEMA = yaml.safe_load(f"""
type: object
additionalProperties: false
default: {{}}
description: PEACH's MatrixMultiply and MatrixTranspose split by alpha, optionally at (f_C, f_G) pairs
properties:
  workloads:
    type: array
    minItems: 1
    items:
      type: object
      additionalProperties: false
      required: [name, n]
      properties:
        name: {{enum: [{", ".join(PEACH_WORKLOADS)}]}}
        n: {{type: integer, minimum: 1, maximum: 131072}}
        dtype: {{enum: [float32, float64], default: float64}}
    default: [{{name: MatrixMultiply, n: 3200}}, {{name: MatrixTranspose, n: 10240}}]
  alphas:
    type: array
    minItems: 2
    uniqueItems: true
    items: {{type: number, minimum: 0, maximum: 1}}
    default: [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
  frequencies:
    type: array
    description: "(f_C GHz, f_G MHz) pairs; empty = the processors' default speeds. A pair the platform cannot set is recorded as skipped"
    items:
      type: object
      additionalProperties: false
      properties:
        f_C: {{type: ["number", "null"], exclusiveMinimum: 0}}
        f_G: {{type: ["number", "null"], exclusiveMinimum: 0}}
    default: []
  seed:
    type: integer
    minimum: 0
    default: 1
""")


RUN_COLUMNS = [*CURVE_KEYS, "model", "run_id", "variant", "alpha", "work", "work_unit", "precision",
               "time_median_s",
               "time_iqr_s", "time_predicted_s", "rate_measured", "rate_predicted", "tightness", "time_rel_error",
               "energy_median_j", "energy_source", "eta_measured", "eta_predicted", "energy_rel_error", "endpoint",
               "time_reps_s", "rounds_reps", "tightness_rounds"]


FIDELITY_COLUMNS = [*CURVE_KEYS, "quantity", "model", "n_alternatives", "kendall_tau", "pairwise_agreement",
                    "top1_agreement", "selection_penalty", "profile_error", "best_measured", "best_predicted",
                    "alpha_best_measured", "alpha_best_predicted", "alpha_continuous", "error_median",
                    "error_max", "R_C", "R_G", "P0", "Pd_C", "Pd_G", *UNCERTAINTY_COLUMNS]


def _first_minimum(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The position of each segment's first smallest value (segments ``bounds[i]:bounds[i + 1]``, none empty)."""
    seg = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    hit = np.flatnonzero(values == np.minimum.reduceat(values, bounds[:-1])[seg])
    return hit[np.r_[True, seg[hit][1:] != seg[hit][:-1]]]


def _score_quantity(rows: pd.DataFrame, gid: np.ndarray, quantity: str, params: list[dict[str, Any] | None],
                    settings: Settings) -> pd.DataFrame:
    """Fidelity of every curve by ``quantity`` (``time``: times; ``energy``: ``W / eta``), all curves at once.

    A curve is scored when it has a calibration, at least two points, and every measured and predicted value
    is finite and positive; ranking and intervals by :func:`analysis.scoring.runs.score_batch`.
    """
    calibrated = np.array([q is not None for q in params], dtype=bool)
    if quantity == "time":
        m, p = rows["time_median_s"].to_numpy(float), rows["time_predicted_s"].to_numpy(float)
        err = rows["time_rel_error"].to_numpy(float)
    else:
        W = np.array([q["W"] if q is not None else np.nan for q in params], dtype=float)[gid]
        with np.errstate(divide="ignore", invalid="ignore"):
            m, p = W / rows["eta_measured"].to_numpy(float), W / rows["eta_predicted"].to_numpy(float)
        err = rows["energy_rel_error"].to_numpy(float)
    good = np.isfinite(m) & np.isfinite(p) & (m > 0) & (p > 0)
    n_curves = len(params)
    size = np.bincount(gid, minlength=n_curves)
    keep_curve = calibrated & (size >= 2) & (np.bincount(gid, weights=~good, minlength=n_curves) == 0)
    keep = keep_curve[gid]
    if not keep.any():
        return pd.DataFrame(columns=FIDELITY_COLUMNS)
    sub, g, m, p = rows[keep], gid[keep], m[keep], p[keep]
    reps = SAMPLE_COLUMNS[quantity]
    scored = score_batch(g, m, p, sub["variant"].astype(str).tolist(), np.full(len(sub), np.nan),
                         sub[reps].tolist() if reps in sub else None, settings)
    first = scored.pop("first").to_numpy()
    curves = g[first]
    bounds = np.r_[first, len(sub)]
    alphas = sub["alpha"].to_numpy(float)
    interior = ~sub["endpoint"].to_numpy(bool)
    e = err[keep]
    objective = "performance" if quantity == "time" else "energy"
    calib = {k: np.array([float(params[c][k]) for c in curves.tolist()]) for k in ("R_C", "R_G", "P0", "Pd_C", "Pd_G")}
    extra = {
        "alpha_best_measured": alphas[_first_minimum(m, bounds)],
        "alpha_best_predicted": alphas[_first_minimum(p, bounds)],
        "alpha_continuous": peach.best_alphas(objective, calib["R_C"], calib["R_G"], *(
            (calib["P0"], calib["Pd_C"], calib["Pd_G"]) if quantity == "energy" else ()))[0],
    }
    # the relative error at each curve's interior points (its calibration's end points are exact by design)
    curve = np.repeat(np.arange(len(curves)), np.diff(bounds))
    inner = interior & ~np.isnan(e)
    errors = pd.Series(e[inner]).groupby(curve[inner])
    extra["error_median"] = errors.median().reindex(range(len(curves))).to_numpy(float)
    extra["error_max"] = errors.max().reindex(range(len(curves))).to_numpy(float)
    extra.update(calib)
    head = sub.iloc[first]
    out = pd.DataFrame({k: head[k].to_numpy() for k in CURVE_KEYS})
    out["quantity"] = quantity
    out["model"] = MODEL
    out = pd.concat([out, scored, pd.DataFrame(extra)], axis=1)
    return out[FIDELITY_COLUMNS]


def workload_label(frame: pd.DataFrame) -> pd.Series:
    """What one curve's workload is, for a reader and as the key that keeps two workloads of one ``n`` apart."""
    freq = frame["frequency"].astype(str)
    return (frame["workload"].astype(str) + " n=" + frame["size"].astype(str)
            + np.where(freq == "default", "", " at " + freq)).astype("string")


def cross_rows(predicted: pd.DataFrame) -> pd.DataFrame:
    """A per-run model's rows (PerDome/PeaPaw, Panwar's projection) as ``peach_runs`` rows: the curve keys, the
    rates ``W / T`` measured and predicted beside the model's own tightness (a transpose counts no flops, so its
    rate is in bytes, as PEACH's). No point is a calibration point of these models."""
    c = curves(predicted)
    with np.errstate(divide="ignore", invalid="ignore"):
        c["rate_predicted"] = c["work"].to_numpy(float) / c["time_predicted_s"].to_numpy(float)
    c["eta_predicted"] = np.nan
    c = curve_measures(c)
    c["endpoint"] = False
    ok = np.isfinite(c["tightness"].to_numpy(float)) & (c["tightness"].to_numpy(float) > 0)
    return c[ok].reset_index(drop=True)


def score_cross(rows: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """``peach_fidelity`` rows of the per-run models on each curve: its alpha grid ranked by the model's times
    (:func:`analysis.scoring.runs.score_batch`), the measured and predicted best alpha and the relative error over
    every point (none calibrates them)."""
    keys = [*CURVE_KEYS, "model"]
    if not len(rows):
        return pd.DataFrame(columns=FIDELITY_COLUMNS)
    rows = rows.sort_values([*keys, "alpha"], kind="stable").reset_index(drop=True)
    gid = rows.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    many = np.bincount(gid)[gid] >= 2
    rows, gid = rows[many].reset_index(drop=True), gid[many]
    if not len(rows):
        return pd.DataFrame(columns=FIDELITY_COLUMNS)
    m, p = rows["time_median_s"].to_numpy(float), rows["time_predicted_s"].to_numpy(float)
    scored = score_batch(gid, m, p, rows["variant"].astype(str).tolist(), rows["tightness"].to_numpy(float),
                         rows["time_reps_s"].tolist() if "time_reps_s" in rows else None, settings)
    first = scored.pop("first").to_numpy()
    bounds = np.r_[first, len(rows)]
    alphas = rows["alpha"].to_numpy(float)
    errors = pd.Series(rows["time_rel_error"].to_numpy(float)).groupby(np.repeat(np.arange(len(first)),
                                                                                  np.diff(bounds)))
    head = rows.iloc[first]
    out = pd.DataFrame({k: head[k].to_numpy() for k in keys})
    out["quantity"] = "time"
    extra = pd.DataFrame({"alpha_best_measured": alphas[_first_minimum(m, bounds)],
                          "alpha_best_predicted": alphas[_first_minimum(p, bounds)], "alpha_continuous": np.nan,
                          "error_median": errors.median().to_numpy(float), "error_max": errors.max().to_numpy(float),
                          **{k: np.nan for k in ("R_C", "R_G", "P0", "Pd_C", "Pd_G")}})
    return pd.concat([out, scored, extra], axis=1)[FIDELITY_COLUMNS]


def curve_measures(rows: pd.DataFrame) -> pd.DataFrame:
    """The PEACH model's rows with what was measured beside its predicted rate and efficiency: the measured rate
    ``W / T`` and efficiency ``W / E``, and each prediction's relative error."""
    out = rows.copy(deep=False)
    W = out["work"].to_numpy(float)
    t = out["time_median_s"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["rate_measured"] = W / t
        out["time_rel_error"] = np.abs(out["time_predicted_s"].to_numpy(float) - t) / t
        eta = W / out["energy_median_j"].to_numpy(float)
        out["eta_measured"] = eta
        out["energy_rel_error"] = np.abs(out["eta_predicted"].to_numpy(float) - eta) / eta
    return out


def score_curves(predicted: pd.DataFrame, settings: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-run rows and per-curve fidelity (by time, and by energy where it was measured).

    ``predicted`` is the PEACH model's output: per-run rows of every curve with both end points, and
    each curve's calibration in ``predicted.attrs["params"]`` keyed by its :data:`CURVE_KEYS` values.
    Curves come out in key order, each by time then by energy.
    """
    calib = predicted.attrs.get("params", {})
    # pandas deep-copies ``attrs`` into every frame derived from this one: with one calibration per curve
    # that made scoring quadratic in the curves (90 s of 156 at 10^4 runs). Score a frame without them.
    predicted = predicted.copy(deep=False)
    predicted.attrs = {}
    if len(predicted):
        predicted = curve_measures(predicted)
    fid_df = pd.DataFrame(columns=FIDELITY_COLUMNS)
    if len(predicted):
        rows = predicted.sort_values(CURVE_KEYS, kind="stable")
        gid = rows.groupby(CURVE_KEYS, sort=False, dropna=False).ngroup().to_numpy()
        heads = rows[CURVE_KEYS].iloc[np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]])]
        params = [calib.get(tuple(str(v) for v in key)) for key in heads.itertuples(index=False, name=None)]
        parts = [_score_quantity(rows, gid, q, params, settings) for q in ("time", "energy")]
        parts = [f for f in parts if len(f)]
        if parts:
            both = pd.concat(parts, ignore_index=True)
            both["_q"] = (both["quantity"] == "energy").astype(int)
            fid_df = both.sort_values([*CURVE_KEYS, "_q"], kind="stable").drop(columns="_q").reset_index(drop=True)
    run_df = predicted.copy() if len(predicted) else pd.DataFrame(columns=RUN_COLUMNS)
    if len(run_df):
        run_df["model"] = MODEL
        run_df = attach(run_df)
    return typed_tables(run_df, fid_df)


def typed_tables(run_df: pd.DataFrame, fid_df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``peach_runs`` and ``peach_fidelity`` with their columns, in their types."""
    run_df = run_df.copy()
    for c in RUN_COLUMNS:
        if c not in run_df.columns:
            run_df[c] = np.nan
    run_df = run_df[RUN_COLUMNS]
    strings = [*[k for k in CURVE_KEYS if k != "size"], "run_id", "variant", "work_unit", "precision", "energy_source",
               "quantity", "model", "best_measured", "best_predicted"]
    run_df = run_df.astype({c: "string" for c in strings if c in run_df.columns})
    run_df = run_df.astype({c: "float64" for c in RUN_COLUMNS
                            if c not in strings and c not in ("endpoint", "size", "time_reps_s", "rounds_reps",
                                                              "tightness_rounds")})
    run_df["size"] = pd.to_numeric(run_df["size"]).astype("Int64")
    run_df["endpoint"] = run_df["endpoint"].astype("bool")
    fid_df = fid_df.astype({c: "string" for c in strings if c in fid_df.columns})
    typed = fidelity_types(FIDELITY_COLUMNS)
    fid_df = fid_df.astype({**{c: "float64" for c in FIDELITY_COLUMNS if c not in strings and c not in typed},
                            **typed})
    return run_df, fid_df


class PEACHCase(Case):
    name = "peach"
    title = "PEACH matrix workloads split by alpha (Ge et al. 2014)"
    order = 30
    schema = SCHEMA
    tables = ("peach_runs", "peach_fidelity", "energy_roofline", "projection", "splits")
    sections = ("analysis.report.sections.peach:PEACHSection", "analysis.report.sections.splits:SplitsSection")
    job = "sims.la.job:MatrixRun"

    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        section = config["cases"][self.name]
        out = []
        for w in section["workloads"]:
            for pair in section["frequencies"] or [None]:
                params = {"workload": w["name"], "n": int(w["n"]), "dtype": w.get("dtype", "float64")}
                # three n x n matrices for the multiply, two for the transpose
                data = ((3 if w["name"] == "MatrixMultiply" else 2) * int(w["n"]) ** 2
                        * (4 if params["dtype"] == "float32" else 8))
                if pair and (pair.get("f_C") is not None or pair.get("f_G") is not None):
                    params["frequency"] = {k: pair.get(k) for k in ("f_C", "f_G")}
                for alpha in section["alphas"]:
                    for platform in platform_layouts(config):
                        out.append(two_processor_spec(config, self.name, dp_variant(float(alpha)), params,
                                                      int(section["seed"]), platform, self.job, int(w["n"]), data))
        return out

    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        return run_command(spec, record, platform_file, launch)

    def runner(self, spec: Mapping[str, Any], record: str, platform_file: str) -> list[str]:
        return run_runner(spec, record, platform_file)

    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        return reduce_repetitions(records)

    def join(self, runs: pd.DataFrame, platforms: Any) -> pd.DataFrame:
        """Each run's processors; the energy roofline bounds a product against the GEMM ceiling with its
        compulsory traffic, as LA; and what every per-run model's rows carry
        (:func:`analysis.scoring.measured.run_measures`)."""
        joined = join_on(runs, platforms.processors, ["platform"])
        return run_measures(ceilings.apply(joined, "params", lambda text: ceilings.matrix_work(params_doc(text))))

    def score(self, predictions: dict[str, pd.DataFrame], context: Context) -> dict[str, pd.DataFrame]:
        predicted = predictions.get(MODEL)
        runs, fid = score_curves(predicted if predicted is not None else pd.DataFrame(columns=RUN_COLUMNS),
                                 context.uncertainty)
        per_run = [predictions[m.name] for m in models_for(self.name)
                   if m.table == "runs" and m.quantity == "time" and predictions.get(m.name) is not None]
        per_run = [f for f in per_run if len(f)]
        projection = pd.DataFrame()
        if per_run:
            both = pd.concat(per_run, ignore_index=True)
            cross = cross_rows(both)
            runs, fid = typed_tables(pd.concat([runs, cross], ignore_index=True),
                                     pd.concat([fid, score_cross(cross, context.uncertainty)], ignore_index=True))
            labelled = curves(both)
            projection = device_selection(labelled.assign(size_label=workload_label(labelled)),
                                          context.uncertainty.noise_alpha, PANWAR)
        roofline = predictions.get(ROOFLINE_ENERGY_MODEL)
        sweeps = with_idle(runs.assign(case="peach", size_label=workload_label(runs)) if len(runs) else runs,
                           context.platforms)
        answers = splits(sweeps, context.uncertainty, {m.name: m.why_not("peach", "memory-bound")
                                                       for m in models().values()})
        return {"peach_runs": runs, "peach_fidelity": fid, "projection": projection, "splits": answers,
                "energy_roofline": roofline if roofline is not None else pd.DataFrame()}

    def scored(self, tables: Mapping[str, pd.DataFrame], balance: Mapping[str, float]) -> Scored | None:
        """``peach_runs`` but the end points (they calibrate PEACH), each workload classed by the intensity of its
        compulsory traffic at its precision (a product: ``2 n^3`` flops over three ``n x n`` matrices; a
        transpose has no flops); a group (one curve) takes its workload's class."""
        peach = tables.get("peach_runs")
        if peach is None or not len(peach):
            return None
        n = pd.to_numeric(peach["size"], errors="coerce").astype(float).to_numpy()
        width = peach["precision"].astype(str).map(WIDTH).astype(float).to_numpy()
        product = (peach["workload"].astype(str) == "MatrixMultiply").to_numpy()
        intensity = pd.Series(np.where(product, 2.0 * n / (3.0 * width), 0.0), index=peach.index)
        runs = with_rounds(peach.assign(case=self.name, model=peach["model"].fillna(MODEL),
                                        workload_class=bound_class(intensity, peach["platform"], dict(balance))))
        runs = runs[~runs["endpoint"].fillna(False).astype(bool)]
        fid = tables.get("peach_fidelity")
        groups = pd.DataFrame(columns=list(GROUP_COLUMNS))
        if fid is not None and len(fid):
            fid = fid[fid["quantity"] == "time"] if "quantity" in fid else fid
            keys = ["study", "platform", "workload", "size"]
            classes = runs.drop_duplicates(keys)[[*keys, "workload_class"]]
            groups = fid.merge(classes, on=keys, how="left").assign(case=self.name)
        return Scored(runs, groups, "peach")


CASE = PEACHCase()
