"""Composable per-operation time and energy model (Kannan, Badr, Hamedani, Enright Jerger: "Offloading to the GPU").

Time of a piece of code on a device: ``T = sum_op W_op tau_op + T_transfer`` with
``T_transfer = B_to Q_there + B_from Q_back``; at basic-block granularity the
block's time is ``T_BBL = max(sum_op v_op tau_op, sigma tau_transfer)`` for the
instruction mix ``v_op`` and working set ``sigma``. Energy per unit of work
``E / W = eps_op + pi0 T / W``. ``tau_op`` (s), ``eps_op`` (J) and ``pi0`` (W)
are fitted per operation x data type x device by least squares from
parametrised microbenchmarks (characterisation, :mod:`sims.bench.ops`, through :mod:`sims.fit`). Counts may be scalars or arrays
(broadcast); operation names are strings, e.g. ``"float4/add"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike


def _checked_tau(tau: Mapping[str, float], ops: Sequence[str]) -> None:
    missing = sorted(set(ops) - set(tau))
    if missing:
        raise ValueError(f"no per-operation cost for {', '.join(missing)} (known: {', '.join(sorted(tau))})")


def compute_time(counts: Mapping[str, ArrayLike], tau: Mapping[str, float]):
    """``sum_op v_op tau_op`` (s) for the operation counts ``counts``."""
    _checked_tau(tau, list(counts))
    total = 0.0
    for op, v in counts.items():
        v = np.asarray(v, dtype=float)
        if np.any(v < 0):
            raise ValueError(f"count of {op!r} must be >= 0")
        total = total + v * float(tau[op])
    return total


def transfer_time(B_to: ArrayLike, B_from: ArrayLike, Q_there: float, Q_back: float):
    """``B_to Q_there + B_from Q_back`` (s): bytes to and from the device times the per-byte costs."""
    return np.asarray(B_to, dtype=float) * Q_there + np.asarray(B_from, dtype=float) * Q_back


def time(counts: Mapping[str, ArrayLike], tau: Mapping[str, float], B_to: ArrayLike = 0.0, B_from: ArrayLike = 0.0,
         Q_there: float = 0.0, Q_back: float = 0.0):
    """``T = T_compute + T_transfer`` (s)."""
    return compute_time(counts, tau) + transfer_time(B_to, B_from, Q_there, Q_back)


def basic_block_time(counts: Mapping[str, ArrayLike], tau: Mapping[str, float], sigma: ArrayLike, tau_transfer: float):
    """``T_BBL = max(sum_op v_op tau_op, sigma tau_transfer)`` (s) of one basic block."""
    return np.maximum(compute_time(counts, tau), np.asarray(sigma, dtype=float) * tau_transfer)
