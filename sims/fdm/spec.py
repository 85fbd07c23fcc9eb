"""The FDM run spec (the YAML contract of ``python -m sims.fdm run``): parsing, defaults, checks.

Every error names the key that is wrong. Positions are metres from the grid's
corner, ``z`` is depth; ``grid.shape`` counts cells and includes the absorbing
layers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from sims.vocab import MARSHALING

from . import stability
from .decomp import AUTO_RULE
from .medium import Medium
from .source import Source

BACKENDS = ("numpy", "numba", "cupy")

TOP_KEYS = {"grid", "time", "medium", "source", "receivers", "boundary", "order", "backend", "decomposition",
            "marshaling", "free_surface", "ranks", "study", "platform", "repetitions", "warmup", "rep", "seed", "name",
            # where the ranks sit (given only when not the default: 1 node, 1 thread per rank, no GPU)
            "nodes", "threads_per_rank", "gpus_per_node",
            # the platform's processor (host or accel) whose backend the run drives: its counts are that processor's
            "processor"}


class SpecError(ValueError):
    """A run spec that cannot be run; the message names the key."""


@dataclass(frozen=True)
class FDMSpec:
    """A checked run spec."""

    shape: tuple[int, int, int]
    spacing: float
    dt: float
    steps: int
    medium: Medium
    source: Source
    receivers: tuple[tuple[float, float, float], ...]
    boundary: str  # none | cpml
    pml_width: int
    order: int
    backend: str
    decomposition: Any  # "auto" or (px, py, pz)
    marshaling: str
    free_surface: bool
    ppw: float
    dt_from_cfl: bool
    raw: dict = field(repr=False, default_factory=dict)

    @property
    def points(self) -> int:
        """Grid points updated per step."""
        return self.shape[0] * self.shape[1] * self.shape[2]

    @property
    def boundary_label(self) -> str:
        """``none`` or ``cpml(<width>)`` (the record's ``boundary`` column)."""
        label = "none" if self.boundary == "none" else f"cpml({self.pml_width})"
        return label + "+free-surface" if self.free_surface else label


def _need(doc: dict, key: str, where: str) -> Any:
    if not isinstance(doc, dict) or key not in doc:
        raise SpecError(f"{where}: missing key '{key}'")
    return doc[key]


def _number(value: Any, key: str, positive: bool = True) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"'{key}' must be a number, got {value!r}") from None
    if not math.isfinite(x) or (positive and x <= 0):
        raise SpecError(f"'{key}' must be a positive finite number, got {value!r}")
    return x


def _keys(doc: Any, known: tuple[str, ...], where: str) -> None:
    """A nested mapping holds only ``known`` keys (a misspelt key is an error, never a silent default)."""
    if not isinstance(doc, dict):
        raise SpecError(f"'{where}' must be a mapping, got {doc!r}")
    unknown = sorted(set(doc) - set(known))
    if unknown:
        raise SpecError(f"'{where}': unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(known)})")


def _interior(p: tuple[float, float, float], key: str, shape: tuple[int, int, int], h: float, width: int,
              free_surface: bool) -> None:
    """A source or receiver lies in the interior, not inside an absorbing layer (whose damping would bend
    what it emits or records)."""
    if not width:
        return
    for a in range(3):
        lo = 0 if (a == 2 and free_surface) else width
        hi = shape[a] - width
        if not lo * h <= p[a] < hi * h:
            raise SpecError(f"'{key}' = {list(p)} lies inside the absorbing layer ({width} cells = {width * h:g} m "
                            f"on each face): {'xyz'[a]} must be in [{lo * h:g}, {hi * h:g}) m")


def _point(value: Any, key: str, extent: tuple[float, float, float]) -> tuple[float, float, float]:
    try:
        p = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        p = ()
    if len(p) != 3:
        raise SpecError(f"'{key}' must be [x, y, z] in metres, got {value!r}")
    for a in range(3):
        if not 0.0 <= p[a] < extent[a]:
            raise SpecError(f"'{key}' = {list(p)} lies outside the grid (0 <= {'xyz'[a]} < {extent[a]:g} m)")
    return p  # type: ignore[return-value]


