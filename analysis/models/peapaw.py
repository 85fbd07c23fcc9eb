"""PerDome/PeaPaw applied to runs: the WP performance bound (PeaPaw eq. 19-20, PerDome eq. 20) and
PeaPaw's energy-efficiency bound (eq. 21-25), for every two-processor case with static counts per processor.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from analysis.equations import hetero, roofline
from analysis.registry import Model
from analysis.storage.platforms import ENERGY_COLS, PLATFORM_COLS, PROBLEM_COLS
from sims.vocab import WPS

MODEL = "PerDome/PeaPaw"
ENERGY_MODEL = "PeaPaw energy (eq. 25)"
#: the two-processor cases whose runs carry per-processor static counts
WP_CASES = ("sa", "la")


def by_processors(runs: pd.DataFrame, energy: bool = False) -> Iterator[tuple[np.ndarray, Any, Any]]:
    """The row positions of ``runs`` sharing one platform's processor parameters, with its host and accelerator
    (``t_f``, ``t_b``, and with ``energy`` also ``e_f``, ``e_b``, ``p_s``), so each model function is called once
    per platform on arrays instead of once per run."""
    params = ("t_f", "t_b", "e_f", "e_b", "p_s") if energy else ("t_f", "t_b")
    cols = [f"{p}_{role}" for role in ("host", "accel") for p in params]
    if not len(runs):
        return
    codes = runs.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    values = runs[cols].to_numpy(dtype="float64")
    for code in range(int(codes.max()) + 1):
        rows = np.flatnonzero(codes == code)
        v = dict(zip(cols, values[rows[0]].tolist(), strict=True))
        if not all(np.isfinite(x) and (x > 0 if k.startswith("t_") else x >= 0) for k, x in v.items()):
            continue  # a ceiling this platform never measured (analysis.scoring.ceilings): no bound rather than a wrong one
        yield (rows, *(hetero.Processor(**{p: v[f"{p}_{role}"] for p in params}) for role in ("host", "accel")))


def with_intensities(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (a copy) with the intensities the bounds read, where the case's joined runs do not already carry
    them (:func:`analysis.scoring.measured.run_measures`): flops over the traffic the bounds count (``traffic*``,
    else ``bytes*``; PerDome eq. 1)."""
    out = runs.copy()
    for k in ("", "_host", "_accel"):
        if f"intensity{k}" not in out:
            traffic = f"traffic{k}" if f"traffic{k}" in out else f"bytes{k}"
            out[f"intensity{k}"] = roofline.intensity(out[f"flops{k}"].to_numpy(), out[traffic].to_numpy())
    return out


