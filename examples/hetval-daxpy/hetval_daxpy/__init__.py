"""An example hetval plugin: DAXPY (``y = a x + y``, float64) split between the host and the accelerator.

Everything the case is lives in this one module: its config section and schema, its counts and
partition, the job each MPI rank runs under ``sims.run``, and a model of its own. The package's
``pyproject.toml`` registers the case and the model as ``hetval.cases`` / ``hetval.models`` entry
points; once it is installed, ``cases: {daxpy: {...}}`` in a study file runs it, validation scores it
with its own model and with PerDome/PeaPaw, and the report shows it in the WP section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.cases.wp import WPCase
from analysis.models.peapaw import MODEL as PEAPAW
from analysis.registry import Model
from sims.platform_file import read_rates
from sims.vocab import balanced_alpha, data_parallel_alpha, roofline_time

#: Per element: one multiply and one add; x and y loaded and y stored, 8 bytes each.
FLOPS_PER_ELEMENT = 2
BYTES_PER_ELEMENT = 24
WPS = ("CO", "GO", "p-DP")


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


def partition(variant: str, n: int, rates: dict[str, dict[str, float]] | None = None) -> tuple[dict[str, Part], float]:
    """Split ``n`` elements for ``variant`` (CO, GO, p-DP or DP(alpha)); returns the parts and alpha."""
    pdp = None
    if variant == "p-DP" and rates:
        pdp = balanced_alpha(*(roofline_time(FLOPS_PER_ELEMENT, BYTES_PER_ELEMENT, rates[r]["t_f"], rates[r]["t_b"])
                               for r in ("host", "accel")))
    alpha = data_parallel_alpha(variant, pdp, "daxpy", WPS)
    accel = int(round(alpha * n))
    return {"host": Part(n - accel), "accel": Part(accel)}, alpha


class DaxpyRun:
    """This rank's share of one DAXPY run (the job ``sims.run`` loads by name)."""

    def __init__(self, spec: dict[str, Any], role: str, platform_file: str | None):
        from sims.backends import get_backend

        if spec["variant"] == "p-DP" and not platform_file:
            raise ValueError("p-DP needs --platform-file (the characterised platform)")
        rates = read_rates(platform_file) if spec["variant"] == "p-DP" else None
        self.parts, self.alpha = partition(spec["variant"], int(spec["params"]["size"]), rates)
        self.executed = {r: p.flops for r, p in self.parts.items()}
        proc = spec["layout"][role]
        self.backend = get_backend(proc["backend"], proc.get("device"))
        n = self.parts[role].elements
        xp = self.backend.xp
        self.x = xp.asarray(np.linspace(0.0, 1.0, n, dtype=np.float64))
        self.y = xp.asarray(np.ones(n, dtype=np.float64))
        self.a = 1.0000001

    def work(self) -> None:
        # NumPy materialises a x: 16 B/element of traffic beyond the 24 B the algorithm needs (and counts),
        # so a NumPy processor reaches at most 24/40 of the streaming bound.
        self.y += self.a * self.x

    def sync(self) -> None:
        self.backend.synchronize()

    def describe(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "elements": {r: p.elements for r, p in self.parts.items()}}


class DaxpyCase(WPCase):
    name = "daxpy"
    title = "DAXPY y = a x + y (example plugin)"
    schema = {
        "type": "object", "additionalProperties": False,
        "properties": {
            "sizes": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}, "default": [1 << 20]},
            "wps": {"type": "array", "uniqueItems": True, "items": {"enum": list(WPS)}, "default": list(WPS)},
            "alphas": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "default": []},
            "seed": {"type": "integer", "minimum": 0, "default": 1},
        },
    }
    job = "hetval_daxpy:DaxpyRun"
    #: built-in models that also score this case, besides those that name it themselves
    models = (PEAPAW,)


CASE = DaxpyCase()


class StreamingModel(Model):
    """DAXPY is streaming: each processor's part takes its bytes x t_b; the run takes the longer part."""

    name = "streaming (DAXPY)"
    cases = ("daxpy",)
    needs = ("t_b_host", "t_b_accel")

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        """The runs (as the case joined them) with the predicted time: a model only predicts; hetval attaches what
        was measured and the tightness."""
        out = runs.drop(columns=[c for c in runs.columns if c.startswith(("t_f_", "t_b_", "e_f_", "e_b_", "p_s_"))])
        t = np.fmax(runs["bytes_host"].to_numpy(float) * runs["t_b_host"].to_numpy(float),
                    runs["bytes_accel"].to_numpy(float) * runs["t_b_accel"].to_numpy(float))
        out["model"] = pd.Series([self.name] * len(out), index=out.index, dtype="string")
        out["quantity"] = pd.Series(["time"] * len(out), index=out.index, dtype="string")
        out["time_predicted_s"] = t
        out["perf_predicted"] = out["flops"] / t
        return out[np.isfinite(t) & (t > 0)]