def parse(doc: dict) -> FDMSpec:
    """Check a run-spec mapping and fill its defaults; raise :class:`SpecError` naming the bad key."""
    if not isinstance(doc, dict):
        raise SpecError("the run spec must be a mapping")
    unknown = sorted(set(doc) - TOP_KEYS)
    if unknown:
        raise SpecError(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(TOP_KEYS))}")
    if doc.get("processor") not in (None, "host", "accel"):
        raise SpecError(f"'processor' must be host or accel (the platform's role the backend runs on), got "
                        f"{doc['processor']!r}")
    grid = _need(doc, "grid", "spec")
    _keys(grid, ("shape", "spacing"), "grid")
    shape_v = _need(grid, "shape", "grid")
    try:
        shape = tuple(int(s) for s in shape_v if not isinstance(s, bool) and int(s) == s)
    except (TypeError, ValueError, OverflowError):
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise SpecError(f"'grid.shape' must be [nx, ny, nz] positive cell counts, got {shape_v!r}")
    h = _number(_need(grid, "spacing", "grid"), "grid.spacing")
    extent = tuple(n * h for n in shape)

    order = doc.get("order", 2)
    if order not in (2, 4):
        raise SpecError(f"'order' must be 2 or 4, got {order!r}")
    backend = doc.get("backend", "numba")
    if backend not in BACKENDS:
        raise SpecError(f"'backend' must be one of {', '.join(BACKENDS)}, got {backend!r}")
    marshaling = doc.get("marshaling", "device-pack")
    if marshaling not in MARSHALING:
        raise SpecError(f"'marshaling' must be one of {', '.join(MARSHALING)}, got {marshaling!r}")
    decomposition = doc.get("decomposition", "auto")
    if decomposition != "auto":
        try:
            decomposition = tuple(int(d) for d in decomposition)
        except (TypeError, ValueError):
            decomposition = ()
        if len(decomposition) != 3 or min(decomposition) < 1:
            raise SpecError(f"'decomposition' must be 'auto' or [px, py, pz], got {doc['decomposition']!r}")

    med_doc = _need(doc, "medium", "spec")
    if isinstance(med_doc, dict) and len(med_doc) != 1:
        raise SpecError(f"'medium' must have exactly one of 'homogeneous' or 'layers', got keys {sorted(med_doc)}")
    try:
        if isinstance(med_doc, dict) and "homogeneous" in med_doc:
            medium = Medium.from_spec(med_doc["homogeneous"])
        elif isinstance(med_doc, dict) and "layers" in med_doc:
            medium = Medium.from_spec(med_doc["layers"])
        else:
            raise ValueError("need 'homogeneous: {vp, vs, rho}' or 'layers: [{top, vp, vs, rho}, ...]'")
    except (ValueError, TypeError) as exc:
        raise SpecError(f"'medium': {exc}") from None

    src_doc = _need(doc, "source", "spec")
    try:
        source = Source.from_spec(src_doc)
    except (ValueError, TypeError) as exc:
        raise SpecError(f"'source': {exc}") from None
    _point(source.position, "source.position", extent)

    rec_doc = doc.get("receivers", [])
    if not isinstance(rec_doc, list):
        raise SpecError("'receivers' must be a list of [x, y, z]")
    receivers = tuple(_point(r, f"receivers[{n}]", extent) for n, r in enumerate(rec_doc))

    bnd = doc.get("boundary", {"kind": "cpml", "width": 10})
    _keys(bnd, ("kind", "width"), "boundary")
    kind = bnd.get("kind") if isinstance(bnd, dict) else None
    if kind not in ("none", "cpml"):
        raise SpecError(f"'boundary.kind' must be 'cpml' or 'none', got {kind!r}")
    width = 0
    if kind == "cpml":
        width = bnd.get("width", 10)
        if not isinstance(width, int) or isinstance(width, bool) or width < 1:
            raise SpecError(f"'boundary.width' must be a positive number of cells, got {width!r}")
        if 2 * width >= min(shape):
            raise SpecError(f"'boundary.width' {width} leaves no interior in grid {list(shape)}")

    free_surface = doc.get("free_surface", False)
    if not isinstance(free_surface, bool):
        raise SpecError(f"'free_surface' must be true or false, got {free_surface!r}")
    if free_surface and 2 * width >= shape[2] + width:
        raise SpecError(f"'boundary.width' {width} leaves no interior under the free surface in grid {list(shape)}")

    _interior(source.position, "source.position", shape, h, width, free_surface)
    for n, r in enumerate(receivers):
        _interior(r, f"receivers[{n}]", shape, h, width, free_surface)

    tdoc = _need(doc, "time", "spec")
    _keys(tdoc, ("steps", "dt"), "time")
    steps = tdoc.get("steps") if isinstance(tdoc, dict) else None
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise SpecError(f"'time.steps' must be a positive integer, got {steps!r}")
    dt_max = stability.critical_dt(medium.vp_max, h, order)
    if tdoc.get("dt") is None:
        dt, from_cfl = 0.9 * dt_max, True
    else:
        dt, from_cfl = _number(tdoc["dt"], "time.dt"), False
        if dt > dt_max:
            raise SpecError(
                f"'time.dt' = {dt:g} s is unstable: the CFL limit for vp_max = {medium.vp_max:g} m/s, "
                f"spacing {h:g} m, order {order} is {dt_max:g} s (omit 'dt' to use 0.9 of it)"
            )
    ppw = stability.points_per_wavelength(medium.vs_min, source.f0, h)
    if ppw < stability.MIN_PPW[order]:
        raise SpecError(
            f"under-resolved: {ppw:.2f} points per minimum wavelength (v_min = {medium.vs_min:g} m/s, "
            f"f_max = {stability.FMAX_FACTOR:g} x source.f0 = {stability.FMAX_FACTOR * source.f0:g} Hz, "
            f"grid.spacing = {h:g} m); order {order} needs >= {stability.MIN_PPW[order]:g}: "
            "reduce 'grid.spacing' or 'source.f0'"
        )
    return FDMSpec(shape, h, dt, steps, medium, source, receivers, kind, width, order, backend,  # type: ignore[arg-type]
                   decomposition, marshaling, free_surface, ppw, from_cfl, dict(doc))


