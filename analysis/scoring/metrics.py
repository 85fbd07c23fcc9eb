"""Scores that compare a model's predictions with measurements over the alternatives of one group.

A *group* is a set of alternatives (workload partitions, code variants) for
one case on one platform; each metric takes one value per alternative from the
measurement and from the model, in the same order. Every metric returns a
fraction (0.34, not 34 %).

Inputs
------
Array-likes (or scalars, read as length 1) of equal length ``>= 1`` with finite,
strictly positive values -- times in s, rates in flop/s or flop/J. Anything else
(NaN, inf, zero, negative, mismatched lengths, more than one dimension) raises
``ValueError`` naming the offending argument. Rank metrics
(:func:`kendall_tau`, :func:`pairwise_agreement`) only need both arguments to
be oriented the same way (both times, or both rates); :func:`top1_agreement`,
:func:`selection_penalty` and :func:`profile_error` take *times* (lower is
better).

Ties
----
Ties are decided by exact equality of the values, never by the order a sort
happens to leave them in:

* :func:`kendall_tau` is Kendall's tau-b, whose denominator discounts pairs
  tied in either argument; it is NaN when undefined (fewer than two
  alternatives, or one argument constant).
* :func:`pairwise_agreement` leaves out pairs tied in the *measurement* (there
  is no order to agree with); a pair tied in the *prediction* but not in the
  measurement counts 1/2 (the model is indifferent, a coin toss). NaN when no
  measured pair is untied.
* "The model's pick" is the *set* of alternatives sharing the minimal
  predicted time; "the best" is the set sharing the minimal measured time.
  :func:`top1_agreement` is the fraction of the pick set that is best, and
  :func:`selection_penalty` the mean over the pick set of
  ``T / T_best - 1`` -- the expected outcome if the model's tie were broken at
  random.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "kendall_tau",
    "pairwise_agreement",
    "profile_error",
    "ranking_summary",
    "selection_penalty",
    "tightness",
    "top1_agreement",
]


def _vector(name: str, value: ArrayLike) -> NDArray[np.float64]:
    """``value`` as a 1-D float array of finite positive values, else ``ValueError`` naming it."""
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one value per alternative); got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; need at least one alternative")
    bad = ~(np.isfinite(arr) & (arr > 0))
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must hold finite values > 0; {int(np.count_nonzero(bad))} do not, "
            f"first at index {k}: {float(arr[k])!r}"
        )
    return arr


def _pair(
    name_a: str, a: ArrayLike, name_b: str, b: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x, y = _vector(name_a, a), _vector(name_b, b)
    if x.size != y.size:
        raise ValueError(f"{name_a} and {name_b} differ in length: {x.size} != {y.size}")
    return x, y


def _pair_signs(x: NDArray[np.float64]) -> NDArray[np.int_]:
    """``sign(x_i - x_j)`` for every unordered pair ``i < j`` (0 for a tie)."""
    i, j = np.triu_indices(x.size, k=1)
    return np.sign(x[i] - x[j]).astype(np.int_)


#: The one definition of tightness, in every table, figure and summary (and in the tables' field metadata).
TIGHTNESS = ("tightness: the fraction of the model's bound the run reached - measured / predicted performance (or "
             "energy efficiency), which is predicted / measured time (or energy); 1 = the bound is reached, below 1 = "
             "slower than the bound, above 1 = the run beat the bound")


def tightness(measured: ArrayLike, bound: ArrayLike) -> NDArray[np.float64] | float:
    """Measured value as a fraction of the model's bound, elementwise.

    For an upper bound on a rate (flop/s, flop/J) this is the share of the
    bound achieved: PerDome's "achieves 97 % of the predicted performance upper
    bound" is 0.97. For a lower bound on a time the same reading is
    ``tightness(bound_time, measured_time)``.

    Parameters
    ----------
    measured, bound : array_like
        Equal-length vectors (or scalars) of finite positive values.

    Returns
    -------
    numpy.ndarray or float
        ``measured / bound``; a float when both arguments are scalars.

    Examples
    --------
    >>> tightness(97.0, 100.0)
    0.97
    """
    scalar = np.ndim(measured) == 0 and np.ndim(bound) == 0
    m, b = _pair("measured", measured, "bound", bound)
    ratio = m / b
    return float(ratio[0]) if scalar else ratio


def kendall_tau(measured: ArrayLike, predicted: ArrayLike) -> float:
    """Kendall's tau-b rank correlation between measurement and prediction.

    .. math::

       \\tau_b = \\frac{n_c - n_d}{\\sqrt{(n_0 - n_1)(n_0 - n_2)}}

    over the ``n_0 = n (n - 1) / 2`` pairs, with ``n_c``/``n_d`` the
    concordant/discordant pairs and ``n_1``/``n_2`` the pairs tied in the
    measurement/prediction. Pairwise, ``O(n^2)`` -- groups are small.

    Parameters
    ----------
    measured, predicted : array_like
        Equal-length vectors of finite positive values, same orientation.

    Returns
    -------
    float
        In ``[-1, 1]``; NaN when ``n < 2`` or either argument is constant.

    Examples
    --------
    >>> kendall_tau([1.0, 2.0, 3.0], [10.0, 30.0, 20.0])
    0.3333333333333333
    """
    m, p = _pair("measured", measured, "predicted", predicted)
    sm, sp = _pair_signs(m), _pair_signs(p)
    # n_0 - n_1 and n_0 - n_2 are simply the pairs untied in each argument.
    untied_m = int(np.count_nonzero(sm))
    untied_p = int(np.count_nonzero(sp))
    if untied_m == 0 or untied_p == 0:  # also covers n < 2 (no pairs)
        return math.nan
    return float(np.sum(sm * sp)) / math.sqrt(untied_m * untied_p)


def pairwise_agreement(measured: ArrayLike, predicted: ArrayLike) -> float:
    """Fraction of the measurably ordered pairs that the prediction orders the same way.

    Pairs tied in the measurement are left out; a pair the prediction ties
    counts 1/2 (see the module's notes on ties).

    Parameters
    ----------
    measured, predicted : array_like
        Equal-length vectors of finite positive values, same orientation.

    Returns
    -------
    float
        In ``[0, 1]``; NaN when no pair is untied in the measurement.

    Examples
    --------
    >>> pairwise_agreement([1.0, 2.0, 3.0], [1.0, 1.0, 5.0])
    0.8333333333333334
    """
    m, p = _pair("measured", measured, "predicted", predicted)
    sm, sp = _pair_signs(m), _pair_signs(p)
    ordered = sm != 0
    n = int(np.count_nonzero(ordered))
    if n == 0:
        return math.nan
    same = np.count_nonzero(ordered & (sm == sp))
    undecided = np.count_nonzero(ordered & (sp == 0))
    return float(same + 0.5 * undecided) / n


def _pick_and_best(
    measured_times: ArrayLike, predicted_times: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
    m, p = _pair("measured_times", measured_times, "predicted_times", predicted_times)
    return m, p == p.min(), m == m.min()


def top1_agreement(measured_times: ArrayLike, predicted_times: ArrayLike) -> float:
    """Whether the model's fastest alternative is the measured fastest.

    1.0 if it is, 0.0 if not; when the prediction ties several alternatives for
    fastest, the fraction of them that are measured-fastest (every alternative
    with the minimal measured time counts as fastest).

    Parameters
    ----------
    measured_times, predicted_times : array_like
        Equal-length vectors of times, s (lower is better).

    Returns
    -------
    float
        In ``[0, 1]``.

    Examples
    --------
    >>> top1_agreement([2.0, 1.0, 3.0], [2.5, 1.5, 1.5])
    0.5
    """
    _, pick, best = _pick_and_best(measured_times, predicted_times)
    return float(np.count_nonzero(pick & best)) / float(np.count_nonzero(pick))


def selection_penalty(measured_times: ArrayLike, predicted_times: ArrayLike) -> float:
    """Measured slowdown from running the model's pick instead of the best, ``T(pick) / T(best) - 1``.

    With several alternatives tied for the model's fastest, the mean over them.

    Parameters
    ----------
    measured_times, predicted_times : array_like
        Equal-length vectors of times, s (lower is better).

    Returns
    -------
    float
        ``>= 0``; 0 when the model picks a measured-fastest alternative.

    Examples
    --------
    >>> selection_penalty([2.0, 1.0, 4.0], [1.0, 2.0, 3.0])
    1.0
    """
    m, pick, _ = _pick_and_best(measured_times, predicted_times)
    # Ratios first: a pick set of measured-best alternatives then gives exactly 0, not rounding noise.
    return float(np.mean(m[pick] / m.min()) - 1.0)


def profile_error(measured_times: ArrayLike, predicted_times: ArrayLike) -> float:
    """Distance between the shapes of the measured and predicted time profiles.

    .. math:: \\frac{1}{\\sqrt 2}\\left\\| \\frac{m}{\\|m\\|} - \\frac{p}{\\|p\\|} \\right\\|_2

    Scaling either vector does not change it, so a bound that is uniformly
    loose scores 0; it measures only how the alternatives' times relate. With
    positive inputs the unit vectors lie in one orthant, so the value is in
    ``[0, 1)``.

    Parameters
    ----------
    measured_times, predicted_times : array_like
        Equal-length vectors of times, s.

    Returns
    -------
    float
        In ``[0, 1)``.

    Examples
    --------
    >>> profile_error([1.0, 2.0], [10.0, 20.0])
    0.0
    """
    m, p = _pair("measured_times", measured_times, "predicted_times", predicted_times)
    diff = m / np.linalg.norm(m) - p / np.linalg.norm(p)
    return float(np.linalg.norm(diff) / math.sqrt(2.0))


def ranking_summary(measured_times: ArrayLike, predicted_times: ArrayLike, names: list[str]) -> dict[str, Any]:
    """All five ranking metrics of one group of alternatives, and the names of the measured and predicted best.

    ``best_measured`` / ``best_predicted`` list every alternative tied at the
    minimum, comma-separated, in the order of ``names``.
    """
    m = np.asarray(measured_times, dtype=np.float64)
    p = np.asarray(predicted_times, dtype=np.float64)
    return {
        "kendall_tau": kendall_tau(m, p),
        "pairwise_agreement": pairwise_agreement(m, p),
        "top1_agreement": top1_agreement(m, p),
        "selection_penalty": selection_penalty(m, p),
        "profile_error": profile_error(m, p),
        "best_measured": ", ".join(n for n, t in zip(names, m, strict=True) if t == m.min()),
        "best_predicted": ", ".join(n for n, t in zip(names, p, strict=True) if t == p.min()),
    }
