"""Raw run records -> the hive-partitioned Parquet dataset, and reading it back.

Layout: ``<runs>/study=<study>/case=<case>/part.parquet``; rows keyed by
(``run_id``, ``rep``). Gathering is idempotent: every row of a ``run_id`` is
replaced by the rows of its newest raw record, so re-gathering never creates a
duplicate. Each partition file is replaced atomically (temporary file + rename).
A raw file that fails the schema is moved to ``<quarantine>/<study>/`` under its
own name with ``<name>.reason.txt`` beside it; a ``failed`` run's raw file is
moved to ``<failed>/<study>/`` once its row is in the dataset. Either way the
raw record is then missing, so the workflow redoes that run next time.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from analysis.schema import FILE_SCHEMA, PARTITION_KEYS, PARTITION_SCHEMA, ROW_KEY, RUN_SCHEMA, RecordError, check_record

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


def _move(src: Path, dst_dir: Path, name: str) -> Path:
    dst_dir.mkdir(parents=True, exist_ok=True)
    dst = dst_dir / name
    os.replace(src, dst)
    return dst


def _write_atomic_table(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def partition_path(runs_dir: str | Path, study: str, case: str) -> Path:
    return Path(runs_dir) / f"study={study}" / f"case={case}" / PART_FILE


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


def gather(
    raw_files: Iterable[str | Path],
    runs_dir: str | Path,
    quarantine_dir: str | Path,
    failed_dir: str | Path,
    log: Any = print,
) -> GatherResult:
    """Merge raw records into the dataset; quarantine bad files; move gathered failed runs aside.

    Parameters
    ----------
    raw_files
        Raw record files, each ``<anything>/<study>/<run_id>.json``.
    runs_dir, quarantine_dir, failed_dir
        ``results/runs``, ``results/quarantine``, ``results/failed``.
    log
        Called with one line per notable event (quarantine, failed run).
    """
    runs_dir, quarantine_dir, failed_dir = Path(runs_dir), Path(quarantine_dir), Path(failed_dir)
    result = GatherResult()
    new_rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    fresh_ids: dict[tuple[str, str], set[str]] = {}
    failed_files: list[tuple[Path, dict[str, Any]]] = []
    for raw in sorted({Path(p) for p in raw_files}):
        if not raw.exists():
            continue
        try:
            run_id, records = read_raw_file(raw)
        except RecordError as exc:
            study_dir = raw.parent.name
            dst = _move(raw, quarantine_dir / study_dir, raw.name)
            reason = str(exc).replace("\n", " ")
            (dst.parent / f"{raw.name}.reason.txt").write_text(reason + "\n", encoding="utf-8")
            result.quarantined.append({"file": str(dst), "reason": reason})
            log(f"[hetval gather] quarantined {raw.name}: {reason}")
            continue
        key = (records[0]["study"], records[0]["case"])
        new_rows.setdefault(key, []).extend(records)
        fresh_ids.setdefault(key, set()).add(run_id)
        result.records += len(records)
        result.runs += 1
        if records[0]["status"] == "failed":
            failed_files.append((raw, records[0]))

    for (study, case), rows in sorted(new_rows.items()):
        path = partition_path(runs_dir, study, case)
        old = read_runs(runs_dir, (pc.field("study") == study) & (pc.field("case") == case))
        if old.num_rows:
            keep = pc.invert(pc.is_in(old["run_id"], value_set=pa.array(sorted(fresh_ids[(study, case)]))))
            old = old.filter(keep)
        merged = pa.concat_tables([old, _rows_to_table(rows)]).sort_by([(k, "ascending") for k in ROW_KEY])
        keys = list(zip(merged["run_id"].to_pylist(), merged["rep"].to_pylist(), strict=True))
        if len(set(keys)) != len(keys):
            raise AssertionError(f"duplicate (run_id, rep) rows would be written to {path}")
        _write_atomic_table(merged.drop_columns(list(PARTITION_KEYS)).cast(FILE_SCHEMA), path)
        result.partitions_written.append(str(path))

    # Only now that their rows are safely in the dataset, move failed runs' raw files aside:
    # the workflow sees them missing and retries those runs on its next invocation.
    for raw, first in failed_files:
        stamp = first["started_at"].strftime("%Y%m%dT%H%M%S%fZ")
        _move(raw, failed_dir / raw.parent.name, f"{raw.stem}.{stamp}.json")
        result.failed_runs.append(first["run_id"])
        log(f"[hetval gather] run {first['run_id']} ({first['variant']}) failed: {first['error']}")
    return result


def clear_tmp(runs_dir: str | Path) -> None:
    """Remove temporary files an interrupted gather may have left (they are never read)."""
    for tmp in Path(runs_dir).glob("study=*/case=*/.part-*.tmp"):
        tmp.unlink(missing_ok=True)

