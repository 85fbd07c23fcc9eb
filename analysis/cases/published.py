"""Published measurements as run records (``energy_source: published``), and their validation: the ``published`` case.

A table such as PEACH's Table VIII lists, per application and strategy, a
measured rate and energy efficiency next to the model's prediction. Each
measured row becomes one run record of case ``published``: ``time_s`` and
``energy_j`` are the time and energy of one unit of work (``1 / rate``,
``1 / efficiency``), the configuration and the published prediction go into
``params``. They are gathered into the dataset like any run; the validation
job scores the published predictions against the published measurements with
the same metrics as every other model: error and tightness per run, ranking
fidelity of the strategies per application, by time and by energy.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.planning.config import ConfigError
from analysis.planning.jobs import Layout
from analysis.registry import Case, Context, Model
from analysis.resources import PUBLISHED_MEASUREMENTS
from analysis.scoring import metrics
from analysis.scoring.claims import load_yaml
from sims import record as rec

NAME = "published"


def load_table(name: str, directory: Path = PUBLISHED_MEASUREMENTS) -> dict[str, Any]:
    """A published-measurements table (``analysis/resources/published/measurements/<name>.yaml``)."""
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


def _identities(name: str, study: str, directory: Path = PUBLISHED_MEASUREMENTS):
    doc = load_table(name, directory)
    for row in doc["rows"]:
        params = _params(doc, row, name)
        variant = f"{row['strategy']}/{row['objective']}"
        ident = {"study": study, "case": NAME, "variant": variant, "params": params, "platform": doc["platform"],
                 "layout": None, "warmup": 0, "repetitions": 1, "seed": None}
        yield rec.run_id_of(ident), variant, params, doc


def records(name: str, study: str, config_hash: str = "unknown", directory: Path = PUBLISHED_MEASUREMENTS) -> dict[str, list[dict[str, Any]]]:
    """``{run_id: [record]}``: one ``ok`` record per measured row of the table, ``energy_source: published``."""
    out: dict[str, list[dict[str, Any]]] = {}
    prov = rec.provenance()
    for run_id, variant, params, doc in _identities(name, study, directory):
        m = params["measured"]
        r = {name_: None for name_ in rec.FIELD_TYPES}
        r.update(
            run_id=run_id, study=study, case=NAME, variant=variant, params=rec.canonical_json(params),
            platform=doc["platform"], ranks=1, rep=0, status="ok", alpha=float(m["alpha_percent"]) / 100.0,
            time_s=1.0 / float(m["rate"]), energy_j=1.0 / float(m["efficiency"]), energy_source="published",
            started_at=rec.utc_now(), config_hash=config_hash, **prov,
        )
        out[run_id] = [r]
    return out


def validate_runs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Published runs scored against their published predictions: per-run rows and per-application fidelity."""
    out = predict_published(df)
    return out, score_published(out)


def predict_published(df: pd.DataFrame) -> pd.DataFrame:
    """Per ok published run: the published prediction next to the published measurement, errors, tightness."""
    runs = df[(df["case"] == NAME) & (df["status"] == "ok")]
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
    out["same_configuration"] = out["same_configuration"].astype(bool)
    return out


def write_raw_record(name: str, study: str, run_id: str, out: Path, config_hash: str = "unknown") -> Path:
    """Write the table's run ``run_id`` as a raw record at ``out``; a one-line error if the table has no such run."""
    found = records(name, study, config_hash)
    if run_id not in found:
        raise ValueError(f"published table {name!r} has no run {run_id} for study {study!r}")
    rec.write_raw(out, run_id, found[run_id])
    return Path(out)


def run_ids(name: str, study: str, directory: Path = PUBLISHED_MEASUREMENTS) -> list[str]:
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


def score_published(out: pd.DataFrame) -> pd.DataFrame:
    """Per study and application: ranking fidelity of the strategies by time and by energy."""
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
    return fid_df


SCHEMA = {
    "type": "object", "additionalProperties": False, "default": {},
    "description": "published measurement tables (analysis/resources/published/measurements/<name>.yaml) ingested as runs with "
                   "energy_source published and scored against the paper's own predictions",
    "properties": {"tables": {"type": "array", "uniqueItems": True,
                              "items": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
                              "default": ["peach-2014-table-viii"]}},
}
PREDICTION = "published prediction"


class PublishedPrediction(Model):
    """The paper's own prediction of each published measurement (time and energy per unit of work)."""

    name = PREDICTION
    cases = (NAME,)
    table = "published_runs"
    rowwise = False

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_published(runs)


class PublishedCase(Case):
    name = NAME
    title = "published measurements (PEACH Table VIII), scored against the papers' own predictions"
    order = 50
    schema = SCHEMA
    tables = ("published_runs", "published_fidelity")
    sections = ("analysis.report.sections.papers:PapersSection",)

    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = []
        for table in config["cases"][NAME]["tables"]:
            try:
                idents = list(_identities(table, config["study"]))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cases.published.tables: {table!r}: {exc}") from None
            for run_id, variant, _params, doc in idents:
                out.append({"run_id": run_id, "study": config["study"], "case": NAME, "variant": variant,
                            "platform": doc["platform"], "table": table, "ranks": 1, "size": None,
                            # ingests a table: nothing to measure, never a batch job
                            "resources": Layout(ranks=1, local=True).spec()})
        return out

    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        return (f"hetval ingest-published --table {shlex.quote(spec['table'])} --study {shlex.quote(spec['study'])}"
                f" --run-id {spec['run_id']} --out {shlex.quote(record)}")

    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        return records[records["status"] == "ok"]

    def join(self, runs: pd.DataFrame, platforms: Any) -> pd.DataFrame:
        """Unchanged: a published run is scored against the prediction printed beside it."""
        return runs

    def score(self, predictions: dict[str, pd.DataFrame], context: Context) -> dict[str, pd.DataFrame]:
        runs = predictions.get(PREDICTION)
        if runs is None:
            runs = predict_published(pd.DataFrame(columns=["case", "status"]))
        return {"published_runs": runs, "published_fidelity": score_published(runs)}


CASE = PublishedCase()
