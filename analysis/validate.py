"""The Dask validation job: runs joined with platform parameters and model predictions, then scored.

Each step is a pure pandas function (``reduce_repetitions``, ``predict_sa``,
``score_group``, ``failed_runs``) tested on its own with pandas and lifted onto
the Dask collection with ``map_partitions`` (with explicit ``meta``). The whole
lazy graph is computed once with ``dask.compute``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics, validate_fdm
from analysis.models import hetero
from analysis.schema import PARTITION_SCHEMA

GROUP_KEYS = ["study", "case", "platform", "size"]
TAU_COLS = ["tau_add_host", "tau_mul_host", "tau_add_accel", "tau_mul_accel"]
PEROP_MODEL = "per-operation (Kannan)"
#: per element: VecAdd 1 add; PowAdd 32 x (63 multiplications + 1 add), the papers' counting rules
SA_OPS = {"vecadd": {"add": 1, "mul": 0}, "powadd": {"add": 32, "mul": 32 * 63}}
SA_BYTES = {"vecadd": 12, "powadd": 256}
WP_VARIANTS = ("CO", "GO", "p-DP", "CP", "CP-reverse")
MODEL = "PerDome/PeaPaw"
ENERGY_MODEL = "PeaPaw energy (eq. 25)"
ENERGY_PARAMS = ("e_f", "e_b", "p_s")
ENERGY_COLS = [f"{p}_{r}" for r in ("host", "accel") for p in ENERGY_PARAMS]
#: cases validated with the PerDome/PeaPaw WP models (static counts per processor)
WP_CASES = ("sa", "la")
_COUNT_COLS = ["flops", "bytes", "flops_host", "bytes_host", "flops_accel", "bytes_accel"]
_ENERGY = ["energy_j", "energy_host_j", "energy_accel_j"]
REDUCED_ENERGY = ["energy_median_j", "energy_host_median_j", "energy_accel_median_j", "energy_iqr_j", "energy_source"]


def _energy_source(sources: pd.Series) -> str:
    """The run's energy source: the one its repetitions share, or 'mixed: a, b' when they differ."""
    found = sorted(set(sources.dropna().astype(str)))
    return found[0] if len(found) == 1 else ("none" if not found else "mixed: " + ", ".join(found))


# ---------------------------------------------------------------- platforms
def energy_fit_problem(proc: Any) -> str | None:
    """Why a processor's fitted ``e_f, e_b, p_s`` cannot be used (None when they can, or when there are none).

    A least-squares fit of measured energy can come out with a negative
    coefficient (the sweep's energy barely depends on flops or bytes, or the
    meter is noisy; characterisation flags it ``unphysical``). It is reported
    and not used by any energy model - never clipped to fit.
    """
    if not isinstance(proc, dict):
        return None
    negative = [f"{p} = {proc[p]['value']:.3g}" for p in ENERGY_PARAMS
                if isinstance(proc.get(p), dict) and proc[p].get("value") is not None and float(proc[p]["value"]) < 0]
    return "unphysical energy fit (" + ", ".join(negative) + ")" if negative else None


