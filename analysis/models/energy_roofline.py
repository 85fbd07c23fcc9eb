"""Choi et al.'s energy roofline against every metered run of the two-processor cases (SA, LA, PEACH)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.equations import roofline
from analysis.registry import Model
from analysis.storage.platforms import ENERGY_COLS, ENERGY_PARAMS

ROOFLINE_ENERGY_MODEL = "energy roofline (Choi)"


#: the model's rows; :func:`analysis.scoring.measured.attach` adds the processor's measured energy before
#: ``energy_predicted_j`` and ``tightness`` and ``rel_error`` after it
ROOFLINE_ENERGY_COLUMNS = ["run_id", "study", "case", "variant", "platform", "size", "alpha", "processor", "flops",
                           "bytes", "traffic", "energy_predicted_j", "energy_source", "model"]


def predict_energy_roofline(runs: pd.DataFrame) -> pd.DataFrame:
    """Choi's energy roofline ``E = e_f N_f + e_b N_b + p_s max(t_f N_f, t_b N_b)`` against metered runs.

    ``N_b`` is the traffic the bound counts and ``t_f`` the ceiling of the kernels the processor ran
    (:mod:`analysis.scoring.ceilings`); ``bytes`` in the rows is the recorded (papers') count, ``traffic`` what was used.

    One row per metered run and *working processor* whose energy the meter
    attributed to it (``energy_<role>_median_j``), with that processor's static
    counts; and a ``node`` row comparing the run's whole measured energy with
    the sum of both processors' energy rooflines. A processor that did no work
    contributes 0 J to the node bound (its idle draw is in the measured node
    energy, not in the bound) and has no row of its own. The roofline is a lower
    bound on energy (the fastest time, the characterised costs), so its tightness, predicted over measured
    energy as everywhere (attached by :mod:`analysis.scoring.measured`), is at most 1 when the model holds.
    A row is about one processor's share of the run's measured energy, or the node's whole.
    Runs without a meter give
    no rows; a working processor without usable ``e_f, e_b, p_s`` (none
    measured, or an unphysical fit) gives no row of its own and no node row.
    """
    out: list[dict[str, Any]] = []
    if len(runs):
        have = runs[runs["energy_median_j"].notna()]
        for row in have.itertuples(index=False):
            per_role: dict[str, tuple[float, float, float | None]] = {}
            counted: dict[str, float] = {}
            idle: set[str] = set()
            for role in ("host", "accel"):
                # the traffic the bound counts and the ceiling of the kernels this processor ran (analysis.scoring.ceilings)
                traffic = f"traffic_{role}" if hasattr(row, f"traffic_{role}") else f"bytes_{role}"
                nf, nb = (float(getattr(row, q) or 0.0) for q in (f"flops_{role}", traffic))
                nf, nb = (0.0 if np.isnan(nf) else nf), (0.0 if np.isnan(nb) else nb)
                recorded = float(getattr(row, f"bytes_{role}") or 0.0)
                counted[role] = 0.0 if np.isnan(recorded) else recorded
                params = [getattr(row, f"{p}_{role}", np.nan) for p in (*ENERGY_PARAMS, "t_f", "t_b")]
                if nf == 0 and nb == 0:
                    pred: float | None = 0.0  # no work: nothing in the bound, whatever the parameters
                    idle.add(role)
                elif all(p is not None and np.isfinite(p) for p in params):
                    pred = float(roofline.energy(nf, nb, *params))
                else:
                    pred = None  # no usable e_f, e_b, p_s for this processor
                per_role[role] = (nf, nb, pred)
            measured = {role: getattr(row, f"energy_{role}_median_j") for role in ("host", "accel")}
            measured["node"] = row.energy_median_j
            counted["node"] = counted["host"] + counted["accel"]
            preds = [v[2] for v in per_role.values()]
            per_role["node"] = (sum(v[0] for v in per_role.values()), sum(v[1] for v in per_role.values()),
                                None if any(p is None for p in preds) else sum(preds))
            for proc in ("host", "accel", "node"):
                m = measured[proc]
                nf, nb, pred = per_role[proc]
                if m is None or not np.isfinite(m) or m <= 0 or pred is None or proc in idle:
                    continue  # an idle processor's bound is 0 J: only the node row compares its draw
                out.append({
                    "run_id": row.run_id, "study": row.study, "case": row.case, "variant": row.variant,
                    "platform": row.platform, "size": row.size, "alpha": row.alpha, "processor": proc,
                    "flops": nf, "bytes": counted[proc], "traffic": nb, "energy_predicted_j": pred,
                    "energy_source": row.energy_source, "model": ROOFLINE_ENERGY_MODEL,
                })
    df = pd.DataFrame(out, columns=ROOFLINE_ENERGY_COLUMNS)
    strings = ["run_id", "study", "case", "variant", "platform", "processor", "energy_source", "model"]
    return df.astype({c: "string" for c in strings}).astype(
        {c: "float64" for c in ROOFLINE_ENERGY_COLUMNS if c not in strings and c != "size"}).astype({"size": "Int64"})


class EnergyRoofline(Model):
    """Per processor and per node: the tightness (predicted / measured energy) of metered runs."""

    name = ROOFLINE_ENERGY_MODEL
    cases = ("sa", "la", "peach")
    needs = ("t_f_host", "t_b_host", "t_f_accel", "t_b_accel", *ENERGY_COLS)
    quantity = "energy"
    table = "energy_roofline"

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_energy_roofline(runs)
