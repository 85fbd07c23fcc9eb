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
  each phase's kernel; for element-wise code the counted bytes);
* its **effective bandwidth** ``t_b = (T_stream t_b,triad + sum_k T_k t_b,k) / T`` where
  a phase moves its traffic ``T_k`` with an access pattern that has a bandwidth
  ceiling of its own (the transpose's strided access, ``BANDWIDTH_CLASSES``): the
  memory time of every phase at its own bandwidth, divided by the traffic, so ``T t_b``
  is the sum of the phases' memory times. Where that ceiling was not measured, the
  streaming ``t_b`` stands in (a looser bound, still a bound).

:func:`apply` writes them into the joined runs: ``t_f_<role>`` becomes the
effective ceiling (so PerDome/PeaPaw, the energy roofline and every other model
reading ``t_f_<role>`` bound each run against the kernels it ran), and
``t_b_<role>`` the effective bandwidth, and ``traffic_<role>``, ``ceiling_<role>`` (which ceilings, for a
reader) are added.
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
from sims.vocab import BANDWIDTH_CLASSES, ROLES
from sims.vocab import CEILING_CLASSES as CLASSES
from sims.vocab import CEILING_DTYPES as DTYPES

#: platform columns: ``t_f_<class>_<dtype>_<role>`` (s/flop) and ``t_b_<class>_<dtype>_<role>`` (s/byte, a
#: bandwidth class), null where not measured
CEILING_COLS = ([f"t_f_{cls}_{dt}_{role}" for role in ROLES for cls in CLASSES for dt in DTYPES]
                + [f"t_b_{cls}_{dt}_{role}" for role in ROLES for cls in BANDWIDTH_CLASSES for dt in DTYPES])


def ceiling_values(proc: Any, role: str) -> dict[str, float]:
    """``{t_f_<class>_<dtype>_<role>: s/flop, t_b_<class>_<dtype>_<role>: s/byte}`` of one processor entry of a
    platform file (NaN where missing).

    The vector float32 ceiling is the classic ``t_f`` (the same FMA-chain measurement, stored once).
    """
    out = {f"t_f_{cls}_{dt}_{role}": np.nan for cls in CLASSES for dt in DTYPES}
    out.update({f"t_b_{cls}_{dt}_{role}": np.nan for cls in BANDWIDTH_CLASSES for dt in DTYPES})
    if not isinstance(proc, dict):
        return out
    for k, v in platform_ceilings(proc).items():
        for col in (f"t_f_{k}_{role}", f"t_b_{k}_{role}"):
            if col in out:
                out[col] = v
    t_f = value(proc.get("t_f"))  # last: t_f is what every other reader uses
    if t_f is not None:
        out[f"t_f_vector_float32_{role}"] = t_f
    return out


#: what a case's ``work`` function returns for one run: per role, flops per (class, dtype), the traffic, and
#: optionally the part of the traffic moved by an access class with a bandwidth ceiling, per (class, dtype)
Work = dict[str, tuple[dict[tuple[str, str], float], float] | tuple[dict[tuple[str, str], float], float,
                                                                      dict[tuple[str, str], float]]]


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
        stream = out[f"t_b_{role}"].to_numpy(dtype="float64")
        t_b = stream.copy()
        traffic = out[f"bytes_{role}"].to_numpy(dtype="float64").copy()
        label = np.full(len(out), None, dtype=object)
        for rows, w in zip(groups, works, strict=True):
            if w is None:
                t_f[rows] = vector[rows]
                label[rows] = "vector float32"
                continue
            flops_by, traf, *rest = w[role]
            traffic[rows] = traf
            strided = {k: b for k, b in (rest[0] if rest else {}).items() if b > 0}
            memory = ""
            if strided and traf > 0:
                time = (traf - sum(strided.values())) * stream[rows]
                measured = True
                for (cls, dt), nb in strided.items():
                    col = f"t_b_{cls}_{dt}_{role}"
                    own = out[col].to_numpy(dtype="float64")[rows] if col in out else np.full(len(rows), np.nan)
                    have = np.isfinite(own) & (own > 0)
                    measured &= bool(have.all())
                    time = time + nb * np.where(have, own, stream[rows])
                t_b[rows] = time / traf
                memory = "; " + " + ".join(f"{cls} {dt} bandwidth" for cls, dt in strided) + (
                    "" if measured else " (not measured: the triad's)")
            total = sum(flops_by.values())
            if total <= 0:  # no flops: any finite ceiling leaves N_f t_f = 0
                t_f[rows] = vector[rows]
                label[rows] = "none (no flops)" + memory
                continue
            acc = np.zeros(len(rows))
            for (cls, dt), nf in flops_by.items():
                if nf > 0:
                    acc += nf * out[f"t_f_{cls}_{dt}_{role}"].to_numpy(dtype="float64")[rows]
            t_f[rows] = acc / total  # NaN when a needed ceiling was not measured
            label[rows] = " + ".join(f"{cls} {dt}" for (cls, dt), nf in flops_by.items() if nf > 0) + memory
        out[f"t_f_{role}"] = t_f
        out[f"t_b_{role}"] = t_b
        out[f"traffic_{role}"] = traffic
        out[f"ceiling_{role}"] = pd.array(label, dtype="string")
    out["traffic"] = out["traffic_host"] + out["traffic_accel"]
    return out


def matrix_work(params: Mapping[str, Any]) -> Work | None:
    """Per role, the flops per (class, dtype), the compulsory traffic and its strided part (the transpose's) of
    an LA or PEACH run, from the rows of each phase its record's ``params`` give (:mod:`sims.la.matrix`)."""
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
            strided = {(matrix.PHASE_BANDWIDTH["transpose"], dtype): float(part.transpose_traffic)}
            out[role] = (flops, float(part.traffic), strided)
        return out
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
