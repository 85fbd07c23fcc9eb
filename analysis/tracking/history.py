"""The model-accuracy history: one snapshot per validation, appended to a hive Parquet dataset.

A snapshot is one Parquet file at ``<history.path>/study=<study>/<snapshot>.parquet``
holding, in long form, every tracked figure of one validation:

* ``kind = "model"``: per (case, platform, group, model, metric) the value, its
  bootstrap interval (``lo``, ``hi``) and the fewest repetitions behind any of
  the group's alternatives (``n_reps``) - from every ``*fidelity`` table the
  cases write;
* ``kind = "machine"``: per (platform, processor or network, parameter) the
  characterised machine parameter with its range: its characterisation
  replicates' lowest and highest value (``n_reps`` = the replicates), or, from a
  platform characterised once, the central 95 % of its samples;
* ``kind = "scorecard"``: per scorecard row (case, platform, model; ``group`` = the
  workload class) its median tightness, median Kendall tau and noise-aware top-1
  rate with their intervals (``n_reps`` = the runs, ``n_alternatives`` = the
  distinguishable groups) and the width its runs alone give the tightness
  interval (metric ``width_runs``), which the pooled verdict of several nights reads
  (:mod:`analysis.tracking.pooled`);
* ``kind = "reference"``: per (case, model) the model's median tightness on the reference runs, fixed
  measurements shipped with hetval (``platform`` = theirs, ``group = "reference runs <digest>"``, ``n_reps`` = the runs
  predicted; :mod:`analysis.scoring.reference`): it moves only when the model's code does;
* ``kind = "noise"``: per (case, platform) the study's run-to-run drift floor
  (metric ``drift_floor``, a fraction; ``n_reps`` = the identical-code pairs
  it was measured from) where a case measures one (FDM): the spread of identical
  runs within one study, kept beside the between-study spread ``track`` judges by.

Every row also carries the snapshot's identity: ``snapshot`` (id = file stem),
``time`` (UTC), ``git_sha`` and ``git_dirty``, ``version``, ``config_hash``,
the machine ``fingerprint`` (:mod:`sims.fingerprint`) with its facts as JSON
(``machine``), and the ``bootstrap`` settings as JSON.

Appending never rewrites anything: a snapshot is written to a hidden
temporary name in its partition and renamed (one file per snapshot, a unique
name with the time and a random suffix), so two validations appending at the
same moment both land and a reader never sees half a file (readers skip
names starting with ``.``). Once a study has :data:`COMPACT_AT` loose snapshot
files they are folded, unchanged, into one ``compact-*.parquet`` file so that
a long history stays fast to read (:func:`compact`). The path is a directory or any filesystem URL
pyarrow understands (``file://``, ``s3://``, ``gs://``, ``hdfs://``), or any
fsspec URL (``memory://``, ``gcs://``, ...) through pyarrow's fsspec handler.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import secrets
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from sims.fingerprint import fingerprint, machine_facts
from sims.platform_file import read_platform

#: The tracked metrics of a fidelity row (the others are descriptive).
TRACKED = ("kendall_tau", "pairwise_agreement", "top1_agreement", "top1_noise_aware", "selection_penalty",
           "selection_penalty_noise_aware", "profile_error", "tightness_median", "error_median")
#: Columns of a fidelity table that are neither its group's keys nor scores.
_NOT_KEYS = {*TRACKED, "study", "case", "platform", "model", "n_alternatives", "best_measured", "best_predicted",
             "tightness_min", "tightness_max", "n_reps_min", "distinguishable", "best_measured_noise_aware",
             "alpha_best_measured", "alpha_best_predicted", "alpha_continuous", "error_max", "R_C", "R_G", "P0",
             "Pd_C", "Pd_G", "size_label", "noise_floor", "noise_floor_pairs"}
#: Machine parameters of a processor and of the network that are tracked.
MACHINE_PARAMS = ("t_f", "t_b", "t_b_shared")
NETWORK_PARAMS = ("latency", "t_net")

SCHEMA = pa.schema([
    ("snapshot", pa.string()), ("time", pa.timestamp("us", tz="UTC")), ("git_sha", pa.string()),
    ("git_dirty", pa.bool_()), ("version", pa.string()), ("config_hash", pa.string()),
    ("fingerprint", pa.string()), ("machine", pa.string()), ("bootstrap", pa.string()),
    ("kind", pa.string()), ("case", pa.string()), ("platform", pa.string()), ("group", pa.string()),
    ("model", pa.string()), ("metric", pa.string()), ("value", pa.float64()), ("lo", pa.float64()),
    ("hi", pa.float64()), ("n_reps", pa.int64()), ("n_alternatives", pa.int64()),
])
ROW_COLUMNS = ["kind", "case", "platform", "group", "model", "metric", "value", "lo", "hi", "n_reps",
               "n_alternatives"]
#: The partition column (in the path, not in the files).


class HistoryError(ValueError):
    """A history path that cannot be opened, or a snapshot that is not in it."""


def filesystem(path: str | Path) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and the root path inside it for a directory or URL."""
    text = str(path)
    if "://" not in text:
        return pafs.LocalFileSystem(), str(Path(text).resolve())
    try:
        return pafs.FileSystem.from_uri(text)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        pass  # not a scheme pyarrow itself serves (memory://, gcs:// via gcsfs, ...): try fsspec below
    try:
        import fsspec
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        fs, root = fsspec.core.url_to_fs(text)
    except (ImportError, ValueError) as exc:
        raise HistoryError(f"history.path {text!r}: no filesystem for it ({exc})") from None
    return PyFileSystem(FSSpecHandler(fs)), root.rstrip("/") or "/"


