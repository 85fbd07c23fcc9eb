"""An example hetval plugin of its own shape: the STREAM triad ``a = b + s c`` (float64) split by fraction.

Unlike the DAXPY example it is no two-processor WP case: it subclasses :class:`analysis.registry.Case`
directly, writes tables of its own (``triad_runs``, ``triad_fidelity``), is predicted by a model of its own and
shows them in a report section of its own (:mod:`hetval_triad.section`). Its runs are a fraction grid: a share
``f`` of the elements on the accelerator, the rest on the host, each size one group of alternatives that
validation ranks. What the scorecard judges of it, :meth:`TriadCase.scored` says; nothing in hetval names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.cases.wp import run_command, run_runner, two_processor_spec
from analysis.equations.roofline import intensity
from analysis.planning.config import platform_layouts
from analysis.registry import GROUP_COLUMNS, Case, Context, Model, Scored
from analysis.scoring.classes import bound_class
from analysis.scoring.runs import FIDELITY_TAIL, reduce_repetitions, score_batch
from sims.vocab import dp_variant

#: Per element: one multiply and one add; b and c loaded and a stored, 8 bytes each.
FLOPS_PER_ELEMENT = 2
BYTES_PER_ELEMENT = 24
#: The columns of ``triad_runs``: one row per (run, model).
RUN_COLUMNS = ["run_id", "study", "case", "variant", "platform", "size", "alpha", "flops", "bytes", "bytes_host",
               "bytes_accel", "n_reps", "time_median_s", "time_iqr_s", "time_reps_s", "rounds_reps", "model",
               "quantity", "time_predicted_s", "tightness"]
#: The keys of one group of alternatives (one size on one platform, ranked by one model).
GROUP_KEYS = ["study", "platform", "size", "model"]


@dataclass(frozen=True)
class Part:
    """One processor's share: a contiguous block of elements."""

    elements: int

    @property
    def flops(self) -> int:
        return FLOPS_PER_ELEMENT * self.elements

    @property
    def bytes(self) -> int:
        return BYTES_PER_ELEMENT * self.elements

    @property
    def idle(self) -> bool:
        return self.elements == 0


class TriadRun:
    """This rank's share of one triad run (the job ``sims.run`` loads by name)."""

    def __init__(self, spec: dict[str, Any], role: str, platform_file: str | None):
        from sims.backends import get_backend

        n = int(spec["params"]["size"])
        self.alpha = float(spec["params"]["fraction"])
        accel = int(round(self.alpha * n))
        self.parts = {"host": Part(n - accel), "accel": Part(accel)}
        self.executed = {r: p.flops for r, p in self.parts.items()}
        proc = spec["layout"][role]
        self.backend = get_backend(proc["backend"], proc.get("device"))
        xp, mine = self.backend.xp, self.parts[role].elements
        self.a = xp.zeros(mine, dtype=np.float64)
        self.b = xp.asarray(np.linspace(0.0, 1.0, mine, dtype=np.float64))
        self.c = xp.ones(mine, dtype=np.float64)
        self.s = 3.0

    def work(self) -> None:
        # two passes over a: 40 B/element of traffic against the 24 B the triad needs (and counts)
        self.backend.xp.multiply(self.c, self.s, out=self.a)
        self.a += self.b

    def sync(self) -> None:
        self.backend.synchronize()

    def describe(self) -> dict[str, Any]:
        return {"elements": {r: p.elements for r, p in self.parts.items()}}


def fidelity(rows: pd.DataFrame, settings: Any) -> pd.DataFrame:
    """``triad_fidelity``: each group's fraction grid ranked by the model's times (one row per group)."""
    if not len(rows):
        return pd.DataFrame(columns=[*GROUP_KEYS, "case", *FIDELITY_TAIL])
    rows = rows.sort_values([*GROUP_KEYS, "alpha"], kind="stable").reset_index(drop=True)
    gid = rows.groupby(GROUP_KEYS, sort=False, dropna=False).ngroup().to_numpy()
    scored = score_batch(gid, rows["time_median_s"], rows["time_predicted_s"], rows["variant"].astype(str).tolist(),
                         rows["tightness"], rows["time_reps_s"].tolist(), settings)
    head = rows.iloc[scored.pop("first").to_numpy()][[*GROUP_KEYS, "case"]].reset_index(drop=True)
    return pd.concat([head, scored.reset_index(drop=True)], axis=1)


