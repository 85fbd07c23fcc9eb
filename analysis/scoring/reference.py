"""Every model's accuracy on the reference runs: fixed measurements shipped with hetval.

``analysis/resources/reference/`` holds real records of the default study and the platform file characterised with
them. Each validation predicts those runs with every model of every registered case and keeps each model's median
tightness on them in the history (``kind = "reference"``). Its inputs never change, so the figure changes exactly
when a model's code does, and never when the machine or the night does: ``hetval track`` tells a change of a
model from a change of the machine by it, on the night the code changed (:mod:`analysis.tracking.track`, rule 7).
A case without runs among the reference records (a plugin's) has no reference figure.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from analysis.registry import cases, models_for
from analysis.scoring.measured import predicted
from analysis.storage.dataset import _rows_to_table
from analysis.storage.platforms import Platforms, load_platform_params, load_platforms
from analysis.storage.schema import check_record
from sims.platform_file import read_platform

REFERENCE = Path(__file__).resolve().parents[1] / "resources" / "reference"
RECORDS = REFERENCE / "default-records.json.gz"
PLATFORM = REFERENCE / "cpu-pair-numpy-numba.yaml"
#: where a reference row says it comes from (its ``group``, with the inputs' digest: new reference runs start new
#: series rather than changing every model's figure)
GROUP = "reference runs"


@cache
def digest() -> str:
    """The first 12 hex digits of the SHA-256 of the reference records and platform file."""
    h = hashlib.sha256()
    for path in (RECORDS, PLATFORM):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


@cache
def _inputs() -> tuple[pd.DataFrame, Platforms]:
    """The reference records as validation reads them, and their platform (read once per process)."""
    rows = [check_record(r) for doc in json.loads(gzip.decompress(RECORDS.read_bytes())) for r in doc["records"]]
    docs = [(PLATFORM, read_platform(PLATFORM))]
    frame = _rows_to_table(rows).to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow")}.get)  # as validate
    return frame, Platforms(load_platforms(docs), load_platform_params(docs))


def reference_rows(names: Iterable[str] | None = None, log: Callable[[str], Any] = print) -> pd.DataFrame:
    """One history row per (case, model) of the cases ``names`` (default: every registered one) with runs among the
    reference records: the model's median tightness over the runs it predicts (``n_reps`` = those runs; no
    interval, nothing in it is drawn; ``group`` names the reference runs by their digest). A case or model that
    fails on them loses only its own rows, saying why through ``log``."""
    records, platforms = _inputs()
    platform = str(platforms.processors["platform"].iloc[0]) if len(platforms.processors) else ""
    out = []
    for name in (cases() if names is None else names):
        mine = records[(records["case"] == name).to_numpy(dtype=bool, na_value=False)]
        if not len(mine):
            continue
        case = cases()[name]
        try:
            joined = case.join(case.reduce(mine), platforms)
        except Exception as exc:  # noqa: BLE001 - a case that cannot read the reference runs loses only its rows
            log(f"[hetval validate] warning: the reference runs of {name}: {type(exc).__name__}: {exc}; no reference "
                "figure for its models (hetval track judges them by their nights alone)")
            continue
        for model in models_for(name):
            try:
                pred = predicted(model, joined)
            except Exception as exc:  # noqa: BLE001 - as above, for one model
                log(f"[hetval validate] warning: {model.name} on the reference runs of {name}: "
                    f"{type(exc).__name__}: {exc}; no reference figure for it")
                continue
            if pred is None or "tightness" not in pred:
                continue
            tight = pd.to_numeric(pred["tightness"], errors="coerce").to_numpy(dtype=np.float64)
            tight = tight[np.isfinite(tight) & (tight > 0)]
            if not len(tight):
                continue
            out.append({"kind": "reference", "case": name, "platform": platform, "group": f"{GROUP} {digest()}",
                        "model": model.name, "metric": "tightness_median", "value": float(np.median(tight)),
                        "lo": math.nan, "hi": math.nan, "n_reps": len(tight), "n_alternatives": None})
    return pd.DataFrame(out)
