"""One rank's share of an LA or PEACH run: the partition, the arrays, the kernels and what to record."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sims.job import PhaseJob
from sims.la import kernels, matrix
from sims.platform_file import read_rates


def _rates(platform_file: str | None) -> dict[str, dict[str, float]]:
    if not platform_file:
        raise ValueError("p-DP needs --platform-file (the characterised platform)")
    return read_rates(platform_file)


class MatrixRun(PhaseJob):
    """This rank's part of an LA run (``case: la``) or a PEACH workload run (``case: peach``).

    LA params: ``n_mm``, ``n_tr`` (matrix sizes), ``dtype``. PEACH params:
    ``workload`` (MatrixMultiply | MatrixTranspose), ``n``, ``dtype`` and
    optionally ``frequency: {f_C: GHz, f_G: MHz}``.
    """

    def __init__(self, spec: dict[str, Any], role: str, platform_file: str | None):
        from sims.backends import get_backend

        params = spec["params"]
        self.case = spec["case"]
        dtype = str(params.get("dtype", "float32"))
        if dtype not in matrix.DTYPES:
            raise ValueError(f"params.dtype must be one of {', '.join(matrix.DTYPES)}, got {dtype!r}")
        itemsize = matrix.DTYPES[dtype]
        if self.case == "la":
            rates = _rates(platform_file) if spec["variant"] == "p-DP" else None
            self.parts, self.alpha = matrix.la_partition(spec["variant"], int(params["n_mm"]), int(params["n_tr"]),
                                                         itemsize, rates)
            self.workload = None
        else:
            self.workload = str(params["workload"])
            self.parts, self.alpha = matrix.peach_partition(self.workload, spec["variant"], int(params["n"]), itemsize)
        self.part = self.parts[role]
        proc = spec["layout"][role]
        self.backend = get_backend(proc["backend"], proc.get("device"))
        # BLAS and cuBLAS execute the classical product's 2 n^3 flops; a transpose executes none.
        self.executed = {r: p.flops for r, p in self.parts.items()}
        self.steps, self.rehearsal = [], []
        if not self.part.idle:
            arrays = kernels.allocate(self.backend, self.part, dtype, int(spec["seed"]))
            self.steps = [lambda k=kernels.PHASES[ph], a=arrays: k(self.backend, a) for ph in self.part.phases]
            # the rehearsal (PhaseJob.rehearse): the product on one tile of rows and columns (the run's dtype and
            # layouts); the transpose whole, on the run's own arrays, as a warm-up ran it - its large output's pages
            # are mapped at their first write (a first execution up to 5x slower than the second), here in the
            # transpose's own order. Writing the output again changes nothing the timed executions compute.
            tiny = kernels.allocate(self.backend, replace(self.part, mm_rows=min(self.part.mm_rows, matrix.TILE),
                                                          n_mm=matrix.TILE, tr_rows=0), dtype, int(spec["seed"]))
            self.rehearsal = [lambda k=kernels.PHASES[ph], a=(arrays if ph == "transpose" else tiny):
                              k(self.backend, a) for ph in self.part.phases]

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "alpha": self.alpha,
            "rows": {r: {"matmul": p.mm_rows, "transpose": p.tr_rows} for r, p in self.parts.items()},
            "phases": {r: list(p.phases) for r, p in self.parts.items()},
        }
        if self.workload:
            out["work_unit"] = matrix.PEACH_WORKLOADS[self.workload]
            out["work"] = {r: matrix.work_units(self.workload, p) for r, p in self.parts.items()}
        return out