class TriadCase(Case):
    name = "triad"
    title = "STREAM triad a = b + s c split by fraction (example plugin)"
    schema = {
        "type": "object", "additionalProperties": False,
        "properties": {
            "sizes": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}, "default": [1 << 21]},
            "fractions": {"type": "array", "minItems": 2, "uniqueItems": True,
                          "items": {"type": "number", "minimum": 0, "maximum": 1},
                          "default": [0.0, 0.25, 0.5, 0.75, 1.0]},
            "seed": {"type": "integer", "minimum": 0, "default": 1},
        },
    }
    tables = ("triad_runs", "triad_fidelity")
    sections = ("hetval_triad.section:TriadSection",)
    job = "hetval_triad:TriadRun"

    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        section = config["cases"][self.name]
        out = []
        for n in section["sizes"]:
            for f in section["fractions"]:
                params = {"size": int(n), "fraction": float(f)}
                for platform in platform_layouts(config):
                    out.append(two_processor_spec(config, self.name, dp_variant(float(f)), params, int(section["seed"]),
                                                  platform, self.job, int(n), BYTES_PER_ELEMENT * int(n)))
        return out

    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        return run_command(spec, record, platform_file, launch)

    def runner(self, spec: Mapping[str, Any], record: str, platform_file: str) -> list[str]:
        return run_runner(spec, record, platform_file)

    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        return reduce_repetitions(records)

    def score(self, predictions: dict[str, pd.DataFrame], context: Context) -> dict[str, pd.DataFrame]:
        frames = [f for f in predictions.values() if f is not None and len(f)]
        rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=RUN_COLUMNS)
        rows = rows[RUN_COLUMNS].sort_values(["study", "platform", "size", "model", "alpha"], kind="stable")
        rows = rows.reset_index(drop=True)
        return {"triad_runs": rows, "triad_fidelity": fidelity(rows, context.uncertainty)}

    def scored(self, tables: Mapping[str, pd.DataFrame], balance: Mapping[str, float]) -> Scored | None:
        """Every ``triad_runs`` row, classed by its intensity against the host balance (a triad is
        memory-bound wherever a flop costs less than a third of a word); its groups take their size's class."""
        runs = tables.get("triad_runs")
        if runs is None or not len(runs):
            return None
        at = pd.Series(intensity(runs["flops"], runs["bytes"]), index=runs.index)
        runs = runs.assign(workload_class=bound_class(at, runs["platform"], dict(balance)), precision="float64")
        groups = pd.DataFrame(columns=list(GROUP_COLUMNS))
        fid = tables.get("triad_fidelity")
        if fid is not None and len(fid):
            keys = ["study", "platform", "size"]
            groups = fid.merge(runs.drop_duplicates(keys)[[*keys, "workload_class"]], on=keys, how="left")
        return Scored(runs, groups, "triad")


CASE = TriadCase()


class TriadBound(Model):
    """The triad streams: each processor's part takes its counted bytes x its ``t_b``; the run, the longer part."""

    name = "streaming (triad)"
    cases = ("triad",)
    needs = ("t_b_host", "t_b_accel")
    table = "triad_runs"

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        t = np.fmax(runs["bytes_host"].to_numpy(float) * runs["t_b_host"].to_numpy(float),
                    runs["bytes_accel"].to_numpy(float) * runs["t_b_accel"].to_numpy(float))
        out = runs[[c for c in RUN_COLUMNS if c in runs]].copy()
        out["model"] = pd.Series([self.name] * len(out), index=out.index, dtype="string")
        out["quantity"] = pd.Series(["time"] * len(out), index=out.index, dtype="string")
        out["time_predicted_s"] = t
        return out[np.isfinite(t) & (t > 0)]
