"""The papers' own validation numbers, recomputed through hetval's models from the papers' own inputs.

Each :class:`Claim` is one number (or ordering, or category) a paper prints,
with where it is printed and the inputs it should follow from: a published
platform catalog (``analysis/resources/published/machines/*.yaml``, the papers' machine
tables with provenance) and the workload partitions' essential parameters
(PerDome Table 2, PeaPaw §6.3). :func:`evaluate` recomputes every claim with
:mod:`analysis.equations.hetero` and says whether it reproduces within the
stated tolerance; nothing is adjusted to match. The validation job writes the
result to ``results/validation/published.parquet`` and the report shows it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from analysis.equations import hetero, peach
from analysis.resources import PUBLISHED_MACHINES
from sims.yamlfile import load_mapping

PERDOME, PEAPAW, PEACH = "perdome-2015", "peapaw-2017", "peach-2014"

# Essential WP parameters (I, I_C, I_G): PerDome Table 2 and PeaPaw §6.3.
WPS = {
    (PERDOME, "SA", "p-DP"): (1.7, 1.7, 1.7), (PERDOME, "SA", "CP"): (1.7, 0.1, 2.0),
    (PERDOME, "DA", "p-DP"): (4.4, 4.4, 4.4), (PERDOME, "DA", "CP1"): (4.4, 0.4, 5.4),
    (PERDOME, "DA", "CP2"): (4.4, 1.5, 9.2),
    (PEAPAW, "SA", "DP"): (7.6, 7.6, 7.6), (PEAPAW, "SA", "CP"): (7.6, 0.1, 8.0),
    (PEAPAW, "LA", "DP"): (0.24, 0.24, 0.24), (PEAPAW, "LA", "CP"): (0.24, 0.0, 0.25),
}


def load_yaml(path: Path, what: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """A YAML mapping of published data at ``path`` with the top-level ``keys``; errors name the file and key."""
    doc = load_mapping(path, what)  # a YAMLFileError is a ValueError with a one-line message
    for key in keys:
        if key not in doc:
            raise ValueError(f"{path}: missing key '{key}'")
    return doc


def load_catalog(name: str, directory: Path = PUBLISHED_MACHINES) -> dict[str, Any]:
    """A published platform catalog: processors (with provenance) and the paper's platforms."""
    return load_yaml(Path(directory) / f"{name}.yaml", "published platform catalog", ("paper", "table"))


def processor(catalog: dict[str, Any], name: str) -> hetero.Processor:
    """The :class:`hetero.Processor` of catalog entry ``name`` (energy parameters when published)."""
    try:
        entry = catalog["processors"][name]
    except KeyError:
        raise ValueError(f"{catalog['paper']}: no processor {name!r}") from None
    value = {k: float(entry[k]["value"]) for k in ("t_f", "t_b", "e_f", "e_b", "p_s") if k in entry}
    return hetero.Processor(**value)


def pair(catalog: dict[str, Any], platform: str) -> tuple[hetero.Processor, hetero.Processor]:
    """(host, accel) of one of the paper's platforms."""
    try:
        p = catalog["platforms"][platform]
    except KeyError:
        raise ValueError(f"{catalog['paper']}: no platform {platform!r}") from None
    return processor(catalog, p["host"]), processor(catalog, p["accel"])


@dataclass(frozen=True)
class Claim:
    """One published number and how to recompute it.

    ``compute(catalogs)`` returns the recomputed value; ``compare(ours,
    published)`` decides whether it reproduces. ``inputs`` names the tables
    it is computed from.
    """

    paper: str
    where: str
    platform: str
    quantity: str
    unit: str
    published: Any
    compute: Callable[[dict[str, dict[str, Any]]], Any]
    compare: Tolerance
    inputs: str
    note: str = ""


