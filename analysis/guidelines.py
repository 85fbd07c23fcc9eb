"""PeaPaw's partitioning guidelines (§5) checked against measurement: evaluated in validation, shown by the report.

Per platform, its P-Paw category from the characterised machine balances
(eq. 27) and, when ``e_f, e_b, p_s`` are usable, its E-Paw category; per WP
group (study, case, platform, size), whether the WP that measured fastest is one
the P-Paw guideline prescribes, and whether the least-energy WP follows E-Paw.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis.models import hetero

COLUMNS = ["platform", "study", "case", "size", "bl_host", "bl_accel", "p_category", "p_guideline", "e_category",
           "best_measured", "guideline_wps", "follows", "least_energy"]
NO_ENERGY = ("not determined: e_f, e_b, p_s not measured (no energy meter during characterisation; "
             "hetval attach-trace --platform-file fits them from a later trace)")


def _processor(row: Any, role: str) -> hetero.Processor | None:
    kw = {p: getattr(row, f"{p}_{role}") for p in ("t_f", "t_b")}
    if not all(v is not None and np.isfinite(v) for v in kw.values()):
        return None
    for p in ("e_f", "e_b", "p_s"):  # NaN when not measured or unusable (an unphysical fit)
        v = getattr(row, f"{p}_{role}", np.nan)
        if v is not None and np.isfinite(v):
            kw[p] = float(v)
    return hetero.Processor(**kw)


def _zero_nan(x: Any) -> float:
    return 0.0 if x is None or math.isnan(float(x)) else float(x)


def evaluate(runs: pd.DataFrame, processors: pd.DataFrame | None) -> pd.DataFrame:
    """One row per WP group with a measured best WP; ``runs`` are a WP model's rows (one per run)."""
    rows: list[dict[str, Any]] = []
    wp = runs[runs["axis_wp"].astype(bool)].drop_duplicates("run_id") if len(runs) else runs
    for plat in (processors.itertuples(index=False) if processors is not None and len(wp) else []):
        host, accel = _processor(plat, "host"), _processor(plat, "accel")
        sub = wp[wp["platform"] == plat.platform] if len(wp) else wp
        if host is None or accel is None or not len(sub):
            continue
        p_cat, p_text = hetero.performance_category(host, accel)
        try:
            e_cat = hetero.energy_category(host, accel)[0]
        except ValueError:
            problems = [f"{r}: {getattr(plat, f'energy_problem_{r}')}" for r in ("host", "accel")
                        if getattr(plat, f"energy_problem_{r}", "")]
            e_cat = "not determined: " + "; ".join(problems) if problems else NO_ENERGY
        for (study, case, size), g in sub.groupby(["study", "case", "size"], sort=True):
            best = g.loc[g["time_median_s"].idxmin()]
            follows = hetero.guideline_followed(p_cat, *(_zero_nan(best[c]) for c in
                                                         ("intensity", "intensity_host", "intensity_accel")))
            prescribed = [str(r.variant) for r in g.itertuples() if hetero.guideline_followed(
                p_cat, _zero_nan(r.intensity), _zero_nan(r.intensity_host), _zero_nan(r.intensity_accel))]
            least = "n/a: no measured energy"
            if "energy_median_j" in g and g["energy_median_j"].notna().all():
                best_e = g.loc[g["energy_median_j"].idxmin()]
                if e_cat.startswith("not "):
                    e_follow, why = None, " (E-Paw category unknown)"
                else:
                    e_follow, why = hetero.energy_guideline_followed(e_cat, *(
                        _zero_nan(best_e[c]) for c in ("intensity", "intensity_host", "intensity_accel"))), ""
                least = f"{best_e['variant']}: " + ("n/a" if e_follow is None else ("yes" if e_follow else "no")) + why
            rows.append({"platform": plat.platform, "study": study, "case": case, "size": size,
                         "bl_host": host.balance, "bl_accel": accel.balance, "p_category": p_cat,
                         "p_guideline": p_text, "e_category": e_cat, "best_measured": str(best["variant"]),
                         "guideline_wps": ", ".join(prescribed), "follows": "n/a" if follows is None else
                         ("yes" if follows else "no"), "least_energy": least})
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.astype({c: "string" for c in COLUMNS if c not in ("size", "bl_host", "bl_accel")}).astype(
        {"size": "float64", "bl_host": "float64", "bl_accel": "float64"})
