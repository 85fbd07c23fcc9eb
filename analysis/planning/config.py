"""Load and validate a study configuration, fill defaults, and expand it into run specs.

Validation happens before anything runs: a bad value or an unknown key raises
:class:`ConfigError` whose message is one line naming the key and what is
allowed. The Snakefile and the ``hetval`` CLI print that line and exit non-zero.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import yaml

from analysis.planning.checks import (  # noqa: F401 - ConfigError, platform_layouts: re-exported, as ever
    ConfigError,
    check_history_path,
    check_launcher_text,
    check_memory,
    check_scheduler_address,
    check_slurm_text,
    check_study_name,
    merge,
    platform_layouts,
)
from analysis.resources import CONFIG_SCHEMA as SCHEMA_PATH
from sims.record import meter_names, stable_hash
from sims.vocab import is_name
from sims.yamlfile import YAMLFileError, load_mapping

#: The checkout this package lives in, when it lives in one (an editable install)
if TYPE_CHECKING:
    from analysis.scoring.uncertainty import Settings

REPO = Path(__file__).resolve().parents[2]


def default_config() -> Path:
    """The default study: ``config/config.yaml`` in the working directory, else in the checkout this package
    was installed from (editable installs); a ConfigError naming both when neither exists."""
    for candidate in (Path.cwd() / "config" / "config.yaml", REPO / "config" / "config.yaml"):
        if candidate.is_file():
            return candidate
    raise ConfigError(f"no study given (--configfile) and no config/config.yaml in {Path.cwd()} (the default study "
                      "lives in a checkout of the repository)")


def load_schema(path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    """The study schema: the base file with every registered case's fragment under ``cases.<name>`` and
    every registered meter (``hetval.meters``) among ``energy.meter``'s values.

    A case's section gets ``enabled`` (default true): a study runs exactly the cases whose sections
    it has and does not disable.
    """
    from analysis.registry import cases

    schema = _base_schema(str(path))
    props = schema["properties"]["cases"].setdefault("properties", {})
    for name, case in cases().items():
        frag = copy.deepcopy(dict(case.schema))
        frag.pop("default", None)  # an absent section stays absent: that case does not run
        frag.setdefault("properties", {})["enabled"] = {
            "type": "boolean", "default": True, "description": "false keeps the section but skips the case"}
        props[name] = frag
    return _with_meters(schema)


def _with_meters(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every registered meter (``hetval.meters``) among ``energy.meter``'s values."""
    schema["properties"]["energy"]["properties"]["meter"]["enum"] = ["auto", *meter_names(), "none"]
    return schema


def _base_schema(path: str = str(SCHEMA_PATH)) -> dict[str, Any]:
    """The schema file as written (a fresh copy each call; the file is parsed once)."""
    return copy.deepcopy(_parsed_schema(path))


@functools.lru_cache(maxsize=4)
def _parsed_schema(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _with_defaults(cls):
    """A validator class that also fills ``default`` values into the instance (jsonschema FAQ recipe), and whose
    integers are integers: JSON Schema lets ``5.0`` pass as one, and a run's id hashes ``5.0`` apart from ``5``
    (every run of the study would be measured again)."""
    validate_props = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    strict = cls.TYPE_CHECKER.redefine("integer", lambda _checker, x: isinstance(x, int) and not isinstance(x, bool))
    return jsonschema.validators.extend(cls, {"properties": set_defaults}, type_checker=strict)


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else (f".{p}" if parts else str(p)))
    return "".join(parts) or "(top level)"


def _allowed(error: jsonschema.ValidationError) -> str:
    s = error.schema if isinstance(error.schema, dict) else {}
    v = error.validator
    if v == "enum":
        return "one of " + ", ".join(map(str, s["enum"]))
    if v == "type":
        t = s["type"]
        return "of type " + (" or ".join(t) if isinstance(t, list) else t)
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bounds = []
        if "minimum" in s:
            bounds.append(f">= {s['minimum']}")
        if "exclusiveMinimum" in s:
            bounds.append(f"> {s['exclusiveMinimum']}")
        if "maximum" in s:
            bounds.append(f"<= {s['maximum']}")
        if "exclusiveMaximum" in s:
            bounds.append(f"< {s['exclusiveMaximum']}")
        return "a number " + " and ".join(bounds)
    if v == "pattern":
        return f"text matching {s['pattern']}"
    if v in ("minItems", "maxItems"):
        return f"a list with {'at least' if v == 'minItems' else 'at most'} {error.validator_value} item(s)"
    if v == "uniqueItems":
        return "a list without repeated items"
    if v == "required":
        return "present"
    return str(s.get("description", "see analysis/resources/config.schema.yaml"))


