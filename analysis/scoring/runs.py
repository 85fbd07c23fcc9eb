"""Per-run reduction of repetitions and per-group ranking fidelity: the pure pandas steps every case shares.

Each function is a typed pure pandas transform, tested with pandas and lifted
onto Dask by the validation engine (:mod:`analysis.scoring.validate`) with
one Dask task per data file (:func:`analysis.scoring.validate.case_frame`).
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.scoring import tasks
from analysis.scoring.uncertainty import (
    UNCERTAINTY_COLUMNS,
    Settings,
    batch_ranking,
    pad_sorted,
    run_intervals,
    uncertainty_rows,
)

#: Keys that identify one comparison group of the WP cases (SA, LA and their kind).
GROUP_KEYS = ["study", "case", "platform", "size"]
#: The ranking-fidelity metrics of :func:`analysis.scoring.metrics.ranking_summary`, in table order.
RANKING_METRICS = ["kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error"]
#: Columns of every fidelity table after its own keys: the metrics, the picks and the tightness summary.
FIDELITY_TAIL = ["n_alternatives", *RANKING_METRICS, "best_measured", "best_predicted",
                 "tightness_median", "tightness_min", "tightness_max", *UNCERTAINTY_COLUMNS]
#: The list columns :func:`reduce_repetitions` keeps: every ok repetition's value, in ``rep`` order.
SAMPLE_COLUMNS = {"time": "time_reps_s", "energy": "energy_reps_j"}
COUNT_COLS = ["flops", "bytes", "flops_host", "bytes_host", "flops_accel", "bytes_accel"]
_ENERGY = ["energy_j", "energy_host_j", "energy_accel_j"]
REDUCED_ENERGY = ["energy_median_j", "energy_host_median_j", "energy_accel_median_j", "energy_iqr_j", "energy_source"]


def fidelity_types(columns: list[str], strings: tuple[str, ...] = ()) -> dict[str, str]:
    """pandas dtypes of a fidelity table: metrics and tightness float64, counts int64, the named keys strings."""
    floats = (*RANKING_METRICS, "tightness_median", "tightness_min", "tightness_max", "top1_noise_aware",
              "selection_penalty_noise_aware", *(c for c in UNCERTAINTY_COLUMNS if c.endswith(("_lo", "_hi"))))
    types = {c: "float64" for c in columns if c in floats}
    types.update({c: "string" for c in columns if c in (*strings, "best_measured", "best_predicted",
                                                        "best_measured_noise_aware", "size_label")})
    types.update({c: "Int64" for c in columns if c == "size"})
    types.update({c: "int64" for c in columns if c in ("n_alternatives", "n_reps_min")})
    types.update({c: "bool" for c in columns if c == "distinguishable"})
    return types


def score_alternatives(keys: dict[str, Any], measured: np.ndarray, predicted: np.ndarray, names: list[str],
                       tightness: pd.Series, samples: list[Any] | None,
                       settings: Settings) -> dict[str, Any]:
    """One fidelity row: the group's keys, the ranking metrics of ``names``, the tightness summary and
    every figure's interval and the noise-aware picks, from the alternatives' repetitions ``samples``
    (:func:`score_batch` for one group)."""
    t = pd.Series(tightness).to_numpy(dtype="float64")
    if not len(t):
        t = np.full(len(names), np.nan)
    row = score_batch(np.zeros(len(names), dtype=np.int64), measured, predicted, names, t, samples, settings)
    out = row.iloc[0].to_dict()
    out = {c: (v.item() if isinstance(v, np.generic) else v) for c, v in out.items()}
    return {**keys, **out}


#: Where :func:`score_batch` may spread its groups: ``(client, groups per task)`` (see :func:`scoring_on`).
_SCORING: contextvars.ContextVar[tuple[Any, int, float, str | None] | None] = contextvars.ContextVar(
    "hetval_scoring", default=None)


@contextlib.contextmanager
def scoring_on(client: Any, groups_per_task: int = 20_000, patience: float = 30.0,
               handoff: str | None = None) -> Iterator[None]:
    """Inside this block :func:`score_batch` scores more than ``groups_per_task`` groups as Dask tasks of that
    many groups on ``client``'s cluster (the validation job's), so a larger cluster scores faster. The result
    is the same as scoring in one piece: a group's resamples depend only on the seed and its shape. A cluster
    left without workers for ``patience`` seconds fails the scoring (:func:`analysis.scoring.tasks.gather_watched`).
    ``handoff``: a directory every worker sees, now and later (a local cluster of processes), through which the
    tasks' inputs go instead of the comm (:func:`analysis.scoring.tasks.hand_over`)."""
    token = _SCORING.set((client, int(groups_per_task), float(patience), handoff))
    try:
        yield
    finally:
        _SCORING.reset(token)


