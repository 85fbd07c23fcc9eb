"""The report section on PeaPaw's partitioning guidelines: each platform's P-Paw / E-Paw category and whether the measured best WP follows it."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from analysis.models import hetero
from analysis.platforms import energy_fit_problem


def _processor(proc: dict[str, Any]) -> hetero.Processor | None:
    try:
        kw = {k: float(proc[k]["value"]) for k in ("t_f", "t_b")}
    except (KeyError, TypeError, ValueError):
        return None
    if energy_fit_problem(proc):
        return hetero.Processor(**kw)  # an unphysical energy fit is not used (the energy section says so)
    for k in ("e_f", "e_b", "p_s"):
        v = proc.get(k)
        if isinstance(v, dict) and v.get("value") is not None:
            kw[k] = float(v["value"])
    return hetero.Processor(**kw)


def section(platforms: list, validation_dir: Path) -> tuple[str, list[str]]:
    """HTML and summary lines: per platform the categories, per SA group the guideline check."""
    import pandas as pd

    runs_path = Path(validation_dir) / "runs.parquet"
    runs = pd.read_parquet(runs_path) if runs_path.exists() else None
    rows, lines = [], ["PeaPaw partitioning guidelines (P-Paw category; does the measured best WP follow it?):"]
    for plat in platforms:
        procs = plat.data.get("processors") or {}
        host, accel = _processor(procs.get("host") or {}), _processor(procs.get("accel") or {})
        if host is None or accel is None:
            continue
        p_cat, p_text = hetero.performance_category(host, accel)
        try:
            e_cat = hetero.energy_category(host, accel)[0]
        except ValueError:
            problems = [f"{r}: {energy_fit_problem(procs.get(r))}" for r in ("host", "accel")
                        if energy_fit_problem(procs.get(r))]
            e_cat = ("not determined: " + "; ".join(problems) if problems else
                     "not determined: e_f, e_b, p_s not measured (no energy meter during characterisation; "
                     "hetval attach-trace --platform-file fits them from a later trace)")
        sub = None
        if runs is not None and len(runs):
            # one row per run (runs.parquet holds a row per run and model)
            sub = runs[(runs["platform"] == plat.name) & runs["axis_wp"].astype(bool)].drop_duplicates("run_id")
        groups = [] if sub is None or sub.empty else list(sub.groupby(["study", "case", "size"], sort=True))
        if not groups:
            rows.append([plat.name, f"{host.balance:.3g}", f"{accel.balance:.3g}", p_cat, p_text, e_cat, "n/a", "n/a", "n/a",
                         "n/a"])
            lines.append(f"  {plat.name}: {p_cat} (no WP runs to check)")
        for (study, case, size), g in groups:
            best = g.loc[g["time_median_s"].idxmin()]
            i, ic, ig = (float(best[c]) if not math.isnan(float(best[c])) else 0.0
                         for c in ("intensity", "intensity_host", "intensity_accel"))
            follows = hetero.guideline_followed(p_cat, i, ic, ig)
            prescribed = [str(r.variant) for r in g.itertuples() if hetero.guideline_followed(
                p_cat, float(r.intensity), 0.0 if math.isnan(r.intensity_host) else float(r.intensity_host),
                0.0 if math.isnan(r.intensity_accel) else float(r.intensity_accel))]
            verdict = "n/a" if follows is None else ("yes" if follows else "no")
            e_verdict = "n/a: no measured energy"
            if "energy_median_j" in g and g["energy_median_j"].notna().all():
                best_e = g.loc[g["energy_median_j"].idxmin()]
                if e_cat.startswith("not "):
                    e_follow, why = None, " (E-Paw category unknown)"
                else:
                    e_follow, why = hetero.energy_guideline_followed(
                        e_cat, *(0.0 if math.isnan(float(best_e[c])) else float(best_e[c])
                                 for c in ("intensity", "intensity_host", "intensity_accel"))), ""
                e_verdict = (f"{best_e['variant']}: " + ("n/a" if e_follow is None else ("yes" if e_follow else "no"))
                             + why)
                lines.append(f"  {plat.name} {study} {case} size {int(size)}: E-Paw {e_cat}; least energy "
                             f"{best_e['variant']}; follows: {e_verdict}")
            rows.append([plat.name, f"{host.balance:.3g}", f"{accel.balance:.3g}", p_cat, p_text, e_cat,
                         f"{study} / {case} / size {int(size)}: {best['variant']}", ", ".join(prescribed) or "none run", verdict,
                         e_verdict])
            lines.append(f"  {plat.name} {study} {case} size {int(size)}: {p_cat}; measured best {best['variant']}; "
                         f"guideline WPs {', '.join(prescribed) or 'none run'}; follows: {verdict}")
    if not rows:
        note = "No characterised platform with t_f and t_b: no partitioning categories."
        return f'<h2>Partitioning guidelines</h2><p class="missing">{html.escape(note)}</p>', [note]
    from analysis.report import html_table

    table = html_table(["platform", "BL_C = t_bC/t_fC", "BL_G = t_bG/t_fG", "P-Paw category", "guideline",
                        "E-Paw category", "measured best WP", "WPs that follow the guideline", "best follows it",
                        "least-energy WP follows E-Paw"],
                       [[str(c) for c in r] for r in rows])
    return ("<h2>Partitioning guidelines (PeaPaw §5)</h2>" + table +
            '<p class="what">What this shows: each platform\'s P-Paw category from its measured machine balances '
            "(eq. 27) with the paper's guideline, and, per SA/LA study and size, whether the WP that measured fastest "
            "is one the guideline prescribes. PeaPaw itself found its guideline picked the best WP in 2 of 12 "
            "cases (§6.4.3). The E-Paw category needs e_f, e_b, p_s, which only an energy meter provides.</p>"), lines
