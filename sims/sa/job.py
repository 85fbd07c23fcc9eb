"""One rank's share of a synthetic-application run (the job ``sims.run`` drives for ``case: sa``)."""

from __future__ import annotations

from typing import Any

from sims.job import PhaseJob
from sims.platform_file import read_rates
from sims.sa import case

#: elements of the arrays each kernel is rehearsed on (:meth:`sims.job.PhaseJob.rehearse`)
REHEARSAL_ELEMENTS = 64
#: the arrays :func:`sims.sa.kernels.allocate` makes as zeros: VecAdd's output and PowAdd's accumulator
OUTPUTS = ("a", "d")


class SARun(PhaseJob):
    """This rank's share of one synthetic-application run."""

    def __init__(self, spec: dict[str, Any], role: str, platform_file: str | None):
        from sims.backends import get_backend
        from sims.sa import kernels

        params = spec["params"]
        variant = spec["variant"]
        alpha_pdp = None
        if variant == "p-DP":
            if not platform_file:
                raise ValueError("p-DP needs --platform-file (the characterised platform)")
            alpha_pdp = case.pdp_alpha(read_rates(platform_file))
        self.parts, self.alpha = case.partition(variant, int(params["size"]), alpha_pdp)
        self.part = self.parts[role]
        proc = spec["layout"][role]
        self.backend_name = proc["backend"]
        self.backend = get_backend(proc["backend"], proc.get("device"))
        self.executed = {
            r: sum(
                p.elements * kernels.executed_flops_per_element(spec["layout"][r]["backend"], ph)
                for ph in p.phases
            )
            for r, p in self.parts.items()
        }
        self.steps, self.rehearsal, self.outputs = [], [], []
        if not self.part.idle:
            phases, seed = set(self.part.phases), int(spec["seed"])
            arrays = kernels.allocate(self.backend, self.part.elements, phases, seed)
            tiny = kernels.allocate(self.backend, REHEARSAL_ELEMENTS, phases, seed)
            run = [getattr(kernels, phase) for phase in self.part.phases]
            self.steps = [lambda k=k, a=arrays: k(self.backend, a) for k in run]
            self.rehearsal = [lambda k=k, a=tiny: k(self.backend, a) for k in run]
            self.outputs = [arrays[k] for k in OUTPUTS if k in arrays]

    def describe(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "elements": {r: p.elements for r, p in self.parts.items()},
            "phases": {r: list(p.phases) for r, p in self.parts.items()},
        }