def predict_sa(runs: pd.DataFrame) -> pd.DataFrame:
    """The PerDome/PeaPaw bound for each two-processor run (its intensities added where the runs lack them).

    Intensities are flops over the memory traffic the bound counts (``traffic*``, :mod:`analysis.scoring.ceilings`:
    for a product run as BLAS its compulsory traffic, not the papers' classic-kernel bytes), and ``t_f_<role>``
    is the compute ceiling of the kernels the processor ran (the case's ``bound_inputs``).
    ``CO``, ``GO``, ``CP``, ``CP-reverse`` use the four-term bound from
    ``(I, I_C, I_G)`` (PeaPaw eq. 20; CO/GO reduce to one roofline); ``p-DP``
    the sum of both rooflines (PeaPaw eq. 19); ``DP(alpha)`` PerDome eq. 20 at
    the run's actual host share ``N_fC / N_f``. Rows must carry the platform's
    ``t_f_*``/``t_b_*`` columns (joined beforehand).
    """
    out = with_intensities(runs)
    predicted = np.full(len(out), np.nan)
    variant = out["variant"].astype(str).to_numpy()
    whole = out["intensity"].to_numpy(dtype="float64")
    i_c = np.nan_to_num(out["intensity_host"].to_numpy(dtype="float64"), nan=0.0)
    i_g = np.nan_to_num(out["intensity_accel"].to_numpy(dtype="float64"), nan=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = out["flops_host"].to_numpy(dtype="float64") / out["flops"].to_numpy(dtype="float64")
    pdp = variant == "p-DP"
    dp = np.char.startswith(variant.astype(str), "DP(") if len(variant) else np.zeros(0, dtype=bool)
    counted = out["flops"].to_numpy(dtype="float64") > 0  # the bound is a flop rate: none for a run of no flops
    for rows, host, accel in by_processors(out):  # the model's own array functions, one platform at a time
        for mask, kind in ((pdp & counted, "p-DP"), (dp & counted, "DP"), (~(pdp | dp) & counted, "WP")):
            r = rows[mask[rows]]
            if not len(r):
                continue
            if kind == "p-DP":
                predicted[r] = hetero.performance(whole[r], whole[r], whole[r], host, accel)
            elif kind == "DP":
                predicted[r] = hetero.dp_performance(whole[r], share[r], host, accel)
            else:
                predicted[r] = hetero.performance(whole[r], i_c[r], i_g[r], host, accel)
    out["model"] = pd.Series([MODEL] * len(out), index=out.index, dtype="string")
    out["perf_predicted"] = predicted
    out["time_predicted_s"] = out["flops"] / out["perf_predicted"]
    # no bound where a ceiling was not measured (analysis.scoring.ceilings), nor for a run that counts no flops (a
    # transpose): the bound is a flop rate
    have = np.isfinite(predicted) & (predicted > 0) & counted
    out["quantity"] = pd.Series(["time"] * len(out), index=out.index, dtype="string")
    return out[have].drop(columns=[*PLATFORM_COLS, *PROBLEM_COLS], errors="ignore")


def predict_energy(runs: pd.DataFrame) -> pd.DataFrame:
    """PeaPaw's energy-efficiency bound (eq. 21-25) for WP runs that were metered on a platform with ``e_f, e_b, p_s``.

    Only runs whose energy came from a meter (``energy_median_j`` not null) and
    whose platform's characterisation fitted the energy parameters are kept; the
    others have nothing to compare. ``DP(alpha)`` runs are left out: eq. 25's
    shares come from ``(I, I_C, I_G)``, which describe the paper's four WPs.
    The rows carry ``energy_predicted_j = N_f / EE`` (its tightness, ``EE_measured / EE``, is attached by
    :mod:`analysis.scoring.measured`).
    """
    have = runs
    if len(runs):
        mask = runs["energy_median_j"].notna() & runs["variant"].isin(WPS)
        for c in (*ENERGY_COLS, "t_f_host", "t_f_accel"):  # t_f null: a ceiling never measured
            mask &= runs[c].notna() if c in runs.columns else False
        have = runs[mask]
    out = predict_sa(have)
    have = have.loc[out.index]  # the runs it could bound, in its order
    eff = np.full(len(out), np.nan)
    i_all = out["intensity"].to_numpy(dtype="float64")
    i_c = np.nan_to_num(out["intensity_host"].to_numpy(dtype="float64"), nan=0.0)
    i_g = np.nan_to_num(out["intensity_accel"].to_numpy(dtype="float64"), nan=0.0)
    pdp = out["variant"].astype(str).to_numpy() == "p-DP"
    i_c, i_g = np.where(pdp, i_all, i_c), np.where(pdp, i_all, i_g)
    for rows, host, accel in by_processors(have, energy=True):  # the same rows in the same order as out
        eff[rows] = hetero.energy_efficiency(i_all[rows], i_c[rows], i_g[rows], host, accel)
    out["model"] = pd.Series([ENERGY_MODEL] * len(out), index=out.index, dtype="string")
    out["quantity"] = pd.Series(["energy"] * len(out), index=out.index, dtype="string")
    out["efficiency_predicted"] = eff
    out["energy_predicted_j"] = out["flops"] / eff
    return out


#: why the WP models judge no FDM run
NOT_FDM = ("an FDM run spreads one grid over ranks of one backend, not one workload split between the platform's "
           "two processors")


class PerDomePeaPaw(Model):
    """PerDome/PeaPaw's performance bound per run (time = N_f / bound): the WP runs and PEACH's alpha splits
    (PerDome eq. 20 at the run's host share)."""

    name = MODEL
    cases = (*WP_CASES, "peach")
    not_for = {"fdm": NOT_FDM, "peach/memory-bound": "the bound is a flop rate and MatrixTranspose counts no flops"}
    needs = ("t_f_host", "t_b_host", "t_f_accel", "t_b_accel")

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_sa(runs)


class PeaPawEnergy(Model):
    """PeaPaw's energy-efficiency bound (eq. 25) for metered runs on platforms with usable e_f, e_b, p_s."""

    name = ENERGY_MODEL
    cases = WP_CASES
    not_for = {"fdm": NOT_FDM, "peach": "eq. 25's shares describe the paper's four WPs, not a DP(alpha) split"}
    needs = (*PerDomePeaPaw.needs, *ENERGY_COLS)
    quantity = "energy"
    table = "energy_runs"

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_energy(runs)
