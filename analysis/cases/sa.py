"""The synthetic application (PeaPaw §6.3.1): per element ``a[i] = b[i] + c[i]`` (VecAdd) and
``for j in range(32): d[i] += pow(e[j][i], 63)`` (PowAdd), float32, under every workload partition.

Config ``cases.sa``: ``sizes`` (elements per vector), ``wps`` (CP = VecAdd on the host, PowAdd on the
accelerator; CP-reverse the opposite), ``alphas`` (the DP(alpha) sweep), ``seed``. The job is
:class:`sims.sa.job.SARun`; counts are :mod:`sims.sa.counts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from analysis.cases.wp import WPCase
from analysis.scoring import ceilings
from sims.sa.counts import DTYPE, PHASE_COUNTS, PHASE_KERNELS, POWADD_TERMS
from sims.vocab import ROLES, WPS

SCHEMA = yaml.safe_load(f"""
type: object
additionalProperties: false
default: {{}}
description: PeaPaw's synthetic application (VecAdd + 32 x PowAdd), float32
properties:
  sizes:
    type: array
    minItems: 1
    uniqueItems: true
    items: {{type: integer, minimum: 1, maximum: 1073741824}}
    default: [1048576]
  wps:
    type: array
    uniqueItems: true
    items: {{enum: [{", ".join(WPS)}]}}
    default: [{", ".join(WPS)}]
  alphas:
    type: array
    uniqueItems: true
    items: {{type: number, minimum: 0, maximum: 1}}
    default: [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
  seed:
    type: integer
    minimum: 0
    default: 1
""")


class SACase(WPCase):
    name = "sa"
    title = "synthetic application (VecAdd + PowAdd), PeaPaw §6.3.1"
    order = 10
    schema = SCHEMA
    job = "sims.sa.job:SARun"
    precision = DTYPE

    def phase_work(self, params: Mapping[str, Any]) -> ceilings.Work | None:
        """Both phases are element-wise float32 code: the vector ceiling, their counted bytes as traffic
        (:data:`sims.sa.counts.PHASE_KERNELS`)."""
        try:
            out: ceilings.Work = {}
            for role in ROLES:
                n = float((params["elements"] or {}).get(role) or 0)
                flops: dict[tuple[str, str], float] = {}
                traffic = 0.0
                for ph in (params.get("phases") or {}).get(role) or ():
                    f, b = PHASE_COUNTS[ph]
                    key = (PHASE_KERNELS[ph], DTYPE)
                    flops[key] = flops.get(key, 0.0) + f * n
                    traffic += b * n
                out[role] = (flops, traffic)
            return out
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def data_bytes(self, params: Mapping[str, Any]) -> float:
        # float32: a, b, c and d, and the 32 rows of e (sims.sa.kernels.allocate), all on one rank in CO/GO
        return 4.0 * (4 + POWADD_TERMS) * int(params["size"])


CASE = SACase()