#: Keys of a run spec that say where and how often it runs, not what it computes.
META_KEYS = ("study", "platform", "repetitions", "warmup", "rep", "seed", "name", "processor")


def _as_int(value: Any) -> Any:
    """An integer-valued count as an int (as it has always been hashed); anything else as given, so that a bad
    value still identifies its run - the failed record says what is wrong with it."""
    try:
        return int(value) if not isinstance(value, bool) and int(value) == value else value
    except (TypeError, ValueError, OverflowError):
        return value


def grid_label(grid: Any) -> str:
    """``96x96x96`` for a record's ``grid`` (JSON text ``{"shape": [...], "spacing": ...}``); the text itself when
    it is not one."""
    try:
        return "x".join(str(n) for n in json.loads(grid)["shape"])
    except (ValueError, KeyError, TypeError):
        return str(grid)


def run_identity(doc: dict) -> dict[str, Any]:
    """The fields that identify a run (hashed into ``run_id``)."""
    params = {k: v for k, v in doc.items() if k not in META_KEYS}
    return {
        "study": str(doc.get("study", "manual")),
        "case": "fdm",
        "variant": str(doc.get("marshaling", "device-pack")),
        "params": params,
        "platform": str(doc.get("platform", "local")),
        # an automatic decomposition is laid out by a rule that may change: it is part of the run's identity, so
        # that a results tree made under an earlier rule re-runs its automatic runs instead of mixing the two
        "layout": {"decomposition": AUTO_RULE} if params.get("decomposition", "auto") == "auto" else None,
        "warmup": _as_int(doc.get("warmup", 0)),
        "repetitions": _as_int(doc.get("repetitions", 1)),
        "seed": doc.get("seed"),
    }