def _round1(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


@dataclass(frozen=True)
class Tolerance:
    """How close a recomputed number must come to the published one: ``relative`` (|ours / published - 1| <=
    value), ``absolute`` (same sign and |ours - published| <= value: percentages the paper rounds) or ``exact``
    (equal: integers, orderings, categories)."""

    kind: str
    value: float = 0.0

    def __call__(self, ours: Any, pub: Any) -> bool:
        if self.kind == "relative":
            return math.isclose(float(ours), float(pub), rel_tol=self.value)
        if self.kind == "absolute":
            return (math.copysign(1.0, ours) == math.copysign(1.0, pub)) and abs(ours - pub) <= self.value
        return bool(ours == pub)

    def describe(self) -> str:
        if self.kind == "relative":
            return f"relative {self.value:.0%}" if self.value >= 0.01 else f"relative {self.value:g}"
        if self.kind == "absolute":
            return f"absolute {self.value:g}, same sign"
        return "exact"

    def difference(self, ours: Any, pub: Any) -> float | None:
        """ours against published on this tolerance's scale (relative: ours / published - 1; absolute and exact
        numbers: ours - published); None for text."""
        try:
            o, p = float(ours), float(pub)
        except (TypeError, ValueError):
            return None
        if self.kind == "relative":
            return o / p - 1.0 if p else None
        return o - p


def _within(rel: float) -> Tolerance:
    return Tolerance("relative", rel)


def _points(abs_tol: float) -> Tolerance:
    """Same sign and within ``abs_tol`` (fractions): published percentages are rounded to integers."""
    return Tolerance("absolute", abs_tol)


_equal = Tolerance("exact")


def _bound(paper: str, case: str, wp: str, platform: str) -> Callable[[dict], float]:
    def f(cats: dict) -> float:
        host, accel = pair(cats[paper], platform)
        return float(hetero.performance(*WPS[(paper, case, wp)], host, accel)) / 1e9
    return f


def _relative(paper: str, metric: str, case: str, wp: str, ref: str, platform: str) -> Callable[[dict], float]:
    def f(cats: dict) -> float:
        host, accel = pair(cats[paper], platform)
        model = getattr(hetero, metric)
        return float(model(*WPS[(paper, case, wp)], host, accel) / model(*WPS[(paper, case, ref)], host, accel) - 1.0)
    return f


def _ordering(platform: str) -> Callable[[dict], str]:
    def f(cats: dict) -> str:
        host, accel = pair(cats[PERDOME], platform)
        names = ("p-DP", "CP1", "CP2")
        values = {n: float(hetero.performance(*WPS[(PERDOME, "DA", n)], host, accel)) for n in names}
        return " > ".join(sorted(names, key=lambda n: -values[n]))
    return f


def _balance(paper: str, platform: str, role: str) -> Callable[[dict], float]:
    def f(cats: dict) -> float:
        host, accel = pair(cats[paper], platform)
        return _round1((host if role == "host" else accel).balance)
    return f


def _p_category(paper: str, platform: str) -> Callable[[dict], str]:
    return lambda cats: hetero.performance_category(*pair(cats[paper], platform))[0]


def _e_category(platform: str) -> Callable[[dict], str]:
    return lambda cats: hetero.energy_category(*pair(cats[PEAPAW], platform))[0]


def _gradient(platform: str, which: int) -> Callable[[dict], float]:
    return lambda cats: hetero.gradient_energies(*pair(cats[PEAPAW], platform))[which] / 1e-12


def _static(platform: str) -> Callable[[dict], float]:
    def f(cats: dict) -> float:
        host, accel = pair(cats[PEAPAW], platform)
        return float(host.p_s + accel.p_s)
    return f


def _peach_system(cats: dict, system: str) -> dict[str, float]:
    sys_ = cats[PEACH]["systems"][system]
    v = {k: float(sys_[k]["value"]) for k in sys_}
    return {"R_C": v["R_C"], "R_G": v["R_G"], "P0": v["P0_C"] + v["P0_M"] + v["P0_G"], "Pd_C": v["Pd_C"],
            "Pd_G": v["Pd_G"], "P_OH": v["P_OH"]}


def _peach_best(system: str, objective: str) -> Callable[[dict], int]:
    """Table VI: the optimal split as the paper prints it, the GPU share in whole percent."""
    def f(cats: dict) -> int:
        a, _, _ = peach.best_alpha(objective, **_peach_system(cats, system))
        return round(100 * a)
    return f


@functools.cache
def _best_on_grid(objective: str, R_C: float, R_G: float, P0: float, Pd_C: float, Pd_G: float,
                  P_OH: float) -> tuple[float, float, float]:
    """One Table VII optimum, computed once for the three claims (alpha, R, eta) of its cell."""
    return peach.best_alpha(objective, R_C, R_G, P0, Pd_C, Pd_G, P_OH, step=0.02)


def _peach_dvfs(f_c: float, f_g: float, objective: str, which: int) -> Callable[[dict], float]:
    """Table VII: best split on a 2 % grid at (f_C, f_G) from the §VII-A fits; ``which``: 0 alpha %, 1 R, 2 eta."""
    def f(cats: dict) -> float:
        d = cats[PEACH]["dvfs"]
        lin = lambda k, x: d[k]["slope"] * x + d[k]["intercept"]  # noqa: E731
        p0 = float(cats[PEACH]["systems"]["System-I"]["P0_C"]["value"]) + float(
            cats[PEACH]["systems"]["System-I"]["P0_M"]["value"]) + float(d["P0_G"]["value"])
        out = _best_on_grid(objective, lin("R_C", f_c), lin("R_G", f_g), p0, lin("Pd_C", f_c), lin("Pd_G", f_g),
                            float(d["P_OH"]["value"]))
        return float(round(100 * out[0])) if which == 0 else float(out[which])
    return f


# PEACH Table VII: rows f_C (GHz), columns f_G (MHz); per cell (alpha %, R GFLOP/s, eta GFLOP/s/W),
# best performance then best energy efficiency.
PEACH_TABLE_VII = {
    2.6: [((78, 1336, 2.58), (100, 1052, 3.23)), ((78, 1275, 2.56), (100, 994, 3.18)),
          ((76, 1225, 2.47), (100, 955, 3.15)), ((76, 1206, 2.48), (100, 916, 3.11))],
    2.4: [((80, 1316, 2.69), (100, 1052, 3.23)), ((80, 1243, 2.66), (100, 994, 3.18)),
          ((78, 1225, 2.60), (100, 955, 3.15)), ((78, 1175, 2.58), (100, 916, 3.11))],
    2.2: [((82, 1284, 2.80), (100, 1052, 3.23)), ((80, 1243, 2.72), (100, 994, 3.18)),
          ((80, 1194, 2.70), (100, 955, 3.15)), ((80, 1145, 2.68), (100, 916, 3.11))],
    2.0: [((82, 1264, 2.85), (100, 1052, 3.23)), ((82, 1212, 2.84), (100, 994, 3.18)),
          ((82, 1165, 2.82), (100, 955, 3.15)), ((80, 1138, 2.75), (100, 916, 3.11))],
    1.8: [((84, 1253, 3.00), (100, 1052, 3.23)), ((84, 1184, 2.96), (100, 994, 3.18)),
          ((82, 1141, 2.88), (100, 955, 3.15)), ((82, 1118, 2.89), (100, 916, 3.11))],
    1.6: [((86, 1224, 3.13), (100, 1052, 3.23)), ((86, 1156, 3.09), (100, 994, 3.18)),
          ((84, 1137, 3.05), (100, 955, 3.15)), ((84, 1091, 3.02), (100, 916, 3.11))],
    1.4: [((88, 1196, 3.27), (88, 1196, 3.27)), ((86, 1151, 3.23), (86, 1151, 3.23)),
          ((86, 1111, 3.20), (86, 1111, 3.20)), ((86, 1066, 3.17), (86, 1066, 3.17))],
    1.2: [((90, 1169, 3.42), (90, 1169, 3.42)), ((88, 1130, 3.41), (88, 1130, 3.41)),
          ((88, 1086, 3.37), (88, 1086, 3.37)), ((88, 1041, 3.33), (88, 1041, 3.33))],
}
PEACH_FG = (705, 666, 640, 614)


def claims() -> list[Claim]:
    """Every published claim hetval recomputes."""
    out: list[Claim] = []
    pd_in = "PerDome Tables 1-2"
    out += [
        Claim(PERDOME, "Model Validation (Fig. 2a text)", "i7+750", "SA p-DP bound", "GFLOP/s", 128.0,
              _bound(PERDOME, "SA", "p-DP", "i7+750"), _within(0.01), pd_in),
        Claim(PERDOME, "Model Validation (Fig. 2a text)", "i7+750", "SA CP bound", "GFLOP/s", 136.0,
              _bound(PERDOME, "SA", "CP", "i7+750"), _within(0.01), pd_in),
    ]
    for platform, pub, note in (
        ("i7+750", 0.14, "the paper's own 128 and 136 GFLOP/s give +6 %: the text contradicts its figure"),
        ("i3+750", 0.17, ""), ("i7+Titan", -0.61, ""), ("i3+Titan", -0.65, ""),
    ):
        out.append(Claim(PERDOME, "Model Validation (fidelity)", platform, "SA CP bound vs p-DP", "fraction", pub,
                         _relative(PERDOME, "performance", "SA", "CP", "p-DP", platform), _points(0.015), pd_in, note))
    out.append(Claim(PERDOME, "Model Validation (fidelity)", "i7+750", "DA CP1 bound vs p-DP", "fraction", 0.07,
                     _relative(PERDOME, "performance", "DA", "CP1", "p-DP", "i7+750"), _points(0.015), pd_in))
    for platform in ("i7+Titan", "i3+750", "i3+Titan"):
        out.append(Claim(PERDOME, "Model Validation (fidelity)", platform, "DA bound ordering", "", "p-DP > CP1 > CP2",
                         _ordering(platform), _equal, pd_in))
    # PeaPaw Table V: balances and P-Paw categories
    table_v = {"i7+Titan": (0.9, 10.3), "i7+750": (0.9, 7.8), "i3+Titan": (0.4, 10.3), "i3+750": (0.4, 7.8)}
    for platform, (bl_c, bl_g) in table_v.items():
        for role, pub in (("host", bl_c), ("accel", bl_g)):
            q = "BL_C" if role == "host" else "BL_G"
            out.append(Claim(PEAPAW, "Table V", platform, q, "flop/byte", pub, _balance(PEAPAW, platform, role),
                             _equal, "PeaPaw Table IV", "rounded to one decimal"))
            out.append(Claim(PEAPAW, "Table V", platform, q, "flop/byte", pub, _balance(PERDOME, platform, role),
                             _equal, "PerDome Table 1", "the earlier paper's parameters, rounded to one decimal"))
        out.append(Claim(PEAPAW, "Table V", platform, "P-Paw category", "", "CPU_MEM-GPU_COMP",
                         _p_category(PEAPAW, platform), _equal, "PeaPaw Table IV"))
    # PeaPaw Table VI: gradient energies, static power, E-Paw categories
    table_vi = {"i7+Titan": (311.5, 0.65, 89.2, "CPU_MEM-GPU_MEM"), "i7+750": (64.7, 0.85, 29.4, "Race-to-halt"),
                "i3+Titan": (244.0, 0.75, 78.28, "GPU-only"), "i3+750": (50.5, 0.93, 18.48, "GPU-only")}
    for platform, (gf, gb, ps, cat) in table_vi.items():
        out += [
            Claim(PEAPAW, "Table VI", platform, "ΔGP_f (eq. 28)", "pJ", gf, _gradient(platform, 0), _within(0.05),
                  "PeaPaw Table IV"),
            Claim(PEAPAW, "Table VI", platform, "ΔGP_b (eq. 29)", "pJ", gb, _gradient(platform, 1), _within(0.05),
                  "PeaPaw Table IV"),
            Claim(PEAPAW, "Table VI", platform, "p_sC + p_sG", "W", ps, _static(platform), _within(0.01),
                  "PeaPaw Table IV"),
            Claim(PEAPAW, "Table VI", platform, "E-Paw category", "", cat, _e_category(platform), _equal,
                  "PeaPaw Table IV", "categories tested in §5.2's listing order"),
        ]
    # PeaPaw §6.4: CP against DP, estimated performance and energy efficiency
    for metric, case, platform, pub in (
        ("performance", "SA", "i7+Titan", -0.01), ("performance", "SA", "i7+750", -0.16),
        ("performance", "SA", "i3+Titan", 0.03), ("performance", "LA", "i7+Titan", -0.01),
        ("performance", "LA", "i3+Titan", -0.08), ("performance", "LA", "i7+750", -0.15),
        ("performance", "LA", "i3+750", -0.13),
        ("energy_efficiency", "SA", "i7+Titan", 0.02), ("energy_efficiency", "SA", "i3+Titan", 0.01),
        ("energy_efficiency", "SA", "i3+750", 0.02), ("energy_efficiency", "SA", "i7+750", -0.01),
    ):
        where = "§6.4.1" if metric == "performance" else "§6.4.2"
        out.append(Claim(PEAPAW, where, platform, f"{case} CP vs DP, estimated {metric.replace('_', ' ')}", "fraction",
                         pub, _relative(PEAPAW, metric, case, "CP", "DP", platform), _points(0.015),
                         "PeaPaw Table IV, §6.3"))
    # PEACH Table VI: optimal distributions from Table V (eq. 13 and eq. 15, continuous, in whole percent)
    for system, perf, eff in (("System-I", 78, 100), ("System-II", 51, 51)):
        out.append(Claim(PEACH, "Table VI", system, "best-performance GPU share (eq. 13)", "%", perf,
                         _peach_best(system, "performance"), _equal, "PEACH Table V"))
        out.append(Claim(PEACH, "Table VI", system, "best-energy GPU share (eq. 15)", "%", eff,
                         _peach_best(system, "energy"), _equal, "PEACH Table V"))
    # PEACH Table VII: the DVFS-coupled optima from the §VII-A linear fits
    for f_c, cells in PEACH_TABLE_VII.items():
        for f_g, (perf, eff) in zip(PEACH_FG, cells, strict=True):
            where = f"Table VII ({f_c} GHz, {f_g} MHz)"
            for objective, cell in (("performance", perf), ("energy", eff)):
                tag = "best performance" if objective == "performance" else "best efficiency"
                out += [
                    Claim(PEACH, where, "System-I", f"{tag}: GPU share", "%", cell[0],
                          _peach_dvfs(f_c, f_g, objective, 0), _equal, "PEACH §VII-A fits", "2 % grid"),
                    Claim(PEACH, where, "System-I", f"{tag}: rate", "GFLOP/s", cell[1],
                          _peach_dvfs(f_c, f_g, objective, 1), _within(0.01), "PEACH §VII-A fits"),
                    Claim(PEACH, where, "System-I", f"{tag}: efficiency", "GFLOP/s/W", cell[2],
                          _peach_dvfs(f_c, f_g, objective, 2), _within(0.01), "PEACH §VII-A fits"),
                ]
    return out


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(float(x)) else None


def evaluate(directory: Path = PUBLISHED_MACHINES) -> list[dict[str, Any]]:
    """Recompute every claim: rows of paper, where, platform, quantity, unit, published and ours (as text and, for
    numbers, as numbers), the tolerance, their difference on its scale, reproduced, and - when not - the reason,
    inputs, note."""
    cats = {name: load_catalog(name, directory) for name in (PERDOME, PEAPAW, PEACH)}
    rows = []
    for c in claims():
        ours = c.compute(cats)
        ok = bool(c.compare(ours, c.published))
        ours_text = f"{ours:.4g}" if isinstance(ours, float) else str(ours)
        diff = c.compare.difference(ours, c.published)
        reason = "" if ok else (
            f"ours {ours_text} against the published {c.published}: "
            + (f"{diff:+.3g}" + (" relative" if c.compare.kind == "relative" else "") if diff is not None
               else "different") + f", outside the tolerance ({c.compare.describe()})"
            + (f"; {c.note}" if c.note else ""))
        rows.append({
            "paper": c.paper, "where": c.where, "platform": c.platform, "quantity": c.quantity, "unit": c.unit,
            "published": str(c.published), "ours": ours_text,
            "published_value": _number(c.published), "ours_value": _number(ours),
            "tolerance": c.compare.describe(), "difference": diff,
            "reproduced": ok, "reason": reason, "inputs": c.inputs, "note": c.note,
        })
    return rows
