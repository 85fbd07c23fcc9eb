"""PeaPaw's partitioning guidelines (§5) checked against measurement: evaluated in validation, shown by the report.

Per platform, its P-Paw category from the characterised machine balances
(eq. 27) and, when ``e_f, e_b, p_s`` are usable, its E-Paw category; per WP
group (study, case, platform, size), whether the WP that measured fastest is one
the P-Paw guideline prescribes, and whether the least-energy WP follows E-Paw.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.equations import hetero, roofline

COLUMNS = ["platform", "study", "case", "size", "size_label", "bl_host", "bl_accel", "p_category", "p_guideline", "e_category",
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


INTENSITIES = ("intensity", "intensity_host", "intensity_accel")


def _counted_intensities(sub: pd.DataFrame) -> dict[str, np.ndarray]:
    """The papers' intensities, flops over their counted bytes: PeaPaw's guidelines are applied as the paper states
    them, with the platform's classic (vector float32) balances - not the bound's traffic and kernel ceilings."""
    return {col: roofline.intensity(pd.to_numeric(sub[f"flops{s}"], errors="coerce").to_numpy(dtype="float64"),
                                    pd.to_numeric(sub[f"bytes{s}"], errors="coerce").to_numpy(dtype="float64"))
            for col, s in zip(INTENSITIES, ("", "_host", "_accel"), strict=True)}


def _groups(sub: pd.DataFrame) -> list[tuple[tuple[Any, Any, Any], list[dict[str, Any]]]]:
    """The runs of ``sub`` per (study, case, size), in key order and run order within a group, as plain
    records (intensities with NaN read as 0; energy NaN when absent)."""
    cols = ["study", "case", "size", "variant", "time_median_s"]
    frame = sub[cols].copy()
    if all(c in sub for c in ("flops", "bytes", "flops_host", "bytes_host", "flops_accel", "bytes_accel")):
        for c, v in _counted_intensities(sub).items():
            frame[c] = v
    else:
        for c in INTENSITIES:
            frame[c] = sub[c]
    frame["size_label"] = sub["size_label"].astype(str) if "size_label" in sub else frame["size"].astype(str)
    frame["energy_median_j"] = (pd.to_numeric(sub["energy_median_j"], errors="coerce")
                                if "energy_median_j" in sub else np.nan)
    for c in INTENSITIES:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").fillna(0.0)
    frame["time_median_s"] = pd.to_numeric(frame["time_median_s"], errors="coerce")
    frame["variant"] = frame["variant"].astype(str)
    groups: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = {}
    names = list(frame.columns)
    missing = frame[["study", "case", "size"]].isna().any(axis=1).tolist()  # as a groupby drops missing keys
    for miss, values in zip(missing, zip(*(frame[c].tolist() for c in names), strict=True), strict=True):
        if not miss:
            rec = dict(zip(names, values, strict=True))
            groups.setdefault((rec["study"], rec["case"], rec["size"]), []).append(rec)
    return sorted(groups.items(), key=lambda kv: kv[0])


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
        for (study, case, size), g in _groups(sub):
            best = min((r for r in g if r["time_median_s"] == r["time_median_s"]),
                       key=lambda r: r["time_median_s"], default=None)
            if best is None:
                continue
            follows = hetero.guideline_followed(p_cat, *(best[c] for c in INTENSITIES))
            prescribed = [r["variant"] for r in g if hetero.guideline_followed(p_cat, *(r[c] for c in INTENSITIES))]
            least = "n/a: no measured energy"
            if all(r["energy_median_j"] == r["energy_median_j"] for r in g):
                best_e = min(g, key=lambda r: r["energy_median_j"])
                if e_cat.startswith("not "):
                    e_follow, why = None, " (E-Paw category unknown)"
                else:
                    e_follow, why = hetero.energy_guideline_followed(e_cat, *(best_e[c] for c in INTENSITIES)), ""
                least = f"{best_e['variant']}: " + ("n/a" if e_follow is None else ("yes" if e_follow else "no")) + why
            rows.append({"platform": plat.platform, "study": study, "case": case, "size": size,
                         "size_label": g[0]["size_label"],
                         "bl_host": host.balance, "bl_accel": accel.balance, "p_category": p_cat,
                         "p_guideline": p_text, "e_category": e_cat, "best_measured": best["variant"],
                         "guideline_wps": ", ".join(prescribed),
                         # with none of the WPs it prescribes run, whether the best follows it cannot be judged
                         "follows": "n/a" if follows is None or not prescribed else ("yes" if follows else "no"),
                         "least_energy": least})
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.astype({c: "string" for c in COLUMNS if c not in ("size", "bl_host", "bl_accel")}).astype(
        {"size": "Int64", "bl_host": "float64", "bl_accel": "float64"})
