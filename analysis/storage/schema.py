"""The pyarrow schema of the run dataset, built from the record contract in ``sims.record``.

One schema in code: :data:`RUN_SCHEMA` is what gathering writes and what every
reader gets back; :func:`check_record` decides whether a raw record fits it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sims.record import (
    ENERGY_SOURCES,
    FIELD_TYPES,
    FIELDS,
    REQUIRED,
    STATUSES,
    meter_names,
    valid_energy_source,
)

_ARROW = {
    "map:string": pa.map_(pa.string(), pa.string()),
    "map:doubles": pa.map_(pa.string(), pa.list_(pa.float64())),
    "string": pa.string(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}

RUN_SCHEMA: pa.Schema = pa.schema([pa.field(n, _ARROW[t], nullable=not req) for n, t, req in FIELDS])
#: Hive partition keys of ``results/runs/`` (directories ``study=<s>/case=<c>/``).
PARTITION_KEYS: tuple[str, ...] = ("study", "case")
PARTITION_SCHEMA: pa.Schema = pa.schema([RUN_SCHEMA.field(k) for k in PARTITION_KEYS])
#: The version of the dataset's file layout, stamped into every data file (2: versions and phase_times as maps;
#: 3: each repetition's measured_at and round).
DATASET_SCHEMA = 3
#: The columns stored inside each partition file (the partition keys live in the path).
FILE_SCHEMA: pa.Schema = pa.schema([f for f in RUN_SCHEMA if f.name not in PARTITION_KEYS],
                                   metadata={b"hetval.dataset_schema": str(DATASET_SCHEMA).encode()})
#: Uniqueness key of the dataset.
ROW_KEY: tuple[str, str] = ("run_id", "rep")


class DatasetSchemaError(ValueError):
    """A data file was written by another version of the dataset layout: gather rebuilds it from the raw records."""


class RecordError(ValueError):
    """A raw record does not fit the schema; the message says which field and why."""


def _parse_timestamp(name: str, value: Any) -> dt.datetime:
    if not isinstance(value, str):
        raise RecordError(f"field {name!r}: expected ISO 8601 UTC text, got {type(value).__name__}")
    try:
        ts = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise RecordError(f"field {name!r}: {value!r} is not an ISO 8601 time") from exc
    if ts.tzinfo is None:
        raise RecordError(f"field {name!r}: {value!r} has no time zone (UTC required)")
    return ts.astimezone(dt.UTC)


def _check_map(name: str, typ: str, value: Any) -> dict[str, Any]:
    """A map field as a dict: a JSON object (as text, as raw records hold it, or already parsed)."""
    doc = value
    if isinstance(value, str):
        try:
            doc = json.loads(value)
        except ValueError:
            raise RecordError(f"field {name!r}: not a JSON object: {value!r:.60}") from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) for k in doc):
        raise RecordError(f"field {name!r}: expected an object of text keys, got {type(doc).__name__}")
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if typ == "map:string":
            if isinstance(v, bool) or not (v is None or isinstance(v, str | int | float)):
                raise RecordError(f"field {name!r}: value of {k!r} is not text: {v!r:.40}")
            out[k] = None if v is None else str(v)
        else:
            if not isinstance(v, list) or not all(isinstance(x, int | float) and not isinstance(x, bool)
                                                   and math.isfinite(x) for x in v):
                raise RecordError(f"field {name!r}: value of {k!r} is not a list of finite numbers")
            out[k] = [float(x) for x in v]
    return out


def _check_value(name: str, typ: str, value: Any) -> Any:
    if typ.startswith("map:"):
        return _check_map(name, typ, value)
    if typ == "string":
        if not isinstance(value, str):
            raise RecordError(f"field {name!r}: expected text, got {type(value).__name__} {value!r:.40}")
        return value
    if typ == "int64":
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecordError(f"field {name!r}: expected an integer, got {type(value).__name__} {value!r:.40}")
        if not -(2**63) <= value < 2**63:
            raise RecordError(f"field {name!r}: {value} does not fit in int64")
        return value
    if typ == "float64":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecordError(f"field {name!r}: expected a number, got {type(value).__name__} {value!r:.40}")
        if not math.isfinite(value):
            raise RecordError(f"field {name!r}: {value} is not finite (use null for 'not measured')")
        return float(value)
    if typ == "timestamp":
        return _parse_timestamp(name, value)
    raise AssertionError(f"unknown logical type {typ}")


#: the longest timed region a record may hold: a week, longer than any job a scheduler runs
MAX_TIME_S = 7 * 86400.0
#: text fields that hold JSON (per-run detail); ``params`` is an object
JSON_FIELDS = ("params", "energy_detail", "grid", "decomposition", "placement")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_record(record: Any) -> dict[str, Any]:
    """Validate one raw record against the contract and return it normalised for :data:`RUN_SCHEMA`.

    Raises
    ------
    RecordError
        On a missing required field, an unknown field, a wrong type, a value
        outside its allowed set, or an ``ok`` record without a positive time.
    """
    if not isinstance(record, dict):
        raise RecordError(f"a record must be a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - set(FIELD_TYPES))
    if unknown:
        raise RecordError(f"unknown field(s): {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for name, typ in FIELD_TYPES.items():
        value = record.get(name)
        if value is None:
            if name in REQUIRED:
                raise RecordError(f"required field {name!r} is missing or null")
            out[name] = None
            continue
        out[name] = _check_value(name, typ, value)
    if out["status"] not in STATUSES:
        raise RecordError(f"field 'status': {out['status']!r} is not one of {', '.join(STATUSES)}")
    if not valid_energy_source(out["energy_source"]):
        raise RecordError(f"field 'energy_source': {out['energy_source']!r} is not one of {', '.join(ENERGY_SOURCES)} "
                          f"or registered meters ({', '.join(meter_names())}) joined by '+'")
    if out["status"] == "ok" and not (out["time_s"] and out["time_s"] > 0):
        raise RecordError("an 'ok' record needs a positive 'time_s'")
    for name in (n for n, typ in FIELD_TYPES.items() if typ == "float64" and n.startswith("time") and n.endswith("_s")):
        if out[name] is not None and not 0 <= out[name] <= MAX_TIME_S:
            raise RecordError(f"field {name!r}: {out[name]!r} is not a time one run can take (allowed: 0 to "
                              f"{MAX_TIME_S:g} s)")
    for name in JSON_FIELDS:
        if out.get(name) is not None:
            try:
                parsed = json.loads(out[name], parse_constant=_no_constant)
            except (ValueError, RecursionError) as exc:
                raise RecordError(f"field {name!r}: not JSON text ({str(exc).splitlines()[0]:.80})") from None
            if name == "params" and not isinstance(parsed, dict):
                raise RecordError("field 'params': not a JSON object")
    if out["status"] == "failed" and not out["error"]:
        raise RecordError("a 'failed' record needs its 'error'")
    if out["energy_source"] == "none" and any(out[k] is not None for k in ("energy_j", "energy_host_j", "energy_accel_j")):
        raise RecordError("energy values present but energy_source is 'none'")
    if out["rep"] < 0:
        raise RecordError(f"field 'rep': {out['rep']} is negative")
    return out


#: the fields of a record that its run's spec defines (what a record cannot say otherwise without lying)
IDENTITY = ("variant", "platform", "ranks", "size", "params")


def identity(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's spec says each of its records holds (:data:`IDENTITY`; ``params`` those its spec sets)."""
    return {k: spec.get(k) for k in IDENTITY if spec.get(k) is not None}