def load_platforms(platforms_dir: str | Path) -> pd.DataFrame:
    """One row per characterised platform: ``t_f``/``t_b`` (median-based) of host and accel."""
    rows = []
    from sims.meters.posthoc import load_platform

    for path in sorted(Path(platforms_dir).glob("*.yaml")):
        doc = load_platform(path)  # with the energy a later trace measured for it, if any
        procs = doc.get("processors") or {}
        try:
            row = {"platform": doc.get("platform", path.stem)}
            for role in ("host", "accel"):
                for p in ("t_f", "t_b"):
                    row[f"{p}_{role}"] = float(procs[role][p]["value"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: missing or bad processors.<role>.<t_f|t_b>.value ({exc})") from exc
        for role in ("host", "accel"):
            usable = energy_fit_problem(procs[role]) is None
            for p in ENERGY_PARAMS:
                v = procs[role].get(p) if isinstance(procs[role], dict) else None
                have = usable and isinstance(v, dict) and v.get("value") is not None
                row[f"{p}_{role}"] = float(v["value"]) if have else np.nan
        idle = doc.get("idle_power") or {}
        row["idle_w"] = float(idle["value"]) if idle.get("value") is not None else np.nan
        for role in ("host", "accel"):
            fits = ((procs[role].get("operations") or {}).get("fits") or {}) if isinstance(procs[role], dict) else {}
            for op in ("add", "mul"):
                tau = (fits.get(f"{op}/float32") or {}).get("tau")
                row[f"tau_{op}_{role}"] = float(tau) if tau is not None and tau > 0 else np.nan
        rows.append(row)
    cols = ["platform", "t_f_host", "t_b_host", "t_f_accel", "t_b_accel", *TAU_COLS, *ENERGY_COLS, "idle_w"]
    return pd.DataFrame(rows, columns=cols).astype({c: "float64" for c in cols[1:]})


# ---------------------------------------------------------------- transforms (pure pandas)
def reduce_repetitions(df: pd.DataFrame) -> pd.DataFrame:
    """Per run (all repetitions in this frame): medians and spread of the measured times.

    Only ``ok`` rows are reduced; the result has one row per ``run_id``.
    """
    ok = df[df["status"] == "ok"].copy()
    for c in _ENERGY:
        ok[c] = pd.to_numeric(ok[c], errors="coerce").astype("float64") if c in ok else np.nan
    if "energy_source" not in ok:
        ok["energy_source"] = "none"
    keys = ["run_id", "study", "case", "variant", "platform", "size", "alpha", "params", *_COUNT_COLS]
    base = ok[keys].copy()
    base["size"] = pd.to_numeric(base["size"]).astype("float64")
    for c in ("alpha", *_COUNT_COLS):
        base[c] = pd.to_numeric(base[c]).astype("float64")
    grouped = ok.groupby("run_id", sort=True)
    first = base.groupby("run_id", sort=True).first()
    t = grouped["time_s"]
    out = pd.DataFrame(
        {
            "n_reps": t.count().astype("int64"),
            "time_median_s": t.median().astype("float64"),
            "time_min_s": t.min().astype("float64"),
            "time_max_s": t.max().astype("float64"),
            "time_iqr_s": (t.quantile(0.75) - t.quantile(0.25)).astype("float64"),
            "time_host_median_s": pd.to_numeric(grouped["time_host_s"].median()).astype("float64"),
            "time_accel_median_s": pd.to_numeric(grouped["time_accel_s"].median()).astype("float64"),
            **{f"{c[:-2]}_median_j": pd.to_numeric(grouped[c].median()).astype("float64") for c in _ENERGY},
            "energy_iqr_j": pd.to_numeric(grouped["energy_j"].quantile(0.75) - grouped["energy_j"].quantile(0.25)
                                          ).astype("float64"),
            "energy_source": grouped["energy_source"].agg(_energy_source).astype("string"),
        }
    )
    out = first.join(out).reset_index()
    for c in ("run_id", "study", "case", "variant", "platform", "params"):
        out[c] = out[c].astype("string")
    return out[["run_id", "study", "case", "variant", "platform", "size", "alpha", "params", *_COUNT_COLS,
                "n_reps", "time_median_s", "time_min_s", "time_max_s", "time_iqr_s",
                "time_host_median_s", "time_accel_median_s", *REDUCED_ENERGY]]


def _intensity(flops: pd.Series, nbytes: pd.Series) -> np.ndarray:
    f = flops.to_numpy(dtype="float64")
    b = nbytes.to_numpy(dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, f / b, np.nan)


def predict_sa(runs: pd.DataFrame) -> pd.DataFrame:
    """Add intensities, measured performance and the PerDome/PeaPaw bound for each SA run.

    ``CO``, ``GO``, ``CP``, ``CP-reverse`` use the four-term bound from
    ``(I, I_C, I_G)`` (PeaPaw eq. 20; CO/GO reduce to one roofline); ``p-DP``
    the sum of both rooflines (PeaPaw eq. 19); ``DP(alpha)`` PerDome eq. 20 at
    the run's actual host share ``N_fC / N_f``. Rows must carry the platform's
    ``t_f_*``/``t_b_*`` columns (joined beforehand).
    """
    out = runs.copy()
    out["intensity"] = _intensity(out["flops"], out["bytes"])
    out["intensity_host"] = _intensity(out["flops_host"], out["bytes_host"])
    out["intensity_accel"] = _intensity(out["flops_accel"], out["bytes_accel"])
    out["perf_measured"] = out["flops"] / out["time_median_s"]
    out["perf_host_measured"] = out["flops_host"].where(out["flops_host"] > 0) / out["time_host_median_s"]
    out["perf_accel_measured"] = out["flops_accel"].where(out["flops_accel"] > 0) / out["time_accel_median_s"]
    out["axis_wp"] = out["variant"].isin(WP_VARIANTS).astype("bool")
    out["axis_alpha"] = out["variant"].astype("string").str.startswith("DP(").fillna(False).astype("bool")
    predicted = np.full(len(out), np.nan)
    for i, row in enumerate(out.itertuples(index=False)):
        host = hetero.Processor(t_f=row.t_f_host, t_b=row.t_b_host)
        accel = hetero.Processor(t_f=row.t_f_accel, t_b=row.t_b_accel)
        whole = row.intensity
        if row.variant == "p-DP":
            predicted[i] = hetero.performance(whole, whole, whole, host, accel)
        elif str(row.variant).startswith("DP("):
            predicted[i] = hetero.dp_performance(whole, row.flops_host / row.flops, host, accel)
        else:
            i_c = 0.0 if np.isnan(row.intensity_host) else row.intensity_host
            i_g = 0.0 if np.isnan(row.intensity_accel) else row.intensity_accel
            predicted[i] = hetero.performance(whole, i_c, i_g, host, accel)
    out["model"] = pd.Series([MODEL] * len(out), index=out.index, dtype="string")
    out["perf_predicted"] = predicted
    out["time_predicted_s"] = out["flops"] / out["perf_predicted"]
    out["tightness"] = metrics.tightness(out["perf_measured"].to_numpy(), predicted) if len(out) else np.array([])
    out["quantity"] = pd.Series(["time"] * len(out), index=out.index, dtype="string")
    return out.drop(columns=PLATFORM_COLS, errors="ignore")


PLATFORM_COLS = ["t_f_host", "t_b_host", "t_f_accel", "t_b_accel", *TAU_COLS, *ENERGY_COLS, "idle_w"]


def predict_energy(runs: pd.DataFrame) -> pd.DataFrame:
    """PeaPaw's energy-efficiency bound (eq. 21-25) for WP runs that were metered on a platform with ``e_f, e_b, p_s``.

    Only runs whose energy came from a meter (``energy_median_j`` not null) and
    whose platform's characterisation fitted the energy parameters are kept; the
    others have nothing to compare. ``DP(alpha)`` runs are left out: eq. 25's
    shares come from ``(I, I_C, I_G)``, which describe the paper's four WPs.
    The rows carry ``energy_predicted_j = N_f / EE`` and
    ``tightness = EE_measured / EE``.
    """
    have = runs
    if len(runs):
        mask = runs["energy_median_j"].notna() & runs["variant"].isin(WP_VARIANTS)
        for c in ENERGY_COLS:
            mask &= runs[c].notna() if c in runs.columns else False
        have = runs[mask]
    out = predict_sa(have)
    eff = np.full(len(out), np.nan)
    for i, (_, row) in enumerate(have.iterrows()):
        host = hetero.Processor(t_f=row.t_f_host, t_b=row.t_b_host, e_f=row.e_f_host, e_b=row.e_b_host, p_s=row.p_s_host)
        accel = hetero.Processor(t_f=row.t_f_accel, t_b=row.t_b_accel, e_f=row.e_f_accel, e_b=row.e_b_accel,
                                 p_s=row.p_s_accel)
        i_all, i_c, i_g = (float(out[c].iloc[i]) for c in ("intensity", "intensity_host", "intensity_accel"))
        i_c, i_g = (0.0 if np.isnan(i_c) else i_c), (0.0 if np.isnan(i_g) else i_g)
        if row.variant == "p-DP":
            i_c = i_g = i_all
        eff[i] = float(hetero.energy_efficiency(i_all, i_c, i_g, host, accel))
    out["model"] = pd.Series([ENERGY_MODEL] * len(out), index=out.index, dtype="string")
    out["quantity"] = pd.Series(["energy"] * len(out), index=out.index, dtype="string")
    out["efficiency_measured"] = out["flops"] / out["energy_median_j"]
    out["efficiency_predicted"] = eff
    out["energy_predicted_j"] = out["flops"] / eff
    out["tightness"] = out["efficiency_measured"] / eff if len(out) else np.array([])
    return out


ROOFLINE_ENERGY_MODEL = "energy roofline (Choi)"
ROOFLINE_ENERGY_COLUMNS = ["run_id", "study", "case", "variant", "platform", "size", "alpha", "processor", "flops",
                           "bytes", "energy_measured_j", "energy_predicted_j", "tightness", "rel_error",
                           "energy_source", "model"]


def predict_energy_roofline(runs: pd.DataFrame) -> pd.DataFrame:
    """Choi's energy roofline ``E = e_f N_f + e_b N_b + p_s max(t_f N_f, t_b N_b)`` against metered runs.

    One row per metered run and *working processor* whose energy the meter
    attributed to it (``energy_<role>_median_j``), with that processor's static
    counts; and a ``node`` row comparing the run's whole measured energy with
    the sum of both processors' energy rooflines. A processor that did no work
    contributes 0 J to the node bound (its idle draw is in the measured node
    energy, not in the bound) and has no row of its own. The roofline is a lower
    bound on energy (the fastest time, the characterised costs), so
    ``tightness = predicted / measured`` is at most 1 when the model holds;
    ``rel_error = (predicted - measured) / measured``. Runs without a meter give
    no rows; a working processor without usable ``e_f, e_b, p_s`` (none
    measured, or an unphysical fit) gives no row of its own and no node row.
    """
    from analysis.models import roofline

    out: list[dict[str, Any]] = []
    if len(runs):
        have = runs[runs["energy_median_j"].notna()]
        for row in have.itertuples(index=False):
            per_role: dict[str, tuple[float, float, float | None]] = {}
            idle: set[str] = set()
            for role in ("host", "accel"):
                nf, nb = (float(getattr(row, f"{q}_{role}") or 0.0) for q in ("flops", "bytes"))
                nf, nb = (0.0 if np.isnan(nf) else nf), (0.0 if np.isnan(nb) else nb)
                params = [getattr(row, f"{p}_{role}", np.nan) for p in (*ENERGY_PARAMS, "t_f", "t_b")]
                if nf == 0 and nb == 0:
                    pred: float | None = 0.0  # no work: nothing in the bound, whatever the parameters
                    idle.add(role)
                elif all(p is not None and np.isfinite(p) for p in params):
                    pred = float(roofline.energy(nf, nb, *params))
                else:
                    pred = None  # no usable e_f, e_b, p_s for this processor
                per_role[role] = (nf, nb, pred)
            measured = {role: getattr(row, f"energy_{role}_median_j") for role in ("host", "accel")}
            measured["node"] = row.energy_median_j
            preds = [v[2] for v in per_role.values()]
            per_role["node"] = (sum(v[0] for v in per_role.values()), sum(v[1] for v in per_role.values()),
                                None if any(p is None for p in preds) else sum(preds))
            for proc in ("host", "accel", "node"):
                m = measured[proc]
                nf, nb, pred = per_role[proc]
                if m is None or not np.isfinite(m) or m <= 0 or pred is None or proc in idle:
                    continue  # an idle processor's bound is 0 J: only the node row compares its draw
                out.append({
                    "run_id": row.run_id, "study": row.study, "case": row.case, "variant": row.variant,
                    "platform": row.platform, "size": row.size, "alpha": row.alpha, "processor": proc,
                    "flops": nf, "bytes": nb, "energy_measured_j": float(m), "energy_predicted_j": pred,
                    "tightness": pred / float(m), "rel_error": (pred - float(m)) / float(m),
                    "energy_source": row.energy_source, "model": ROOFLINE_ENERGY_MODEL,
                })
    df = pd.DataFrame(out, columns=ROOFLINE_ENERGY_COLUMNS)
    strings = ["run_id", "study", "case", "variant", "platform", "processor", "energy_source", "model"]
    return df.astype({c: "string" for c in strings}).astype(
        {c: "float64" for c in ROOFLINE_ENERGY_COLUMNS if c not in strings})


def predict_perop(runs: pd.DataFrame) -> pd.DataFrame:
    """The per-operation model (Kannan et al.) for SA runs with characterised ``tau_add``/``tau_mul``.

    Each processor's part takes the basic-block form ``max(sum_op v_op tau_op,
    bytes t_b)`` over its elements and phases (VecAdd: 1 add; PowAdd: 2016
    multiplications and 32 adds per element, 12 and 256 bytes); the parts run
    concurrently, so the run's time is the longer part. Runs without
    per-operation costs for their platform are dropped (no prediction).
    """
    from analysis.models import perop

    have = runs.dropna(subset=TAU_COLS) if set(TAU_COLS) <= set(runs.columns) else runs.iloc[:0]
    out = predict_sa(have) if len(have) else predict_sa(runs.iloc[:0])
    t_pred = np.full(len(have), np.nan)
    for i, row in enumerate(have.itertuples(index=False)):
        desc = json.loads(row.params) if isinstance(row.params, str) else {}
        elements, phases = desc.get("elements") or {}, desc.get("phases") or {}
        parts = []
        for role in ("host", "accel"):
            n = float(elements.get(role, 0) or 0)
            if n <= 0 or not phases.get(role):
                continue
            counts = {op: n * sum(SA_OPS[p][op] for p in phases[role]) for op in ("add", "mul")}
            tau = {"add": getattr(row, f"tau_add_{role}"), "mul": getattr(row, f"tau_mul_{role}")}
            nbytes = n * sum(SA_BYTES[p] for p in phases[role])
            parts.append(float(perop.basic_block_time(counts, tau, nbytes, getattr(row, f"t_b_{role}"))))
        t_pred[i] = max(parts) if parts else np.nan
    out["model"] = pd.Series([PEROP_MODEL] * len(out), index=out.index, dtype="string")
    out["time_predicted_s"] = t_pred
    out["perf_predicted"] = out["flops"] / out["time_predicted_s"]
    ok = np.isfinite(t_pred)
    tight = np.full(len(out), np.nan)
    if ok.any():
        tight[ok] = metrics.tightness(out["perf_measured"].to_numpy()[ok], out["perf_predicted"].to_numpy()[ok])
    out["tightness"] = tight
    return out[ok] if len(out) else out


FIDELITY_COLUMNS = [
    *GROUP_KEYS, "axis", "quantity", "model", "n_alternatives", "kendall_tau", "pairwise_agreement", "top1_agreement",
    "selection_penalty", "profile_error", "best_measured", "best_predicted",
    "tightness_median", "tightness_min", "tightness_max",
]


def score_group(group: pd.DataFrame, axis: str) -> dict[str, Any]:
    """Ranking fidelity and tightness of one group's alternatives along ``axis`` (``wp`` or ``alpha``).

    Alternatives are ranked by time, or by energy for the energy model's rows
    (``quantity == "energy"``): smaller is better for both.
    """
    g = group.sort_values("alpha" if axis == "alpha" else "variant", kind="stable")
    quantity = str(g["quantity"].iloc[0]) if "quantity" in g else "time"
    cols = ("energy_median_j", "energy_predicted_j") if quantity == "energy" else ("time_median_s", "time_predicted_s")
    m = g[cols[0]].to_numpy(dtype="float64")
    p = g[cols[1]].to_numpy(dtype="float64")
    names = g["variant"].astype(str).tolist()
    row: dict[str, Any] = {k: g[k].iloc[0] for k in GROUP_KEYS}
    row.update(axis=axis, quantity=quantity, model=str(g["model"].iloc[0]), n_alternatives=len(g))
    row.update(
        **metrics.ranking_summary(m, p, names),
        tightness_median=float(np.median(g["tightness"])),
        tightness_min=float(g["tightness"].min()),
        tightness_max=float(g["tightness"].max()),
    )
    return row


def score_groups(runs: pd.DataFrame) -> pd.DataFrame:
    """Fidelity rows for every (group, axis) with at least two alternatives in ``runs``."""
    rows = []
    for axis, flag in (("wp", "axis_wp"), ("alpha", "axis_alpha")):
        sub = runs[runs[flag]]
        for _, g in sub.groupby([*GROUP_KEYS, "model"], sort=True, dropna=False):
            if len(g) >= 2:
                rows.append(score_group(g, axis))
    out = pd.DataFrame(rows, columns=FIDELITY_COLUMNS)
    types = {c: "float64" for c in FIDELITY_COLUMNS if c in {
        "size", "kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty",
        "profile_error", "tightness_median", "tightness_min", "tightness_max"}}
    types.update({c: "string" for c in ("study", "case", "platform", "axis", "quantity", "model", "best_measured",
                                        "best_predicted")})
    types["n_alternatives"] = "int64"
    return out.astype(types)


def failed_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Runs whose newest record is ``failed`` or ``skipped`` (all records of a run in this frame), with the reason."""
    cols = ["run_id", "study", "case", "variant", "platform", "status", "error", "started_at"]
    newest = df.sort_values("started_at", kind="stable").groupby("run_id", sort=True).tail(1)
    out = newest[newest["status"].isin(["failed", "skipped"])][cols].reset_index(drop=True)
    return out.astype({c: "string" for c in cols if c != "started_at"})


# ---------------------------------------------------------------- the Dask job
def scheduler_address(configured: str | None) -> str | None:
    """The scheduler to use: the configured address, else ``$DASK_SCHEDULER_ADDRESS``, else None (local)."""
    return configured or os.environ.get("DASK_SCHEDULER_ADDRESS") or None


def _write_parquet_atomic(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def validate(
    runs_dir: str | Path,
    platforms_dir: str | Path,
    out_dir: str | Path,
    studies: Sequence[str] | None = None,
    address: str | None = None,
    log: Any = print,
    published_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Run the validation job on a Dask cluster and write ``runs``/``fidelity``/``failed`` Parquet + summary."""
    import dask
    import dask.dataframe as dd
    from distributed import Client

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    platforms = load_platforms(platforms_dir)
    fdm_params = validate_fdm.load_platform_params(platforms_dir)
    addr = scheduler_address(address)
    with Client(addr) if addr else Client() as client:
        log(f"[hetval validate] Dask scheduler {client.scheduler.address} ({len(client.nthreads())} workers)")
        ddf = dd.read_parquet(
            str(runs_dir), dataset={"partitioning": {"flavor": "hive", "schema": PARTITION_SCHEMA}}
        )
        if studies:
            ddf = ddf[ddf["study"].isin(list(studies))]
        failed = ddf.shuffle("run_id").map_partitions(failed_runs, meta=failed_runs(ddf._meta))
        published_ddf = ddf[(ddf["case"] == "peach") & (ddf["energy_source"] == "published")]
        fdm_ddf = ddf[ddf["case"] == "fdm"]
        fdm_reduced = fdm_ddf.shuffle("run_id").map_partitions(
            validate_fdm.reduce_fdm, meta=validate_fdm.reduce_fdm(fdm_ddf._meta))
        fdm_joined = fdm_reduced.merge(fdm_params, on=["platform", "backend"], how="inner")
        fdm_predicted = fdm_joined.map_partitions(validate_fdm.predict_fdm, meta=validate_fdm.predict_fdm(fdm_joined._meta))
        peach_ddf = ddf[(ddf["case"] == "peach") & (ddf["energy_source"] != "published")]
        peach_reduced = peach_ddf.shuffle("run_id").map_partitions(reduce_repetitions,
                                                                     meta=reduce_repetitions(peach_ddf._meta))
        ddf = ddf[ddf["case"].isin(list(WP_CASES))]
        by_run = ddf.shuffle("run_id")
        reduced = by_run.map_partitions(reduce_repetitions, meta=reduce_repetitions(ddf._meta))
        joined = reduced.merge(platforms, on="platform", how="inner")
        predicted = dd.concat([
            joined.map_partitions(predict_sa, meta=predict_sa(joined._meta)),
            joined.map_partitions(predict_perop, meta=predict_sa(joined._meta)),
        ])
        energy_predicted = joined.map_partitions(predict_energy, meta=predict_energy(joined._meta))
        peach_joined = peach_reduced.merge(platforms, on="platform", how="inner")
        roofline_energy = dd.concat([
            part.map_partitions(predict_energy_roofline, meta=predict_energy_roofline(part._meta))
            for part in (joined, peach_joined)
        ])
        (runs_pdf, energy_pdf, roofline_energy_pdf, failed_pdf, n_records, n_reduced, n_metered, fdm_pdf, n_fdm,
         published_pdf, peach_pdf) = dask.compute(
            predicted, energy_predicted, roofline_energy, failed, ddf.shape[0], reduced.shape[0],
            reduced["energy_median_j"].count(), fdm_predicted, fdm_reduced.shape[0], published_ddf,
            peach_reduced)
    runs_pdf = runs_pdf.sort_values(["study", "case", "platform", "size", "model", "variant"]).reset_index(drop=True)
    n_sa = int(runs_pdf["run_id"].nunique())
    if n_reduced != n_sa:
        log(f"[hetval validate] warning: {n_reduced - n_sa} ok runs have no characterised platform file")
    energy_pdf = energy_pdf.sort_values(["study", "case", "platform", "size", "variant"]).reset_index(drop=True)
    fidelity = pd.concat([score_groups(runs_pdf), score_groups(energy_pdf)], ignore_index=True)
    from analysis import validate_peach as vp

    idle = {str(r.platform): float(r.idle_w) for r in platforms.itertuples() if np.isfinite(r.idle_w)}
    peach_runs, peach_fid = vp.validate_peach(peach_pdf, idle)
    _write_parquet_atomic(peach_runs, out_dir / "peach_runs.parquet")
    _write_parquet_atomic(peach_fid, out_dir / "peach_fidelity.parquet")
    _write_parquet_atomic(energy_pdf, out_dir / "energy_runs.parquet")
    roofline_energy_pdf = roofline_energy_pdf.sort_values(["study", "case", "platform", "size", "variant", "alpha",
                                                           "processor"]).reset_index(drop=True)
    _write_parquet_atomic(roofline_energy_pdf, out_dir / "energy_roofline.parquet")
    fdm_pdf = fdm_pdf.sort_values(["study", "platform", "grid", "order", "ranks", "decomposition", "marshaling"]).reset_index(drop=True)
    if n_fdm != len(fdm_pdf):
        log(f"[hetval validate] warning: {n_fdm - len(fdm_pdf)} ok FDM runs have no characterised platform/backend")
    fdm_fidelity = validate_fdm.score_fdm(fdm_pdf)
    _write_parquet_atomic(fdm_pdf, out_dir / "fdm_runs.parquet")
    _write_parquet_atomic(fdm_fidelity, out_dir / "fdm_fidelity.parquet")
    published = pd.DataFrame(columns=["paper", "where", "platform", "quantity", "unit", "published", "ours",
                                      "reproduced", "inputs", "note"])
    if published_dir:
        from analysis import published as pub

        published = pd.DataFrame(pub.evaluate(Path(published_dir)), columns=published.columns)
        log(f"[hetval validate] published claims: {int(published['reproduced'].sum())} of {len(published)} "
            f"reproduced from the papers' own inputs")
    _write_parquet_atomic(published.astype({c: "string" for c in published.columns if c != "reproduced"})
                          .astype({"reproduced": "bool"}), out_dir / "published.parquet")
    from analysis import published_runs

    pub_runs, pub_fid = published_runs.validate_runs(published_pdf)
    _write_parquet_atomic(pub_runs, out_dir / "published_runs.parquet")
    _write_parquet_atomic(pub_fid, out_dir / "published_fidelity.parquet")
    _write_parquet_atomic(runs_pdf, out_dir / "runs.parquet")
    _write_parquet_atomic(fidelity, out_dir / "fidelity.parquet")
    _write_parquet_atomic(failed_pdf.sort_values("run_id").reset_index(drop=True), out_dir / "failed.parquet")
    summary = {
        "records": int(n_records),
        "runs_ok": n_sa,
        # every ok run whose energy came from a meter, whether or not the platform has energy parameters to predict it
        "runs_metered": int(n_metered) + int(peach_runs["energy_median_j"].notna().sum()),
        "energy_roofline_rows": int(len(roofline_energy_pdf)),
        "peach_runs_ok": int(len(peach_runs)),
        "peach_curves": int(peach_fid[["study", "platform", "workload", "size", "frequency"]].drop_duplicates().shape[0]),
        "sa_models": sorted(runs_pdf["model"].astype(str).unique().tolist()),
        "runs_failed": int((failed_pdf["status"] == "failed").sum()),
        "runs_skipped": int((failed_pdf["status"] == "skipped").sum()),
        "groups": int(len(fidelity)),
        "fdm_runs_ok": int(len(fdm_pdf)),
        "fdm_groups": int(len(fdm_fidelity)),
        "published_claims": int(len(published)),
        "published_reproduced": int(published["reproduced"].sum()) if len(published) else 0,
        "published_runs": int(len(pub_runs)),
        "platforms": sorted(platforms["platform"].tolist()),
        "studies": sorted(runs_pdf["study"].astype(str).unique().tolist()),
    }
    tmp = out_dir / ".summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    os.replace(tmp, out_dir / "summary.json")
    log(
        f"[hetval validate] {summary['runs_ok']} ok SA/LA runs, {summary['peach_runs_ok']} ok PEACH runs, "
        f"{summary['fdm_runs_ok']} ok FDM runs, {summary['runs_metered']} with measured energy, "
        f"{summary['runs_failed']} failed, {summary['runs_skipped']} skipped, {summary['groups'] + summary['fdm_groups']} fidelity groups -> {out_dir}"
    )
    return summary
