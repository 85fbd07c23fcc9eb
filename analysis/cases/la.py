"""PeaPaw's linear-algebra case (§6.3.2): ``C = A B`` and ``E = D^T`` as two data-independent phases.

Config ``cases.la``: ``sizes`` (``{matmul: n, transpose: m}`` per run; PeaPaw 1024 and 8192), ``wps``
(CP = transpose on the host, multiply on the accelerator), ``alphas``, ``dtype``, ``seed``. The job is
:class:`sims.la.job.MatrixRun`; counts are :mod:`sims.la.matrix`. The recorded ``size`` is the
elements of the two outputs, ``n^2 + m^2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from analysis.cases.wp import WPCase
from analysis.scoring import ceilings
from sims.la.matrix import LA_WPS

SCHEMA = yaml.safe_load(f"""
type: object
additionalProperties: false
default: {{}}
description: PeaPaw's linear-algebra case (matrix multiply + matrix transpose, two data-independent phases)
properties:
  sizes:
    type: array
    minItems: 1
    description: "matrix sizes per run: {{matmul: n, transpose: m}} (PeaPaw: 1024 and 8192)"
    items:
      type: object
      additionalProperties: false
      required: [matmul, transpose]
      properties:
        matmul: {{type: integer, minimum: 1, maximum: 65536}}
        transpose: {{type: integer, minimum: 1, maximum: 131072}}
    default: [{{matmul: 1024, transpose: 8192}}]
  wps:
    type: array
    uniqueItems: true
    items: {{enum: [{", ".join(LA_WPS)}]}}
    default: [{", ".join(LA_WPS)}]
  alphas:
    type: array
    uniqueItems: true
    items: {{type: number, minimum: 0, maximum: 1}}
    default: []
  dtype:
    enum: [float32, float64]
    default: float32
  seed:
    type: integer
    minimum: 0
    default: 1
""")


class LACase(WPCase):
    name = "la"
    title = "linear algebra (matrix multiply + transpose), PeaPaw §6.3.2"
    order = 20
    schema = SCHEMA
    job = "sims.la.job:MatrixRun"

    def params_of(self, section: Mapping[str, Any], size: Any) -> dict[str, Any]:
        return {"n_mm": int(size["matmul"]), "n_tr": int(size["transpose"]), "dtype": section["dtype"]}

    def size_of(self, params: Mapping[str, Any]) -> int:
        return int(params["n_mm"]) ** 2 + int(params["n_tr"]) ** 2

    def size_label(self, params: Mapping[str, Any], size: Any) -> str:
        if "n_mm" not in params:
            return str(size)
        return f"matmul {int(params['n_mm'])}² + transpose {int(params['n_tr'])}² {params.get('dtype', 'float32')}"

    def phase_work(self, params: Mapping[str, Any]) -> ceilings.Work | None:
        """The product against the GEMM ceiling at the run's precision, with its compulsory traffic; the
        transpose's bytes (:data:`sims.la.matrix.PHASE_KERNELS`)."""
        return ceilings.matrix_work(params)

    def data_bytes(self, params: Mapping[str, Any]) -> float:
        p = params  # A, B, C of the multiply and D, E of the transpose
        return (3 * int(p["n_mm"]) ** 2 + 2 * int(p["n_tr"]) ** 2) * (8 if p.get("dtype") == "float64" else 4)


CASE = LACase()
