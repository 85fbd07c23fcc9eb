"""Characterised platforms as the frames validation joins to runs.

Every platform file is read through :func:`sims.platform_file.read_platform`
(with its energy overlay). :class:`Platforms` holds two views: ``processors``,
one row per platform with each role's ``t_f``, ``t_b``, per-operation costs,
usable energy parameters and idle power (joined by the two-processor cases),
and ``backends``, one row per (platform, backend) with the FDM model's inputs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.scoring.ceilings import CEILING_COLS, ceiling_values
from sims.fdm import cost
from sims.platform_file import PlatformFileError, read_platform

TAU_COLS = ["tau_add_host", "tau_mul_host", "tau_add_accel", "tau_mul_accel"]
#: the NumPy-only costs (:data:`sims.bench.ops.NUMPY_OPS`): per element moved and per element added in calls of
#: one row of the SA buffer; null on a processor of another backend
NUMPY_TAU_COLS = ["tau_move_host", "tau_short_add_host", "tau_move_accel", "tau_short_add_accel"]
#: the smallest R² of the fits behind a processor's per-operation costs (:data:`TAU_COLS`, and
#: :data:`NUMPY_TAU_COLS` where measured)
TAU_R2_COLS = ["tau_r2_host", "tau_r2_accel"]
#: the ``tau_spread`` of a processor's float32 multiplication cost: how far it moved between the
#: characterisation's repetitions (it carries 2016 of the PowAdd's 2048 operations per element)
TAU_SPREAD_COLS = ["tau_spread_host", "tau_spread_accel"]
ENERGY_PARAMS = ("e_f", "e_b", "p_s")
ENERGY_COLS = [f"{p}_{r}" for r in ("host", "accel") for p in ENERGY_PARAMS]
#: ``t_f_<class>_<dtype>_<role>``: the compute ceilings per kernel class (:mod:`analysis.scoring.ceilings`)
PLATFORM_COLS = ["t_f_host", "t_b_host", "t_f_accel", "t_b_accel", *TAU_COLS, *NUMPY_TAU_COLS, *TAU_R2_COLS,
                 *TAU_SPREAD_COLS, *ENERGY_COLS, "idle_w",
                 *CEILING_COLS]
#: why a role's fitted energy parameters are not used ("" when they are, or when there are none)
PROBLEM_COLS = ["energy_problem_host", "energy_problem_accel"]
BACKEND_COLS = ["t_f", "t_b", "t_b_shared", "latency", "t_net", "latency_inter", "t_net_inter", "cores"]
#: the FDM kernels' calibration of a backend (JSON text of the platform file's ``fdm_calibration.<backend>``, its
#: samples cut to what the model reads: :func:`_fit_inputs`; null when the platform was characterised without FDM
#: runs in its study). A categorical column: joined to every FDM run, each row holds a code, not a copy of the text
FDM_CALIBRATION_COL = "fdm_calibration"


@dataclass(frozen=True)
class Platforms:
    """The characterised platforms of one study, as validation joins them; ``replicates`` are the same
    platforms as each characterisation replicate alone measured them (``replicates[k]``: every platform's
    replicate ``k + 1``, or its pooled file where it has fewer than two, as many as the fewest replicated platform has),
    empty when no platform file names replicates (:mod:`sims.bench.replicates`)."""

    processors: pd.DataFrame
    backends: pd.DataFrame
    replicates: tuple[Platforms, ...] = ()

    @classmethod
    def read(cls, platforms_dir: str | Path) -> Platforms:
        return cls.from_files(sorted(Path(platforms_dir).glob("*.yaml")))

    @classmethod
    def from_files(cls, paths: list[str | Path]) -> Platforms:
        docs = [(Path(p), read_platform(p)) for p in paths]
        files = [replicate_files(path, doc) for path, doc in docs]
        # a platform with no replicates (published) is its pooled file in each; the replicated ones give as many
        # replicates as the fewest of them has, so that no replicate's figure is the pooled one standing in
        count = min((len(f) for f in files if len(f) >= 2), default=0)
        replicates = []
        if count >= 2:
            for k in range(count):
                chosen = [(f[k], read_platform(f[k])) if len(f) >= 2 else (path, doc)
                          for (path, doc), f in zip(docs, files, strict=True)]
                replicates.append(cls(load_platforms(chosen), load_platform_params(chosen)))
        return cls(load_platforms(docs), load_platform_params(docs), tuple(replicates))


def replicate_files(path: Path, doc: dict[str, Any]) -> list[Path]:
    """The replicates' own platform files a pooled platform file names (beside it), in replicate order."""
    section = doc.get("replicates") if isinstance(doc, dict) else None
    files = section.get("files") if isinstance(section, dict) else None
    if not isinstance(files, list):
        return []
    out = []
    for entry in files:
        name = entry.get("file") if isinstance(entry, dict) else None
        if not name:
            return []
        where = Path(name) if Path(name).is_absolute() else path.parent / name
        if not where.exists():
            raise PlatformFileError(f"{path} names replicate {name}, which is not there (characterise again)")
        out.append(where)
    return out


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


