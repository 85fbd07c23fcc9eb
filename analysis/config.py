"""Load and validate a study configuration, fill defaults, and expand it into run specs.

Validation happens before anything runs: a bad value or an unknown key raises
:class:`ConfigError` whose message is one line naming the key and what is
allowed. The Snakefile and the ``hetval`` CLI print that line and exit non-zero.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from sims.record import run_id_of, stable_hash

REPO = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT_CONFIG = REPO / "config" / "config.yaml"


class ConfigError(ValueError):
    """A configuration value or key is not allowed; the message is one line."""


def load_schema(path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _with_defaults(cls):
    """A validator class that also fills ``default`` values into the instance (jsonschema FAQ recipe)."""
    validate_props = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": set_defaults})


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
    return str(s.get("description", "see workflow/schemas/config.schema.yaml"))


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
    return f"{key}: {error.instance!r} is not allowed (allowed: {_allowed(error)})"


def validate_config(config: dict[str, Any], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``config`` in place (filling defaults) and return it; raise ConfigError on the first problem."""
    schema = dict(schema) if schema is not None else load_schema()
    cls = _with_defaults(jsonschema.validators.validator_for(schema))
    errors = sorted(cls(schema).iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        raise ConfigError(_message(errors[0]))
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


def load_config(*paths: str | Path) -> dict[str, Any]:
    """Read and merge YAML files (later ones override, dicts merged recursively) and validate the result."""
    merged: dict[str, Any] = {}
    for path in paths or (DEFAULT_CONFIG,):
        try:
            with open(path, encoding="utf-8") as fh:
                doc = yaml.safe_load(fh) or {}
        except FileNotFoundError as exc:
            raise ConfigError(f"{path}: no such config file") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from exc
        if not isinstance(doc, dict):
            raise ConfigError(f"{path}: (top level) must be a mapping of keys")
        merge(merged, doc)
    return validate_config(merged)


def merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive dict update, as Snakemake merges ``--configfile`` files (lists are replaced)."""
    for k, v in update.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def config_hash(config: Mapping[str, Any]) -> str:
    """A stable hash of the whole validated configuration (provenance only; not part of run ids)."""
    return stable_hash(dict(config))


def platform_layouts(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Platform name -> {description, host, accel}."""
    return {p["name"]: {k: v for k, v in p.items() if k != "name"} for p in config["platforms"]}


def characterize_spec(config: Mapping[str, Any], platform: str) -> dict[str, Any]:
    """The spec ``sims.bench`` needs to characterise ``platform``."""
    layout = platform_layouts(config)[platform]
    return {
        "platform": platform,
        "description": layout.get("description", ""),
        "layout": {"host": layout["host"], "accel": layout["accel"]},
        **{k: config["characterize"][k] for k in ("warmup", "repetitions", "llc_factor")},
        "min_region_factor": config["runs"]["min_region_factor"],
        "energy": config["energy"],
    }


def _sa_variants(sa: Mapping[str, Any]) -> Iterator[str]:
    from sims.sa.case import dp_variant

    yield from sa["wps"]
    for alpha in sa["alphas"]:
        yield dp_variant(float(alpha))


def study_matrix(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every run of the study as a run spec (with ``run_id``), in a stable order.

    The spec holds only what defines a run, so that changing an unrelated key
    (another case's sizes, the report title) never re-runs existing runs; the
    config hash travels separately (``--config-hash``) as provenance.
    """
    runs: list[dict[str, Any]] = []
    layouts = platform_layouts(config)
    cases = config["cases"]

    def add(case: str, variant: str, params: dict[str, Any], seed: int) -> None:
        for platform, layout in layouts.items():
            spec = {
                "study": config["study"],
                "case": case,
                "variant": variant,
                "params": params,
                "platform": platform,
                "layout": {"host": layout["host"], "accel": layout["accel"]},
                "warmup": config["runs"]["warmup"],
                "repetitions": config["runs"]["repetitions"],
                "seed": seed,
                "min_region_factor": config["runs"]["min_region_factor"],
                # how energy is measured is not part of what defines a run (not hashed into run_id)
                "energy": config["energy"],
            }
            spec["run_id"] = run_id_of(spec)
            runs.append(spec)

    sa = cases["sa"]
    if sa["enabled"]:
        for size in sa["sizes"]:
            for variant in dict.fromkeys(_sa_variants(sa)):
                add("sa", variant, {"size": int(size)}, sa["seed"])
    la = cases["la"]
    if la["enabled"]:
        for sizes in la["sizes"]:
            params = {"n_mm": int(sizes["matmul"]), "n_tr": int(sizes["transpose"]), "dtype": la["dtype"]}
            for variant in dict.fromkeys(_sa_variants(la)):
                add("la", variant, params, la["seed"])
    peach = cases["peach"]
    if peach["enabled"]:
        from sims.sa.case import dp_variant

        for w in peach["workloads"]:
            for pair in peach["frequencies"] or [None]:
                params = {"workload": w["name"], "n": int(w["n"]), "dtype": w.get("dtype", "float64")}
                if pair and (pair.get("f_C") is not None or pair.get("f_G") is not None):
                    params["frequency"] = {k: pair.get(k) for k in ("f_C", "f_G")}
                for alpha in peach["alphas"]:
                    add("peach", dp_variant(float(alpha)), params, peach["seed"])
    runs.extend(fdm_runs(config))
    return runs


def fdm_runs(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The FDM runs of the study: scale x order x marshaling design x decomposition.

    Each spec carries ``fdm_doc``, the run spec handed to ``python -m sims.fdm run``,
    and the identity fields the FDM driver hashes, so the workflow's ``run_id``
    is the one the driver writes into its records.
    """
    from sims.fdm.driver import run_identity
    from sims.fdm.spec import SpecError, parse

    fdm = config["cases"].get("fdm") or {}
    if not fdm.get("enabled"):
        return []
    platform = fdm.get("platform") or config["platforms"][0]["name"]
    if platform not in platform_layouts(config):
        raise ConfigError(f"cases.fdm.platform: {platform!r} is not one of the configured platforms")
    h = float(fdm["spacing"])
    out = []
    for n, scale in enumerate(fdm["scales"]):
        shape = [int(x) for x in scale["shape"]]
        extent = [s * h for s in shape]
        source = dict(fdm["source"], position=[f * e for f, e in zip(fdm["position_fraction"], extent, strict=True)])
        receivers = [[f * e for f, e in zip(r, extent, strict=True)] for r in fdm["receivers_fraction"]]
        for order in fdm["orders"]:
            for decomposition in scale.get("decompositions", ["auto"]):
                for design in fdm["marshaling"]:
                    doc = {
                        "study": config["study"], "platform": platform, "ranks": int(scale["ranks"]),
                        "warmup": config["runs"]["warmup"], "repetitions": config["runs"]["repetitions"],
                        "grid": {"shape": shape, "spacing": h}, "time": {"steps": int(fdm["steps"])},
                        "medium": fdm["medium"], "source": source, "receivers": receivers,
                        "boundary": fdm["boundary"], "order": int(order), "backend": fdm["backend"],
                        "free_surface": bool(fdm["free_surface"]),
                        "decomposition": decomposition, "marshaling": design,
                    }
                    try:
                        parse(doc)
                    except SpecError as exc:
                        raise ConfigError(f"cases.fdm.scales[{n}] (order {order}): {exc}") from None
                    ident = run_identity(doc)
                    out.append({**ident, "run_id": run_id_of(ident), "ranks": int(scale["ranks"]), "fdm_doc": doc})
    return out
