"""Online performance projection (Panwar, M.S. thesis, Virginia Tech 2014, chapter 3).

A kernel's time on a device is projected from the device's profile (§3.3.2: instruction
throughput, global-memory throughput, local-memory throughput) and the kernel's counted work
(§3.3.3). The three components are assumed to overlap completely, so the kernel is bound by
the longest (§3.3.4)::

    t_compute = sum_i instructions_i / throughput_i
    t_global  = transactions x transaction_size / throughput      (reads and writes)
    t_local   = the same over local-memory transactions
    T         = max(t_compute, t_global, t_local)

Projections are judged by two metrics (§3.4.2): the device-selection penalty
``|T(B) - T(A)| / T(A)``, the measured time lost by running on the device the projection
recommends (B) instead of the fastest one (A); and the relative error
``||T'_actual - T'_projected|| / sqrt(2)``, where ``T'`` is the vector of the kernel's times on
every device scaled to unit length (0 = the projection has the devices' relative times right;
1 = the largest distance two unit vectors with non-negative entries can have). The thesis has
no equation numbers; sections are cited. It has no data-transfer component: the projection is
of the kernel on a device, its inputs already there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def component_times(flops: ArrayLike, t_f: ArrayLike, global_bytes: ArrayLike, t_b: ArrayLike,
                    local_bytes: ArrayLike = 0.0, t_local: ArrayLike = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t_compute, t_global, t_local)`` in seconds (§3.3.4) from counted work and a profile given as seconds per
    unit (``t_f`` s/flop = 1 / instruction throughput, ``t_b`` and ``t_local`` s/byte = 1 / memory throughput)."""
    compute = np.asarray(flops, dtype=np.float64) * np.asarray(t_f, dtype=np.float64)
    glob = np.asarray(global_bytes, dtype=np.float64) * np.asarray(t_b, dtype=np.float64)
    local = np.asarray(local_bytes, dtype=np.float64) * np.asarray(t_local, dtype=np.float64)
    return compute, glob, local


def project(flops: ArrayLike, t_f: ArrayLike, global_bytes: ArrayLike, t_b: ArrayLike, local_bytes: ArrayLike = 0.0,
            t_local: ArrayLike = 0.0) -> np.ndarray:
    """The projected time ``max(t_compute, t_global, t_local)`` (§3.3.4): the components overlap completely."""
    return np.maximum.reduce(np.broadcast_arrays(*component_times(flops, t_f, global_bytes, t_b, local_bytes,
                                                                     t_local)))


def selection_penalty(actual: ArrayLike, projected: ArrayLike) -> Any:
    """``|T(B) - T(A)| / T(A)`` (§3.4.2): A the device measured fastest, B the one the projection picks (a
    fraction; the thesis prints it x 100). NaN unless both vectors are finite and positive. One workload's
    vectors give a float; ``(W, devices)`` arrays give one value per workload."""
    a, p, valid, one = _pairs(actual, projected)
    rows = np.arange(len(a))
    best, pick = np.argmin(a, axis=1), np.argmin(p, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(valid, np.abs(a[rows, pick] - a[rows, best]) / a[rows, best], np.nan)
    return float(out[0]) if one else out


def relative_error(actual: ArrayLike, projected: ArrayLike) -> Any:
    """``||T'_actual - T'_projected|| / sqrt(2)`` (§3.4.2) with ``T'`` the time vector over devices scaled to unit
    length: 0 when the projection has the devices' relative times right, at most 1 (a fraction; the thesis
    prints it x 100). NaN unless both vectors are finite and positive. One workload's vectors give a float;
    ``(W, devices)`` arrays give one value per workload."""
    a, p, valid, one = _pairs(actual, projected)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit_a = a / np.linalg.norm(a, axis=1, keepdims=True)
        unit_p = p / np.linalg.norm(p, axis=1, keepdims=True)
        out = np.where(valid, np.linalg.norm(unit_a - unit_p, axis=1) / math.sqrt(2.0), np.nan)
    return float(out[0]) if one else out


def _pairs(actual: ArrayLike, projected: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Both as ``(W, devices)`` arrays, which rows are valid (finite, positive, two devices or more), and whether
    one workload's vectors were given."""
    a = np.asarray(actual, dtype=np.float64)
    p = np.asarray(projected, dtype=np.float64)
    one = a.ndim <= 1
    a, p = np.atleast_2d(a.ravel() if one else a), np.atleast_2d(p.ravel() if one else p)
    if a.shape != p.shape or a.shape[1] < 2:
        return np.ones((len(a), 2)), np.ones((len(a), 2)), np.zeros(len(a), dtype=bool), one
    valid = np.all(np.isfinite(a) & np.isfinite(p) & (a > 0) & (p > 0), axis=1)
    return a, p, valid, one