def load_platforms(docs: list[tuple[Path, dict[str, Any]]] | str | Path) -> pd.DataFrame:
    """One row per characterised platform: ``t_f``/``t_b`` (median-based) of host and accel, the compute
    ceilings per kernel class and precision, and more.

    ``docs`` are ``(path, document)`` pairs read with :func:`read_platform`, or a directory of platform files.
    """
    if not isinstance(docs, list):
        docs = [(p, read_platform(p)) for p in sorted(Path(docs).glob("*.yaml"))]
    rows = []
    for path, doc in docs:
        procs = doc.get("processors") or {}
        try:
            row = {"platform": doc.get("platform", path.stem)}
            for role in ("host", "accel"):
                for p in ("t_f", "t_b"):
                    row[f"{p}_{role}"] = float(procs[role][p]["value"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PlatformFileError(f"{path}: missing or bad processors.<role>.<t_f|t_b>.value ({exc})") from exc
        for role in ("host", "accel"):
            problem = energy_fit_problem(procs[role])
            row[f"energy_problem_{role}"] = problem or ""
            usable = problem is None
            for p in ENERGY_PARAMS:
                v = procs[role].get(p) if isinstance(procs[role], dict) else None
                have = usable and isinstance(v, dict) and v.get("value") is not None
                row[f"{p}_{role}"] = float(v["value"]) if have else np.nan
        for role in ("host", "accel"):
            row.update(ceiling_values(procs[role], role))
        idle = doc.get("idle_power") or {}
        row["idle_w"] = float(idle["value"]) if idle.get("value") is not None else np.nan
        for role in ("host", "accel"):
            fits = ((procs[role].get("operations") or {}).get("fits") or {}) if isinstance(procs[role], dict) else {}
            r2 = []
            for op in ("add", "mul", "move", "short_add"):
                fit = fits.get(f"{op}/float32")
                if fit is None and op in ("move", "short_add"):  # measured on NumPy only
                    row[f"tau_{op}_{role}"] = np.nan
                    continue
                tau = (fit or {}).get("tau")
                row[f"tau_{op}_{role}"] = float(tau) if tau is not None and tau > 0 else np.nan
                got = (fit or {}).get("r2")
                r2.append(float(got) if got is not None else np.nan)
            row[f"tau_r2_{role}"] = min(r2) if all(np.isfinite(r2)) else np.nan
            spread = (fits.get("mul/float32") or {}).get("tau_spread")
            row[f"tau_spread_{role}"] = float(spread) if spread is not None else np.nan
        rows.append(row)
    cols = ["platform", *PLATFORM_COLS]
    return pd.DataFrame(rows, columns=[*cols, *PROBLEM_COLS]).astype(
        {**{c: "float64" for c in cols[1:]}, **{c: "string" for c in PROBLEM_COLS}})


#: what the calibrated model's local refits read of a calibration sample (:func:`analysis.equations.fdm.local_coefficients`
#: and ``local_marshal``): the half-steps' features and median time, the marshaling's elements, block and time
_SAMPLE_FIELDS = frozenset(cost.FEATURES) | {"time_median_s", "elements", "block_points", "time_per_field_s",
                                             "exchange"}


def _fit_inputs(doc: Any) -> Any:
    """A calibration document whose ``samples`` keep only :data:`_SAMPLE_FIELDS`: the model refits each rank's
    costs from them at its block size; each sample's repetitions and residuals stay in the platform file and its
    report table."""
    if isinstance(doc, dict):
        return {k: ([{f: x for f, x in s.items() if f in _SAMPLE_FIELDS} for s in v if isinstance(s, dict)]
                    if k == "samples" and isinstance(v, list) else _fit_inputs(v)) for k, v in doc.items()}
    return doc


def load_platform_params(docs: list[tuple[Path, dict[str, Any]]] | str | Path) -> pd.DataFrame:
    """Per platform and backend: ``t_f``, ``t_b``, ``t_b_shared``, ping-pong ``latency``/``t_net`` (within a
    node; ``latency_inter``/``t_net_inter`` between nodes, null unless measured) and ``cores``.

    A platform file without a ``network`` section (characterised before the
    ping-pong existed) gives null latency and bandwidth: its FDM runs get no
    prediction rather than a guessed one.
    """
    if not isinstance(docs, list):
        docs = [(p, read_platform(p)) for p in sorted(Path(docs).glob("*.yaml"))]
    rows = []
    for path, doc in docs:
        procs = doc.get("processors") or {}
        net = doc.get("network") or {}
        inter = net.get("inter_node") or {}  # measured only when the platform spans nodes
        for proc in procs.values():
            if not isinstance(proc, dict) or "backend" not in proc:
                continue  # a published machine or a processor no run of ours drives: nothing to predict with
            try:
                rows.append({
                    "platform": str(doc.get("platform", path.stem)),
                    "backend": str(proc["backend"]),
                    "t_f": float(proc["t_f"]["value"]),
                    "t_b": float(proc["t_b"]["value"]),
                    "t_b_shared": float((proc.get("t_b_shared") or proc["t_b"])["value"]),
                    "latency": float(net["latency"]["value"]) if net else np.nan,
                    "t_net": float(net["t_net"]["value"]) if net else np.nan,
                    "latency_inter": float(inter["latency"]["value"]) if inter else np.nan,
                    "t_net_inter": float(inter["t_net"]["value"]) if inter else np.nan,
                    "cores": float(len(procs)),
                    FDM_CALIBRATION_COL: (json.dumps(_fit_inputs(calib[proc["backend"]]), sort_keys=True)
                                          if isinstance(calib := doc.get("fdm_calibration"), dict)
                                          and isinstance(calib.get(proc["backend"]), dict) else None),
                })
            except (KeyError, TypeError, ValueError) as exc:
                raise PlatformFileError(f"{path}: bad processor entry ({exc})") from exc
    cols = ["platform", "backend", *BACKEND_COLS]
    out = pd.DataFrame(rows, columns=[*cols, FDM_CALIBRATION_COL]).drop_duplicates(["platform", "backend"],
                                                                                  keep="first")
    return out.astype({"platform": "string", "backend": "string", **{c: "float64" for c in cols[2:]},
                       FDM_CALIBRATION_COL: "category"})


