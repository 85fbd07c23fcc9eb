"""PerDome/PeaPaw bounds on the performance and energy efficiency of a work partition over a host and an accelerator.

A workload partition (WP) is described, as in both papers, by the three
*essential WP parameters*: the operational intensity ``I`` of the whole work
and the intensities ``I_C`` and ``I_G`` of the parts given to the host (CPU)
and to the accelerator (GPU). Because flops and bytes add up over the two
parts, these three numbers fix the shares of flops and bytes on each processor
(PeaPaw eq. 10-13); the system time is the slower processor's roofline time
(eq. 14-17) and the bound is flops over that time (eq. 18-20).

Which formula applies (PeaPaw §4.1-4.2):

* ``I == I_C == I_G`` -- perfect data partitioning (p-DP): the data set is
  split so both processors finish together, and the bound is the sum of the two
  rooflines (PeaPaw eq. 19).
* ``I_C == I, I_G == 0`` -- CPU-only (CO); ``I_C == 0, I_G == I`` --
  accelerator-only (GO). The four-term bound reduces to one processor's
  roofline.
* otherwise ``I_C`` and ``I_G`` lie on opposite sides of ``I`` (a code
  partition) and the four-term bound (PeaPaw eq. 20, PerDome eq. 19) applies.

Partitions no split of the work can produce raise ``ValueError``: both parts
above or both below ``I`` (Lemma 2 of PerDome), or one part at ``I`` while
the other is neither ``0`` nor ``I`` (Lemma 1). Equality with ``I`` is tested
with a relative tolerance of ``1e-9`` so that intensities computed from
rounded counts still select the p-DP/CO/GO cases.

All quantities are SI: ``t_f`` s/flop, ``t_b`` s/byte, ``e_f`` J/flop, ``e_b``
J/byte, ``p_s`` W, intensities flop/byte; results are flop/s or flop/J.
Intensities broadcast as NumPy arrays; processors are scalars.

Why this module is long: it is PerDome and PeaPaw together - performance (eq. 10-20), energy
efficiency (eq. 21-26) and the P-Paw / E-Paw categories and guidelines (§5) share the same
essential-parameter algebra and processor type; each function is one equation family with its
equation numbers and the papers' worked examples in its docstring.

References
----------
.. [PerDome] L. Tang, X. S. Hu, R. F. Barrett, "PerDome: A Performance Model for
   Heterogeneous Computing Systems", SpringSim-HPC 2015.
.. [PeaPaw] L. Tang, R. F. Barrett, J. Cook, X. S. Hu, "PeaPaw: Performance and
   Energy-Aware Partitioning of Workload on Heterogeneous Platforms", ACM TODAES
   22(3), 2017.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from analysis.equations import roofline

__all__ = [
    "RTOL",
    "Processor",
    "dp_performance",
    "energy_category",
    "energy_efficiency",
    "gradient_energies",
    "guideline_followed",
    "pdp_fraction_host",
    "performance",
    "performance_category",
    "performance_counts",
]

#: Relative tolerance of the equality tests (``I_C == I``, ``BL_C == BL_G``).
RTOL = 1e-9

_Float = NDArray[np.float64] | np.float64


@dataclass(frozen=True)
class Processor:
    """Machine parameters of one processor (PeaPaw Table II), SI units.

    Parameters
    ----------
    t_f : float
        Time per flop, s/flop (inverse of the peak flop rate, PeaPaw eq. 5-6).
    t_b : float
        Time per byte moved to/from main memory, s/byte (inverse of the
        measured peak bandwidth).
    e_f : float, optional
        Dynamic energy per flop, J/flop. Needed only by the energy functions.
    e_b : float, optional
        Dynamic energy per byte, J/byte.
    p_s : float, optional
        Static power, W; drawn for the whole run, busy or idle (PeaPaw eq. 22).

    Raises
    ------
    ValueError
        If ``t_f`` or ``t_b`` is not a finite positive number, or an energy
        parameter that is given is negative or not finite. Zero energy
        parameters are allowed, to model a processor whose dynamic or static
        energy is deliberately ignored.
    """

    t_f: float
    t_b: float
    e_f: float | None = None
    e_b: float | None = None
    p_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("t_f", "t_b"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"Processor.{name} must be a finite number > 0; got {value!r}")
            # Store plain floats so that equality, hashing and repr do not depend on the input type.
            object.__setattr__(self, name, value)
        for name in ("e_f", "e_b", "p_s"):
            raw = getattr(self, name)
            if raw is None:
                continue
            value = float(raw)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"Processor.{name} must be a finite number >= 0 or None; got {value!r}")
            object.__setattr__(self, name, value)

    @property
    def balance(self) -> float:
        """Machine balance ``BL = t_b / t_f``, flop/byte (PeaPaw eq. 27).

        The intensity at the roofline's ridge point: work with ``I`` above it
        is compute bound on this processor, below it memory bound.
        """
        return self.t_b / self.t_f

    def attainable(self, I: ArrayLike) -> _Float:  # noqa: E741
        """Roofline bound of this processor at intensity ``I``, flop/s (see :func:`roofline.attainable`)."""
        return roofline.attainable(I, self.t_f, self.t_b)


# --------------------------------------------------------------------------- partitions


class _Shares(NamedTuple):
    """Per-flop work of each processor: flops and bytes on it divided by the total flops ``N_f``."""

    f_host: NDArray[np.float64]
    b_host: NDArray[np.float64]
    f_accel: NDArray[np.float64]
    b_accel: NDArray[np.float64]


def _close(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Relative equality with :data:`RTOL`; exact zero only equals zero."""
    return np.abs(a - b) <= RTOL * np.maximum(np.abs(a), np.abs(b))


