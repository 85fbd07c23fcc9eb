"""Raw run records -> the hive-partitioned Parquet dataset, and reading it back.

Layout: ``<runs>/study=<study>/case=<case>/part-<b>.parquet``, where ``<b>`` is the
first hex digit of the run id (16 buckets per partition); rows keyed by
(``run_id``, ``rep``), and **every row of a run lives in exactly one file** - so
the validation job reduces each file on its own, with no shuffle, and gathering
one new run rewrites one bucket (a sixteenth of its partition), never the
dataset. Gathering is idempotent: every row of a ``run_id`` is replaced by the
rows of its newest raw record, so re-gathering never creates a duplicate. Each
bucket file is replaced atomically (temporary file + rename). A partition in the
older one-file layout (``part.parquet``) is split into buckets the first time
gather touches it.
A raw file that fails the schema is moved to ``<quarantine>/<study>/`` under its
own name with ``<name>.reason.txt`` beside it, and its rows stay out of the
dataset. For such a file and for a ``failed`` run (whose record is gathered
like any other) a retry request ``<retry>/<study>/<run_id>.json`` is written:
the workflow's run rule takes that file as an input when it exists, so the
next invocation redoes exactly those runs, and a run that succeeds is not
redone again. (Quarantining copies rather than moves the raw file so that the
workflow's targets stay present within the invocation that found it; the redo
overwrites it.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from analysis.schema import (
    FILE_SCHEMA,
    PARTITION_KEYS,
    PARTITION_SCHEMA,
    ROW_KEY,
    RUN_SCHEMA,
    RecordError,
    check_record,
)
from sims.atomic import atomic_write_bytes, atomic_write_parquet, atomic_write_text

PART_FILE = "part.parquet"


@dataclass
class GatherResult:
    """What one gather did."""

    records: int = 0
    runs: int = 0
    failed_runs: list[str] = field(default_factory=list)
    quarantined: list[dict[str, str]] = field(default_factory=list)
    partitions_written: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "runs": self.runs,
            "failed_runs": self.failed_runs,
            "quarantined": self.quarantined,
            "partitions_written": self.partitions_written,
        }


def read_raw_file(path: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """Parse and check one raw file; raise RecordError saying why it does not fit."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON (truncated?): {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list) or not doc["records"]:
        raise RecordError("expected an object with a non-empty 'records' list")
    run_id = doc.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise RecordError("missing 'run_id'")
    records = []
    for i, raw in enumerate(doc["records"]):
        try:
            rec = check_record(raw)
        except RecordError as exc:
            raise RecordError(f"record {i}: {exc}") from exc
        if rec["run_id"] != run_id:
            raise RecordError(f"record {i}: run_id {rec['run_id']!r} differs from the file's {run_id!r}")
        records.append(rec)
    reps = [r["rep"] for r in records]
    if len(set(reps)) != len(reps):
        raise RecordError(f"repeated 'rep' values {sorted(reps)}")
    if path.stem != run_id:
        raise RecordError(f"file name {path.name!r} does not match its run_id {run_id!r}")
    return run_id, records


def _quarantine(src: Path, dst_dir: Path, reason: str) -> Path:
    dst = dst_dir / src.name
    atomic_write_bytes(dst, src.read_bytes())
    atomic_write_text(dst_dir / f"{src.name}.reason.txt", reason + "\n")
    return dst


def request_retry(retry_dir: Path, study: str, run_id: str, why: str) -> Path:
    """Ask the workflow to redo ``run_id`` on its next invocation (a fresh file: a newer input)."""
    path = retry_dir / study / f"{run_id}.json"
    atomic_write_text(path, json.dumps({"run_id": run_id, "why": why}) + "\n")
    return path


def partition_dir(runs_dir: str | Path, study: str, case: str) -> Path:
    return Path(runs_dir) / f"study={study}" / f"case={case}"


def bucket_of(run_id: str) -> str:
    """The bucket a run's rows live in: the first hex digit of its id (``0`` for an id that has none)."""
    c = run_id[:1].lower()
    return c if c and c in "0123456789abcdef" else "0"


def bucket_path(runs_dir: str | Path, study: str, case: str, bucket: str) -> Path:
    return partition_dir(runs_dir, study, case) / f"part-{bucket}.parquet"


def partition_files(runs_dir: str | Path, studies: Iterable[str] | None = None,
                    case: str | None = None) -> list[tuple[str, str, Path]]:
    """Every data file of the dataset as (study, case, path), sorted; optionally of some studies / one case."""
    wanted = set(studies) if studies else None
    out = []
    for path in sorted(Path(runs_dir).glob("study=*/case=*/*.parquet")):
        study, kase = path.parent.parent.name.split("=", 1)[1], path.parent.name.split("=", 1)[1]
        if (wanted is None or study in wanted) and (case is None or kase == case):
            out.append((study, kase, path))
    return out


