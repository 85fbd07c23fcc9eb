"""Two scorecards side by side: two machines, or two studies of one: which rows agree, which contradict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

#: The keys a row of one machine's scorecard is matched on with another's.
MATCH = ["case", "model", "workload_class"]


def contradicts(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two scorecard rows contradict: one trusts an aspect (tightness or ranking) the other does not
    trust. An undecided or unjudged aspect contradicts nothing."""
    for aspect in ("bounds_verdict", "ranking_verdict"):
        if {str(a.get(aspect)), str(b.get(aspect))} == {"trusted", "not trusted"}:
            return True
    return False


def compare_machines(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Two scorecards side by side (``_a``, ``_b``), matched on :data:`MATCH` (and the platform when both
    scorecards name the same platforms): each side's machine, verdicts and intervals, whether the verdicts agree
    (``same_verdict``) and whether they contradict (:func:`contradicts`), and whether each side's median lies in
    the other's interval (``a_in_b``, ``b_in_a``). Rows one side has and the other lacks are kept, with the
    missing side empty."""
    keys = [*MATCH, "platform"] if set(a["platform"]) == set(b["platform"]) else MATCH
    cols = ["fingerprint", "platform", "verdict", "bounds_verdict", "ranking_verdict", "runs", "tightness_median",
            "tightness_lo", "tightness_hi", "kendall_tau_median", "kendall_tau_lo", "kendall_tau_hi",
            "top1_noise_aware_rate"]
    keep = [c for c in cols if c not in keys and c in a.columns and c in b.columns]
    out = a[[*keys, *keep]].merge(b[[*keys, *keep]], on=keys, how="outer", suffixes=("_a", "_b"))
    out["same_verdict"] = out["verdict_a"] == out["verdict_b"]
    if "bounds_verdict_a" in out:
        out["contradicts"] = [contradicts({"bounds_verdict": r["bounds_verdict_a"], "ranking_verdict": r["ranking_verdict_a"]},
                                          {"bounds_verdict": r["bounds_verdict_b"], "ranking_verdict": r["ranking_verdict_b"]})
                              for r in out.to_dict("records")]
    else:
        out["contradicts"] = False

    def inside(mid: pd.Series, lo: pd.Series, hi: pd.Series) -> pd.Series:
        m, lo_, hi_ = (pd.to_numeric(x, errors="coerce") for x in (mid, lo, hi))
        return ((lo_ <= m) & (m <= hi_)).where(m.notna() & lo_.notna() & hi_.notna())

    out["a_in_b"] = inside(out["tightness_median_a"], out["tightness_lo_b"], out["tightness_hi_b"])
    out["b_in_a"] = inside(out["tightness_median_b"], out["tightness_lo_a"], out["tightness_hi_a"])
    return out.sort_values(keys, kind="stable").reset_index(drop=True)


def describe(table: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame, names: list[Any]) -> list[str]:
    """What ``hetval compare`` prints above the table of two scorecards (``a``, ``b``, read from ``names``): their
    machines, how many rows agree, which contradict, how often each median lies in the other's interval."""
    which = [", ".join(sorted(set(c["fingerprint"].dropna().astype(str)))) or "unknown" for c in (a, b)]
    inside = table[["a_in_b", "b_in_a"]].stack().dropna()
    lines = [f"[hetval compare] scorecards: A = {names[0]} (machine {which[0]}), B = {names[1]} (machine {which[1]}); "
             f"{int(table['same_verdict'].sum())} of {len(table)} rows with the same verdict, "
             f"{int(table['contradicts'].sum())} contradicting (an aspect trusted on one side, not trusted on the "
             f"other); a side's median tightness inside the other's interval in {int(inside.sum())} of "
             f"{len(inside)} cases"]
    for r in table[table["contradicts"]].to_dict("records"):
        lines.append(f"[hetval compare] contradicts: {r['model']}, {r['case']}, {r['workload_class']}: A {r['verdict_a']} "
                     f"(tightness {r['bounds_verdict_a']}, ranking {r['ranking_verdict_a']}), B {r['verdict_b']} "
                     f"(tightness {r['bounds_verdict_b']}, ranking {r['ranking_verdict_b']})")
    return lines
