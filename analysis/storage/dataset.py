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
A raw file that fails the schema, or whose identity disagrees with where it
lives (:func:`read_raw_file`), is copied to ``<quarantine>/<study>/`` under its
own name with ``<name>.reason.txt`` beside it, and its rows stay out of the
dataset; a data file that does not read is set aside there and rebuilt from the
raw records. The manifest's checksums of the data files are
:mod:`analysis.storage.manifest`'s. For such a file and for a ``failed`` run (whose record is gathered
like any other) a retry request ``<retry>/<study>/<run_id>.json`` is written:
the workflow's run rule takes that file as an input when it exists, so the
next invocation redoes exactly those runs, and a run that succeeds is not
redone again. (Quarantining copies rather than moves the raw file so that the
workflow's targets stay present within the invocation that found it; the redo
overwrites it.)
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from analysis.planning.retry import attempts_path, given_up, note_attempt
from analysis.storage.links import refuse_links
from analysis.storage.manifest import sha256_of, study_files
from analysis.storage.schema import (
    DATASET_SCHEMA,
    FILE_SCHEMA,
    PARTITION_KEYS,
    PARTITION_SCHEMA,
    ROW_KEY,
    RUN_SCHEMA,
    DatasetSchemaError,
    RecordError,
    check_identity,
    check_record,
)
from sims.atomic import atomic_write_bytes, atomic_write_parquet, atomic_write_text
from sims.vocab import is_name

PART_FILE = "part.parquet"


@dataclass
class GatherResult:
    """What one gather did."""

    records: int = 0
    runs: int = 0
    failed_runs: list[str] = field(default_factory=list)
    quarantined: list[dict[str, str]] = field(default_factory=list)
    partitions_written: list[str] = field(default_factory=list)
    #: data files that did not read: set aside (with the reason) and rebuilt from the raw records
    rebuilt: list[dict[str, str]] = field(default_factory=list)
    #: runs whose rows were removed: no longer in the study's matrix, or moved to another case
    removed_runs: list[str] = field(default_factory=list)
    #: runs that failed (or were quarantined) the same way ``max_attempts`` times: not retried
    given_up: list[dict[str, Any]] = field(default_factory=list)
    #: every data file of the gathered studies: its size and SHA-256 (:func:`analysis.storage.manifest.check_manifest`)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "runs": self.runs,
            "failed_runs": self.failed_runs,
            "quarantined": self.quarantined,
            "partitions_written": self.partitions_written,
            "rebuilt": self.rebuilt,
            "removed_runs": self.removed_runs,
            "given_up": self.given_up,
            "files": self.files,
            "dataset_schema": DATASET_SCHEMA,
        }


@dataclass(frozen=True)
class Matrix:
    """The runs a study is made of (run id -> case), and what each run's spec says its records hold
    (``identity``: :func:`identity`): what gather accepts into the study's partitions and keeps there. The
    workflow writes it as ``results/<study>/matrix.json``."""

    study: str
    runs: dict[str, str]
    identity: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: str | Path) -> Matrix:
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"matrix {path}: {exc}") from exc
        runs = doc.get("runs") if isinstance(doc, dict) else None
        ident = doc.get("identity", {}) if isinstance(doc, dict) else None
        if not (isinstance(doc, dict) and is_name(doc.get("study")) and isinstance(runs, dict)
                and all(is_name(k) and is_name(v) for k, v in runs.items()) and isinstance(ident, dict)
                and all(k in runs and isinstance(v, dict) for k, v in ident.items())):
            raise ValueError(f"matrix {path}: expected {{'study': <name>, 'runs': {{<run_id>: <case>}}, "
                             "'identity': {<run_id>: {<field>: <value>}}}")
        return cls(doc["study"], dict(runs), dict(ident))

    def write(self, path: str | Path, log: str | Path | None = None) -> None:
        """Write the matrix file (and, with ``log``, one line saying what it holds)."""
        atomic_write_text(path, json.dumps({"study": self.study, "runs": dict(sorted(self.runs.items())),
                                            "identity": dict(sorted(self.identity.items()))},
                                           indent=0, sort_keys=True) + "\n")
        if log:
            atomic_write_text(log, f"{len(self.runs)} runs in study {self.study} -> {path}\n")


def failure_attempt(first: Mapping[str, Any]) -> tuple[str, str]:
    """``(token, why)`` of a failed run's attempt, as its retry count knows it (:func:`note_attempt`): whoever
    counts it first - gather, or the workflow's start - counts it once."""
    return f"record:{first['started_at'].isoformat()}", f"failed: {first['error']}"


