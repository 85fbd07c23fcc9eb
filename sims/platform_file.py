"""The one reader of characterised platform files (``results/<study>/platforms/<name>.yaml``).

A platform file is what characterisation wrote; ``<name>.energy.json`` beside
it (the *energy overlay*) holds the idle power and ``e_f, e_b, p_s`` that a
meter trace attached later measured (``hetval attach-trace --platform-file``),
and ``<name>.network.json`` (the *network overlay*) the ping-pong between two
nodes for a platform whose runs span nodes (:mod:`sims.bench.internode`),
read as ``network.inter_node``.
Every reader - the runner (p-DP splits), validation, the report and the trace
tools - goes through :func:`read_platform`, so none of them can miss the overlay.
Pure: PyYAML and the standard library only.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sims.vocab import ROLES
from sims.yamlfile import YAMLFileError, load_mapping

OVERLAY_SUFFIX = ".energy.json"
#: the inter-node ping-pong of a platform whose runs span nodes (:mod:`sims.bench.internode`)
NETWORK_SUFFIX = ".network.json"


class PlatformFileError(ValueError):
    """A platform file is missing, unreadable or lacks a parameter its reader needs (one-line message)."""


def overlay_path(platform_file: str | Path) -> Path:
    """Where the energy a later trace measured for a platform file is kept: ``<name>.energy.json`` beside it."""
    p = Path(platform_file)
    return p.with_name(p.stem + OVERLAY_SUFFIX)


def network_overlay_path(platform_file: str | Path) -> Path:
    """Where the inter-node ping-pong of a platform file is kept: ``<name>.network.json`` beside it."""
    p = Path(platform_file)
    return p.with_name(p.stem + NETWORK_SUFFIX)


#: platform files parsed in this process, by path and the file's identity (a rewrite is a new file: atomic rename)
_PARSED: dict[tuple[str, int, int, int], dict[str, Any]] = {}


def read_raw(path: str | Path) -> dict[str, Any]:
    """The platform file exactly as characterisation wrote it (no overlay).

    A process that measures many runs (:mod:`sims.launch`) reads the same file for each: it is parsed once per
    version of the file, and each caller gets its own copy."""
    import copy

    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _PARSED:
        return copy.deepcopy(_PARSED[key])
    try:
        doc = load_mapping(path, "platform file")
    except YAMLFileError as exc:
        raise PlatformFileError(str(exc)) from None
    if key is not None:
        if len(_PARSED) >= 8:
            _PARSED.clear()
        _PARSED[key] = copy.deepcopy(doc)
    return doc


def read_platform(path: str | Path) -> dict[str, Any]:
    """The platform file with its energy overlay (if any) merged in.

    The overlay's idle power and per-processor ``e_f, e_b, p_s`` (and energy
    fit) replace the file's (null when characterised without a meter), and
    ``energy`` says where they came from.
    """
    doc = read_raw(path)
    net = network_overlay_path(path)
    if net.exists():  # measured between two nodes: the FDM model's cost of a message to another node
        try:
            inter = json.loads(net.read_text(encoding="utf-8"))["inter_node"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise PlatformFileError(f"{net}: unreadable network overlay ({exc})") from None
        if isinstance(doc.get("network"), dict):
            doc["network"]["inter_node"] = inter
    over = overlay_path(path)
    if not over.exists():
        return doc
    try:
        extra = json.loads(over.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PlatformFileError(f"{over}: unreadable energy overlay ({exc})") from None
    if extra.get("idle_power") is not None:
        doc["idle_power"] = extra["idle_power"]
    for role, params in (extra.get("processors") or {}).items():
        proc = (doc.get("processors") or {}).get(role)
        if isinstance(proc, dict):
            proc.update(params)
    doc["energy"] = extra.get("energy", doc.get("energy"))
    return doc


def value(param: Any) -> float | None:
    """The ``value`` of a parameter entry ``{value: ..., unit: ...}`` as a float, or None."""
    if isinstance(param, dict) and param.get("value") is not None:
        try:
            return float(param["value"])
        except (TypeError, ValueError):
            return None
    return None


def roofline_rates(doc: dict[str, Any], source: str = "platform file") -> dict[str, dict[str, float]]:
    """``{role: {"t_f": s/flop, "t_b": s/byte, "t_f_<class>_<dtype>": s/flop ...}}`` of both processors (the
    compute ceilings per kernel class when the file has them); raise naming what is missing."""
    out: dict[str, dict[str, float]] = {}
    procs = doc.get("processors") or {}
    for role in ROLES:
        proc = procs.get(role) if isinstance(procs, dict) else None
        got = {p: value(proc.get(p)) if isinstance(proc, dict) else None for p in ("t_f", "t_b")}
        missing = [p for p, v in got.items() if v is None]
        if missing:
            raise PlatformFileError(f"{source} lacks processors.{role}.{missing[0]}.value")
        out[role] = {p: float(v) for p, v in got.items()}  # type: ignore[arg-type]
        out[role].update({f"t_f_{k}": v for k, v in ceilings(proc).items()})
    return out


def ceilings(proc: Any) -> dict[str, float]:
    """``{"<class>_<dtype>": value}``: the ceilings a processor entry holds - s/flop for a compute class, s/byte
    for a bandwidth class (``sims.vocab.BANDWIDTH_CLASSES``) - positive values only; a malformed entry is
    skipped. The vector float32 ceiling is the entry's ``t_f`` (characterisation does not repeat it here)."""
    found = proc.get("ceilings") if isinstance(proc, dict) else None
    out = {}
    for cls, by_dtype in (found.items() if isinstance(found, dict) else ()):
        for dt, param in (by_dtype.items() if isinstance(by_dtype, dict) else ()):
            v = value(param)
            if v is not None and v > 0:
                out[f"{cls}_{dt}"] = v
    return out


def read_rates(path: str | Path) -> dict[str, dict[str, float]]:
    """``{role: {t_f, t_b}}`` of a characterised platform file (what a p-DP split is chosen from)."""
    return roofline_rates(read_platform(path), str(path))


def parameters(doc: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every parameter of a platform document: mappings with a numeric ``value``, with their path."""
    if isinstance(doc, dict):
        value = doc.get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            yield path, doc
        for key, sub in doc.items():
            if key not in ("replicates",):
                yield from parameters(sub, (*path, str(key)))


def parameter_at(doc: Any, path: tuple[str, ...]) -> Any:
    """What ``doc`` holds at ``path`` (:func:`parameters`' paths), None where it holds nothing."""
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def parameter_samples(param: Any) -> list[float]:
    """A parameter's finite samples (its ``samples`` list), empty when it has none."""
    got = param.get("samples") if isinstance(param, dict) else None
    if not isinstance(got, list):
        return []
    return [float(x) for x in got if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)]