def _message(error: jsonschema.ValidationError) -> str:
    key = _key_path(error)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = f"{key}." if error.absolute_path else ""
        return f"{where}{extra[0]}: unknown key (allowed here: {', '.join(allowed)})"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = f"{key}." if error.absolute_path else ""
        return f"{where}{missing}: required key is missing"
    shown = repr(error.instance)
    shown = shown if len(shown) <= 80 else f"{shown[:60]}... ({len(str(error.instance))} characters)"
    return f"{key}: {shown} is not allowed (allowed: {_allowed(error)})"


def _non_finite(value: Any, where: str = "", seen: set[int] | None = None) -> str | None:
    """The key path of the first NaN or infinite number anywhere in ``value`` (None when there is none). A
    container YAML's aliases share is visited once, so a file of nested aliases costs its size, not their
    expansion."""
    seen = set() if seen is None else seen
    if isinstance(value, float) and not math.isfinite(value):
        return where or "(top level)"
    if isinstance(value, Mapping | list | tuple):
        if id(value) in seen:
            return None
        seen.add(id(value))
    if isinstance(value, Mapping):
        for k, v in value.items():
            found = _non_finite(v, f"{where}.{k}" if where else str(k), seen)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = _non_finite(v, f"{where}[{i}]", seen)
            if found:
                return found
    return None


def _at(config: Any, where: str) -> Any:
    """The value at a key path of :func:`_non_finite` (for the message)."""
    import re

    value = config
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", where):
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return value


