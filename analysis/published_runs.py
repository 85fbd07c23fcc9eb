"""Published measurements as run records (``energy_source: published``), and their validation.

A table such as PEACH's Table VIII lists, per application and strategy, a
measured rate and energy efficiency next to the model's prediction. Each
measured row becomes one run record of case ``peach``: ``time_s`` and
``energy_j`` are the time and energy of one unit of work (``1 / rate``,
``1 / efficiency``), the configuration and the published prediction go into
``params``. They are gathered into the dataset like any run; the validation
job scores the published predictions against the published measurements with
the same metrics as every other model: error and tightness per run, ranking
fidelity of the strategies per application, by time and by energy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics
from analysis.published import load_yaml
from sims import record as rec

PUBLISHED_RUNS_DIR = Path(__file__).resolve().parent.parent / "config" / "published"
CASE = "peach"


def load_table(name: str, directory: Path = PUBLISHED_RUNS_DIR) -> dict[str, Any]:
    """A published-measurements table (``config/published/<name>.yaml``)."""
    return load_yaml(Path(directory) / f"{name}.yaml", "published measurements",
                     ("paper", "table", "platform", "applications", "rows"))


def _params(doc: dict[str, Any], row: dict[str, Any], name: str) -> dict[str, Any]:
    app = doc["applications"][row["application"]]
    keys = ("f_C_GHz", "f_G_MHz", "alpha_percent", "rate", "efficiency")
    return {
        "source": f"{doc['paper']}, {doc['table']}", "table": name, "application": row["application"],
        "strategy": row["strategy"], "objective": row["objective"], "work_unit": app["work_unit"],
        "rate_unit": app["rate_unit"], "efficiency_unit": app["efficiency_unit"],
        "measured": dict(zip(keys, row["measured"], strict=True)),
        "predicted": dict(zip(keys, row["predicted"], strict=True)),
        "note": "time_s and energy_j are per unit of work: 1/rate and 1/efficiency of the published measurement",
    }


def _identities(name: str, study: str, directory: Path = PUBLISHED_RUNS_DIR):
    doc = load_table(name, directory)
    for row in doc["rows"]:
        params = _params(doc, row, name)
        variant = f"{row['strategy']}/{row['objective']}"
        ident = {"study": study, "case": CASE, "variant": variant, "params": params, "platform": doc["platform"],
                 "layout": None, "warmup": 0, "repetitions": 1, "seed": None}
        yield rec.run_id_of(ident), variant, params, doc


def records(name: str, study: str, config_hash: str = "unknown", directory: Path = PUBLISHED_RUNS_DIR) -> dict[str, list[dict[str, Any]]]:
    """``{run_id: [record]}``: one ``ok`` record per measured row of the table, ``energy_source: published``."""
    out: dict[str, list[dict[str, Any]]] = {}
    prov = rec.provenance()
    for run_id, variant, params, doc in _identities(name, study, directory):
        m = params["measured"]
        r = {name_: None for name_ in rec.FIELD_TYPES}
        r.update(
            run_id=run_id, study=study, case=CASE, variant=variant, params=rec.canonical_json(params),
            platform=doc["platform"], ranks=1, rep=0, status="ok", alpha=float(m["alpha_percent"]) / 100.0,
            time_s=1.0 / float(m["rate"]), energy_j=1.0 / float(m["efficiency"]), energy_source="published",
            started_at=rec.utc_now(), config_hash=config_hash, **prov,
        )
        out[run_id] = [r]
    return out


def validate_runs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Published runs scored against their published predictions: per-run rows and per-application fidelity."""
    runs = df[(df["case"] == CASE) & (df["energy_source"] == "published") & (df["status"] == "ok")]
    rows = []
    for r in runs.itertuples(index=False):
        p = json.loads(r.params)
        pred = p["predicted"]
        t_pred, e_pred = 1.0 / float(pred["rate"]), 1.0 / float(pred["efficiency"])
        rows.append({
            "run_id": r.run_id, "study": r.study, "platform": r.platform, "application": p["application"],
            "variant": r.variant, "source": p["source"], "time_s": float(r.time_s), "energy_j": float(r.energy_j),
            "time_predicted_s": t_pred, "energy_predicted_j": e_pred,
            "rate_error": float(pred["rate"]) / float(p["measured"]["rate"]) - 1.0,
            "efficiency_error": float(pred["efficiency"]) / float(p["measured"]["efficiency"]) - 1.0,
            "tightness_time": float(metrics.tightness(t_pred, float(r.time_s))),
            "tightness_energy": float(metrics.tightness(e_pred, float(r.energy_j))),
            "same_configuration": all(p["measured"][k] == pred[k] for k in ("f_C_GHz", "f_G_MHz", "alpha_percent")),
        })
    out = pd.DataFrame(rows, columns=["run_id", "study", "platform", "application", "variant", "source", "time_s",
                                      "energy_j", "time_predicted_s", "energy_predicted_j", "rate_error",
                                      "efficiency_error", "tightness_time", "tightness_energy", "same_configuration"])
    fid = []
    for (study, app), g in out.groupby(["study", "application"], sort=True):
        g = g.sort_values("variant")
        names = g["variant"].tolist()
        for axis, m_col, p_col in (("strategy by time", "time_s", "time_predicted_s"),
                                   ("strategy by energy", "energy_j", "energy_predicted_j")):
            m, p = g[m_col].to_numpy(float), g[p_col].to_numpy(float)
            fid.append({"study": study, "application": app, "axis": axis, "n_alternatives": len(g),
                        **metrics.ranking_summary(m, p, names)})
    fid_df = pd.DataFrame(fid, columns=["study", "application", "axis", "n_alternatives", "kendall_tau",
                                        "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error",
                                        "best_measured", "best_predicted"])
    for col in ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error"):
        fid_df[col] = fid_df[col].astype("float64")
    out["same_configuration"] = out["same_configuration"].astype(bool)
    return out, fid_df


def write_raw_records(name: str, study: str, out_dir: Path, config_hash: str = "unknown") -> list[Path]:
    """Write every run of the table as ``<out_dir>/<run_id>.json`` (raw-record format); returns the paths."""
    paths = []
    for run_id, recs in records(name, study, config_hash).items():
        path = Path(out_dir) / f"{run_id}.json"
        rec.write_raw(path, run_id, recs)
        paths.append(path)
    return paths


def run_ids(name: str, study: str, directory: Path = PUBLISHED_RUNS_DIR) -> list[str]:
    """The run ids of a table's records for ``study`` (what the workflow plans; no provenance lookups)."""
    return sorted(run_id for run_id, *_ in _identities(name, study, directory))


def summary_lines(runs: pd.DataFrame, fid: pd.DataFrame) -> list[str]:
    """Lines for the report summary."""
    if runs.empty:
        return ["published measurements: none ingested"]
    lines = [f"published measurements ingested (energy_source: published): {len(runs)} runs; "
             f"published prediction error median |rate| {np.median(np.abs(runs['rate_error'])):.3f}, "
             f"|efficiency| {np.median(np.abs(runs['efficiency_error'])):.3f}"]
    for r in fid.itertuples():
        lines.append(f"  {r.application} | {r.axis}: top-1 {r.top1_agreement:.3f}, selection penalty "
                     f"{r.selection_penalty:.3f}, best measured {r.best_measured} vs predicted {r.best_predicted}")
    return lines
