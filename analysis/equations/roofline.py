"""The single-processor roofline model (Williams et al. 2009), the building block of every hetval model.

All quantities are SI: ``t_f`` in s/flop, ``t_b`` in s/byte, intensities in
flop/byte, counts in flop and byte, results in flop/s or s. Every function
accepts scalars or NumPy arrays and broadcasts them; a call with only scalar
arguments returns a NumPy scalar (a ``float`` subclass).

References
----------
.. [PerDome] L. Tang, X. S. Hu, R. F. Barrett, "PerDome: A Performance Model for
   Heterogeneous Computing Systems", SpringSim-HPC 2015, eq. (1)-(3).
.. [PeaPaw] L. Tang, R. F. Barrett, J. Cook, X. S. Hu, "PeaPaw: Performance and
   Energy-Aware Partitioning of Workload on Heterogeneous Platforms", ACM TODAES
   22(3), 2017, eq. (1)-(2).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["attainable", "energy", "energy_efficiency", "intensity", "time"]


def intensity(N_f: ArrayLike, N_b: ArrayLike) -> NDArray[np.float64]:
    """Operational intensity ``I = N_f / N_b`` in flop/byte ([PerDome]_ eq. 1), elementwise; NaN where no byte is
    counted (the intensity of a workload that moves no data is not defined here)."""
    f = np.asarray(N_f, dtype=np.float64)
    b = np.asarray(N_b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, f / b, np.nan)


def _checked(name: str, value: ArrayLike, *, strictly_positive: bool) -> NDArray[np.float64]:
    """Return ``value`` as a float array, raising ``ValueError`` on NaN, negatives (or zeros)."""
    arr = np.asarray(value, dtype=np.float64)
    # NaN compares False with everything, so test it separately or it would slip through.
    bad = np.isnan(arr) | ((arr <= 0) if strictly_positive else (arr < 0))
    if np.any(bad):
        first = arr[bad].flat[0] if arr.ndim else arr
        need = "> 0" if strictly_positive else ">= 0"
        raise ValueError(
            f"{name} must be {need} and not NaN; got {int(np.count_nonzero(bad))} invalid value(s), "
            f"first {float(first)!r}"
        )
    return arr


def attainable(I: ArrayLike, t_f: ArrayLike, t_b: ArrayLike) -> NDArray[np.float64] | np.float64:  # noqa: E741
    """Attainable performance of one processor under the roofline model.

    .. math:: P = \\frac{1}{t_b \\max\\{t_f / t_b,\\; I^{-1}\\}}

    ([PerDome]_ eq. 3, [PeaPaw]_ eq. 2). It is evaluated in the algebraically
    equal form ``min(1/t_f, I/t_b)`` so that ``I = 0`` (no flops, only data
    movement) gives 0 flop/s instead of a division by zero, and ``I = inf``
    gives the compute peak ``1/t_f``.

    Parameters
    ----------
    I : array_like
        Operational intensity of the work, flop/byte, ``>= 0``.
    t_f : array_like
        Time per flop, s/flop, ``> 0`` (inverse of the peak flop rate).
    t_b : array_like
        Time per byte moved to/from main memory, s/byte, ``> 0`` (inverse of
        the peak bandwidth).

    Returns
    -------
    numpy.ndarray or numpy.float64
        Upper bound on the flop rate, flop/s, broadcast over the inputs.

    Raises
    ------
    ValueError
        If ``I`` is negative or NaN, or ``t_f``/``t_b`` is not positive.

    Examples
    --------
    >>> float(attainable(2.0, 1e-12, 1e-11))  # memory bound: 2 flop/B * 100 GB/s
    200000000000.0
    >>> float(attainable(0.0, 1e-12, 1e-11))
    0.0
    """
    intensity = _checked("I", I, strictly_positive=False)
    tf = _checked("t_f", t_f, strictly_positive=True)
    tb = _checked("t_b", t_b, strictly_positive=True)
    result = np.minimum(1.0 / tf, intensity / tb)
    return result[()] if result.ndim == 0 else result


def time(
    N_f: ArrayLike, N_b: ArrayLike, t_f: ArrayLike, t_b: ArrayLike
) -> NDArray[np.float64] | np.float64:
    """Lower bound on a processor's execution time under the roofline model.

    .. math:: T = \\max\\{N_f t_f,\\; N_b t_b\\}

    ([PerDome]_ eq. 2, [PeaPaw]_ eq. 15-16): computation and memory traffic
    are assumed to overlap perfectly, so the slower of the two sets the time.
    No work (``N_f = N_b = 0``) takes no time.

    Parameters
    ----------
    N_f : array_like
        Number of floating-point operations, flop, ``>= 0``.
    N_b : array_like
        Number of bytes moved to/from main memory, byte, ``>= 0``.
    t_f : array_like
        Time per flop, s/flop, ``> 0``.
    t_b : array_like
        Time per byte, s/byte, ``> 0``.

    Returns
    -------
    numpy.ndarray or numpy.float64
        Execution time, s, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a count is negative or NaN, or ``t_f``/``t_b`` is not positive.

    Examples
    --------
    >>> float(time(1e9, 4e9, 1e-12, 1e-11))
    0.04
    """
    nf = _checked("N_f", N_f, strictly_positive=False)
    nb = _checked("N_b", N_b, strictly_positive=False)
    tf = _checked("t_f", t_f, strictly_positive=True)
    tb = _checked("t_b", t_b, strictly_positive=True)
    result = np.maximum(nf * tf, nb * tb)
    return result[()] if result.ndim == 0 else result


def energy(N_f: ArrayLike, N_b: ArrayLike, e_f: ArrayLike, e_b: ArrayLike, p_s: ArrayLike, t_f: ArrayLike,
           t_b: ArrayLike) -> NDArray[np.float64] | np.float64:
    """Energy roofline (Choi et al. 2013): ``E = e_f N_f + e_b N_b + p_s max(t_f N_f, t_b N_b)`` (J).

    Dynamic energy per flop and per byte plus static power over the roofline
    time. All arguments ``>= 0`` (``t_f``, ``t_b`` ``> 0``); they broadcast.
    """
    nf = _checked("N_f", N_f, strictly_positive=False)
    nb = _checked("N_b", N_b, strictly_positive=False)
    ef = _checked("e_f", e_f, strictly_positive=False)
    eb = _checked("e_b", e_b, strictly_positive=False)
    ps = _checked("p_s", p_s, strictly_positive=False)
    tf = _checked("t_f", t_f, strictly_positive=True)
    tb = _checked("t_b", t_b, strictly_positive=True)
    return ef * nf + eb * nb + ps * np.maximum(tf * nf, tb * nb)


def energy_efficiency(I: ArrayLike, e_f: ArrayLike, e_b: ArrayLike, p_s: ArrayLike, t_f: ArrayLike,  # noqa: E741
                      t_b: ArrayLike) -> NDArray[np.float64] | np.float64:
    """Flops per joule at intensity ``I`` under the energy roofline: ``1 / (e_f + e_b / I + p_s max(t_f, t_b / I))``."""
    i = _checked("I", I, strictly_positive=True)
    return 1.0 / energy(1.0, 1.0 / i, e_f, e_b, p_s, t_f, t_b)
