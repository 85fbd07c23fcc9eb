"""A measured machine parameter as a platform file holds it: value, rates, spread and every sample."""

from __future__ import annotations

import statistics
from typing import Any


def spread(samples: list[float]) -> dict[str, float]:
    """min, max and inter-quartile range of ``samples`` (IQR 0 for fewer than 2 samples)."""
    if len(samples) >= 2:
        q = statistics.quantiles(samples, n=4, method="inclusive")
        iqr = q[2] - q[0]
    else:
        iqr = 0.0
    return {"min": min(samples), "max": max(samples), "iqr": iqr}


def parameter(rates: list[float], unit: str, method: str, warmup: int) -> dict[str, Any]:
    """A measured machine parameter: ``value = 1 / median rate``, the rates' median, spread and samples."""
    median = statistics.median(rates)
    return {
        "value": 1.0 / median,
        "unit": unit,
        "obtained": "measured",
        "method": method,
        "rate_median": median,
        "rate_spread": spread(rates),
        "samples": rates,
        "repetitions": len(rates),
        "warmup": warmup,
        "r2": None,
    }
