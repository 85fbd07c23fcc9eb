"""The FDM scaling model applied to FDM runs: predicted time per run and per part (compute, pack, unpack,
halo, host<->device), from the platform's t_f, t_b, ping-pong latency and bandwidth.

Tightness is ``predicted time / measured time`` (the model is a prediction, not a bound: above 1 it was
pessimistic).
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from functools import lru_cache

import numpy as np
import pandas as pd

from analysis.equations import fdm
from analysis.registry import Model
from analysis.storage.platforms import BACKEND_COLS, FDM_CALIBRATION_COL
from sims.vocab import ROLES

MODEL = "FDM"
CALIBRATED = "FDM-calibrated"


def _pml_width(boundary: str) -> int:
    m = re.match(r"cpml\((\d+)\)", str(boundary))
    return int(m.group(1)) if m else 0


PARTS = ("compute_pred_s", "pack_pred_s", "unpack_pred_s", "halo_pred_s", "h2d_pred_s")
#: the calibrated model splits compute into the two half-steps the runs time separately
HALF_PARTS = ("velocity_pred_s", "stress_pred_s")


def _placement(out: pd.DataFrame, column: str) -> np.ndarray:
    """``nodes`` or ``threads_per_rank`` of every row (1 where the runs do not say)."""
    if column not in out:
        return np.ones(len(out), dtype=int)
    return pd.to_numeric(out[column], errors="coerce").fillna(1).to_numpy(dtype=int)


#: The columns of a run either FDM model reads (besides the calibration and the placement).
_ROW_COLUMNS = ("ranks", "grid", "decomposition", "order", "steps", "marshaling", "boundary", "backend", "cores",
                "t_f", "t_b", "t_b_shared", "latency", "t_net", "latency_inter", "t_net_inter")
_Row = namedtuple("_Row", _ROW_COLUMNS)


def _predictable(out: pd.DataFrame):
    """``(i, row, nodes, threads, latency_inter, t_net_inter)`` of every row either FDM model can predict: a
    measured ping-pong, and across nodes an inter-node one too (else no prediction rather than a guessed
    one); the inter-node figures are None within one node. ``row`` holds :data:`_ROW_COLUMNS` as plain
    Python values (read column by column: a row-wise walk over the whole frame costs more than the model)."""
    nodes, threads = _placement(out, "nodes"), _placement(out, "threads_per_rank")
    absent = [np.nan] * len(out)
    rows = map(_Row._make, zip(*(out[c].tolist() if c in out else absent for c in _ROW_COLUMNS), strict=True))
    for i, r in enumerate(rows):
        if not np.isfinite(r.latency) or not np.isfinite(r.t_net):
            continue
        if int(nodes[i]) > 1:
            if not (np.isfinite(r.latency_inter) and np.isfinite(r.t_net_inter)):
                continue
            yield i, r, int(nodes[i]), int(threads[i]), float(r.latency_inter), float(r.t_net_inter)
        else:
            yield i, r, 1, int(threads[i]), None, None


@lru_cache(maxsize=4096)
def _shape(grid: str) -> tuple[int, ...]:
    return tuple(int(n) for n in json.loads(grid)["shape"])


@lru_cache(maxsize=1 << 16)
def _run_time(shape: tuple[int, ...], decomposition: str, order: int, steps: int, marshaling: str, boundary: str,
              t_f: float, t_b: float, latency: float, t_net: float, on_device: bool, cores: int, nodes: int,
              latency_inter: float | None, t_net_inter: float | None, threads: int = 1) -> tuple[float, ...]:
    """:func:`analysis.equations.fdm.run_time` of one run's inputs: total and parts. Cached: a campaign repeats
    the same scale on the same platform many times, and the model depends on nothing else."""
    pred = fdm.run_time(list(shape), json.loads(decomposition), order, steps, marshaling,
                        _pml_width(boundary), free_surface=boundary.endswith("+free-surface"), nodes=nodes,
                        t_f=t_f, t_b=t_b, latency=latency, t_net=t_net, on_device=on_device, t_pcie=None,
                        cores=cores, latency_inter=latency_inter, t_net_inter=t_net_inter, threads=threads)
    return (float(pred["total"]), *(float(pred[k]) for k in ("compute", "pack", "unpack", "halo", "h2d")))



def _finish(out: pd.DataFrame, model: str) -> pd.DataFrame:
    """Either FDM model's rows: its name, and none of the platform's parameters it read (inputs, not results)."""
    out["model"] = pd.Series([model] * len(out), index=out.index, dtype="string")
    return out.drop(columns=[*BACKEND_COLS, FDM_CALIBRATION_COL, *(f"{p}_{r}" for r in ROLES for p in ("t_f", "t_b"))],
                    errors="ignore")


def predict_fdm(runs: pd.DataFrame) -> pd.DataFrame:
    """Add the FDM model's predicted time and parts; rows carry the platform columns of ``Platforms.backends``."""
    out = runs.copy()
    cols = {k: np.full(len(out), np.nan) for k in ("time_predicted_s", *PARTS)}
    for i, r, nodes, threads, lat_inter, t_net_inter in _predictable(out):
        sharing = min(-(-int(r.ranks) // nodes) * threads, int(r.cores)) > 1  # several cores streaming
        pred = _run_time(_shape(str(r.grid)), str(r.decomposition), int(r.order), int(r.steps), str(r.marshaling),
                         str(r.boundary), float(r.t_f), float(r.t_b_shared if sharing else r.t_b),
                         float(r.latency), float(r.t_net), str(r.backend) == "cupy", int(r.cores), nodes,
                         lat_inter, t_net_inter, threads)
        for k, v in zip(("time_predicted_s", *PARTS), pred, strict=True):
            cols[k][i] = v
    for k in HALF_PARTS:
        cols[k] = np.full(len(out), np.nan)
    for k, v in cols.items():
        out[k] = v
    return _finish(out, MODEL)


@lru_cache(maxsize=64)
def _calibration(text: str, mode: str) -> dict | None:
    """One mode of a backend's FDM calibration (JSON text of the platform column); None when it has none."""
    modes = json.loads(text).get("modes") or {}
    fallback = {"timeshared": ("shared", "alone"), "shared": ("alone",)}.get(mode, ())
    found = next((modes[m] for m in (mode, *fallback) if modes.get(m)), None)
    if mode == "timeshared" and found is modes.get("timeshared") and modes.get("shared"):
        # a time-shared rank packs right after its own half-step, in its time slice: the shared mode's packs
        shared = modes["shared"].get("marshal") or {}
        marshal = {order: {impl: {**fits, **({"pack": shared[order][impl]["pack"]}
                                             if "pack" in shared.get(order, {}).get(impl, {}) else {})}
                           for impl, fits in impls.items()}
                   for order, impls in (found.get("marshal") or {}).items()}
        found = {**found, "marshal": marshal}
    return found


@lru_cache(maxsize=1 << 16)
def _calibrated_time(shape: tuple[int, ...], decomposition: str, order: int, steps: int, marshaling: str,
                     boundary: str, text: str, mode: str, backend: str, latency: float, t_net: float, cores: int,
                     nodes: int, latency_inter: float | None, t_net_inter: float | None,
                     threads: int = 1) -> tuple[float, ...] | None:
    """:func:`analysis.equations.fdm.calibrated_run_time` of one run: total, velocity, stress, pack, unpack, halo,
    h2d; None when the calibration does not cover the run (another order, a marshaling copy not measured)."""
    calib = _calibration(text, mode)
    if calib is None:
        return None
    try:
        pred = fdm.calibrated_run_time(list(shape), json.loads(decomposition), order, steps, marshaling, calib,
                                       backend=backend, latency=latency, t_net=t_net, pml_width=_pml_width(boundary),
                                       free_surface=boundary.endswith("+free-surface"), cores=cores, nodes=nodes,
                                       latency_inter=latency_inter, t_net_inter=t_net_inter, threads=threads)
    except KeyError:
        return None
    return tuple(float(pred[k]) for k in ("total", "velocity", "stress", "pack", "unpack", "halo", "h2d"))


def _texts(column: pd.Series) -> list[str | None]:
    """Each row's calibration text (None where it has none), one string object per distinct text: the column
    is categorical (:data:`analysis.storage.platforms.FDM_CALIBRATION_COL`), and the caches below then hash and
    compare each text once."""
    cat = column.astype("category")
    distinct = [str(t) for t in cat.cat.categories]
    return [distinct[c] if c >= 0 else None for c in cat.cat.codes.tolist()]


def predict_calibrated(runs: pd.DataFrame) -> pd.DataFrame:
    """The calibrated FDM model's predicted time and phases; rows carry the platform columns of
    ``Platforms.backends``, the calibration among them. No calibration (a platform characterised without FDM
    runs, or a GPU run, whose host<->device copies are not calibrated): no prediction."""
    out = runs.copy()
    names = ("time_predicted_s", *HALF_PARTS, "pack_pred_s", "unpack_pred_s", "halo_pred_s", "h2d_pred_s")
    cols = {k: np.full(len(out), np.nan) for k in names}
    texts = _texts(out[FDM_CALIBRATION_COL]) if FDM_CALIBRATION_COL in out else [None] * len(out)
    for i, r, nodes, threads, lat_inter, t_net_inter in _predictable(out):
        text = texts[i]
        if text is None or str(r.backend) == "cupy":
            continue
        busy_cores = -(-int(r.ranks) // nodes) * threads
        # a node with more busy cores than cores time-shares them: its kernels cost what the time-shared
        # calibration measured (older platform files: the shared one)
        mode = "timeshared" if busy_cores > int(r.cores) else "shared" if busy_cores > 1 else "alone"
        pred = _calibrated_time(_shape(str(r.grid)), str(r.decomposition), int(r.order), int(r.steps),
                                str(r.marshaling), str(r.boundary), text, mode,
                                str(r.backend), float(r.latency), float(r.t_net), int(r.cores), nodes,
                                lat_inter, t_net_inter, threads)
        if pred is None:
            continue
        for k, v in zip(names, pred, strict=True):
            cols[k][i] = v
    for k, v in cols.items():
        out[k] = v
    out["compute_pred_s"] = out["velocity_pred_s"] + out["stress_pred_s"]
    return _finish(out, CALIBRATED)


#: why the FDM models judge no two-processor run
NOT_STENCIL = "it prices a stencil time step (its kernels, halo exchange and marshaling), not a split workload"


class FDMModel(Model):
    """Per-rank roofline of the step's compulsory traffic plus halo messages and marshaling."""

    name = MODEL
    kind = "predictor"
    cases = ("fdm",)
    not_for = {c: NOT_STENCIL for c in ("sa", "la", "peach")}
    needs = BACKEND_COLS
    table = "fdm_runs"

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_fdm(runs)


class FDMCalibratedModel(Model):
    """Per-rank, per-phase cost of the solver's own kernels, calibrated by characterisation microbenchmarks."""

    name = CALIBRATED
    kind = "predictor"
    cases = ("fdm",)
    not_for = {**{c: NOT_STENCIL for c in ("sa", "la", "peach")},
               **{f"fdm/({b})": "its kernels are calibrated on the study's FDM backend (cases.fdm.backend) only"
                  for b in ("numpy", "numba", "cupy")}}
    needs = (*BACKEND_COLS, FDM_CALIBRATION_COL)
    table = "fdm_runs"

    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        return predict_calibrated(runs)