def read_raw_file(path: str | Path, matrix: Matrix | None = None) -> tuple[str, list[dict[str, Any]]]:
    """Parse and check one raw file; raise RecordError saying why it does not fit.

    Besides the schema, a file's identity must agree with where it lives: one run (``run_id`` = the file
    name), one study (= the directory the file is in, ``raw/<study>/<run_id>.json``) and one case, each a
    safe name (:data:`sims.vocab.NAME`); with a ``matrix``, the run must be one of the study's and of the
    case the matrix says.
    """
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        what = (f"a symbolic link to {os.readlink(path)}" if path.is_symlink()
                else "a directory" if path.is_dir() else "a special file")
        raise RecordError(f"not a regular file ({what}): not followed")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON (truncated?): {exc}") from exc
    except RecursionError:
        raise RecordError("nested too deeply to be a record") from None
    except OSError as exc:
        raise RecordError(f"does not read ({exc.strerror or exc})") from None
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
    for key in ("run_id", "study", "case"):
        values = sorted({r[key] for r in records})
        if len(values) > 1:
            raise RecordError(f"records of more than one {key} in one file: {', '.join(map(repr, values))}")
        if not is_name(values[0]):
            raise RecordError(f"field {key!r}: {values[0]!r} is not a safe name (letters, digits, '_', '.', '-', "
                              "starting with a letter or digit)")
    study, case = records[0]["study"], records[0]["case"]
    if study != path.parent.name:
        raise RecordError(f"study {study!r} differs from the directory the record is in ({path.parent.name!r}; "
                          "raw records live in raw/<study>/<run_id>.json)")
    if matrix is not None:
        if study != matrix.study:
            raise RecordError(f"study {study!r} is not the study being gathered ({matrix.study!r})")
        if run_id not in matrix.runs:
            raise RecordError(f"run {run_id} is not in study {study!r}'s matrix")
        if matrix.runs[run_id] != case:
            raise RecordError(f"case {case!r} differs from the study's matrix, which makes run {run_id} a "
                              f"{matrix.runs[run_id]!r} run")
        check_identity(records, matrix.identity.get(run_id) or {})
    return run_id, records



def _quarantine(src: Path, dst_dir: Path, reason: str) -> Path:
    """A copy of the raw file ``src`` beside its reason; a link or a special file is never followed (only its
    reason is kept, naming where it pointed)."""
    dst = dst_dir / src.name
    if src.is_symlink() or not src.is_file():
        dst_dir.mkdir(parents=True, exist_ok=True)
    else:
        atomic_write_bytes(dst, src.read_bytes())
    atomic_write_text(dst_dir / f"{src.name}.reason.txt", reason + "\n")
    return dst


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


def check_layout(path: str | Path, schema: pa.Schema | None = None) -> None:
    """Raise :class:`DatasetSchemaError` when a data file was written in another layout of the dataset
    (``schema``: the file's, when the caller has it open already)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(path) if schema is None else schema
    layout = (schema.metadata or {}).get(b"hetval.dataset_schema", b"1").decode()
    if layout != str(DATASET_SCHEMA):
        raise DatasetSchemaError(f"{path} holds dataset layout {layout}, this hetval reads layout {DATASET_SCHEMA}: "
                                 "gather again (snakemake does it by itself) to rebuild it from the raw records")


def read_file(study: str, case: str, path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """One data file as a table with :data:`RUN_SCHEMA` (its partition columns from the path)."""
    import pyarrow.parquet as pq

    names = [c for c in (columns or FILE_SCHEMA.names) if c not in PARTITION_KEYS]
    with pq.ParquetFile(path) as f:  # one open: the layout from its footer, then the columns
        check_layout(path, f.schema_arrow)
        table = f.read(columns=names).cast(pa.schema([FILE_SCHEMA.field(c) for c in names]))
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


BUCKETS = "0123456789abcdef"
BUCKET_FILES = frozenset(f"part-{b}.parquet" for b in BUCKETS)


def _read_ids(path: Path) -> set[str]:
    """The run ids a data file holds; a file of another layout raises, so gather rebuilds it even when it gets no
    new rows (the manifest then says the layout truly)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as f:
        check_layout(path, f.schema_arrow)
        return set(f.read(columns=["run_id"])["run_id"].to_pylist())


def _set_aside(path: Path, quarantine_dir: Path, study: str, case: str, why: str) -> Path:
    """Move a data file that does not read out of the dataset, with its reason (nothing is deleted)."""
    dst_dir = quarantine_dir / study / "partitions"
    dst_dir.mkdir(parents=True, exist_ok=True)
    dst = dst_dir / f"case={case}-{path.name}"
    shutil.move(str(path), dst)
    atomic_write_text(dst_dir / f"{dst.name}.reason.txt", why + "\n")
    return dst