def check_identity(records: list[dict[str, Any]], spec: Mapping[str, Any]) -> None:
    """Each record holds what its run's spec says (:data:`IDENTITY`): the variant, platform, ranks and size it
    was measured at, and every parameter the spec sets (a record adds its job's own description); a failed
    record that could not know its size says none."""
    for i, r in enumerate(records):
        for key in ("variant", "platform", "ranks", "size"):
            if key not in spec or (key == "size" and r[key] is None and r["status"] != "ok"):
                continue
            if r[key] != spec[key]:
                raise RecordError(f"record {i}: {key} {r[key]!r} differs from the study's matrix ({spec[key]!r})")
        if isinstance(spec.get("params"), dict):
            params = json.loads(r["params"])  # JSON text: checked by check_record
            wrong = sorted(k for k, v in spec["params"].items() if params.get(k) != v)
            if wrong:
                raise RecordError(f"record {i}: params {', '.join(wrong)} differ from the study's matrix")


def params_doc(text: Any) -> dict[str, Any]:
    """A record's ``params`` as a dict: parsed from its JSON text (the dataset's form), passed through when already
    a dict; ``{}`` when it is neither."""
    if isinstance(text, str):
        try:
            text = json.loads(text)
        except ValueError:
            return {}
    return text if isinstance(text, dict) else {}


def params_docs(texts: Any) -> list[dict[str, Any]]:
    """:func:`params_doc` of each of ``texts`` (a column of runs), each distinct text parsed once: a study's runs
    share a few ``params`` between many runs. Equal texts share one dict: read them, never change them."""
    import pandas as pd  # only the readers that parse a column of runs need it

    codes, distinct = pd.factorize(pd.Series(texts, dtype=object), use_na_sentinel=False)
    docs = [params_doc(text) for text in distinct]
    return [docs[c] for c in codes]
