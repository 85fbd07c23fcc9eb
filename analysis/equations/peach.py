"""PEACH: performance and energy of cooperative hybrid computing split by a fraction ``alpha`` (Ge et al. 2014).

A workload ``W`` is split: ``alpha W`` on the accelerator (rate ``R_G``),
``(1 - alpha) W`` on the host (rate ``R_C``), eq. 1-5. Everything is
vectorised: ``alpha`` and the parameters broadcast as NumPy arrays. Units are
the caller's, consistently (e.g. W in GFLOP, R in GFLOP/s, P in W: energy in
J, efficiency in GFLOP/J = GFLOPS/W).

Offload overhead ``T_OH`` (eq. 6-7) is paid only when work is offloaded
(``alpha > 0``): with nothing on the accelerator there is no transfer or
launch. The hosting power ``P_OH`` (eq. 11) is drawn while the accelerator's
part outlasts the host's, ``max(T_G - T_C, 0)``, as eq. 11-12 write it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

OBJECTIVES = ("performance", "energy")


def _positive(name: str, value: ArrayLike) -> np.ndarray:
    a = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must be finite and positive, got {value!r}")
    return a


def _nonnegative(name: str, value: ArrayLike) -> np.ndarray:
    a = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return a


def _alpha(alpha: ArrayLike) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if not np.all(np.isfinite(a)) or np.any((a < 0) | (a > 1)):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return a


def times(alpha: ArrayLike, R_C: ArrayLike, R_G: ArrayLike, T_OH: ArrayLike = 0.0, W: ArrayLike = 1.0):
    """``(T_C, T_G, T)``: host time, accelerator time and the run's time (eq. 4-6)."""
    a = _alpha(alpha)
    R_C, R_G, W = _positive("R_C", R_C), _positive("R_G", R_G), _positive("W", W)
    T_OH = _nonnegative("T_OH", T_OH)
    T_C = (1.0 - a) * W / R_C
    T_G = a * W / R_G
    T = np.maximum(T_C, np.where(a > 0, T_G + T_OH, 0.0))
    return T_C, T_G, T


def rate(alpha: ArrayLike, R_C: ArrayLike, R_G: ArrayLike, T_OH: ArrayLike = 0.0, W: ArrayLike = 1.0):
    """Compute rate ``R = W / T`` of the split (eq. 7; eq. 8 when ``T_OH = 0``)."""
    _, _, T = times(alpha, R_C, R_G, T_OH, W)
    return np.asarray(W, dtype=float) / T


def energy(alpha: ArrayLike, R_C: ArrayLike, R_G: ArrayLike, P0: ArrayLike, Pd_C: ArrayLike, Pd_G: ArrayLike,
           P_OH: ArrayLike = 0.0, T_OH: ArrayLike = 0.0, W: ArrayLike = 1.0):
    """System energy ``E = T P0 + T_C Pd_C + T_G Pd_G + max(T_G - T_C, 0) P_OH`` (eq. 11)."""
    T_C, T_G, T = times(alpha, R_C, R_G, T_OH, W)
    P0, Pd_C, Pd_G = _nonnegative("P0", P0), _nonnegative("Pd_C", Pd_C), _nonnegative("Pd_G", Pd_G)
    P_OH = _nonnegative("P_OH", P_OH)
    return T * P0 + T_C * Pd_C + T_G * Pd_G + np.maximum(T_G - T_C, 0.0) * P_OH


def efficiency(alpha: ArrayLike, R_C: ArrayLike, R_G: ArrayLike, P0: ArrayLike, Pd_C: ArrayLike, Pd_G: ArrayLike,
               P_OH: ArrayLike = 0.0, T_OH: ArrayLike = 0.0, W: ArrayLike = 1.0):
    """Energy efficiency ``eta = W / E`` (eq. 12; with ``T_OH`` through eq. 6 and 11)."""
    return np.asarray(W, dtype=float) / energy(alpha, R_C, R_G, P0, Pd_C, Pd_G, P_OH, T_OH, W)