def gather(
    raw_files: Iterable[str | Path],
    runs_dir: str | Path,
    quarantine_dir: str | Path,
    retry_dir: str | Path,
    log: Any = print,
    matrix: Matrix | None = None,
    max_attempts: int = 2,
    previous_files: dict[str, dict[str, Any]] | None = None,
) -> GatherResult:
    """Merge raw records into the dataset; quarantine bad files; request retries of bad and failed runs.

    Parameters
    ----------
    raw_files
        Raw record files, each ``<anything>/<study>/<run_id>.json``.
    runs_dir, quarantine_dir, retry_dir
        ``results/runs``, ``results/quarantine``, ``results/retry``.
    log
        Called with one line per notable event (quarantine, failed run, a rebuilt file, removed runs).
    matrix
        The study's runs: a record outside it (or of another case) is quarantined, and rows of runs no
        longer in it are removed from the study's partitions (their raw records stay).
    max_attempts
        A run that failed (or was quarantined) the same way this many times in a row is not retried.
    previous_files
        The ``files`` of the previous manifest: checksums of files gather does not rewrite are reused.

    Every row of a run lives in the partition of its newest record's case (rows left in another case's
    partition are removed). A data file that does not read is moved to ``<quarantine>/<study>/partitions/``
    with the reason and rebuilt from the raw records given (the workflow gives every raw record of the
    study, so nothing is lost).
    """
    from sims.record import git_state

    runs_dir, quarantine_dir, retry_dir = Path(runs_dir), Path(quarantine_dir), Path(retry_dir)
    raw_files = [Path(os.path.abspath(p)) for p in raw_files]  # one file by any spelling, links kept
    refuse_links(raw_files, runs_dir, quarantine_dir, retry_dir, matrix)
    result = GatherResult()
    sha, dirty = git_state()
    code = f"{sha}-dirty" if sha and dirty else sha
    fresh: dict[str, dict[str, list[dict[str, Any]]]] = {}  # study -> case -> rows
    outcomes: list[tuple[str, str, str, str, str]] = []  # (study, run_id, token, why, variant)
    succeeded: list[tuple[str, str]] = []
    for raw in sorted(set(raw_files)):
        if not raw.exists() and not raw.is_symlink():
            continue
        try:
            run_id, records = read_raw_file(raw, matrix)
        except RecordError as exc:
            reason = str(exc).replace("\n", " ")
            where = raw.parent.name if is_name(raw.parent.name) else "_unnamed"
            dst = _quarantine(raw, quarantine_dir / where, reason)
            result.quarantined.append({"file": str(dst), "reason": reason})
            log(f"[hetval gather] quarantined {raw.name}: {reason}")
            if is_name(raw.parent.name) and is_name(raw.stem):
                token = ("link:" + os.readlink(raw)) if raw.is_symlink() else (
                    "sha256:" + sha256_of(raw)) if raw.is_file() else "not a file"
                outcomes.append((raw.parent.name, raw.stem, token, f"quarantined: {reason}", ""))
            continue
        first = records[0]
        fresh.setdefault(first["study"], {}).setdefault(first["case"], []).extend(records)
        result.records += len(records)
        result.runs += 1
        if first["status"] == "failed":
            result.failed_runs.append(run_id)
            outcomes.append((first["study"], run_id, *failure_attempt(first), first["variant"]))
        else:
            succeeded.append((first["study"], run_id))

    studies = sorted({*fresh, *([matrix.study] if matrix else [])})
    for study in studies:
        keep = matrix.runs if matrix is not None and matrix.study == study else None
        _write_study(runs_dir, quarantine_dir, study, fresh.get(study, {}), keep, result, log)

    # Only now that their rows are safely in the dataset, ask for failed runs to be retried (or give up).
    for study, run_id, token, why, variant in outcomes:
        what = note_attempt(retry_dir, study, run_id, token, why, max_attempts, code)
        if what == "given-up":
            log(f"[hetval gather] run {run_id} {variant and f'({variant}) '}failed the same way {max_attempts} "
                f"times: not retried (config retry_failed: true retries it): {why}")
        elif variant:
            log(f"[hetval gather] run {run_id} ({variant}) failed: {why[len('failed: '):]}")
    for study, run_id in succeeded:
        attempts_path(retry_dir, study, run_id).unlink(missing_ok=True)
    for study in studies:
        result.given_up.extend({"study": study, **g} for g in given_up(retry_dir, study))
        result.files.update(study_files(runs_dir, study, previous_files))
    return result


