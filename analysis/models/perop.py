"""Composable per-operation time and energy model (Kannan, Badr, Hamedani, Enright Jerger: "Offloading to the GPU").

Time of a piece of code on a device: ``T = sum_op W_op tau_op + T_transfer`` with
``T_transfer = B_to Q_there + B_from Q_back``; at basic-block granularity the
block's time is ``T_BBL = max(sum_op v_op tau_op, sigma tau_transfer)`` for the
instruction mix ``v_op`` and working set ``sigma``. Energy per unit of work
``E / W = eps_op + pi0 T / W``. ``tau_op`` (s), ``eps_op`` (J) and ``pi0`` (W)
are fitted per operation x data type x device by least squares from
parametrised microbenchmarks (:func:`fit`). Counts may be scalars or arrays
(broadcast); operation names are strings, e.g. ``"float4/add"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def energy_per_work(eps_op: ArrayLike, pi0: ArrayLike, T: ArrayLike, W: ArrayLike):
    """``E / W = eps_op + pi0 T / W`` (J per unit of work)."""
    W = np.asarray(W, dtype=float)
    if np.any(W <= 0):
        raise ValueError("W must be > 0")
    return np.asarray(eps_op, dtype=float) + np.asarray(pi0, dtype=float) * np.asarray(T, dtype=float) / W


def decide(counts: Mapping[str, ArrayLike], tau_host: Mapping[str, float], tau_device: Mapping[str, float],
           B_to: ArrayLike = 0.0, B_from: ArrayLike = 0.0, Q_there: float = 0.0, Q_back: float = 0.0):
    """Offload or not: True where the device's compute plus transfer time beats the host's compute time."""
    return time(counts, tau_device, B_to, B_from, Q_there, Q_back) < compute_time(counts, tau_host)


def fit(samples: Sequence[Mapping[str, Any]], ops: Sequence[str] | None = None, pi0: float | None = None) -> dict[str, Any]:
    """Least-squares per-operation costs from microbenchmark samples of one device.

    Each sample has ``counts`` ({op: v}), ``time_s`` and optionally ``energy_j``
    and ``work``. Time: ``T_i = sum_op v_i,op tau_op + c`` (``c`` the loop
    overhead). Energy, when every sample has it: ``E_i = sum_op v_i,op eps_op
    + pi0 T_i``. ``eps`` and ``pi0`` separate only if the times are not a linear
    function of the counts (samples at other clock rates, or with idle periods);
    otherwise pass ``pi0`` measured at idle and only ``eps`` is fitted, from
    ``E_i - pi0 T_i``. Returns ``tau`` (and ``eps``, ``pi0``), ``intercept_s``,
    R² of each fit, residuals and the samples.
    """
    if not samples:
        raise ValueError("fit needs samples")
    ops = sorted({op for s in samples for op in s["counts"]}) if ops is None else list(ops)
    V = np.array([[float(s["counts"].get(op, 0.0)) for op in ops] for s in samples])
    T = np.array([float(s["time_s"]) for s in samples])
    if np.linalg.matrix_rank(np.hstack([V, np.ones((len(T), 1))])) < len(ops) + 1:
        raise ValueError("the samples do not determine every operation's cost: vary each count independently")
    A = np.hstack([V, np.ones((len(T), 1))])
    coef, *_ = np.linalg.lstsq(A, T, rcond=None)
    pred = A @ coef
    out: dict[str, Any] = {
        "tau": dict(zip(ops, map(float, coef[:-1]), strict=True)), "intercept_s": float(coef[-1]),
        "r2_time": _r2(T, pred), "residuals_s": (T - pred).tolist(), "samples": list(samples),
    }
    if all(s.get("energy_j") is not None for s in samples):
        E = np.array([float(s["energy_j"]) for s in samples])
        if pi0 is None:
            B = np.hstack([V, T[:, None]])
            ecoef, *_ = np.linalg.lstsq(B, E, rcond=None)
            eps, p0, epred = ecoef[:-1], float(ecoef[-1]), B @ ecoef
        else:
            eps, *_ = np.linalg.lstsq(V, E - pi0 * T, rcond=None)
            p0, epred = float(pi0), V @ eps + pi0 * T
        out.update(eps=dict(zip(ops, map(float, eps), strict=True)), pi0=p0,
                   r2_energy=_r2(E, epred), residuals_j=(E - epred).tolist())
    return out


def _r2(y: np.ndarray, pred: np.ndarray) -> float | None:
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - pred) ** 2)) / ss_tot if ss_tot > 0 else None
