"""The FDM seismology code (:mod:`sims.fdm`) at several scales: strong and weak scaling runs.

Config ``cases.fdm``: the grid ``scales`` (``{ranks, shape, decompositions}``), space ``orders``, halo
``marshaling`` designs, medium, source, receivers, boundary, ``backend``, ``steps``. Each scale x order x
decomposition x design is one run of ``python -m mpi4py -m sims.fdm run`` on the scale's ranks, whose
run id is the one the FDM driver hashes (:func:`sims.fdm.spec.run_identity`). Validation predicts each
run with the FDM model and ranks, at each scale, the marshaling designs at a fixed decomposition and
the decompositions at a fixed design.
"""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import yaml

from analysis.cases.fdm_rows import fdm_class, worst_phase
from analysis.equations.fdm import halo_links
from analysis.models.fdm import CALIBRATED, MODEL
from analysis.models.panwar import MODEL as PANWAR
from analysis.planning.config import ConfigError, platform_layouts
from analysis.planning.jobs import Layout, LayoutError, scale_layout
from analysis.registry import GROUP_COLUMNS, Case, Context, Scored, join_on
from analysis.scoring import scaling
from analysis.scoring.projection import PROJECTION_COLUMNS, device_selection
from analysis.scoring.runs import (
    COUNT_COLS,
    FIDELITY_TAIL,
    fidelity_types,
    reps_lists,
    round_lists,
    score_batch,
    tightness_intervals,
)
from analysis.scoring.uncertainty import Settings
from analysis.storage.schema import params_docs
from sims.fdm.spec import SpecError, grid_label, parse, run_identity
from sims.placement import THREADS_VARIABLE
from sims.record import run_id_of
from sims.vocab import FDM_PHASES, MARSHALING, ROLES

DEFAULT_BACKEND = "numba"
#: the fields' precision (every FDM kernel computes in float32)
PRECISION = "float32"
#: Bytes an FDM rank holds per grid point: 9 float32 wavefields, the medium's parameters, C-PML memory
#: variables and halo buffers (256^3 on one rank stays under 1.2 GiB).
FDM_BYTES_PER_POINT = 72

SCHEMA = yaml.safe_load(f"""
type: object
additionalProperties: false
default: {{}}
description: FDM seismology scaling runs (sims.fdm); each scale x order x design x decomposition is a run
properties:
  platform:
    type: ["string", "null"]
    description: the platform (of 'platforms') whose characterised parameters predict these runs; null = the first
    default: null
  backend:
    enum: [numpy, numba, cupy]
    default: numba
  spacing:
    type: number
    exclusiveMinimum: 0
    default: 10.0
  steps:
    type: integer
    minimum: 1
    maximum: 100000
    default: 20
  warmup:
    type: ["integer", "null"]
    minimum: 0
    maximum: 100
    description: "untimed whole runs of the time loop before the timed ones (its one-step warm-up leaves the first loop slower); null = runs.warmup"
    default: null
  medium:
    type: object
    description: "{{homogeneous: {{vp, vs, rho}}}} or {{layers: [{{top, vp, vs, rho}}, ...]}} (sims.fdm run spec)"
    default: {{homogeneous: {{vp: 3000.0, vs: 1732.0, rho: 2500.0}}}}
  source:
    type: object
    description: the run spec's source without 'position'; it sits at position_fraction of the grid
    default: {{kind: explosive, f0: 5.0, moment: 1.0e15}}
  position_fraction:
    type: array
    items: {{type: number, minimum: 0, exclusiveMaximum: 1}}
    minItems: 3
    maxItems: 3
    default: [0.5, 0.5, 0.5]
  receivers_fraction:
    type: array
    description: receiver positions as fractions of the grid's extent
    items:
      type: array
      items: {{type: number, minimum: 0, exclusiveMaximum: 1}}
      minItems: 3
      maxItems: 3
    default: [[0.6, 0.5, 0.5], [0.5, 0.65, 0.4]]
  boundary:
    type: object
    default: {{kind: cpml, width: 8}}
  free_surface:
    type: boolean
    description: a free surface on top instead of the top absorbing layer
    default: false
  orders:
    type: array
    uniqueItems: true
    minItems: 1
    items: {{enum: [2, 4]}}
    default: [2]
  marshaling:
    type: array
    uniqueItems: true
    minItems: 1
    items: {{enum: [{", ".join(MARSHALING)}]}}
    default: [{", ".join(MARSHALING)}]
  scales:
    type: array
    description: "each {{ranks, shape: [nx, ny, nz], decompositions: [auto | [px, py, pz], ...]}}"
    default: []
    items:
      type: object
      additionalProperties: false
      required: [shape]
      description: "ranks, or nodes x ranks_per_node (both given: they must agree)"
      properties:
        ranks: {{type: integer, minimum: 1, maximum: 65536}}
        nodes: {{type: integer, minimum: 1, maximum: 4096, description: nodes the ranks spread over (default 1)}}
        ranks_per_node: {{type: integer, minimum: 1, maximum: 1024}}
        backends:
          type: array
          uniqueItems: true
          minItems: 1
          items: {{enum: [numpy, numba, cupy]}}
          description: "the backends this scale runs on (default: [backend]); one grid on two lets Panwar's device selection pick between them"
        threads_per_rank: {{type: integer, minimum: 1, maximum: 1024, description: cores each rank is given (default 1)}}
        gpus_per_node: {{type: integer, minimum: 0, maximum: 64, description: "GPUs asked for per node (default: one per rank with the cupy backend)"}}
        shape:
          type: array
          items: {{type: integer, minimum: 1}}
          minItems: 3
          maxItems: 3
        decompositions:
          type: array
          minItems: 1
          default: [auto]
          items:
            anyOf:
              - {{const: auto}}
              - {{type: array, items: {{type: integer, minimum: 1}}, minItems: 3, maxItems: 3}}
""")


