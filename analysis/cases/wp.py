"""What the two-processor workload-partition cases share (SA, LA, and plugin cases of that kind).

A WP case runs each *variant* - a fixed WP (CO, GO, p-DP, CP, ...) or a data
partition DP(alpha) - of each problem size on every platform as one 2-rank MPI
job of :mod:`sims.run`; its records carry static flops and bytes per
processor. Validation reduces the repetitions per run, joins the platform's
``t_f``/``t_b`` (and more), lets every registered model for the case predict
each run, and scores the groups (study, case, platform, size) along the WP
axis and the alpha axis. A subclass says what a size is (:meth:`sizes`,
:meth:`params_of`, :meth:`size_of`) and names its job.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.models.panwar import MODEL as PANWAR
from analysis.models.peach import MODEL as PEACH_MODEL
from analysis.models.peapaw import MODEL as PEAPAW
from analysis.planning.config import platform_layouts
from analysis.planning.jobs import Layout
from analysis.registry import GROUP_COLUMNS, Case, Context, Scored, join_on, models_for
from analysis.scoring import ceilings, guidelines, scaling
from analysis.scoring.classes import bound_class, with_rounds
from analysis.scoring.measured import attach, run_measures
from analysis.scoring.projection import device_selection
from analysis.scoring.runs import (
    FIDELITY_TAIL,
    GROUP_KEYS,
    SAMPLE_COLUMNS,
    begin,
    fidelity_types,
    reduce_repetitions,
    score_batch_begin,
    tightness_intervals,
)
from analysis.scoring.uncertainty import Settings
from analysis.storage.platforms import PLATFORM_COLS, PROBLEM_COLS
from analysis.storage.schema import params_doc
from sims.record import run_id_of
from sims.vocab import dp_variant

#: Columns of ``fidelity.parquet``.
FIDELITY_COLUMNS = [*GROUP_KEYS, "size_label", "axis", "quantity", "model", *FIDELITY_TAIL]


def two_processor_spec(config: Mapping[str, Any], case: str, variant: str, params: dict[str, Any], seed: int,
                       platform: str, job: str, size: int | None, data_bytes: float) -> dict[str, Any]:
    """A run spec of :mod:`sims.run` (2 ranks: host, accel) with its ``run_id`` and its job's ``resources``
    (``data_bytes``: the largest data one rank holds). A p-DP split reads the characterised platform."""
    layout = platform_layouts(config)[platform]
    spec = {
        "study": config["study"], "case": case, "variant": variant, "params": params, "platform": platform,
        "layout": {"host": layout["host"], "accel": layout["accel"]},
        "warmup": config["runs"]["warmup"], "repetitions": config["runs"]["repetitions"], "seed": seed,
        "min_region_factor": config["runs"]["min_region_factor"],
        # how energy is measured is not part of what defines a run (not hashed into run_id)
        "energy": config["energy"],
        "ranks": 2, "job": job, "size": size,
    }
    spec["run_id"] = run_id_of(spec)
    gpus = sum(1 for p in spec["layout"].values() if p.get("backend") == "cupy")
    spec["resources"] = Layout(ranks=2, gpus_per_node=gpus, data_bytes_per_rank=float(data_bytes)).spec()
    if variant == "p-DP":
        spec["needs_platform"] = True
    return spec


def run_runner(spec: Mapping[str, Any], record: str, platform_file: str) -> list[str]:
    """``sims.run``'s words for a two-processor run (module, then arguments): what a launch runs."""
    body = json.dumps({k: v for k, v in spec.items() if k != "run_id"}, sort_keys=True)
    return ["sims.run", "--spec", body, f"--platform-file={platform_file}", "--out", record]


