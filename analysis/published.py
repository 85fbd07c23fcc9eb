"""The papers' own validation numbers, recomputed through hetval's models from the papers' own inputs.

Each :class:`Claim` is one number (or ordering, or category) a paper prints,
with where it is printed and the inputs it should follow from: a published
platform catalog (``config/platforms/published/*.yaml``, the papers' machine
tables with provenance) and the workload partitions' essential parameters
(PerDome Table 2, PeaPaw §6.3). :func:`evaluate` recomputes every claim with
:mod:`analysis.models.hetero` and says whether it reproduces within the
stated tolerance; nothing is adjusted to match. The validation job writes the
result to ``results/validation/published.parquet`` and the report shows it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import yaml

from analysis.models import hetero

PUBLISHED_DIR = Path(__file__).resolve().parent.parent / "config" / "platforms" / "published"
PERDOME, PEAPAW = "perdome-2015", "peapaw-2017"

# Essential WP parameters (I, I_C, I_G): PerDome Table 2 and PeaPaw §6.3.
WPS = {
    (PERDOME, "SA", "p-DP"): (1.7, 1.7, 1.7), (PERDOME, "SA", "CP"): (1.7, 0.1, 2.0),
    (PERDOME, "DA", "p-DP"): (4.4, 4.4, 4.4), (PERDOME, "DA", "CP1"): (4.4, 0.4, 5.4),
    (PERDOME, "DA", "CP2"): (4.4, 1.5, 9.2),
    (PEAPAW, "SA", "DP"): (7.6, 7.6, 7.6), (PEAPAW, "SA", "CP"): (7.6, 0.1, 8.0),
    (PEAPAW, "LA", "DP"): (0.24, 0.24, 0.24), (PEAPAW, "LA", "CP"): (0.24, 0.0, 0.25),
}


def load_catalog(name: str, directory: Path = PUBLISHED_DIR) -> dict[str, Any]:
    """A published platform catalog: processors (with provenance) and the paper's platforms."""
    path = Path(directory) / f"{name}.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"published platform catalog {path}: {exc.strerror}") from None
    for key in ("paper", "processors", "platforms"):
        if key not in (doc or {}):
            raise ValueError(f"{path}: missing key '{key}'")
    return doc


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
    compare: Callable[[Any, Any], bool]
    inputs: str
    note: str = ""


def _round1(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _within(rel: float) -> Callable[[Any, Any], bool]:
    return lambda ours, pub: math.isclose(float(ours), float(pub), rel_tol=rel)


def _points(abs_tol: float) -> Callable[[Any, Any], bool]:
    """Same sign and within ``abs_tol`` (fractions): published percentages are rounded to integers."""
    return lambda ours, pub: (math.copysign(1.0, ours) == math.copysign(1.0, pub)) and abs(ours - pub) <= abs_tol


def _equal(ours: Any, pub: Any) -> bool:
    return ours == pub


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
    return out


def evaluate(directory: Path = PUBLISHED_DIR) -> list[dict[str, Any]]:
    """Recompute every claim: rows of paper, where, platform, quantity, unit, published, ours, reproduced, inputs, note."""
    cats = {name: load_catalog(name, directory) for name in (PERDOME, PEAPAW)}
    rows = []
    for c in claims():
        ours = c.compute(cats)
        rows.append({
            "paper": c.paper, "where": c.where, "platform": c.platform, "quantity": c.quantity, "unit": c.unit,
            "published": str(c.published), "ours": f"{ours:.4g}" if isinstance(ours, float) else str(ours),
            "reproduced": bool(c.compare(ours, c.published)), "inputs": c.inputs, "note": c.note,
        })
    return rows
