"""Synthetic-but-realistic record sets for scale tests: real records, replicated under new run ids.

A *seed* is a set of real raw records (``analysis/resources/reference/default-records.json.gz``: the default study measured
on this kind of machine). Replica ``k`` of the seed is every measured seed run under a new run id, with

- the group keys made unique to the replica, so each replica forms its own validation groups of realistic
  size: ``size`` + k for the SA, LA and PEACH cases (a key only; counts and work stay the seed's), the FDM
  grid's ``spacing`` + k x 1e-6 m (the FDM model does not depend on the spacing);
- the repetitions redrawn: each rep's time is one of the seed run's own reps (drawn with replacement)
  times an invocation factor exp(N(0, 0.1)) shared by the run, phase times scaled alike - so a replica has
  this machine's repetition spread, and replicas differ as two invocations do.

Published (ingested) runs are not replicated. :func:`replicas` yields Arrow tables in the dataset's file
schema; :func:`write_dataset` writes them through the same writer gather uses, and :func:`write_raw_files`
writes them as raw record files (what gather reads).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sims.record import FDM_PHASES, stable_hash

SEED = Path(__file__).resolve().parents[1] / "resources" / "reference" / "default-records.json.gz"


def load_seed(path: str | Path = SEED) -> list[dict]:
    """The seed's raw documents (``{"run_id", "records"}``), measured runs only."""
    docs = json.loads(gzip.decompress(Path(path).read_bytes()))
    return [d for d in docs if d["records"][0]["case"] != "published" and d["records"][0]["status"] == "ok"]


def seed_table(docs: list[dict]) -> pa.Table:
    """The seed's records as one table in the run schema (sorted by run_id, rep)."""
    from analysis.storage.schema import RUN_SCHEMA, check_record

    rows = [check_record(r) for d in docs for r in d["records"]]
    return pa.Table.from_pylist(rows, schema=RUN_SCHEMA).sort_by([("run_id", "ascending"), ("rep", "ascending")])


def _spacing_shift(grids: pa.ChunkedArray, k: int) -> pa.Array:
    out = []
    for g in grids.to_pylist():
        if g is None:
            out.append(None)
            continue
        doc = json.loads(g)
        doc["spacing"] = float(doc["spacing"]) + k * 1e-6
        out.append(json.dumps(doc, sort_keys=True, separators=(",", ":")))
    return pa.array(out, pa.string())


def replica(seed: pa.Table, k: int, study: str, rng: np.random.Generator) -> pa.Table:
    """Replica ``k`` of ``seed`` (see the module notes) in study ``study``."""
    ids = seed["run_id"].to_numpy(zero_copy_only=False)
    uniq, inverse = np.unique(ids, return_inverse=True)
    new_ids = np.array([stable_hash({"seed": str(u), "replica": k, "study": study}) for u in uniq], dtype=object)
    # each rep takes one of its run's seed reps (with replacement), times the run's invocation factor
    starts = np.r_[0, np.flatnonzero(ids[1:] != ids[:-1]) + 1]
    counts = np.diff(np.r_[starts, len(ids)])
    pick = np.concatenate([s + rng.integers(0, c, size=c) for s, c in zip(starts, counts, strict=True)])
    factor = np.exp(rng.normal(0.0, 0.1, size=len(uniq)))[inverse]
    cols = {}
    for name in seed.column_names:
        col = seed[name]
        if name == "run_id":
            cols[name] = pa.array(new_ids[inverse], pa.string())
        elif name == "study":
            cols[name] = pa.array([study] * len(ids), pa.string())
        elif name == "size":
            is_fdm = pc.equal(seed["case"], "fdm")
            cols[name] = pc.if_else(is_fdm, col, pc.add(col, pa.scalar(k, pa.int64())))
        elif name == "grid":
            cols[name] = _spacing_shift(col, k)
        elif name in ("time_s", "time_host_s", "time_accel_s", *(f"time_{p}_s" for p in FDM_PHASES)):
            vals = col.to_numpy(zero_copy_only=False).astype("float64")
            cols[name] = pa.array(vals[pick] * factor, pa.float64(), from_pandas=True)
        else:
            cols[name] = col
    return pa.table(cols, schema=seed.schema)


def replicas(seed: pa.Table, n_runs: int, study: str = "synthetic", seed_value: int = 0) -> Iterator[pa.Table]:
    """Replicas of ``seed`` until ``n_runs`` runs (the last replica cut to fit), one table per replica."""
    rng = np.random.default_rng(seed_value)
    per = len(set(seed["run_id"].to_pylist()))
    made, k = 0, 0
    while made < n_runs:
        table = replica(seed, k, study, rng)
        take = min(per, n_runs - made)
        if take < per:
            keep = sorted(set(table["run_id"].to_pylist()))[:take]
            table = table.filter(pc.is_in(table["run_id"], value_set=pa.array(keep)))
        made += take
        k += 1
        yield table


def write_raw_files(tables: Iterator[pa.Table], raw_dir: str | Path) -> list[Path]:
    """Each run of ``tables`` as a raw record file ``<raw_dir>/<run_id>.json`` (what gather reads)."""
    from sims.record import FIELD_TYPES, write_raw

    maps = [name for name, typ in FIELD_TYPES.items() if typ.startswith("map:")]
    paths = []
    for table in tables:
        rows = table.to_pylist()
        by_run: dict[str, list[dict]] = {}
        for r in rows:
            r["started_at"] = r["started_at"].isoformat().replace("+00:00", "Z") if r["started_at"] else None
            for name in maps:  # an Arrow map comes back as (key, value) pairs; a raw record holds an object
                if r.get(name) is not None:
                    r[name] = dict(r[name])
            by_run.setdefault(r["run_id"], []).append(r)
        for run_id, recs in by_run.items():
            path = Path(raw_dir) / f"{run_id}.json"
            write_raw(path, run_id, recs)
            paths.append(path)
    return paths