def validate_config(config: dict[str, Any], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``config`` in place (filling defaults) and return it; raise ConfigError on the first problem.

    Besides the schema: no NaN or infinite number anywhere (YAML's ``.nan``/``.inf`` are numbers a schema's
    bounds let through), and names that become paths (``study``, platform names) are one line of safe
    characters (:data:`sims.vocab.NAME`).
    """
    bad = _non_finite(config)
    if bad:
        raise ConfigError(f"{bad}: {_at(config, bad)!r} is not allowed (allowed: a finite number)")
    schema = dict(schema) if schema is not None else load_schema()
    cls = _with_defaults(jsonschema.validators.validator_for(schema))
    errors = sorted(cls(schema).iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        raise ConfigError(_message(errors[0]))
    for key, name in (("study", config["study"]), *((f"platforms[{i}].name", p["name"])
                                                    for i, p in enumerate(config["platforms"]))):
        if not is_name(name):
            raise ConfigError(f"{key}: {name!r} is not allowed (allowed: one line of letters, digits, '_', '.', '-', "
                              "starting with a letter or digit)")
    check_launcher_text(config["launcher"])
    check_history_path(config["history"]["path"])
    check_study_name(config)
    check_slurm_text(config)
    check_scheduler_address(config)
    names = [p["name"] for p in config["platforms"]]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"platforms: name {dupes[0]!r} is used twice (allowed: unique names)")
    for i, p in enumerate(config["platforms"]):
        shared = sorted(set(p["host"].get("cores", [])) & set(p["accel"].get("cores", [])))
        if shared:
            # One thread per core per rank: two ranks on one core would oversubscribe it.
            raise ConfigError(
                f"platforms[{i}].accel.cores: core(s) {shared} also belong to the host "
                "(allowed: cores not used by the other processor)"
            )
        for role in ("host", "accel"):
            proc = p[role]
            if proc["backend"] == "cupy" and "cores" in proc:
                raise ConfigError(f"platforms[{i}].{role}.cores: not allowed with backend cupy (use device)")
            if proc["backend"] != "cupy" and "device" in proc:
                raise ConfigError(f"platforms[{i}].{role}.device: not allowed with backend {proc['backend']} (use cores)")
    return config


def section(name: str, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config section ``name`` holding ``values``, validated against its schema fragment with its
    defaults filled: how code that has no whole study (the CLI, benchmarks, tests) gets a section's
    defaults, which are written only in the schema. A bad value raises ConfigError naming ``name.key``."""
    # only the cases' and the energy meter's parts of the schema come from the registries: any other section
    # is read from the schema file alone, so a CLI flag's default does not import every case (seconds)
    if name == "cases":
        schema = load_schema()
    else:
        schema = _with_meters(_base_schema()) if name == "energy" else _base_schema()
    if name not in schema["properties"]:
        raise ConfigError(f"{name}: unknown config section")
    wrapper = {"type": "object", "properties": {name: schema["properties"][name]}}
    doc = {name: copy.deepcopy(dict(values or {}))}
    bad = _non_finite(doc)  # NaN passes every bound of a schema (each comparison with it is false)
    if bad:
        raise ConfigError(f"{bad}: {_at(doc, bad)!r} is not allowed (allowed: a finite number)")
    cls = _with_defaults(jsonschema.validators.validator_for(schema))
    errors = sorted(cls(wrapper).iter_errors(doc), key=lambda e: len(e.absolute_path))
    if errors:
        raise ConfigError(_message(errors[0]))
    return doc[name]


def uncertainty_settings(**given: Any) -> Settings:
    """The uncertainty settings of the schema's defaults with the ``given`` keys set, validated as a
    config's ``uncertainty`` section would be."""
    from analysis.scoring.uncertainty import Settings

    return Settings.from_config(section("uncertainty", given))


def load_config(*paths: str | Path) -> dict[str, Any]:
    """Read and merge YAML files (later ones override, dicts merged recursively) and validate the result.

    Layered exactly as the Snakefile layers them: ``config/config.yaml`` (the default study) when no
    file is given, else only the given files, in order - so a study file is a whole study and a case
    it does not name does not run.
    """
    merged: dict[str, Any] = {}
    for path in paths or (default_config(),):
        try:
            doc = load_mapping(path, "config file")
        except YAMLFileError as exc:
            raise ConfigError(str(exc)) from None
        merge(merged, doc)
    return validate_config(merged)


def config_hash(config: Mapping[str, Any]) -> str:
    """A stable hash of the whole validated configuration (provenance only; not part of run ids)."""
    return stable_hash(dict(config))


def characterize_spec(config: Mapping[str, Any], platform: str) -> dict[str, Any]:
    """The spec ``sims.bench`` needs to characterise ``platform``."""
    from analysis.planning.estimates import transpose_sizes

    layout = platform_layouts(config)[platform]
    return {
        "platform": platform,
        "description": layout.get("description", ""),
        "layout": {"host": layout["host"], "accel": layout["accel"]},
        **{k: config["characterize"][k] for k in ("warmup", "llc_factor", "llc_mib", "memory_fraction", "gemm_sizes",
                                                  "plateau")},
        # each replicate measures its share of the repetitions, at least MIN_REPLICATE_REPETITIONS
        "repetitions": replicate_repetitions(config),
        # past that share, a measurement goes on while its interval is wider than the precision (sims.timing.Until)
        "precision": config["characterize"]["precision"],
        "max_repetitions": max(replicate_repetitions(config), int(config["characterize"]["max_repetitions"])),
        # the transposes' windows: one per replicate, or two in a platform characterised once
        "transpose_rounds": 1 if int(config["characterize"]["replicates"]) > 1 else 2,
        "transpose_sizes": transpose_sizes(config, platform),
        "min_region_factor": config["runs"]["min_region_factor"],
        "energy": config["energy"],
        "fdm": _fdm_calibration_spec(config, platform),
    }


#: the fewest timed repetitions of a microbenchmark in one characterisation replicate (three can show that two
#: replicates disagree: every sample of one beyond every sample of the other)
MIN_REPLICATE_REPETITIONS = 3


def replicate_repetitions(config: Mapping[str, Any]) -> int:
    """Timed repetitions of each microbenchmark in one replicate: ``characterize.repetitions`` shared out over the
    ``characterize.replicates``, at least :data:`MIN_REPLICATE_REPETITIONS` (the platform file pools them all)."""
    char = config["characterize"]
    return max(MIN_REPLICATE_REPETITIONS, -(-int(char["repetitions"]) // int(char["replicates"])))


def _fdm_calibration_spec(config: Mapping[str, Any], platform: str) -> dict[str, Any] | None:
    """What the FDM kernels' calibration measures on ``platform``: the FDM case's backend and orders. None when
    the study has no FDM runs, they run on another platform, or on a GPU (the calibrated model does not cover
    the host<->device copies yet, so a calibration there would cost time and predict nothing)."""
    from analysis.registry import enabled_cases

    if "fdm" not in {c.name for c in enabled_cases(config)}:
        return None
    from sims.fdm import cost

    fdm = config["cases"]["fdm"]
    if (fdm.get("platform") or config["platforms"][0]["name"]) != platform or fdm.get("backend") == "cupy":
        return None
    char = config["characterize"]
    widths = char.get("fdm_widths") or cost.WIDTHS
    blocks = char.get("fdm_blocks") or [list(b) for b in cost.BLOCKS] + study_fdm_blocks(config, widths)
    try:
        cost.check_blocks(blocks, widths)
    except ValueError as exc:
        raise ConfigError(f"characterize.fdm_blocks / characterize.fdm_widths: {exc}") from None
    return {"backend": fdm.get("backend", "numba"), "orders": list(fdm.get("orders") or [2, 4]),
            "blocks": blocks, **({"widths": char["fdm_widths"]} if char.get("fdm_widths") else {}),
            **({"timeshared": True} if time_shared(fdm) else {})}


def time_shared(fdm: Mapping[str, Any]) -> bool:
    """Whether some FDM scale puts more busy cores on a node (ranks per node x threads per rank) than a platform
    node has processors: those runs time-share cores, and the calibration measures that case too."""
    from analysis.planning.jobs import LayoutError, scale_layout
    from sims.vocab import ROLES

    for scale in fdm.get("scales") or []:
        try:
            where = scale_layout(scale, "cases.fdm.scales")
        except LayoutError:
            continue  # the FDM case names it
        if where["ranks_per_node"] * where["threads_per_rank"] > len(ROLES):
            return True
    return False


#: at most this many of the study's own rank blocks join the FDM calibration (spread over their sizes)
STUDY_BLOCKS = 8


def study_fdm_blocks(config: Mapping[str, Any], widths) -> list[list[int]]:
    """The rank blocks ``[nx, ny, nz]`` the study's FDM runs own (every scale, decomposition and rank, ``auto``
    placed as the solver places it), distinct, not among the default calibration blocks, each with room
    for the widest calibration layer; at most :data:`STUDY_BLOCKS` of them, spread evenly over their sizes.

    The calibrated FDM model weights the calibration's samples by closeness to a rank's block size
    (:func:`analysis.equations.fdm.local_coefficients`): measuring the study's own blocks puts samples where
    its runs are, whatever the machine's caches make of those sizes."""
    from analysis.planning.jobs import LayoutError, scale_layout
    from sims.fdm import cost
    from sims.fdm.decomp import choose_dims, split

    fdm = config["cases"]["fdm"]
    room = 2 * max(int(w) for w in widths) + 1
    found: set[tuple[int, int, int]] = set()
    for scale in fdm.get("scales") or []:
        shape = [int(n) for n in scale["shape"]]
        try:
            ranks = scale_layout(scale, "cases.fdm.scales")["ranks"]
        except LayoutError:
            continue  # the FDM case names it
        for decomposition in scale.get("decompositions", ["auto"]):
            try:
                dims = choose_dims(ranks, tuple(shape), decomposition)
            except ValueError:
                continue  # the FDM case names it (cases.fdm.scales)
            sizes = [sorted({b - a for a, b in split(shape[i], dims[i])}) for i in range(3)]
            found.update((x, y, z) for x in sizes[0] for y in sizes[1] for z in sizes[2])
    fixed = {tuple(int(n) for n in b) for b in cost.BLOCKS}
    blocks = sorted((b for b in found if b not in fixed and min(b) >= max(8, room)),
                    key=lambda b: (b[0] * b[1] * b[2], b))
    if len(blocks) > STUDY_BLOCKS:
        last = len(blocks) - 1
        blocks = [blocks[round(i * last / (STUDY_BLOCKS - 1))] for i in range(STUDY_BLOCKS)]
    return [list(b) for b in blocks]


def study_matrix(config: Mapping[str, Any], check: bool = True) -> list[dict[str, Any]]:
    """Every run of the study as a run spec (with ``run_id``), case by registered case, in a stable order.

    A spec holds only what defines a run, so that changing an unrelated key
    (another case's sizes, the report title) never re-runs existing runs; the
    config hash travels separately (``--config-hash``) as provenance.
    """
    from analysis.planning.jobs import Layout
    from analysis.registry import enabled_cases

    runs: list[dict[str, Any]] = []
    for case in enabled_cases(config):
        for spec in case.expand(config):
            if "resources" not in spec:  # a case that says nothing: its ranks on one node, one GPU per cupy processor
                procs = (spec.get("layout") or {}).values()
                gpus = sum(1 for p in procs if isinstance(p, Mapping) and p.get("backend") == "cupy")
                spec = {**spec, "resources": Layout(ranks=int(spec.get("ranks") or 1), gpus_per_node=gpus).spec()}
            runs.append(spec)
    seen: set[str] = set()
    for spec in runs:
        if spec["run_id"] in seen:
            raise ConfigError(f"cases.{spec['case']}: run {spec['run_id']} ({spec.get('variant')}) is listed twice")
        seen.add(spec["run_id"])
    if check and not runs:
        from analysis.registry import cases

        raise ConfigError("cases: the study runs nothing (allowed: at least one enabled case section, of "
                          f"{', '.join(sorted(cases()))}; a study file is the whole study)")
    if check:  # not inside a batch job's own Snakemake: its allocation is not the node the study was checked for
        check_memory(config, runs)
    return runs