def begin(function: Callable[..., Any], *args: Any, rows: int = 0) -> Callable[[], Any]:
    """``function(*args)`` begun: the call it returns gives its value. Inside :func:`scoring_on`, with more than
    ``groups_per_task`` ``rows``, it runs as a task on the cluster while the caller computes something else;
    elsewhere that call computes it. ``function`` must be importable by name (a Dask task's)."""
    pool = _SCORING.get()
    if pool is None or rows <= pool[1]:
        return lambda: function(*args)
    client, _, patience, handoff = pool
    # the arguments go to the cluster as data (or as a file every worker sees), not inside the task graph
    handed = tasks.hand_over(list(args), handoff) if handoff else None
    if isinstance(handed, tasks.Handed):
        future = client.submit(_run_task, function, handed, pure=False, priority=1)
    else:
        future = client.submit(_run_task, function, *(client.scatter(list(args)) if args else ()), pure=False,
                               priority=1)

    def finish() -> Any:
        try:
            return tasks.gather_watched(client, [future], patience)[0]
        finally:
            tasks.discard(handed)

    return finish


def _run_task(function: Callable[..., Any], *args: Any) -> Any:
    tasks.for_arrays()  # a Dask worker's allocator, as a plain process's (see analysis.scoring.tasks)
    if len(args) == 1 and isinstance(args[0], tasks.Handed):
        args = tuple(tasks.opened(args[0]))
    return function(*args)


def score_batch(gid: Any, measured: Any, predicted: Any, names: Sequence[str], tightness: Any,
                samples: Sequence[Any] | None, settings: Settings) -> pd.DataFrame:
    """Fidelity of many groups at once: one row per group with the :data:`FIDELITY_TAIL` columns
    (:func:`score_batch_begin`, finished at once)."""
    return score_batch_begin(gid, measured, predicted, names, tightness, samples, settings)()