def read_file(study: str, case: str, path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """One data file as a table with :data:`RUN_SCHEMA` (its partition columns from the path)."""
    import pyarrow.parquet as pq

    names = [c for c in (columns or FILE_SCHEMA.names) if c not in PARTITION_KEYS]
    table = pq.read_table(path, columns=names, schema=FILE_SCHEMA)
    n = table.num_rows
    table = table.append_column("study", pa.array([study] * n, pa.string()))
    table = table.append_column("case", pa.array([case] * n, pa.string()))
    want = [c for c in RUN_SCHEMA.names if columns is None or c in columns]
    return table.select(want).cast(pa.schema([RUN_SCHEMA.field(c) for c in want]))


def read_runs(runs_dir: str | Path, filter_expr: ds.Expression | None = None) -> pa.Table:
    """The whole dataset (or the rows matching ``filter_expr``) as a table with :data:`RUN_SCHEMA`."""
    runs_dir = Path(runs_dir)
    if not runs_dir.exists() or not any(runs_dir.glob("study=*/case=*/*.parquet")):
        return RUN_SCHEMA.empty_table()
    dataset = ds.dataset(
        runs_dir,
        format="parquet",
        partitioning=ds.partitioning(PARTITION_SCHEMA, flavor="hive"),
        schema=pa.unify_schemas([FILE_SCHEMA, PARTITION_SCHEMA]),
    )
    table = dataset.to_table(filter=filter_expr)
    return table.select(RUN_SCHEMA.names).cast(RUN_SCHEMA)


def _rows_to_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=RUN_SCHEMA)


def _bucket_rows(table: pa.Table, bucket: str) -> pa.Table:
    """The rows of ``table`` whose run falls in ``bucket``."""
    if not table.num_rows:
        return table
    mask = pa.array([bucket_of(r) == bucket for r in table["run_id"].to_pylist()], pa.bool_())
    return table.filter(mask)


def gather(
    raw_files: Iterable[str | Path],
    runs_dir: str | Path,
    quarantine_dir: str | Path,
    retry_dir: str | Path,
    log: Any = print,
) -> GatherResult:
    """Merge raw records into the dataset; quarantine bad files; request retries of bad and failed runs.

    Parameters
    ----------
    raw_files
        Raw record files, each ``<anything>/<study>/<run_id>.json``.
    runs_dir, quarantine_dir, retry_dir
        ``results/runs``, ``results/quarantine``, ``results/retry``.
    log
        Called with one line per notable event (quarantine, failed run).
    """
    runs_dir, quarantine_dir, retry_dir = Path(runs_dir), Path(quarantine_dir), Path(retry_dir)
    result = GatherResult()
    new_rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    fresh_ids: dict[tuple[str, str], set[str]] = {}
    failed: list[dict[str, Any]] = []
    for raw in sorted({Path(p) for p in raw_files}):
        if not raw.exists():
            continue
        try:
            run_id, records = read_raw_file(raw)
        except RecordError as exc:
            reason = str(exc).replace("\n", " ")
            dst = _quarantine(raw, quarantine_dir / raw.parent.name, reason)
            request_retry(retry_dir, raw.parent.name, raw.stem, f"quarantined: {reason}")
            result.quarantined.append({"file": str(dst), "reason": reason})
            log(f"[hetval gather] quarantined {raw.name}: {reason}")
            continue
        key = (records[0]["study"], records[0]["case"])
        new_rows.setdefault(key, []).extend(records)
        fresh_ids.setdefault(key, set()).add(run_id)
        result.records += len(records)
        result.runs += 1
        if records[0]["status"] == "failed":
            failed.append(records[0])

    for (study, case), rows in sorted(new_rows.items()):
        fresh = _rows_to_table(rows)
        legacy = partition_dir(runs_dir, study, case) / PART_FILE
        buckets = {bucket_of(r) for r in fresh_ids[(study, case)]}
        if legacy.exists():  # the one-file layout: split it into buckets now (every bucket is written)
            buckets |= set("0123456789abcdef")
        for bucket in sorted(buckets):
            path = bucket_path(runs_dir, study, case, bucket)
            ids = pa.array(sorted(r for r in fresh_ids[(study, case)] if bucket_of(r) == bucket), pa.string())
            parts = []
            if path.exists():
                kept = read_file(study, case, path)
                parts.append(kept.filter(pc.invert(pc.is_in(kept["run_id"], value_set=ids))))
            if legacy.exists():
                old = _bucket_rows(read_file(study, case, legacy), bucket)
                seen = pa.array(sorted({*ids.to_pylist(), *(r for t in parts for r in t["run_id"].to_pylist())}),
                                pa.string())
                parts.append(old.filter(pc.invert(pc.is_in(old["run_id"], value_set=seen))))
            parts.append(_bucket_rows(fresh, bucket))
            merged = pa.concat_tables(parts).sort_by([(k, "ascending") for k in ROW_KEY])
            keys = list(zip(merged["run_id"].to_pylist(), merged["rep"].to_pylist(), strict=True))
            if len(set(keys)) != len(keys):
                raise AssertionError(f"duplicate (run_id, rep) rows would be written to {path}")
            if merged.num_rows:
                atomic_write_parquet(merged.drop_columns(list(PARTITION_KEYS)).cast(FILE_SCHEMA), path)
                result.partitions_written.append(str(path))
        if legacy.exists():
            legacy.unlink()  # every row it held is in a bucket now

    # Only now that their rows are safely in the dataset, ask for failed runs to be retried.
    for first in failed:
        request_retry(retry_dir, first["study"], first["run_id"], f"failed: {first['error']}")
        result.failed_runs.append(first["run_id"])
        log(f"[hetval gather] run {first['run_id']} ({first['variant']}) failed: {first['error']}")
    return result


def clear_tmp(runs_dir: str | Path) -> None:
    """Remove temporary files an interrupted gather may have left (they are never read)."""
    for tmp in Path(runs_dir).glob("study=*/case=*/.*.tmp"):
        tmp.unlink(missing_ok=True)