def _label(row: Mapping[str, Any], keys: list[str]) -> str:
    parts = []
    for k in keys:
        v = row[k]
        if isinstance(v, float) and math.isfinite(v) and v == int(v):
            v = int(v)
        parts.append(f"{k}={v}")
    return " ".join(parts)


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


def model_rows(tables: Mapping[str, pd.DataFrame], case_of_table: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Long rows (``kind = "model"``) of every tracked metric in the fidelity ``tables`` (name -> frame)."""
    rows = []
    for name, frame in sorted(tables.items()):
        if not name.endswith("fidelity") or frame is None or not len(frame):
            continue
        # a group is named by what it is, never by a figure: an interval's ends or each replicate's value would
        # start a new series whenever they moved
        keys = [c for c in frame.columns if c not in _NOT_KEYS and not c.endswith(("_lo", "_hi", "_replicates"))]
        fallback = (case_of_table or {}).get(name, name.removesuffix("fidelity").rstrip("_") or "")
        model = _model_of_table(fallback, name)
        for rec in frame.to_dict("records"):
            base = {"kind": "model", "case": str(rec.get("case") or fallback), "platform": str(rec.get("platform", "")),
                    "group": _label(rec, keys), "model": str(rec.get("model") or model),
                    "n_reps": int(rec["n_reps_min"]) if pd.notna(rec.get("n_reps_min")) else None,
                    "n_alternatives": int(rec["n_alternatives"]) if pd.notna(rec.get("n_alternatives")) else None}
            for metric in TRACKED:
                if metric in rec and math.isfinite(_num(rec[metric])):
                    rows.append({**base, "metric": metric, "value": _num(rec[metric]),
                                 "lo": _num(rec.get(f"{metric}_lo")), "hi": _num(rec.get(f"{metric}_hi"))})
        if "noise_floor" in frame.columns:
            where = frame.assign(case=frame["case"] if "case" in frame else fallback,
                                 platform=frame["platform"] if "platform" in frame else "")
            for (case, platform), g in where.groupby(["case", "platform"], sort=True):
                floor = _num(g["noise_floor"].iloc[0])
                pairs = g["noise_floor_pairs"].iloc[0] if "noise_floor_pairs" in g else None
                if math.isfinite(floor) and pd.notna(pairs) and int(pairs) > 0:
                    rows.append({"kind": "noise", "case": str(case or fallback), "platform": str(platform),
                                 "group": "", "model": "", "metric": "drift_floor", "value": floor, "lo": math.nan,
                                 "hi": math.nan, "n_reps": int(pairs), "n_alternatives": None})
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def _model_of_table(case: str, table: str) -> str:
    """The model a fidelity table without a ``model`` column scores: the case's one model writing that table."""
    from analysis.registry import RegistryError, models_for

    try:
        names = [m.name for m in models_for(case) if m.table in (table, table.replace("fidelity", "runs"))]
    except (RegistryError, KeyError):
        names = []
    return names[0] if len(names) == 1 else f"{case} model"


def _spread(param: Mapping[str, Any]) -> tuple[float, float, int | None]:
    """A parameter's range: its characterisation replicates' lowest and highest value where it has two or more
    (``n`` = the replicates), else the 95 % range of its samples (rates: the parameter is 1 / rate), else NaN."""
    reps = [float(v) for v in (param.get("replicates") or []) if v is not None and math.isfinite(float(v))]
    if len(reps) >= 2:
        return min(reps), max(reps), len(reps)
    samples = param.get("samples")
    if isinstance(samples, list) and len(samples) >= 2:
        s = np.asarray([x for x in samples if x is not None], dtype=float)
        s = s[np.isfinite(s) & (s > 0)]
        if len(s) >= 2:
            lo_rate, hi_rate = np.percentile(s, [2.5, 97.5])
            return 1.0 / float(hi_rate), 1.0 / float(lo_rate), int(len(s))
    return math.nan, math.nan, None


#: The scorecard figures a snapshot keeps (``kind = "scorecard"``), each with its interval's columns.
SCORECARD_FIGURES = {"tightness_median": ("tightness_lo", "tightness_hi"),
                     "kendall_tau_median": ("kendall_tau_lo", "kendall_tau_hi"),
                     "top1_noise_aware_rate": ("top1_noise_aware_lo", "top1_noise_aware_hi")}


def scorecard_rows(card: pd.DataFrame | None) -> pd.DataFrame:
    """Long rows (``kind = "scorecard"``) of a scorecard's figures (module notes)."""
    rows = []
    for rec in ([] if card is None else card.to_dict("records")):
        base = {"kind": "scorecard", "case": str(rec["case"]), "platform": str(rec["platform"]),
                "group": str(rec["workload_class"]), "model": str(rec["model"]), "n_reps": int(rec["runs"]),
                "n_alternatives": int(rec["distinguishable_groups"])}
        for metric, (lo, hi) in SCORECARD_FIGURES.items():
            if math.isfinite(_num(rec.get(metric))):
                rows.append({**base, "metric": metric, "value": _num(rec[metric]), "lo": _num(rec.get(lo)),
                             "hi": _num(rec.get(hi))})
        if math.isfinite(_num(rec.get("width_runs"))):  # the share of the interval every night repeats (pooling)
            rows.append({**base, "metric": "width_runs", "value": _num(rec["width_runs"]), "lo": math.nan,
                         "hi": math.nan})
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def machine_rows(platform_docs: Iterable[tuple[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """Long rows (``kind = "machine"``) of the characterised parameters of every platform document."""
    rows = []
    for name, doc in platform_docs:
        if doc.get("obtained") == "published":
            continue
        for role, proc in sorted((doc.get("processors") or {}).items()):
            if not isinstance(proc, dict):
                continue
            for p in MACHINE_PARAMS:
                param = proc.get(p)
                if isinstance(param, dict) and math.isfinite(_num(param.get("value"))):
                    lo, hi, n = _spread(param)
                    rows.append({"kind": "machine", "case": "", "platform": name, "group": role, "model": "",
                                 "metric": p, "value": _num(param["value"]), "lo": lo, "hi": hi, "n_reps": n})
        for p in NETWORK_PARAMS:
            param = (doc.get("network") or {}).get(p)
            if isinstance(param, dict) and math.isfinite(_num(param.get("value"))):
                rows.append({"kind": "machine", "case": "", "platform": name, "group": "network", "model": "",
                             "metric": p, "value": _num(param["value"]), "lo": math.nan, "hi": math.nan,
                             "n_reps": None})
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def snapshot_meta(platform_docs: list[tuple[str, Mapping[str, Any]]], config_hash: str | None,
                  bootstrap: Mapping[str, Any], when: _dt.datetime | None = None) -> dict[str, Any]:
    """The identity every row of a snapshot carries (the machine from the platform files' ``machine``)."""
    from sims import record as rec

    when = when or _dt.datetime.now(_dt.UTC)
    facts = next((dict(doc["machine"]) for _, doc in platform_docs if isinstance(doc.get("machine"), dict)), None)
    if facts is None:  # characterised before platform files recorded their machine: this host's facts
        facts = machine_facts()
    sha, dirty = rec.git_state()
    return {
        "snapshot": when.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + secrets.token_hex(4),
        "time": pd.Timestamp(when),
        "git_sha": sha, "git_dirty": dirty,
        "version": rec.package_version("hetval"),
        "config_hash": config_hash or "",
        "fingerprint": fingerprint(facts),
        "machine": json.dumps(facts, sort_keys=True, default=str),
        "bootstrap": json.dumps(dict(bootstrap), sort_keys=True),
    }


def snapshot_table(meta: Mapping[str, Any], rows: pd.DataFrame) -> pa.Table:
    """The Arrow table of one snapshot (``rows`` from :func:`model_rows` and :func:`machine_rows`)."""
    frame = rows.reset_index(drop=True).copy()
    for k, v in meta.items():
        frame[k] = [v] * len(frame)
    for c in ("n_reps", "n_alternatives"):
        frame[c] = pd.array(frame[c] if c in frame else [None] * len(frame), dtype="Int64")
    return pa.Table.from_pandas(frame[SCHEMA.names], schema=SCHEMA, preserve_index=False)


#: Loose snapshot files of a study beyond which an append folds them into one file (reading 10^4 small files
#: would cost seconds; reading 40 does not).
COMPACT_AT = 256


def _write(fs: pafs.FileSystem, table: pa.Table, final: str) -> None:
    """``table`` to ``final`` through a hidden temporary name in the same directory, then a rename."""
    directory, _, name = final.rpartition("/")
    tmp = f"{directory}/.{name}.{secrets.token_hex(4)}.tmp"
    try:
        pq.write_table(table, tmp, filesystem=fs)
        fs.move(tmp, final)
    except BaseException:
        try:
            fs.delete_file(tmp)
        except OSError:
            pass
        raise


#: the name of a file a history holds under ``study=<study>/``: one snapshot, or snapshots folded by :func:`compact`
SNAPSHOT_FILE = re.compile(r"(?:\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{8}|compact-[0-9A-Za-z.-]+)\.parquet")


def snapshot_files(path: str | Path, study: str | None = None) -> tuple[pafs.FileSystem, list[tuple[str, str]]]:
    """The history's filesystem and its snapshot files as (study, path), oldest name first: only files named as
    :func:`append` and :func:`compact` name them, one level under a ``study=<name>`` directory; anything else
    there (a stray file, a temporary one, another tool's) is not part of the history."""
    fs, root = filesystem(path)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        return fs, []
    if info.type != pafs.FileType.Directory:
        raise HistoryError(f"history path {path} is not a directory")
    found = []
    for entry in fs.get_file_info(pafs.FileSelector(root, allow_not_found=True)):
        name = entry.base_name
        if entry.type != pafs.FileType.Directory or not name.startswith("study=") or (study and name != f"study={study}"):
            continue
        for f in fs.get_file_info(pafs.FileSelector(entry.path, allow_not_found=True)):
            if f.type == pafs.FileType.File and SNAPSHOT_FILE.fullmatch(f.base_name):
                found.append((name[len("study="):], f.path))
    return fs, sorted(found, key=lambda x: x[1].rpartition("/")[2])


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _tables(path: str | Path, study: str | None, columns: list[str] | None,
            log: Any = _warn) -> Iterator[tuple[str, pa.Table]]:
    """Each readable snapshot file's rows (``columns`` of :data:`SCHEMA`, with its study), one file at a time; a
    file that does not read (truncated by a kill or a full disk) is skipped and named through ``log``."""
    fs, files = snapshot_files(path, study)
    wanted = [c for c in (columns or SCHEMA.names) if c != "study"]
    for name, f in files:
        try:
            table = pq.read_table(f, filesystem=fs, schema=SCHEMA, columns=wanted)
        except (OSError, pa.ArrowException) as exc:
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            why = why.split(f"'{f}': ", 1)[-1]  # pyarrow names the file too
            log(f"hetval: history: skipped {f}: not a readable snapshot ({why})")
            continue
        yield f, table.append_column("study", pa.array([name] * table.num_rows, pa.string()))


def compact(path: str | Path, study: str, at_least: int = COMPACT_AT, log: Any = _warn) -> int:
    """Fold the loose snapshot files of ``study`` into one ``compact-*.parquet`` when there are ``at_least``.

    Content is never changed: the folded file holds exactly the snapshots' rows, written (temporary
    name, rename) before the loose files are removed. A reader in between sees a snapshot twice,
    which :func:`read` drops; two compactions at once both leave complete files. A file that does not read is
    left where it is. Returns the number of snapshot files folded.
    """
    fs, files = snapshot_files(path, study)
    loose = [f for _, f in files if not f.rpartition("/")[2].startswith("compact-")]
    if len(loose) < at_least:
        return 0
    fs, root = filesystem(path)
    part = f"{root}/study={study}"
    folded = [(f, t.drop_columns(["study"])) for f, t in _tables(path, study, None, log)
              if not f.rpartition("/")[2].startswith("compact-")]
    if not folded:
        return 0
    first, last = folded[0][0].rpartition("/")[2][:-8], folded[-1][0].rpartition("/")[2][:-8]
    _write(fs, pa.concat_tables([t for _, t in folded]), f"{part}/compact-{first}-{last}-{secrets.token_hex(4)}.parquet")
    for f, _ in folded:
        try:
            fs.delete_file(f)
        except (OSError, FileNotFoundError):
            pass  # another compaction took it
    return len(folded)


def snapshot_path(path: str | Path, study: str, table: pa.Table) -> str:
    """Where :func:`append` writes ``table``."""
    _, root = filesystem(path)
    return f"{root}/study={study}/{table.column('snapshot')[0].as_py()}.parquet"


def append(path: str | Path, study: str, table: pa.Table) -> str:
    """Write one snapshot under ``study=<study>/`` (temporary name, then rename); returns its path.

    When the study has :data:`COMPACT_AT` loose snapshot files, they are folded into one (:func:`compact`); a
    compaction that fails leaves them loose (the snapshot is in already) and says why.
    """
    fs, root = filesystem(path)
    snapshot = table.column("snapshot")[0].as_py() if table.num_rows else None
    if snapshot is None:
        raise HistoryError("a snapshot with no rows is not appended")
    part = f"{root}/study={study}"
    fs.create_dir(part, recursive=True)
    final = snapshot_path(path, study, table)
    _write(fs, table, final)
    try:
        compact(path, study, COMPACT_AT)
    except (OSError, pa.ArrowException) as exc:
        _warn(f"hetval: history: the snapshots of {study} were not folded ({exc}); they stay as they are")
    return final


def snapshot(study: str, tables: Mapping[str, pd.DataFrame], platform_files: Iterable[str | Path],
             config_hash: str | None, bootstrap: Mapping[str, Any],
             case_of_table: Mapping[str, str] | None = None, reference: pd.DataFrame | None = None) -> pa.Table | None:
    """The snapshot of one validation, not yet written (None when it has no rows): :func:`append` writes it
    once everything else the validation writes is written, so that a validation that fails appends nothing.
    ``reference`` adds the models' figures on the reference runs (:func:`analysis.scoring.reference.reference_rows`)."""
    docs = []
    for f in platform_files:
        doc = read_platform(f)
        docs.append((str(doc.get("platform", Path(f).stem)), doc))
    parts = [model_rows(tables, case_of_table), machine_rows(docs), scorecard_rows(tables.get("scorecard"))]
    if reference is not None and len(reference):
        parts.append(reference[ROW_COLUMNS])
    rows = pd.concat(parts, ignore_index=True)
    if not len(rows):
        return None
    return snapshot_table(snapshot_meta(docs, config_hash, bootstrap), rows)


def record(path: str | Path | None, study: str, tables: Mapping[str, pd.DataFrame],
           platform_files: Iterable[str | Path], config_hash: str | None, bootstrap: Mapping[str, Any],
           case_of_table: Mapping[str, str] | None = None) -> str | None:
    """Append the snapshot of one validation (no-op when ``path`` is None); returns where it went."""
    if not path:
        return None
    table = snapshot(study, tables, platform_files, config_hash, bootstrap, case_of_table)
    return append(path, study, table) if table is not None else None


def read(path: str | Path, study: str | None = None, columns: list[str] | None = None, log: Any = _warn,
         extra: pa.Table | None = None, extra_study: str | None = None) -> pd.DataFrame:
    """Every snapshot in the history (of one study), as one frame sorted by time; empty when there is none. Only
    snapshot files are read (:func:`snapshot_files`); one that does not read is skipped and named. ``extra``
    (with ``extra_study``) is a snapshot not yet appended, read as if it were."""
    names = [*(c for c in (columns or SCHEMA.names) if c != "study"), "study"]
    parts = [t.select(names) for _, t in _tables(path, study, columns, log)]
    if extra is not None and extra.num_rows:
        wanted = [c for c in names if c != "study"]
        parts.append(extra.select(wanted).append_column("study", pa.array([extra_study] * extra.num_rows, pa.string())))
    if not parts:
        return pd.DataFrame(columns=names)
    frame = pa.concat_tables(parts).to_pandas()
    keys = [c for c in ("snapshot", "kind", "case", "platform", "group", "model", "metric") if c in frame.columns]
    if len(keys) == 7:  # a snapshot seen twice while a compaction was folding it
        frame = frame.drop_duplicates(keys)
    if "time" in frame.columns:
        frame = frame.sort_values(["time", "snapshot"] if "snapshot" in frame else ["time"], kind="stable")
    return frame.reset_index(drop=True)


#: The columns ``hetval track`` and ``compare`` need (not the per-row JSON of the machine and the bootstrap,
#: whose conversion dominates reading a long history).
TRACK_COLUMNS = ["snapshot", "time", "study", "git_sha", "git_dirty", "fingerprint", "kind", "case", "platform",
                 "group", "model", "metric", "value", "lo", "hi", "n_reps", "n_alternatives"]


def snapshot_row(path: str | Path, study: str, snapshot: str) -> dict[str, Any]:
    """Every identity column of one snapshot (its first row), e.g. the machine facts for a header."""
    for f, table in _tables(path, study, None, lambda _line: None):
        if f.rpartition("/")[2] == f"{snapshot}.parquet" or f.rpartition("/")[2].startswith("compact-"):
            rows = table.filter(pc.equal(table["snapshot"], snapshot))
            if rows.num_rows:
                return rows.slice(0, 1).to_pylist()[0]
    return {}


def snapshots(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per snapshot: its identity columns, oldest first."""
    cols = [c for c in ("snapshot", "time", "study", "git_sha", "git_dirty", "version", "config_hash", "fingerprint")
            if c in frame.columns]
    return frame[cols].drop_duplicates("snapshot").sort_values(["time", "snapshot"]).reset_index(drop=True)