def score_batch_begin(gid: Any, measured: Any, predicted: Any, names: Sequence[str], tightness: Any,
                      samples: Sequence[Any] | None, settings: Settings) -> Callable[[], pd.DataFrame]:
    """:func:`score_batch` begun: the call it returns gives the scored rows. Inside :func:`scoring_on` a large
    batch's tasks are submitted here and that call gathers them, so the caller computes something else while
    the cluster scores; elsewhere that call does the scoring.

    Fidelity of many groups at once: one row per group with the :data:`FIDELITY_TAIL` columns.

    The inputs have one entry per alternative, groups consecutive and in their alternatives' order;
    ``gid`` labels the group of each entry (a new group starts wherever it changes). ``measured`` and
    ``predicted`` are times (or energies), ``tightness`` the fraction of the bound reached, ``samples``
    the repetitions. Groups of the same size are scored together as arrays
    (:func:`analysis.scoring.uncertainty.batch_ranking`, :func:`analysis.scoring.uncertainty.uncertainty_rows`), by the
    same definitions as :func:`analysis.scoring.metrics.ranking_summary` and
    :func:`analysis.scoring.uncertainty.group_uncertainty`. Inside :func:`scoring_on` a large batch is scored as
    tasks on the cluster; each task receives plain arrays (the repetitions already padded and sorted, the
    names as codes), never Python lists, so shipping a chunk costs a memory copy, not a pickle per value.
    """
    s = settings
    gid = np.asarray(gid)
    R = len(gid)
    starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]]) if R else np.empty(0, dtype=np.int64)
    m = np.asarray(measured, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    t = np.asarray(tightness, dtype=np.float64)
    if samples is None:
        XS, n = np.full((R, 1), np.nan), np.zeros(R, dtype=np.int_)
    else:
        XS, n = pad_sorted(samples)
    codes, labels = pd.factorize(pd.Series([str(x) for x in names], dtype=object), sort=False)
    labels = np.asarray(labels, dtype=object)
    pool = _SCORING.get()
    if pool is not None and len(starts) > pool[1]:
        client, per, patience, handoff = pool
        cuts = [*starts[::per].tolist(), R]
        chunks = [(starts[(starts >= a) & (starts < b)] - a, m[a:b], p[a:b], t[a:b], XS[a:b], n[a:b],
                   codes[a:b], labels, s) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        # the chunks' data go to the workers as data, not inside the task graph; they run before any task
        # submitted at the default priority (the validation's reading of the cases still to score)
        data = [tasks.hand_over(c, handoff) for c in chunks] if handoff else client.scatter(chunks)
        futures = [client.submit(_score_chunk, d, pure=False, priority=1) for d in data]

        def gather() -> pd.DataFrame:
            try:
                parts = tasks.gather_watched(client, futures, patience)
            finally:
                for d in data:
                    tasks.discard(d)
            for part, a in zip(parts, cuts[:-1], strict=True):
                part["first"] += a
            return pd.concat(parts, ignore_index=True)

        return gather
    return lambda: _score_arrays(starts, m, p, t, XS, n, codes, labels, s)


def _score_arrays(starts: np.ndarray, m: np.ndarray, p: np.ndarray, t: np.ndarray, XS: np.ndarray, n: np.ndarray,
                  codes: np.ndarray, labels: np.ndarray, s: Settings) -> pd.DataFrame:
    """:func:`score_batch` on its prepared arrays (group starts, medians, predictions, tightness, padded sorted
    repetitions and their counts, name codes into ``labels``)."""
    R = len(m)
    sizes = np.diff(np.r_[starts, R]).astype(np.int64)
    G = len(starts)
    label = labels[codes] if len(labels) else np.full(R, "", dtype=object)
    out: dict[str, Any] = {"n_alternatives": sizes}
    text = ("best_measured", "best_predicted", "best_measured_noise_aware")
    for c in FIDELITY_TAIL[1:]:
        if c in text:
            out[c] = np.full(G, "", dtype=object)
        elif c == "n_reps_min":
            out[c] = np.zeros(G, dtype=np.int64)
        elif c == "distinguishable":
            out[c] = np.zeros(G, dtype=bool)
        else:
            out[c] = np.full(G, np.nan)
    for k in np.unique(sizes).tolist():
        g = np.flatnonzero(sizes == k)
        idx = starts[g][:, None] + np.arange(k)
        mk, pk, tk = m[idx], p[idx], t[idx]
        point = batch_ranking(mk[:, None, :], pk)
        for metric in RANKING_METRICS:
            out[metric][g] = point[metric][:, 0]
        nm = label[idx].tolist()
        for col, v in (("best_measured", mk), ("best_predicted", pk)):
            hit = (v == v.min(axis=1, keepdims=True)).tolist()
            out[col][g] = [", ".join(a for a, h in zip(row, hr, strict=True) if h)
                           for row, hr in zip(nm, hit, strict=True)]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a group whose tightness is all NaN
            out["tightness_median"][g] = np.median(tk, axis=1)
            out["tightness_min"][g] = np.nanmin(tk, axis=1)
            out["tightness_max"][g] = np.nanmax(tk, axis=1)
        unc = uncertainty_rows(mk, pk, tk, XS[idx], n[idx], nm, s)
        for c in UNCERTAINTY_COLUMNS:
            out[c][g] = unc[c]
    frame = pd.DataFrame(out, columns=FIDELITY_TAIL)
    frame["first"] = starts
    return frame


def _score_chunk(args: Any) -> pd.DataFrame:
    tasks.for_arrays()  # a Dask worker's allocator, as a plain process's (see analysis.scoring.tasks)
    return _score_arrays(*tasks.opened(args))


def tightness_intervals(runs: pd.DataFrame, settings: Settings,
                        median: str = "time_median_s", samples: str = "time_reps_s") -> pd.DataFrame:
    """``runs`` with ``tightness_lo``/``tightness_hi``: each run's tightness interval from its repetitions
    (:func:`analysis.scoring.uncertainty.run_intervals`, every run at once).

    Rows ranked by energy (``quantity == "energy"``) resample their energy repetitions instead.
    """
    s = settings
    out = runs.copy()
    R = len(out)
    nan = np.full(R, np.nan)

    def col(name: str) -> np.ndarray:
        return pd.to_numeric(out[name], errors="coerce").to_numpy(dtype="float64") if name in out else nan

    energy = (out["quantity"] == "energy").fillna(False).to_numpy(dtype=bool) if "quantity" in out else np.zeros(
        R, dtype=bool)
    med = np.where(energy, col("energy_median_j"), col(median))
    none = [None] * R
    t_reps = out[samples].tolist() if samples in out else none
    e_reps = out[SAMPLE_COLUMNS["energy"]].tolist() if SAMPLE_COLUMNS["energy"] in out else none
    reps = [e if en else tr for en, tr, e in zip(energy.tolist(), t_reps, e_reps, strict=True)]
    out["tightness_lo"], out["tightness_hi"] = run_intervals(col("tightness"), med, reps, s)
    return out


def reps_lists(run_id: pd.Series, values: pd.Series) -> pd.Series:
    """Per run (sorted by ``run_id``; rows in repetition order within a run), the list of its finite-or-not
    non-null values as floats (NaN dropped, infinities kept)."""
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype="float64")
    keys = run_id.to_numpy()
    runs, start = np.unique(keys, return_index=True)
    order = np.argsort(start, kind="stable")
    runs, start = runs[order], start[order]
    keep = ~np.isnan(v)
    # one list of every kept value, then a slice of it per run: no NumPy call per run
    bounds = np.r_[0, np.cumsum(keep)][np.r_[start, len(v)]].tolist()
    flat = v[keep].tolist()
    lists = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return pd.Series(lists, index=pd.Index(runs, name=run_id.name), dtype=object)


def round_lists(run_id: pd.Series, rounds: pd.Series | None, times: pd.Series) -> pd.Series:
    """Per run (as :func:`reps_lists`), the round each of its timed repetitions was measured in (beside
    ``time_reps_s``; NaN where a record says none: measured before rounds were recorded)."""
    t = pd.to_numeric(times, errors="coerce").to_numpy(dtype="float64")
    r = (pd.to_numeric(rounds, errors="coerce").to_numpy(dtype="float64") if rounds is not None
         else np.full(len(t), np.nan))
    r = np.where(np.isnan(t), np.nan, np.where(np.isnan(r), -1.0, r))  # kept where the time is, -1 = unknown
    lists = reps_lists(run_id, pd.Series(r, index=run_id.index))
    return lists.map(lambda xs: [x if x >= 0 else float("nan") for x in xs])


def energy_sources(run_id: pd.Series, sources: pd.Series) -> pd.Series:
    """Per run (index sorted), :func:`_energy_source` of its repetitions' sources, every run at once."""
    frame = pd.DataFrame({"run_id": run_id.to_numpy(), "source": sources.astype("string").to_numpy()})
    have = frame.dropna(subset=["source"]).drop_duplicates()
    per_run = have.groupby("run_id", sort=True)["source"]
    count = per_run.size()
    out = pd.Series("none", index=pd.Index(np.unique(frame["run_id"].to_numpy()), name=run_id.name), dtype="string")
    single = count[count == 1].index
    out.loc[single] = per_run.first().loc[single].to_numpy()
    mixed = count[count > 1].index
    if len(mixed):  # rare: the one-run rule on just those runs
        rule = have[have["run_id"].isin(mixed)].groupby("run_id", sort=True)["source"].agg(_energy_source)
        out.loc[rule.index] = rule.to_numpy()
    return out


def _energy_source(sources: pd.Series) -> str:
    """The run's energy source: the one its repetitions share, or 'mixed: a, b' when they differ."""
    found = sorted(set(sources.dropna().astype(str)))
    return found[0] if len(found) == 1 else ("none" if not found else "mixed: " + ", ".join(found))


def reduce_repetitions(df: pd.DataFrame) -> pd.DataFrame:
    """Per run (all repetitions in this frame): medians and spread of the measured times.

    Only ``ok`` rows are reduced; the result has one row per ``run_id``.
    """
    is_ok = (df["status"] == "ok").to_numpy(dtype=bool, na_value=False)
    ok = df.copy() if is_ok.all() else df[is_ok].copy()  # a copy, not a take of every column, when all are ok
    for c in _ENERGY:
        ok[c] = pd.to_numeric(ok[c], errors="coerce").astype("float64") if c in ok else np.nan
    if "energy_source" not in ok:
        ok["energy_source"] = "none"
    keys = ["run_id", "study", "case", "variant", "platform", "size", "alpha", "params", *COUNT_COLS]
    base = ok[keys].copy()
    base["size"] = pd.to_numeric(base["size"]).astype("Int64")
    for c in ("alpha", *COUNT_COLS):
        base[c] = pd.to_numeric(base[c]).astype("float64")
    # the repetitions in order: only the columns read per repetition are sorted
    ordered = ok[["run_id", "rep", "time_s", "time_host_s", "time_accel_s", *_ENERGY,
                  *(["round"] if "round" in ok else [])]].sort_values(["run_id", "rep"], kind="stable")
    grouped = ordered.groupby("run_id", sort=True)
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
            "energy_source": energy_sources(ok["run_id"], ok["energy_source"]),
            "time_reps_s": reps_lists(ordered["run_id"], ordered["time_s"]),
            "rounds_reps": round_lists(ordered["run_id"], ordered.get("round"), ordered["time_s"]),
            "energy_reps_j": reps_lists(ordered["run_id"], ordered["energy_j"]),
        }
    )
    out = first.join(out).reset_index()
    for c in ("run_id", "study", "case", "variant", "platform", "params"):
        out[c] = out[c].astype("string")
    return out[["run_id", "study", "case", "variant", "platform", "size", "alpha", "params", *COUNT_COLS,
                "n_reps", "time_median_s", "time_min_s", "time_max_s", "time_iqr_s",
                "time_host_median_s", "time_accel_median_s", *REDUCED_ENERGY, "time_reps_s", "rounds_reps",
                "energy_reps_j"]]


def failed_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Runs whose newest record is ``failed`` or ``skipped`` (all records of a run in this frame), with the reason."""
    cols = ["run_id", "study", "case", "variant", "platform", "status", "error", "started_at"]
    bad = df["status"].isin(["failed", "skipped"]).to_numpy(dtype=bool)
    df = df[df["run_id"].isin(df.loc[bad, "run_id"].unique())]  # only runs with such a record can end on one
    newest = df.sort_values("started_at", kind="stable").groupby("run_id", sort=True).tail(1)
    out = newest[newest["status"].isin(["failed", "skipped"])][cols].reset_index(drop=True)
    return out.astype({c: "string" for c in cols if c != "started_at"})


