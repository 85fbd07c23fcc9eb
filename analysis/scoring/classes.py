"""The workload classes the scorecard groups a case's runs by, for the cases to name theirs with.

* A two-processor run (SA, LA, a PEACH workload) is *memory-bound* when its intensity (flops per byte of its
  counted traffic) lies below its platform's host balance ``t_b / t_f`` (:func:`balances`), else
  *compute-bound* (:func:`bound_class`).
* A multi-rank run falls in a scale band by its rank count (:func:`scale_band`, the bands of
  :data:`analysis.registry.SCALE_BANDS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from analysis.registry import SCALE_BANDS

#: Bytes per element of each precision a case's scored frame names.
WIDTH = {"float32": 4, "float64": 8}


def each(values: pd.Series, how: Callable[[Any], Any]) -> pd.Series:
    """``how`` of every value (``how(None)`` for a missing one), computed once per distinct value (a million runs
    have a handful)."""
    codes, distinct = pd.factorize(values, use_na_sentinel=True)
    mapped = np.array([*map(how, distinct), how(None)], dtype=object)  # code -1 (missing) takes the last
    return pd.Series(mapped[codes], index=values.index)


def scale_band(ranks: Any) -> str:
    """The scale band of a run on ``ranks`` ranks."""
    r = float(ranks) if ranks is not None and not pd.isna(ranks) else math.nan
    if math.isnan(r):
        return "all scales"
    return next(label for top, label in SCALE_BANDS if r <= top)


def balances(processors: pd.DataFrame | None) -> dict[str, float]:
    """Each platform's host balance t_b / t_f (flop per byte)."""
    if processors is None or not len(processors) or not {"t_b_host", "t_f_host"} <= set(processors.columns):
        return {}
    return {str(p): float(b) / float(f) for p, b, f in
            zip(processors["platform"], processors["t_b_host"], processors["t_f_host"], strict=True)
            if f and not pd.isna(f) and not pd.isna(b)}


def bound_class(intensity: pd.Series, platform: pd.Series, balance: dict[str, float]) -> pd.Series:
    """Each run's class by its ``intensity`` against its ``platform``'s host ``balance``: memory-bound below it,
    compute-bound at or above it, ``unknown intensity`` where either is missing."""
    at = each(platform, lambda p: balance.get(str(p))).to_numpy(dtype=float)
    x = intensity.to_numpy(dtype=float)
    known = np.isfinite(x) & np.isfinite(at)
    return pd.Series(np.where(~known, "unknown intensity", np.where(x < at, "memory-bound", "compute-bound")),
                     index=intensity.index)


def with_rounds(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` whose rows calibrated from the study's own runs (PEACH's end points: ``tightness_rounds``, the
    tightness with the calibration of each round alone) take those as their replicates: what the study shares
    for them is its end-point measurements, not the platform's characterisation."""
    if "tightness_rounds" not in frame or not len(frame):
        return frame
    rounds = [list(v) if isinstance(v, (list, tuple, np.ndarray)) and len(v) >= 2 else None
              for v in frame["tightness_rounds"]]
    if not any(r is not None for r in rounds):
        return frame
    have = frame["tightness_replicates"].tolist() if "tightness_replicates" in frame else [None] * len(frame)
    return frame.assign(tightness_replicates=[r if r is not None else h for r, h in zip(rounds, have, strict=True)])