def _write_study(runs_dir: Path, quarantine_dir: Path, study: str, fresh: dict[str, list[dict[str, Any]]],
                 keep: dict[str, str] | None, result: GatherResult, log: Any) -> None:
    """Merge one study's fresh rows into its partitions (see :func:`gather`); with ``keep`` (the matrix: run
    id -> case) a partition keeps only the rows of its own case's runs."""
    fresh_case = {r["run_id"]: case for case, rows in fresh.items() for r in rows}
    tables = {case: _rows_to_table(rows) for case, rows in fresh.items()}
    sdir = runs_dir / f"study={study}"
    cases = sorted({*fresh, *(p.name.split("=", 1)[1] for p in sdir.glob("case=*") if p.is_dir())})
    removed: set[str] = set()

    def readable(path: Path, case: str, read: Any) -> Any:
        try:
            return read(path)
        except (OSError, pa.ArrowException, DatasetSchemaError) as exc:
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            dst = _set_aside(path, quarantine_dir, study, case, why)
            result.rebuilt.append({"file": str(path), "reason": why, "moved_to": str(dst)})
            log(f"[hetval gather] warning: {path} does not read ({why}): moved to {dst}; rebuilding it from "
                "the raw records")
            return None

    for case in cases:
        pdir = partition_dir(runs_dir, study, case)
        if keep is not None:  # a file no gather writes is not part of the dataset
            for stray in sorted(p for p in pdir.glob("*.parquet") if p.name not in BUCKET_FILES | {PART_FILE}):
                dst = _set_aside(stray, quarantine_dir, study, case, "not a data file gather writes")
                log(f"[hetval gather] warning: {stray} is not a data file gather writes: moved to {dst}")
        legacy_path = pdir / PART_FILE
        legacy = readable(legacy_path, case, lambda p, c=case: read_file(study, c, p)) if legacy_path.exists() \
            else None
        buckets = set(BUCKETS) if keep is not None or legacy_path.exists() or legacy is not None else {
            bucket_of(r) for r in fresh_case}
        mine = tables.get(case)
        for bucket in sorted(buckets):
            path = bucket_path(runs_dir, study, case, bucket)
            add = _bucket_rows(mine, bucket) if mine is not None else None
            present = readable(path, case, _read_ids) if path.exists() else None
            if legacy is not None:
                present = (present or set()) | {r for r in legacy["run_id"].to_pylist() if bucket_of(r) == bucket}
            present = present or set()
            drop = {r for r in present if r in fresh_case or (keep is not None and keep.get(r) != case)}
            if not drop and not (add is not None and add.num_rows) and legacy is None:
                continue
            parts = []
            if path.exists():
                kept = readable(path, case, lambda p, c=case: read_file(study, c, p))
                if kept is not None:
                    parts.append(kept)
            if legacy is not None:
                seen = {r for t in parts for r in t["run_id"].to_pylist()}
                old = _bucket_rows(legacy, bucket)
                parts.append(old.filter(pc.invert(pc.is_in(old["run_id"], value_set=pa.array(sorted(seen),
                                                                                         pa.string())))))
            if drop:
                gone = pa.array(sorted(drop), pa.string())
                parts = [t.filter(pc.invert(pc.is_in(t["run_id"], value_set=gone))) for t in parts]
                removed |= {r for r in drop if fresh_case.get(r, case) != case or r not in fresh_case}
            if add is not None:
                parts.append(add)
            merged = (pa.concat_tables(parts) if parts else RUN_SCHEMA.empty_table()).sort_by(
                [(k, "ascending") for k in ROW_KEY])
            keys = list(zip(merged["run_id"].to_pylist(), merged["rep"].to_pylist(), strict=True))
            if len(set(keys)) != len(keys):
                raise AssertionError(f"duplicate (run_id, rep) rows would be written to {path}")
            if merged.num_rows:
                atomic_write_parquet(merged.drop_columns(list(PARTITION_KEYS)).cast(FILE_SCHEMA), path)
                result.partitions_written.append(str(path))
            elif path.exists():
                path.unlink()  # its last run moved or left the study
        if legacy_path.exists():
            legacy_path.unlink()  # every row it held is in a bucket now
    if removed:
        result.removed_runs.extend(sorted(removed))
        shown = ", ".join(sorted(removed)[:5]) + (", ..." if len(removed) > 5 else "")
        log(f"[hetval gather] removed the rows of {len(removed)} run(s) from study {study!r}'s partitions "
            f"(no longer in its matrix, or gathered into another case): {shown}")


def clear_tmp(runs_dir: str | Path) -> None:
    """Remove temporary files an interrupted gather may have left (they are never read)."""
    for tmp in Path(runs_dir).glob("study=*/case=*/.*.tmp"):
        tmp.unlink(missing_ok=True)