def fdm_runs(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The FDM runs of the study: scale x order x marshaling design x decomposition.

    Each spec carries ``fdm_doc``, the run spec handed to ``python -m sims.fdm run``,
    and the identity fields the FDM driver hashes, so the workflow's ``run_id``
    is the one the driver writes into its records.
    """
    fdm = config["cases"]["fdm"]
    platform = fdm.get("platform") or config["platforms"][0]["name"]
    if platform not in platform_layouts(config):
        raise ConfigError(f"cases.fdm.platform: {platform!r} is not one of the configured platforms")
    h = float(fdm["spacing"])
    # each backend's processor on the platform (the first role driving it): a run's counts are that processor's
    roles: dict[str, str] = {}
    for role in ROLES:
        roles.setdefault(str(platform_layouts(config)[platform][role].get("backend")), role)
    out = []
    for n, scale in enumerate(fdm["scales"]):
        try:
            where = scale_layout(scale, f"cases.fdm.scales[{n}]")
        except LayoutError as exc:
            raise ConfigError(str(exc)) from None
        # where the ranks sit is part of the run only when it is not the default (so ids stay stable)
        placed = {k: where[k] for k in ("nodes", "threads_per_rank") if where[k] > 1}
        if where["gpus_per_node"]:
            placed["gpus_per_node"] = where["gpus_per_node"]
        shape = [int(x) for x in scale["shape"]]
        extent = [s * h for s in shape]
        source = dict(fdm["source"], position=[f * e for f, e in zip(fdm["position_fraction"], extent, strict=True)])
        receivers = [[f * e for f, e in zip(r, extent, strict=True)] for r in fdm["receivers_fraction"]]
        for backend, order, decomposition, design in itertools.product(
                scale.get("backends") or [fdm["backend"]], fdm["orders"], scale.get("decompositions", ["auto"]),
                fdm["marshaling"]):
            doc = {
                "study": config["study"], "platform": platform, "ranks": where["ranks"], **placed,
                "warmup": config["runs"]["warmup"] if fdm["warmup"] is None else fdm["warmup"],
                "repetitions": config["runs"]["repetitions"], "grid": {"shape": shape, "spacing": h}, "time": {"steps": int(fdm["steps"])},
                "medium": fdm["medium"], "source": source, "receivers": receivers,
                "boundary": fdm["boundary"], "order": int(order), "backend": backend,
                "free_surface": bool(fdm["free_surface"]),
                "decomposition": decomposition, "marshaling": design,
                **({"processor": roles[backend]} if backend in roles else {}),
            }
            try:
                parse(doc)
            except SpecError as exc:
                raise ConfigError(f"cases.fdm.scales[{n}] (order {order}): {exc}") from None
            ident = run_identity(doc)
            out.append({**ident, "run_id": run_id_of(ident), "ranks": where["ranks"],
                        "size": int(np.prod(shape)), "fdm_doc": doc, "resources": fdm_layout(doc).spec()})
    return out


def fdm_layout(doc: Mapping[str, Any]) -> Layout:
    """What an FDM run's job needs: its scale's nodes, ranks, threads and GPUs (one per rank on the ``cupy``
    backend unless the scale says), and one rank's share of the padded grid's fields."""
    ranks = int(doc["ranks"])
    nodes = int(doc.get("nodes") or 1)
    gpus = doc.get("gpus_per_node")
    if gpus is None:
        gpus = ranks // nodes if doc.get("backend") == "cupy" else 0
    halo = int(doc.get("order", 2)) // 2
    points = float(np.prod([int(n) + 2 * halo for n in doc["grid"]["shape"]]))
    return Layout(ranks=ranks, nodes=nodes, threads_per_rank=int(doc.get("threads_per_rank") or 1),
                  gpus_per_node=int(gpus), data_bytes_per_rank=FDM_BYTES_PER_POINT * points / ranks)


SCALE_KEYS = ["study", "platform", "grid", "order", "boundary", "ranks", "backend"]


FDM_FIDELITY_COLUMNS = [*SCALE_KEYS, "axis", "fixed", "model", *FIDELITY_TAIL, "noise_floor", "noise_floor_pairs"]
#: the quantile of the identical-code runs' relative differences taken as the study's run-to-run drift
DRIFT_QUANTILE = 0.9
#: identical-code runs of one group compared pairwise, at most (a larger group: evenly spaced order statistics)
DRIFT_MAX_RUNS = 64


def code_path(backend: str, ranks: int, marshaling: str) -> str:
    """What a run of a marshaling design actually executes: one rank exchanges nothing, and on a CPU backend
    device-pack and gpu-aware are the same Numba copies (:func:`analysis.equations.fdm.marshal_impl`)."""
    from analysis.equations.fdm import marshal_impl

    if int(ranks) == 1:
        return "no exchange"
    return marshaling if backend == "cupy" else marshal_impl(backend, marshaling)


def code_paths(runs: pd.DataFrame) -> list[str]:
    """:func:`code_path` of every run (row) of ``runs``."""
    return [code_path(str(b), int(r), str(m))
            for b, r, m in zip(runs["backend"], runs["ranks"], runs["marshaling"], strict=True)]


def drift_floor(runs: pd.DataFrame) -> tuple[float, int]:
    """The study's run-to-run drift, measured: the :data:`DRIFT_QUANTILE` quantile of the relative differences
    ``|a - b| / min(a, b)`` of median times between runs that execute identical code at the same scale and
    decomposition (designs that differ only in name: :func:`code_path`), and how many such pairs there were.
    Runs of one study execute one after another; a machine whose bandwidth moves between them makes identical
    code differ by more than the repetitions of one run show. (0, 0) without such pairs."""
    if not len(runs):
        return 0.0, 0
    one = runs[runs["model"].astype(str) == str(runs["model"].iloc[0])] if "model" in runs else runs
    keys = [*SCALE_KEYS, "decomposition", "backend", *(k for k in ("nodes", "threads_per_rank") if k in one)]
    path = code_paths(one)
    code = one.assign(_path=path).groupby([*keys, "_path"], sort=False, dropna=False).ngroup().to_numpy()
    t = one["time_median_s"].to_numpy(dtype="float64")
    ok = np.isfinite(t) & (t > 0)
    code, t = code[ok], t[ok]
    order = np.lexsort((t, code))  # each group's times together, sorted
    code, t = code[order], t[order]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])  # empty: one start, a group of 0
    sizes = np.diff(np.r_[starts, len(t)])
    diffs: list[np.ndarray] = []
    for size in np.unique(sizes[sizes >= 2]).tolist():  # the groups of one size at once, as a matrix
        first = starts[sizes == size]
        times = t[first[:, None] + np.arange(size)]
        if size > DRIFT_MAX_RUNS:  # a huge campaign: evenly spaced order statistics keep the pairs bounded
            times = times[:, np.linspace(0, size - 1, DRIFT_MAX_RUNS).round().astype(int)]
        i, j = np.triu_indices(times.shape[1], 1)
        diffs.append((times[:, j] / times[:, i] - 1.0).ravel())  # sorted: |a - b| / min(a, b)
    pairs = np.concatenate(diffs) if diffs else np.zeros(0)
    if not len(pairs):
        return 0.0, 0
    return float(np.quantile(pairs, DRIFT_QUANTILE)), len(pairs)


#: (messages within a node, messages between nodes) -> the ``links`` a run's halos used
LINK_NAMES = {(False, False): "none", (True, False): "intra-node", (False, True): "inter-node",
              (True, True): "intra-node+inter-node"}


def _links(grid: str, decomposition: str, nodes: int) -> tuple[int, int]:
    """A run's halo messages per exchange within a node and between nodes (:func:`halo_links`)."""
    return _shape_links(tuple(json.loads(grid)["shape"]), decomposition, int(nodes))


@lru_cache(maxsize=4096)
def _shape_links(shape: tuple[int, ...], decomposition: str, nodes: int) -> tuple[int, int]:
    """:func:`_links` of a grid's shape; cached, as a study repeats each layout in many runs (its grids may differ
    in spacing only)."""
    return halo_links(shape, json.loads(decomposition), nodes)


def reduce_fdm(df: pd.DataFrame) -> pd.DataFrame:
    """One row per ok FDM run: medians and spread of ``time_s`` and medians of the per-phase times."""
    ok = df[(df["status"] == "ok") & (df["case"] == "fdm")]
    first_cols = ["study", "variant", "platform", "ranks", "grid", "order", "boundary", "decomposition",
                  "marshaling", "steps", "points", "params", *(c for c in COUNT_COLS if c in df)]
    ordered = ok.sort_values(["run_id", "rep"], kind="stable")
    g = ordered.groupby("run_id", sort=True)
    first = g[first_cols].first()
    t = g["time_s"]
    out = first.assign(
        n_reps=t.count().astype("int64"),
        time_median_s=t.median().astype("float64"),
        time_min_s=t.min().astype("float64"),
        time_max_s=t.max().astype("float64"),
        time_iqr_s=(t.quantile(0.75) - t.quantile(0.25)).astype("float64"),
        **{f"{p}_median_s": pd.to_numeric(g[f"time_{p}_s"].median()).astype("float64") for p in FDM_PHASES},
        time_reps_s=reps_lists(ordered["run_id"], ordered["time_s"]),
        rounds_reps=round_lists(ordered["run_id"], ordered.get("round"), ordered["time_s"]),
    ).reset_index()
    docs = params_docs(out["params"])
    out["backend"] = [d.get("backend", DEFAULT_BACKEND) if d else None for d in docs]
    out["nodes"] = pd.array([int(d.get("nodes") or 1) for d in docs], dtype="int64")
    out["threads_per_rank"] = pd.array([int(d.get("threads_per_rank") or 1) for d in docs], dtype="int64")
    links = [_links(g, dec, int(n)) for g, dec, n in zip(out["grid"].tolist(), out["decomposition"].tolist(),
                                                         out["nodes"].tolist(), strict=True)]
    out["messages_intra_node"] = pd.array([a for a, _ in links], dtype="int64")
    out["messages_inter_node"] = pd.array([b for _, b in links], dtype="int64")
    out["links"] = pd.array([LINK_NAMES[(a > 0, b > 0)] for a, b in links], dtype="string")
    out = out.drop(columns=["params"])
    for c in ("run_id", "study", "variant", "platform", "grid", "boundary", "decomposition", "marshaling", "backend"):
        out[c] = out[c].astype("string")
    for c in ("ranks", "order", "steps", "points"):
        out[c] = pd.to_numeric(out[c]).astype("int64")
    for c in COUNT_COLS:  # the solver's counts (null per processor in a record that names none)
        out[c] = pd.to_numeric(out[c]).astype("Int64") if c in out else pd.array([pd.NA] * len(out), dtype="Int64")
    return out


def score_fdm(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Fidelity of the model's ranking of marshaling designs and of decompositions at each scale, every
    group scored at once (:func:`analysis.scoring.runs.score_batch`); rows ordered by scale, then axis, then the
    fixed design. A group whose alternatives all execute the same code (:func:`code_path`: the designs of a
    one-rank run) is not scored."""
    frames = []
    floor, pairs = drift_floor(runs) if {"backend", "marshaling"} <= set(runs.columns) else (0.0, 0)
    settings = replace(settings, noise_floor=floor)
    have = runs[np.isfinite(runs["time_predicted_s"].to_numpy(dtype="float64"))]
    for rank, (axis, other) in enumerate((("marshaling", "decomposition"), ("decomposition", "marshaling"))):
        if not len(have):
            break
        keys = [*SCALE_KEYS, "model", other]
        sub = have.sort_values([*keys, axis], kind="stable")
        gid = sub.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
        distinct = sub.groupby(keys, sort=False, dropna=False)[axis].transform("nunique").to_numpy()
        # a group ranks code, not names: marshaling designs that all execute the same code (one rank exchanges
        # nothing) differ only by the machine's drift, so they are no ranking at all
        keep = distinct >= 2
        if axis == "marshaling":
            keep &= pd.Series(code_paths(sub)).groupby(gid).transform("nunique").to_numpy() >= 2
        sub, gid = sub[keep], gid[keep]
        if not len(sub):
            continue
        scored = score_batch(gid, sub["time_median_s"].to_numpy(dtype="float64"),
                             sub["time_predicted_s"].to_numpy(dtype="float64"), sub[axis].astype(str).tolist(),
                             sub["tightness"].to_numpy(dtype="float64"),
                             sub["time_reps_s"].tolist() if "time_reps_s" in sub else None, settings)
        head = sub.iloc[scored.pop("first").to_numpy()]
        keyed = pd.DataFrame({k: head[k].to_numpy() for k in SCALE_KEYS})
        keyed["axis"] = axis
        keyed["fixed"] = [f"{other}={v}" for v in head[other].astype(str)]
        keyed["model"] = head["model"].astype(str).to_numpy() if "model" in head else MODEL
        keyed["_rank"] = rank
        frames.append(pd.concat([keyed, scored], axis=1))
    if frames:
        out = pd.concat(frames, ignore_index=True).sort_values([*SCALE_KEYS, "_rank", "fixed", "model"], kind="stable")
        out["noise_floor"] = floor
        out["noise_floor_pairs"] = pairs
        out = out[FDM_FIDELITY_COLUMNS].reset_index(drop=True)
    else:
        out = pd.DataFrame(columns=FDM_FIDELITY_COLUMNS)
    types = fidelity_types(FDM_FIDELITY_COLUMNS, ("study", "platform", "grid", "boundary", "axis", "fixed", "model"))
    types.update(order="int64", ranks="int64", noise_floor="float64", noise_floor_pairs="int64")
    return out.astype(types)


def fdm_device_selection(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Panwar's device selection (thesis §3.4.2) of every FDM workload - one grid, order and boundary on one rank -
    that ran on both of the platform's processors' backends: its projected and measured times on each, the pick
    and its penalty (:func:`analysis.scoring.projection.device_selection`)."""
    mine = runs[runs["model"].astype(str) == PANWAR] if len(runs) and "model" in runs else runs.iloc[:0]
    if not len(mine):
        return pd.DataFrame(columns=PROJECTION_COLUMNS)
    label = (mine["grid"].map(grid_label).astype(str) + " order " + mine["order"].astype(str) + ", "
             + mine["boundary"].astype(str) + ", " + mine["ranks"].astype(str) + " rank")
    return device_selection(mine.assign(case="fdm", size=mine["points"], size_label=label.astype("string")),
                            settings.noise_alpha, PANWAR)


class FDMCase(Case):
    name = "fdm"
    title = "FDM seismology scaling (elastic staggered grid, MPI domain decomposition)"
    order = 40
    schema = SCHEMA
    tables = ("fdm_runs", "fdm_fidelity", "scaling_fits", "projection")
    sections = ("analysis.report.sections.fdm:FDMSection",)

    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        return fdm_runs(config)

    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        threads = int(spec["fdm_doc"].get("threads_per_rank") or 1)
        env = f"{THREADS_VARIABLE}={threads} " if threads > 1 else ""
        return f"{env}{launch} python -m mpi4py -m {shlex.join(self.runner(spec, record, platform_file))}"

    def runner(self, spec: Mapping[str, Any], record: str, platform_file: str) -> list[str]:
        """``sims.fdm run`` with the run's document inline: it writes ``results/fdm/<study>/<run_id>/spec.yaml``
        beside its seismograms itself."""
        out = f"results/fdm/{spec['study']}/{spec['run_id']}"
        return ["sims.fdm", "run", "--spec-text", json.dumps(spec["fdm_doc"], sort_keys=True), "--out", out,
                "--raw-record", record, "--record-failures"]

    def with_repetitions(self, spec: Mapping[str, Any], repetitions: int) -> dict[str, Any]:
        """The run's FDM document counts the repetitions its command measures."""
        out = super().with_repetitions(spec, repetitions)
        out["fdm_doc"]["repetitions"] = int(repetitions)
        return out

    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        return reduce_fdm(records)

    def join(self, runs: pd.DataFrame, platforms: Any) -> pd.DataFrame:
        """Each run's backend: its kernel costs, link and calibration (``platforms.backends``); and the platform's
        two processors' ``t_f``/``t_b``, which a per-processor model (Panwar's projection) reads with the run's
        counts per processor."""
        joined = join_on(runs, platforms.backends, ["platform", "backend"])
        roles = [f"{p}_{r}" for r in ROLES for p in ("t_f", "t_b")]
        procs = platforms.processors
        if procs is None or not set(roles) <= set(procs.columns):
            return joined.assign(**{c: np.nan for c in roles})
        return joined.merge(procs[["platform", *roles]].astype({"platform": joined["platform"].dtype}),
                            on="platform", how="left")

    def score(self, predictions: dict[str, pd.DataFrame], context: Context) -> dict[str, pd.DataFrame]:
        frames = [worst_phase(predictions[m]) if "compute_pred_s" in predictions[m] else predictions[m]
                  for m in sorted(predictions) if predictions[m] is not None]
        if not frames:
            return {"fdm_runs": pd.DataFrame(), "fdm_fidelity": score_fdm(pd.DataFrame(columns=["time_predicted_s"]),
                                                                                context.uncertainty),
                    "scaling_fits": scaling.frame([])}
        settings = context.uncertainty
        own = {c for m in (MODEL, CALIBRATED) if predictions.get(m) is not None for c in predictions[m].columns}
        # another model's rows keep the FDM models' columns (and none of the platform's it read)
        frames = [f if "compute_pred_s" in f else f[[c for c in f.columns if c in own or not own]]
                  for f in frames if not f.empty or "compute_pred_s" in f]
        runs = pd.concat(frames, ignore_index=True)
        runs = runs.sort_values(["study", "platform", "grid", "order", "ranks", "decomposition", "marshaling", "model"]
                                ).reset_index(drop=True)
        runs = tightness_intervals(runs, settings)
        return {"fdm_runs": runs, "fdm_fidelity": score_fdm(runs, settings), "scaling_fits": scaling.fdm_fits(runs),
                "projection": fdm_device_selection(runs, settings)}

    def scored(self, tables: Mapping[str, pd.DataFrame], balance: Mapping[str, float]) -> Scored | None:
        """``fdm_runs`` and ``fdm_fidelity``, each row in its class (:func:`fdm_class`); float32 fields."""
        runs = tables.get("fdm_runs")
        if runs is None or not len(runs) or "tightness" not in runs:
            return None
        fid = tables.get("fdm_fidelity")
        groups = pd.DataFrame(columns=list(GROUP_COLUMNS))
        if fid is not None and len(fid):
            groups = fid.assign(case=self.name, workload_class=fdm_class(fid))
        return Scored(runs.assign(case=self.name, workload_class=fdm_class(runs), precision=PRECISION), groups, "fdm")


CASE = FDMCase()