def _candidates(R_C: np.ndarray, R_G: np.ndarray, T_OH: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Where the piecewise-linear time and energy can have their optimum, one row per system in ascending order:
    the ends and the breakpoints ``T_C = T_G + T_OH`` and ``T_C = T_G`` (the hosting term); NaN where a
    breakpoint lies outside (0, 1)."""
    a, b, t = 1.0 / R_C, 1.0 / R_G, T_OH / W
    inner = np.stack([(a - t) / (a + b), a / (a + b)], axis=-1)
    inner = np.where((inner > 0.0) & (inner < 1.0), inner, np.nan)
    ends = np.ones(inner.shape[:-1] + (1,))
    return np.concatenate([np.zeros_like(ends), inner, ends], axis=-1)


def best_alphas(objective: str, R_C: ArrayLike, R_G: ArrayLike, P0: ArrayLike = 0.0, Pd_C: ArrayLike = 0.0,
                Pd_G: ArrayLike = 0.0, P_OH: ArrayLike = 0.0, T_OH: ArrayLike = 0.0, W: ArrayLike = 1.0,
                step: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`best_alpha` of many systems at once (the parameters broadcast): arrays ``(alpha, rate, efficiency)``."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    # checked as given, in the order the single-system functions check them
    R_C, R_G, W = _positive("R_C", R_C), _positive("R_G", R_G), _positive("W", W)
    T_OH = _nonnegative("T_OH", T_OH)
    P0, Pd_C, Pd_G, P_OH = (_nonnegative(k, v) for k, v in (("P0", P0), ("Pd_C", Pd_C), ("Pd_G", Pd_G),
                                                            ("P_OH", P_OH)))
    params = np.broadcast_arrays(R_C, R_G, P0, Pd_C, Pd_G, P_OH, T_OH, W)
    if step is None:
        grid = _candidates(params[0], params[1], params[6], params[7])
    else:
        if not 0 < step <= 1:
            raise ValueError(f"step must lie in (0, 1], got {step!r}")
        n = int(round(1.0 / step))
        if not np.isclose(n * step, 1.0):
            raise ValueError(f"step must divide 1 (0.01, 0.02, 0.05, 0.1, ...), got {step!r}")
        grid = np.broadcast_to(np.linspace(0.0, 1.0, n + 1), params[0].shape + (n + 1,))
    R_C, R_G, P0, Pd_C, Pd_G, P_OH, T_OH, W = (v[..., None] for v in params)
    valid = ~np.isnan(grid)
    at = np.where(valid, grid, 0.0)
    r = rate(at, R_C, R_G, T_OH, W)
    with np.errstate(divide="ignore"):
        eta = W / energy(at, R_C, R_G, P0, Pd_C, Pd_G, P_OH, T_OH, W)
    score = np.where(valid, r if objective == "performance" else eta, -np.inf)
    top = np.max(score, axis=-1, keepdims=True)
    best = np.argmax(np.isclose(score, top, rtol=1e-12, atol=0.0) & valid, axis=-1)[..., None]

    def pick(v: np.ndarray) -> np.ndarray:
        return np.take_along_axis(np.broadcast_to(v, grid.shape), best, axis=-1)[..., 0]

    return pick(at), pick(r), pick(eta)


def best_alpha(objective: str, R_C: float, R_G: float, P0: float = 0.0, Pd_C: float = 0.0, Pd_G: float = 0.0,
               P_OH: float = 0.0, T_OH: float = 0.0, W: float = 1.0, step: float | None = None) -> tuple[float, float, float]:
    """The split maximising performance or energy efficiency: ``(alpha, rate, efficiency)``.

    ``step=None``: the continuous optimum. For performance it is eq. 13,
    ``alpha_perf = R_G / (R_C + R_G)``, when ``T_OH = 0`` (with an overhead, the
    point where host and accelerator plus overhead finish together, unless not
    offloading at all is faster). For energy, eq. 15 minimises a piecewise-linear
    function of ``alpha``, so its minimum lies at an end (0 or 1) or a breakpoint;
    those points are evaluated exactly. With a ``step`` the search is over the
    grid ``0, step, 2 step, ..., 1`` as the papers' tables were made. Ties go to
    the smallest ``alpha`` (the least offloading).

    The efficiency returned needs ``P0``, ``Pd_C``, ``Pd_G``; with all zero it is ``inf``.
    Many systems at once: :func:`best_alphas`.
    """
    alpha, r, eta = best_alphas(objective, R_C, R_G, P0, Pd_C, Pd_G, P_OH, T_OH, W, step)
    return float(alpha), float(r), float(eta)