def run_command(spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
    """The ``sims.run`` launch of a two-processor run (``launch`` starts its ranks, e.g. ``mpiexec -n 2``)."""
    return f"{launch} python -m mpi4py -m {shlex.join(run_runner(spec, record, platform_file))}"


class WPCase(Case):
    """A two-processor case validated with the WP models (PerDome/PeaPaw and their kin)."""

    tables = ("runs", "fidelity", "energy_runs", "energy_roofline", "guidelines", "scaling_fits", "projection",
              "splits")
    sections = ("analysis.report.sections.wp:WPSection", "analysis.report.sections.guidelines:GuidelinesSection",
                "analysis.report.sections.splits:SplitsSection")
    job = ""
    #: the precision of a run whose params name no ``dtype``
    precision = "float64"

    def params_of(self, section: Mapping[str, Any], size: Any) -> dict[str, Any]:
        return {"size": int(size)}

    def size_of(self, params: Mapping[str, Any]) -> int:
        return int(params["size"])

    def size_label(self, params: Mapping[str, Any], size: Any) -> str:
        """What a size means to a reader (the ``size_label`` column beside the integer ``size``)."""
        return f"{int(size):,} elements" if "size" in params else str(size)

    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        section = config["cases"][self.name]
        out = []
        variants = dict.fromkeys([*section["wps"], *(dp_variant(float(a)) for a in section["alphas"])])
        for size in section["sizes"]:
            params = self.params_of(section, size)
            for variant in variants:
                for platform in platform_layouts(config):
                    out.append(two_processor_spec(config, self.name, variant, params, int(section["seed"]),
                                                  platform, self.job, self.size_of(params), self.data_bytes(params)))
        return out

    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        return run_command(spec, record, platform_file, launch)

    def runner(self, spec: Mapping[str, Any], record: str, platform_file: str) -> list[str]:
        return run_runner(spec, record, platform_file)

    def phase_work(self, params: Mapping[str, Any]) -> ceilings.Work | None:
        """Per role, the flops per (kernel class, precision) and the memory traffic of a run with these
        record ``params`` (None: unknown - the run keeps its recorded bytes against the vector ceiling)."""
        return None

    def data_bytes(self, params: Mapping[str, Any]) -> float:
        """The largest data one rank of a run with these ``params`` holds, in bytes (its memory request)."""
        return 0.0

    def join(self, runs: pd.DataFrame, platforms: Any) -> pd.DataFrame:
        """Each run's processors, their ceilings and traffic counted from the phases each ran, and what every
        per-run model's rows carry (:func:`analysis.scoring.measured.run_measures`)."""
        joined = join_on(runs, platforms.processors, ["platform"])
        return run_measures(ceilings.apply(joined, "params", lambda text: self.phase_work(params_doc(text))))

    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        out = reduce_repetitions(records)
        labels: dict[tuple[Any, Any], str] = {}
        docs: dict[Any, dict[str, Any]] = {}
        for params, size in set(zip(out["params"].tolist(), out["size"].tolist(), strict=True)):
            if params not in docs:
                docs[params] = params_doc(params)
            labels[(params, size)] = self.size_label(docs[params], size)
        out.insert(out.columns.get_loc("size") + 1, "size_label", pd.array(
            [labels[k] for k in zip(out["params"].tolist(), out["size"].tolist(), strict=True)], dtype="string"))
        return out

    def score(self, predictions: dict[str, pd.DataFrame], context: Context) -> dict[str, pd.DataFrame]:
        by_table: dict[str, list[pd.DataFrame]] = {}
        for model in models_for(self.name):
            rows = predictions.get(model.name)
            if rows is not None and model.table == "peach_runs":  # PEACH on the DP(alpha) sweep: per-run rows
                rows = sweep_rows(rows)
            if rows is not None:
                by_table.setdefault("runs" if model.table == "peach_runs" else model.table, []).append(rows)
        runs = _concat(by_table.get("runs"), ["study", "case", "platform", "size", "model", "variant"])
        energy = _concat(by_table.get("energy_runs"), ["study", "case", "platform", "size", "variant"])
        roofline = _concat(by_table.get("energy_roofline"),
                           ["study", "case", "platform", "size", "variant", "alpha", "processor"])
        settings = context.uncertainty
        if len(runs):
            runs = tightness_intervals(runs, settings)
        if len(energy):
            energy = tightness_intervals(energy, settings)
        bound = runs[runs["model"] == PEAPAW] if len(runs) else runs
        # on a cluster (analysis.scoring.runs.scoring_on) the scaling fits and the groups' bootstrap run there
        # while the projections and guidelines are computed here
        fits = begin(scaling.size_fits, runs[[c for c in scaling.SIZE_FIT_COLUMNS if c in runs]], rows=len(runs))
        fidelity = [score_groups_begin(runs, settings), score_groups_begin(energy, settings)]
        out = {"runs": runs, "energy_runs": energy, "energy_roofline": roofline,
               "splits": split_answers(runs, self.name, context),
               "projection": device_selection(runs, settings.noise_alpha, PANWAR),
               "guidelines": guidelines.evaluate(bound, context.platforms.processors if context else None)}
        return {"fidelity": pd.concat([finish() for finish in fidelity], ignore_index=True), "scaling_fits": fits(),
                **out}

    def scored(self, tables: Mapping[str, pd.DataFrame], balance: Mapping[str, float]) -> Scored | None:
        """This case's time rows of ``runs``, classed by their intensity against the host balance; a group of
        alternatives (one size, in ``fidelity``) takes the class of its size's first run: the alternatives split
        the same work, so their intensities differ only by where the traffic is counted."""
        runs = tables.get("runs")
        if runs is None or not len(runs) or "tightness" not in runs:
            return None
        runs = runs[(runs["case"] == self.name) & (runs["quantity"] == "time" if "quantity" in runs else True)]
        # the precision its params name, else the case's (a frame without params: all the case's)
        precision = runs["params"].map({t: str(params_doc(t).get("dtype", self.precision))
                                        for t in runs["params"].unique()}) if "params" in runs else self.precision
        runs = with_rounds(runs).assign(workload_class=bound_class(runs["intensity"], runs["platform"], dict(balance)),
                                        precision=precision)
        keys = ["study", "platform", "case", "size"]
        sizes = runs.drop_duplicates(keys)[[*keys, "workload_class"]]
        fid = tables.get("fidelity")
        groups = pd.DataFrame(columns=list(GROUP_COLUMNS))
        if fid is not None and len(fid):
            fid = fid[(fid["case"] == self.name) & (fid["quantity"] == "time" if "quantity" in fid else True)]
            groups = fid.merge(sizes, on=keys, how="left")
        return Scored(runs, groups, "wp")


#: what :func:`analysis.scoring.splits.splits` reads of a run row
SWEEP_COLUMNS = ["study", "case", "platform", "size", "size_label", "alpha", "time_median_s", "time_reps_s",
                 "energy_median_j", "model", "time_predicted_s", "flops"]


def split_answers(runs: pd.DataFrame, case_name: str, context: Context | None) -> pd.DataFrame:
    """Each paper's answer to how to split every DP(alpha) sweep of ``runs`` (:mod:`analysis.scoring.splits`); the
    work is the run's counted flops, the idle power the platform's."""
    from analysis.registry import models
    from analysis.scoring.splits import splits, with_idle

    settings = context.uncertainty if context is not None else None
    if settings is None or not len(runs) or "axis_alpha" not in runs:
        return splits(pd.DataFrame(), settings) if settings is not None else pd.DataFrame()
    on_axis = (runs["axis_alpha"].fillna(False).astype(bool) & (runs["quantity"] == "time").fillna(False)).to_numpy(
        dtype=bool)
    sweep = runs.loc[on_axis, [c for c in SWEEP_COLUMNS if c in runs]]  # the columns first: a million rows
    sweep = with_idle(sweep.assign(work=pd.to_numeric(sweep["flops"]).astype("float64")), context.platforms)
    return splits(sweep, settings, {m.name: m.why_not(case_name) for m in models().values()})


#: the PEACH model's curve columns that a run row does not carry
_CURVE_ONLY = ["workload", "frequency", "work", "work_unit", "rate_measured", "rate_predicted", "time_rel_error",
               "eta_measured", "eta_predicted", "energy_rel_error", "endpoint"]


def sweep_rows(predicted: pd.DataFrame) -> pd.DataFrame:
    """The PEACH model's predictions of a DP(alpha) sweep (:func:`analysis.models.peach.sweep_curves`) as run rows
    like every model's: the interior points only (alpha 0 and 1 calibrate it and reproduce themselves), time
    predicted against time measured."""
    # without the calibrations in attrs, which pandas deep-copies into every frame and column derived from it
    predicted = predicted.copy(deep=False)
    predicted.attrs = {}
    inner = predicted[~predicted["endpoint"].astype(bool)] if len(predicted) else predicted
    out = run_measures(inner).drop(columns=[*_CURVE_ONLY, *PLATFORM_COLS, *PROBLEM_COLS], errors="ignore")
    t = out["time_predicted_s"].to_numpy(dtype="float64") if len(out) else np.zeros(0)
    out["model"] = pd.Series([PEACH_MODEL] * len(out), index=out.index, dtype="string")
    out["quantity"] = pd.Series(["time"] * len(out), index=out.index, dtype="string")
    out["perf_predicted"] = out["flops"].to_numpy(dtype="float64") / t if len(out) else np.zeros(0)
    return attach(out)


def _concat(frames: list[pd.DataFrame] | None, order: list[str]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values([c for c in order if c in out.columns], kind="stable").reset_index(drop=True)


def score_groups(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Fidelity rows for every (group, axis) with at least two alternatives in ``runs``, scored as arrays
    (:func:`score_groups_begin`, finished at once)."""
    return score_groups_begin(runs, settings)()


def score_groups_begin(runs: pd.DataFrame, settings: Settings) -> Callable[[], pd.DataFrame]:
    """:func:`score_groups` begun (:func:`analysis.scoring.runs.score_batch_begin`): the call it returns gives
    the rows.

    A group is (study, case, platform, size, model) along an axis; alternatives are ranked by time, or by
    energy for the energy models' rows (``quantity == "energy"``): smaller is better for both.
    """
    begun: list[tuple[str, pd.DataFrame, Callable[[], pd.DataFrame]]] = []
    if len(runs):
        energy_cols = ("energy_median_j", "energy_predicted_j")
        for axis, flag in (("wp", "axis_wp"), ("alpha", "axis_alpha")):
            sub = runs[runs[flag].fillna(False).astype(bool)]
            if not len(sub):
                continue
            if "quantity" not in sub:
                sub = sub.assign(quantity="time")
            keys = [*GROUP_KEYS, "model"]
            sub = sub.sort_values([*keys, "alpha" if axis == "alpha" else "variant"], kind="stable")
            gid = sub.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
            size = np.bincount(gid)[gid]
            sub, gid = sub[size >= 2], gid[size >= 2]
            if not len(sub):
                continue
            energy = (sub["quantity"] == "energy").to_numpy(dtype=bool)

            def pick(time_col: str, energy_col: str, frame: pd.DataFrame = sub, mask: np.ndarray = energy) -> Any:
                t = frame[time_col].to_numpy(dtype="float64") if time_col in frame else np.full(len(frame), np.nan)
                e = frame[energy_col].to_numpy(dtype="float64") if energy_col in frame else np.full(len(frame), np.nan)
                return np.where(mask, e, t)

            samples = [e if en else t for en, t, e in zip(
                energy.tolist(), sub[SAMPLE_COLUMNS["time"]].tolist() if SAMPLE_COLUMNS["time"] in sub else
                [None] * len(sub), sub[SAMPLE_COLUMNS["energy"]].tolist() if SAMPLE_COLUMNS["energy"] in sub else
                [None] * len(sub), strict=True)]
            begun.append((axis, sub, score_batch_begin(
                gid, pick("time_median_s", energy_cols[0]), pick("time_predicted_s", energy_cols[1]),
                sub["variant"].astype(str).tolist(), sub["tightness"].to_numpy(dtype="float64"), samples, settings)))
    return lambda: _fidelity_frame(begun)


def _fidelity_frame(begun: list[tuple[str, pd.DataFrame, Callable[[], pd.DataFrame]]]) -> pd.DataFrame:
    """The fidelity rows of :func:`score_groups_begin`'s axes: each group's keys beside its scores."""
    frames = []
    for axis, sub, finish in begun:
        scored = finish()
        head = sub.iloc[scored.pop("first").to_numpy()]
        keyed = pd.DataFrame({k: head[k].to_numpy() for k in GROUP_KEYS})
        keyed["size_label"] = head["size_label"].to_numpy() if "size_label" in head else keyed["size"].astype(str)
        keyed["axis"] = axis
        keyed["quantity"] = head["quantity"].astype(str).to_numpy()
        keyed["model"] = head["model"].astype(str).to_numpy()
        frames.append(pd.concat([keyed, scored], axis=1))
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FIDELITY_COLUMNS)
    out = out[FIDELITY_COLUMNS]
    return out.astype(fidelity_types(FIDELITY_COLUMNS, ("study", "case", "platform", "axis", "quantity", "model")))
