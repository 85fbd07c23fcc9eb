"""Which compute ceiling, and which memory traffic, a run's bound counts on each processor.

Characterisation measures a compute ceiling per kernel class and precision
(:mod:`sims.bench.ceilings`: ``vector`` FMA chains, the backend's ``gemm``), and
each case declares the class each of its phases runs against (``PHASE_KERNELS``
of its job's counts module). Before any model predicts, a case turns a run's
phases into, per processor:

* its flops per (class, precision), and the processor's **effective ceiling**
  ``t_f = sum_k N_f,k t_f,k / sum_k N_f,k`` - the compute time of every phase at
  its own ceiling, divided by the flops, so ``N_f t_f`` is the sum of the phases'
  compute times (a valid lower bound: each phase takes at least its flops at its
  ceiling);
* its **traffic**: the memory traffic the bound counts (the compulsory traffic of
  each phase's kernel; for element-wise code the counted bytes).

:func:`apply` writes them into the joined runs: ``t_f_<role>`` becomes the
effective ceiling (so PerDome/PeaPaw, the energy roofline and every other model
reading ``t_f_<role>`` bound each run against the kernels it ran), and
``traffic_<role>``, ``ceiling_<role>`` (which ceiling, for a reader) are added.
A run whose ceiling was not measured (a platform file older than the ceilings)
gets ``t_f`` null and no prediction, rather than a bound from the wrong kernels.
The published reproductions (:mod:`analysis.cases.published`) keep the papers'
own rules: they never pass through here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from sims.platform_file import ceilings as platform_ceilings
from sims.platform_file import value
from sims.vocab import CEILING_CLASSES as CLASSES
from sims.vocab import CEILING_DTYPES as DTYPES
from sims.vocab import ROLES

#: platform columns: ``t_f_<class>_<dtype>_<role>`` (s/flop), null where not measured
CEILING_COLS = [f"t_f_{cls}_{dt}_{role}" for role in ROLES for cls in CLASSES for dt in DTYPES]


def ceiling_values(proc: Any, role: str) -> dict[str, float]:
    """``{t_f_<class>_<dtype>_<role>: s/flop}`` of one processor entry of a platform file (NaN where missing).

    The vector float32 ceiling is the classic ``t_f`` (the same FMA-chain measurement, stored once).
    """
    out = {f"t_f_{cls}_{dt}_{role}": np.nan for cls in CLASSES for dt in DTYPES}
    if not isinstance(proc, dict):
        return out
    for k, v in platform_ceilings(proc).items():
        if f"t_f_{k}_{role}" in out:
            out[f"t_f_{k}_{role}"] = v
    t_f = value(proc.get("t_f"))  # last: t_f is what every other reader uses
    if t_f is not None:
        out[f"t_f_vector_float32_{role}"] = t_f
    return out


#: what a case's ``work`` function returns for one run: per role, flops per (class, dtype) and the traffic
Work = dict[str, tuple[dict[tuple[str, str], float], float]]


def apply(joined: pd.DataFrame, key: str, work: Callable[[Hashable], Work | None]) -> pd.DataFrame:
    """``joined`` with each processor's effective ceiling (``t_f_<role>``), ``traffic_<role>``, ``traffic`` and
    ``ceiling_<role>``; ``work(k)`` gives the per-role work of the runs whose ``key`` column is ``k`` (None:
    unknown - the row keeps its recorded bytes and the vector float32 ceiling)."""
    if not len(joined):
        out = joined.copy()
        for role in ROLES:
            out[f"traffic_{role}"] = pd.Series(dtype="float64")
            out[f"ceiling_{role}"] = pd.Series(dtype="string")
        out["traffic"] = pd.Series(dtype="float64")
        return out
    out = joined.copy()
    keys = out[key].to_numpy(dtype=object)
    codes = pd.factorize(pd.Series(keys).astype(str))[0]  # one work() call per distinct key
    groups = np.split(np.argsort(codes, kind="stable"), np.cumsum(np.bincount(codes))[:-1])
    works = [work(keys[rows[0]]) for rows in groups]
    for role in ROLES:
        vector = out[f"t_f_vector_float32_{role}"].to_numpy(dtype="float64")
        t_f = np.full(len(out), np.nan)
        traffic = out[f"bytes_{role}"].to_numpy(dtype="float64").copy()
        label = np.full(len(out), None, dtype=object)
        for rows, w in zip(groups, works, strict=True):
            if w is None:
                t_f[rows] = vector[rows]
                label[rows] = "vector float32"
                continue
            flops_by, traf = w[role]
            traffic[rows] = traf
            total = sum(flops_by.values())
            if total <= 0:  # no flops: any finite ceiling leaves N_f t_f = 0
                t_f[rows] = vector[rows]
                label[rows] = "none (no flops)"
                continue
            acc = np.zeros(len(rows))
            for (cls, dt), nf in flops_by.items():
                if nf > 0:
                    acc += nf * out[f"t_f_{cls}_{dt}_{role}"].to_numpy(dtype="float64")[rows]
            t_f[rows] = acc / total  # NaN when a needed ceiling was not measured
            label[rows] = " + ".join(f"{cls} {dt}" for (cls, dt), nf in flops_by.items() if nf > 0)
        out[f"t_f_{role}"] = t_f
        out[f"traffic_{role}"] = traffic
        out[f"ceiling_{role}"] = pd.array(label, dtype="string")
    out["traffic"] = out["traffic_host"] + out["traffic_accel"]
    return out


def matrix_work(params: Mapping[str, Any]) -> Work | None:
    """Per role, the flops per (class, dtype) and the compulsory traffic of an LA or PEACH run, from the rows
    of each phase its record's ``params`` give (:mod:`sims.la.matrix`)."""
    from sims.la import matrix

    try:
        dtype = str(params.get("dtype") or "float32")
        s = matrix.DTYPES[dtype]
        rows = params["rows"]
        n_mm = int(params.get("n_mm") or params.get("n") or 0)
        n_tr = int(params.get("n_tr") or params.get("n") or 0)
        out: Work = {}
        for role in ROLES:
            r = rows.get(role) or {}
            part = matrix.Part(int(r.get("matmul") or 0), int(r.get("transpose") or 0), n_mm, n_tr, s)
            flops = {(matrix.PHASE_KERNELS["matmul"], dtype): float(part.flops)}
            out[role] = (flops, float(part.traffic))
        return out
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