def _intensities(I: ArrayLike, I_C: ArrayLike, I_G: ArrayLike) -> tuple[NDArray[np.float64], ...]:  # noqa: E741
    arrays = []
    for name, value in (("I", I), ("I_C", I_C), ("I_G", I_G)):
        arr = np.asarray(value, dtype=np.float64)
        bad = ~np.isfinite(arr) | (arr < 0)
        if np.any(bad):
            first = arr[bad].flat[0] if arr.ndim else arr
            raise ValueError(
                f"{name} must be finite and >= 0 flop/byte; got {int(np.count_nonzero(bad))} "
                f"invalid value(s), first {float(first)!r}"
            )
        arrays.append(arr)
    return tuple(np.broadcast_arrays(*arrays))


def _classify(
    I: NDArray[np.float64], I_C: NDArray[np.float64], I_G: NDArray[np.float64]  # noqa: E741
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """Split the elements into p-DP, CO, GO and code partitions; raise on impossible ones."""
    at_c = _close(I_C, I)
    at_g = _close(I_G, I)
    pdp = at_c & at_g
    co = at_c & (I_G == 0) & ~pdp
    go = at_g & (I_C == 0) & ~pdp
    lemma1 = (at_c | at_g) & ~(pdp | co | go)
    off = ~(at_c | at_g)
    lemma2 = off & (((I_C > I) & (I_G > I)) | ((I_C < I) & (I_G < I)))
    invalid = lemma1 | lemma2
    if np.any(invalid):
        flat = np.flatnonzero(invalid)
        k = int(flat[0])
        i, ic, ig = (float(a.flat[k]) for a in (I, I_C, I_G))
        if lemma1.flat[k]:
            which = "I_C" if at_c.flat[k] else "I_G"
            other = "I_G" if which == "I_C" else "I_C"
            why = (
                f"{which} equals I, so {other} must be 0 (single-processor run) or I (p-DP) "
                "(PerDome Lemma 1)"
            )
        else:
            side = "above" if ic > i else "below"
            why = f"I_C and I_G are both {side} I; no split of the work can do that (PerDome Lemma 2)"
        where = f" at flat index {k}" if I.ndim else ""
        raise ValueError(
            f"{flat.size} invalid workload partition(s) (I, I_C, I_G); first{where}: "
            f"I={i!r}, I_C={ic!r}, I_G={ig!r}: {why}"
        )
    code = off & ~lemma2
    return pdp, co, go, code


def _partition_shares(
    I: NDArray[np.float64],  # noqa: E741
    I_C: NDArray[np.float64],
    I_G: NDArray[np.float64],
    co: NDArray[np.bool_],
    go: NDArray[np.bool_],
    code: NDArray[np.bool_],
) -> _Shares:
    """Per-flop shares for CO, GO and code partitions (PeaPaw eq. 10-13 divided by ``I``).

    Entries outside ``co | go | code`` are NaN; the caller fills them.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        # Share of the bytes on each side (eq. 10-11); only evaluated where I_C != I_G.
        bytes_host = np.where(code, (I - I_G) / (I_C - I_G), np.nan)
        bytes_accel = np.where(code, (I - I_C) / (I_G - I_C), np.nan)
        # CO/GO are set exactly rather than through eq. 10-11, which would divide by a
        # difference that is only equal to I within RTOL.
        bytes_host = np.where(co, 1.0, np.where(go, 0.0, bytes_host))
        bytes_accel = np.where(go, 1.0, np.where(co, 0.0, bytes_accel))
        ic = np.where(co, I, I_C)
        ig = np.where(go, I, I_G)
        # N_f = I N_b, and I > 0 wherever these cases hold (I = 0 forces I_C = I_G = 0, i.e. p-DP).
        return _Shares(
            f_host=ic * bytes_host / I,
            b_host=bytes_host / I,
            f_accel=ig * bytes_accel / I,
            b_accel=bytes_accel / I,
        )


def _time_per_flop(s: _Shares, host: Processor, accel: Processor) -> NDArray[np.float64]:
    """System time per flop of the whole work, ``T_sys / N_f`` (PeaPaw eq. 17-18)."""
    return np.maximum.reduce(
        [host.t_f * s.f_host, host.t_b * s.b_host, accel.t_f * s.f_accel, accel.t_b * s.b_accel]
    )


def _scalar_or_array(a: NDArray[np.float64]) -> _Float:
    return a[()] if a.ndim == 0 else a


# --------------------------------------------------------------------------- performance


def performance(
    I: ArrayLike,  # noqa: E741
    I_C: ArrayLike,
    I_G: ArrayLike,
    host: Processor,
    accel: Processor,
) -> _Float:
    """Upper bound on the flop rate of a workload partition (PeaPaw eq. 19-20).

    * p-DP (``I == I_C == I_G``): the sum of the two rooflines (PeaPaw eq. 19),
      the rate of a data split at which both processors finish together.
    * Any other valid partition, CO and GO included:

      .. math::

         P = \\Big(\\max\\Big\\{ t_{fC}\\frac{I_C (I - I_G)}{I (I_C - I_G)},\\;
                          t_{bC}\\frac{I - I_G}{I (I_C - I_G)},\\;
                          t_{fG}\\frac{I_G (I - I_C)}{I (I_G - I_C)},\\;
                          t_{bG}\\frac{I - I_C}{I (I_G - I_C)} \\Big\\}\\Big)^{-1}

      (PeaPaw eq. 20). For CO/GO it equals the roofline of the one processor
      used. PerDome's eq. 19 prints ``t_{f-C}`` in the third term; the term is
      the accelerator's flop time, and ``t_{fG}`` is used here, as in PeaPaw
      eq. 20. (With the misprint, SA on i7 2600K + GTX 750 would give about
      14 GFLOP/s for PerDome's CP partition instead of the 136 GFLOP/s the
      paper reports.)

    Parameters
    ----------
    I, I_C, I_G : array_like
        Operational intensity of the whole work and of the host's and the
        accelerator's parts, flop/byte, finite and ``>= 0``. ``0`` for a
        processor's part means it does no flops (or, for CO/GO, no work).
        Broadcast against each other.
    host, accel : Processor
        The host (CPU) and the accelerator (GPU).

    Returns
    -------
    numpy.ndarray or numpy.float64
        Bound on ``N_f / T_sys``, flop/s. ``I == 0`` gives 0.

    Raises
    ------
    ValueError
        If an intensity is negative or not finite, or if any element is a
        partition that cannot exist (Lemma 1 or 2); the message gives the
        number of such elements and the first one.

    Examples
    --------
    >>> cpu, gpu = Processor(t_f=1e-11, t_b=1e-11), Processor(t_f=1e-12, t_b=1e-11)
    >>> float(performance(1.0, 1.0, 1.0, cpu, gpu)) / 1e9  # p-DP: 100 + 100 GFLOP/s
    200.0
    """
    i, ic, ig = _intensities(I, I_C, I_G)
    pdp, co, go, code = _classify(i, ic, ig)
    shares = _partition_shares(i, ic, ig, co, go, code)
    with np.errstate(divide="ignore", invalid="ignore"):
        four_term = 1.0 / _time_per_flop(shares, host, accel)
    result = np.where(pdp, host.attainable(i) + accel.attainable(i), four_term)
    return _scalar_or_array(np.asarray(result, dtype=np.float64))


def performance_counts(
    N_fC: ArrayLike,
    N_bC: ArrayLike,
    N_fG: ArrayLike,
    N_bG: ArrayLike,
    host: Processor,
    accel: Processor,
) -> _Float:
    """Upper bound on the flop rate from the flop and byte counts of each side (PeaPaw eq. 17-18).

    .. math::

       T_{sys} = \\max\\{t_{fC} N_{fC},\\, t_{bC} N_{bC},\\, t_{fG} N_{fG},\\, t_{bG} N_{bG}\\},
       \\qquad P = (N_{fC} + N_{fG}) / T_{sys}

    A processor given no work contributes no time, so CO and GO need no
    special case.

    Parameters
    ----------
    N_fC, N_bC : array_like
        Flops and bytes of the host's part, ``>= 0``.
    N_fG, N_bG : array_like
        Flops and bytes of the accelerator's part, ``>= 0``.
    host, accel : Processor
        The host (CPU) and the accelerator (GPU).

    Returns
    -------
    numpy.ndarray or numpy.float64
        Flop rate bound, flop/s.

    Raises
    ------
    ValueError
        If a count is negative or NaN, or if some element has no work at all
        (all four counts zero), for which a rate is undefined.
    """
    t_host = roofline.time(N_fC, N_bC, host.t_f, host.t_b)
    t_accel = roofline.time(N_fG, N_bG, accel.t_f, accel.t_b)
    t_sys = np.maximum(t_host, t_accel)
    flops = np.asarray(N_fC, dtype=np.float64) + np.asarray(N_fG, dtype=np.float64)
    t_sys, flops = np.broadcast_arrays(t_sys, flops)
    if np.any(t_sys == 0):
        raise ValueError(
            f"{int(np.count_nonzero(t_sys == 0))} element(s) have no work at all "
            "(N_fC = N_bC = N_fG = N_bG = 0); their flop rate is undefined"
        )
    return _scalar_or_array(flops / t_sys)


def pdp_fraction_host(I: ArrayLike, host: Processor, accel: Processor) -> _Float:  # noqa: E741
    """Share of the data (hence of the flops and bytes) a perfect data partition gives the host.

    .. math:: x^\\ast = \\frac{P_C(I)}{P_C(I) + P_G(I)}

    with ``P`` the rooflines (PeaPaw eq. 2). Giving each processor work in
    proportion to its rate makes both finish together, which is the p-DP of
    PerDome/PeaPaw; :func:`dp_performance` at this share equals
    :func:`performance` at ``I == I_C == I_G``. It is evaluated as a ratio of
    attainable *byte* rates ``1 / max(I t_f, t_b)`` (the flop rates divided by
    ``I``), which keeps the limit ``I -> 0`` (bandwidth-proportional split)
    well defined.

    Parameters
    ----------
    I : array_like
        Operational intensity, flop/byte, finite and ``>= 0``.
    host, accel : Processor
        The host (CPU) and the accelerator (GPU).

    Returns
    -------
    numpy.ndarray or numpy.float64
        Host share in ``(0, 1)``.
    """
    i = _intensities(I, 0.0, 0.0)[0]
    byte_rate_host = 1.0 / np.maximum(i * host.t_f, host.t_b)
    byte_rate_accel = 1.0 / np.maximum(i * accel.t_f, accel.t_b)
    return _scalar_or_array(byte_rate_host / (byte_rate_host + byte_rate_accel))


def _dp_shares(i: NDArray[np.float64], x: NDArray[np.float64]) -> _Shares:
    """Per-flop shares of a data partition putting share ``x`` of the data on the host (PerDome eq. 20)."""
    # At I = 0 the byte shares are infinite (bytes but no flops); callers map that case to 0.
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_i = 1.0 / i
        return _Shares(f_host=x, b_host=x * inv_i, f_accel=1.0 - x, b_accel=(1.0 - x) * inv_i)


def dp_performance(I: ArrayLike, fraction_host: ArrayLike, host: Processor, accel: Processor) -> _Float:  # noqa: E741
    """Upper bound on the flop rate of a data partition with a given host share (PerDome eq. 20).

    .. math::

       P = \\Big(\\max\\Big\\{ x\\, t_{f-C},\\; \\frac{x}{I} t_{b-C},\\;
                        (1 - x)\\, t_{f-G},\\; \\frac{1 - x}{I} t_{b-G} \\Big\\}\\Big)^{-1},
       \\qquad x = \\frac{N_{f-C}}{N_f}

    Splitting the data set keeps ``I_C = I_G = I``, so the host's share ``x``
    of the data is also its share of the flops and of the bytes. PerDome's
    printed eq. 20 has ``(1 - N_{f-C} / (N_f I)) t_{b-G}`` as the fourth term;
    the accelerator's bytes per flop are ``(N_b - N_{b-C}) / N_f = (1 - x) / I``,
    and that is what is used here (the two agree only at ``I = 1``).
    ``x = 1`` is CO, ``x = 0`` GO and ``x = pdp_fraction_host(I, ...)`` p-DP.

    Parameters
    ----------
    I : array_like
        Operational intensity of the work, flop/byte, finite and ``>= 0``.
    fraction_host : array_like
        Share ``x`` of the data on the host, in ``[0, 1]``.
    host, accel : Processor
        The host (CPU) and the accelerator (GPU).

    Returns
    -------
    numpy.ndarray or numpy.float64
        Flop rate bound, flop/s; 0 where ``I == 0``.

    Raises
    ------
    ValueError
        If ``I`` is invalid or ``fraction_host`` is outside ``[0, 1]`` or NaN.
    """
    i = _intensities(I, 0.0, 0.0)[0]
    x = np.asarray(fraction_host, dtype=np.float64)
    bad = ~((x >= 0) & (x <= 1))
    if np.any(bad):
        raise ValueError(
            f"fraction_host must lie in [0, 1]; got {int(np.count_nonzero(bad))} invalid value(s), "
            f"first {float(x[bad].flat[0] if x.ndim else x)!r}"
        )
    i, x = np.broadcast_arrays(i, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = 1.0 / _time_per_flop(_dp_shares(i, x), host, accel)
    # I = 0 means no flops: the rate is 0 whatever the split (0 * inf above gives NaN at x = 0 or 1).
    return _scalar_or_array(np.where(i == 0, 0.0, rate))


# --------------------------------------------------------------------------- energy


def _require_energy(role: str, proc: Processor) -> tuple[float, float, float]:
    missing = [name for name in ("e_f", "e_b", "p_s") if getattr(proc, name) is None]
    if missing:
        raise ValueError(
            f"the {role} Processor lacks {', '.join(missing)}; energy models need e_f (J/flop), "
            "e_b (J/byte) and p_s (W) on both processors"
        )
    return proc.e_f, proc.e_b, proc.p_s  # type: ignore[return-value]


def energy_efficiency(
    I: ArrayLike,  # noqa: E741
    I_C: ArrayLike,
    I_G: ArrayLike,
    host: Processor,
    accel: Processor,
) -> _Float:
    """Upper bound on the energy efficiency of a workload partition, flop/J (PeaPaw eq. 21-26).

    .. math::

       EE = \\Big(e_{fC}\\frac{N_{fC}}{N_f} + e_{bC}\\frac{N_{bC}}{N_f}
            + e_{fG}\\frac{N_{fG}}{N_f} + e_{bG}\\frac{N_{bG}}{N_f}
            + (p_{sC} + p_{sG}) \\frac{T_{sys}}{N_f}\\Big)^{-1}

    (eq. 25): dynamic energy per flop and byte on each side plus the static
    power of *both* processors over the whole run, since the idle one still
    draws it (eq. 22). The shares come from ``I, I_C, I_G`` through eq. 10-13;
    for p-DP (``I == I_C == I_G``) they are those of the balanced split
    :func:`pdp_fraction_host`, matching :func:`performance`. PeaPaw's printed
    eq. 26 drops the factor ``I_C / I`` (``I_G / I``) from the flop terms; the
    shares used here are those of eq. 12-13 divided by ``N_f = I N_b``.

    Parameters
    ----------
    I, I_C, I_G : array_like
        Essential WP parameters, flop/byte (see :func:`performance`).
    host, accel : Processor
        Both must carry ``e_f``, ``e_b`` and ``p_s``.

    Returns
    -------
    numpy.ndarray or numpy.float64
        Flops per joule; 0 where ``I == 0`` (energy spent, no flops).

    Raises
    ------
    ValueError
        If an energy parameter is missing (the message names it), or the
        partition is invalid (see :func:`performance`).
    """
    e_fC, e_bC, p_sC = _require_energy("host", host)
    e_fG, e_bG, p_sG = _require_energy("accel", accel)
    i, ic, ig = _intensities(I, I_C, I_G)
    pdp, co, go, code = _classify(i, ic, ig)
    part = _partition_shares(i, ic, ig, co, go, code)
    balanced = _dp_shares(i, np.asarray(pdp_fraction_host(i, host, accel)))
    shares = _Shares(*(np.where(pdp, b, p) for b, p in zip(balanced, part, strict=True)))
    with np.errstate(divide="ignore", invalid="ignore"):
        joules_per_flop = (
            e_fC * shares.f_host
            + e_bC * shares.b_host
            + e_fG * shares.f_accel
            + e_bG * shares.b_accel
            + (p_sC + p_sG) * _time_per_flop(shares, host, accel)
        )
        ee = 1.0 / joules_per_flop
    return _scalar_or_array(np.where(i == 0, 0.0, ee))


# --------------------------------------------------------------------------- categories

_P_PAW_GUIDELINES: dict[str, str] = {
    "CPU_DP-GPU_DP": (
        "Both processors have the same machine balance: split the data set so that both finish "
        "together (p-DP); no code split can beat it (PeaPaw Observation 5.1)."
    ),
    "CPU_COMP-GPU_MEM": (
        "Split the code: give the part with the higher operational intensity to the host (CPU) "
        "and the part with the lower intensity to the accelerator (GPU)."
    ),
    "CPU_MEM-GPU_COMP": (
        "Split the code: give the part with the higher operational intensity to the accelerator "
        "(GPU) and the part with the lower intensity to the host (CPU)."
    ),
}

_E_PAW_GUIDELINES: dict[str, str] = {
    "CPU-only": (
        "Dynamic energy dominates and the host is cheaper per flop and per byte: run all the "
        "work on the host (CPU)."
    ),
    "GPU-only": (
        "Dynamic energy dominates and the accelerator is cheaper per flop and per byte: run all "
        "the work on the accelerator (GPU)."
    ),
    "CPU_COMP-GPU_MEM": (
        "Split the code: the higher-intensity part goes to the host (cheaper flops), the "
        "lower-intensity part to the accelerator (cheaper bytes)."
    ),
    "CPU_MEM-GPU_COMP": (
        "Split the code: the higher-intensity part goes to the accelerator (cheaper flops), the "
        "lower-intensity part to the host (cheaper bytes)."
    ),
    "Race-to-halt": (
        "Static energy dominates, so the fastest partition is also the most frugal: follow the "
        "performance-oriented (P-Paw) guideline."
    ),
    "CPU_COMP-GPU_COMP": (
        "Share the flops evenly between host and accelerator; put the memory traffic on the "
        "processor with the lower energy per byte."
    ),
    "CPU_MEM-GPU_MEM": (
        "Share the memory traffic evenly between host and accelerator; put the flops on the "
        "processor with the lower energy per flop."
    ),
    "Workload-dependent": (
        "No workload-independent rule applies: model or measure the candidate partitions of "
        "this workload and compare their energy efficiency."
    ),
}


def performance_category(host: Processor, accel: Processor) -> tuple[str, str]:
    """P-Paw category of a host+accelerator platform and its partitioning guideline (PeaPaw §5.1).

    The category compares the machine balances ``BL_C = t_bC / t_fC`` and
    ``BL_G = t_bG / t_fG`` (eq. 27):

    ==================  =====================
    category            identifier
    ==================  =====================
    CPU_DP-GPU_DP       ``BL_C == BL_G`` (within :data:`RTOL`)
    CPU_COMP-GPU_MEM    ``BL_C > BL_G``
    CPU_MEM-GPU_COMP    ``BL_C < BL_G``
    ==================  =====================

    Parameters
    ----------
    host, accel : Processor
        The host (CPU) and the accelerator (GPU).

    Returns
    -------
    tuple of str
        ``(category_name, guideline)``; the guideline paraphrases PeaPaw's.
    """
    bl_c, bl_g = host.balance, accel.balance
    if math.isclose(bl_c, bl_g, rel_tol=RTOL, abs_tol=0.0):
        name = "CPU_DP-GPU_DP"
    elif bl_c > bl_g:
        name = "CPU_COMP-GPU_MEM"
    else:
        name = "CPU_MEM-GPU_COMP"
    return name, _P_PAW_GUIDELINES[name]


def gradient_energies(host: Processor, accel: Processor) -> tuple[float, float]:
    """Gradient energies ``(ΔGP_f, ΔGP_b)`` of a platform, J (PeaPaw eq. 28-29).

    .. math::

       \\Delta GP_f = |e_{fC} - e_{fG}| - (p_{sC} + p_{sG})\\, t_{fG}, \\qquad
       \\Delta GP_b = |e_{bC} - e_{bG}| - (p_{sC} + p_{sG})\\, t_{bG}

    The net change in system energy when one flop (byte) moves to the processor
    that spends more dynamic energy on it: more dynamic energy, less static
    energy because the accelerator's time shrinks. Positive means dynamic
    energy dominates for that resource. Both equations use the accelerator's
    ``t_fG``/``t_bG`` whichever way the flop moves, as printed.

    Raises
    ------
    ValueError
        If ``e_f``, ``e_b`` or ``p_s`` is missing on either processor.
    """
    e_fC, e_bC, p_sC = _require_energy("host", host)
    e_fG, e_bG, p_sG = _require_energy("accel", accel)
    static = p_sC + p_sG
    return abs(e_fC - e_fG) - static * accel.t_f, abs(e_bC - e_bG) - static * accel.t_b


def energy_category(host: Processor, accel: Processor) -> tuple[str, str]:
    """E-Paw category of a host+accelerator platform and its partitioning guideline (PeaPaw §5.2).

    Identifiers as printed in PeaPaw §5.2, tested **in the paper's listing
    order, first match wins**, with ``ΔGP_f, ΔGP_b`` from
    :func:`gradient_energies`:

    ====================  =====================================================
    category              identifier
    ====================  =====================================================
    CPU-only              ``ΔGP_f > 0, ΔGP_b > 0, e_fC < e_fG, e_bC < e_bG``
    GPU-only              ``ΔGP_f > 0, ΔGP_b > 0, e_fC > e_fG, e_bC > e_bG``
    CPU_COMP-GPU_MEM      ``ΔGP_f > 0, ΔGP_b > 0, e_fC < e_fG, e_bC > e_bG``
    CPU_MEM-GPU_COMP      ``ΔGP_f > 0, ΔGP_b > 0, e_fC > e_fG, e_bC < e_bG``
    Race-to-halt          ``ΔGP_f + ΔGP_b < 0``
    CPU_COMP-GPU_COMP     ``ΔGP_f > 0, ΔGP_b < 0``
    CPU_MEM-GPU_MEM       ``ΔGP_f < 0, ΔGP_b > 0``
    Workload-dependent    anything else (a zero gradient, equal energies)
    ====================  =====================================================

    Notes
    -----
    Two things in §5.2 are ambiguous, and this function takes the printed text
    literally rather than guess:

    * The Race-to-halt identifier overlaps the last two: a platform with
      ``ΔGP_f > 0 > ΔGP_b`` and a negative sum satisfies both Race-to-halt and
      CPU_COMP-GPU_COMP. The listing order resolves it (Race-to-halt first).
    * The guidelines printed for CPU_COMP-GPU_COMP ("evenly distribute the
      computation") and CPU_MEM-GPU_MEM ("evenly distribute the memory
      access") fit the *opposite* sign pattern under the paper's own reading
      of ``ΔGP`` (positive: dynamic energy dominates, so that resource belongs
      on the cheaper processor; negative: static energy dominates, so spread
      it). The identifiers and guidelines are returned as printed.

    PeaPaw's Table VI cannot be reproduced from its Table IV; see
    ``tests/analysis/test_hetero.py``.

    Parameters
    ----------
    host, accel : Processor
        Both must carry ``e_f``, ``e_b`` and ``p_s``.

    Returns
    -------
    tuple of str
        ``(category_name, guideline)``; the guideline paraphrases PeaPaw's.

    Raises
    ------
    ValueError
        If ``e_f``, ``e_b`` or ``p_s`` is missing on either processor.
    """
    d_f, d_b = gradient_energies(host, accel)
    cpu_flop_cheaper = host.e_f < accel.e_f  # type: ignore[operator]
    gpu_flop_cheaper = host.e_f > accel.e_f  # type: ignore[operator]
    cpu_byte_cheaper = host.e_b < accel.e_b  # type: ignore[operator]
    gpu_byte_cheaper = host.e_b > accel.e_b  # type: ignore[operator]
    both_dynamic = d_f > 0 and d_b > 0
    rules: tuple[tuple[str, bool], ...] = (
        ("CPU-only", both_dynamic and cpu_flop_cheaper and cpu_byte_cheaper),
        ("GPU-only", both_dynamic and gpu_flop_cheaper and gpu_byte_cheaper),
        ("CPU_COMP-GPU_MEM", both_dynamic and cpu_flop_cheaper and gpu_byte_cheaper),
        ("CPU_MEM-GPU_COMP", both_dynamic and gpu_flop_cheaper and cpu_byte_cheaper),
        ("Race-to-halt", d_f + d_b < 0),
        ("CPU_COMP-GPU_COMP", d_f > 0 and d_b < 0),
        ("CPU_MEM-GPU_MEM", d_f < 0 and d_b > 0),
    )
    name = next((n for n, hit in rules if hit), "Workload-dependent")
    return name, _E_PAW_GUIDELINES[name]


def guideline_followed(category: str, I: float, I_C: float, I_G: float) -> bool | None:  # noqa: E741
    """Whether a workload partition with intensities ``(I, I_C, I_G)`` is what a P-Paw guideline prescribes (§5.1).

    * ``CPU_DP-GPU_DP``: p-DP (``I == I_C == I_G``).
    * ``CPU_MEM-GPU_COMP``: a code split with the higher-intensity part on the
      accelerator (``I_C < I < I_G``, both parts used).
    * ``CPU_COMP-GPU_MEM``: a code split with the higher-intensity part on the
      host (``I_G < I < I_C``, both parts used).

    Returns None for a category without a partitioning guideline here (the
    E-Paw categories, whose guidelines need energy parameters).
    """
    i, c, g = (float(x) for x in (I, I_C, I_G))
    if category == "CPU_DP-GPU_DP":
        return bool(math.isclose(c, i, rel_tol=RTOL) and math.isclose(g, i, rel_tol=RTOL))
    if category == "CPU_MEM-GPU_COMP":
        return bool(0 < c < i < g)
    if category == "CPU_COMP-GPU_MEM":
        return bool(0 < g < i < c)
    return None


def energy_guideline_followed(category: str, I: float, I_C: float, I_G: float) -> bool | None:  # noqa: E741
    """Whether a partition ``(I, I_C, I_G)`` is what an E-Paw guideline prescribes (PeaPaw §5.2).

    * ``CPU-only`` / ``GPU-only``: all the work on that processor (``I_G == 0``
      resp. ``I_C == 0``, the other side used).
    * ``CPU_COMP-GPU_MEM`` / ``CPU_MEM-GPU_COMP``: the code split with the
      higher-intensity part where flops are cheaper in energy, as the P-Paw
      categories of the same name (:func:`guideline_followed`).

    None for the categories whose guideline does not name one partition
    (Race-to-halt, the two "evenly distribute" ones, Workload-dependent).
    """
    c, g = float(I_C), float(I_G)
    if category == "CPU-only":
        return bool(c > 0 and g == 0)
    if category == "GPU-only":
        return bool(g > 0 and c == 0)
    if category in ("CPU_COMP-GPU_MEM", "CPU_MEM-GPU_COMP"):
        return guideline_followed(category, I, I_C, I_G)
    return None
