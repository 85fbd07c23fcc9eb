# Config validation, the study matrix and the input functions every rule uses.
import json
import os
import shlex
import sys

sys.path.insert(0, workflow.basedir)

from analysis.config import (  # noqa: E402
    ConfigError,
    characterize_spec,
    config_hash,
    platform_layouts,
    study_matrix,
    validate_config,
)

try:
    validate_config(config)
except ConfigError as exc:
    print("hetval: config error:", exc, file=sys.stderr)
    sys.exit(2)

STUDY = config["study"]
RUNS = {spec["run_id"]: spec for spec in study_matrix(config)}
PLATFORMS = sorted(platform_layouts(config))
# published measurements ingested as runs (energy_source: published)
from analysis.published_runs import run_ids as published_run_ids  # noqa: E402

PUBLISHED_RUNS = {
    table: published_run_ids(table, config["study"]) for table in config["published_runs"]
}
# the papers' machine tables whose published claims the validation job recomputes
PUBLISHED_DIR = os.path.join(workflow.basedir, "config", "platforms", "published")
PUBLISHED_CATALOGS = sorted(
    os.path.join(PUBLISHED_DIR, f) for f in os.listdir(PUBLISHED_DIR) if f.endswith(".yaml")
)
# Provenance only: handed to the runner through the environment so that editing an
# unrelated config key never changes a rule's params (which would re-run every run).
os.environ.update(HETVAL_CONFIG_HASH=config_hash(config))


wildcard_constraints:
    study=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    platform=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    run_id=r"[0-9a-f]{16}",


def get_run(wildcards):
    try:
        return RUNS[wildcards.run_id]
    except KeyError:
        raise ValueError(f"run {wildcards.run_id} is not part of study {STUDY!r}") from None


def get_run_spec(wildcards):
    """The run spec as JSON text (quoted into the shell with :q); for FDM runs the sims.fdm run spec."""
    spec = get_run(wildcards)
    if spec["case"] == "fdm":
        return json.dumps(spec["fdm_doc"], sort_keys=True)
    return json.dumps({k: v for k, v in spec.items() if k != "run_id"}, sort_keys=True)


def get_run_tasks(wildcards):
    """MPI ranks of the run: 2 (host, accel) for SA, the scale's ranks for FDM."""
    return int(get_run(wildcards).get("ranks", 2))


def get_run_command(wildcards, output, resources):
    """The MPI launch of one run, by case (``resources.mpi`` is the launcher, e.g. mpiexec or srun)."""
    spec = get_run(wildcards)
    if spec["case"] == "fdm":
        out = f"results/fdm/{wildcards.study}/{wildcards.run_id}"
        return (
            f"mkdir -p {out} && printf '%s\\n' {shlex.quote(get_run_spec(wildcards))} > {out}/spec.yaml && "
            f"{resources.mpi} -n {get_run_tasks(wildcards)} python -m mpi4py -m sims.fdm run --config {out}/spec.yaml"
            f" --out {out} --raw-record {shlex.quote(output.record)} --record-failures"
        )
    return (
        f"{resources.mpi} -n {get_run_tasks(wildcards)} python -m mpi4py -m sims.run --spec {shlex.quote(get_run_spec(wildcards))}"
        f" --platform-file={shlex.quote(get_platform_file_arg(wildcards))} --out {shlex.quote(output.record)}"
    )


def get_run_inputs(wildcards):
    """p-DP chooses its split from the characterised platform; a retry request (written by
    gather for a failed or quarantined run) is a newer input, so that run is redone."""
    spec = get_run(wildcards)
    inputs = {}
    if spec["variant"] == "p-DP":
        inputs["platform"] = f"results/platforms/{spec['platform']}.yaml"
    retry = f"results/retry/{wildcards.study}/{wildcards.run_id}.json"
    if os.path.exists(retry):
        inputs["retry"] = retry
    return inputs


def get_platform_file_arg(wildcards):
    return get_run_inputs(wildcards).get("platform", "")


def get_characterize_spec(wildcards):
    if wildcards.platform not in PLATFORMS:
        raise ValueError(f"platform {wildcards.platform!r} is not in the config (known: {', '.join(PLATFORMS)})")
    return json.dumps(characterize_spec(config, wildcards.platform), sort_keys=True)


def get_raw_records(wildcards):
    published = [f"results/published/{wildcards.study}/{run_id}.json" for ids in PUBLISHED_RUNS.values() for run_id in ids]
    return [f"results/raw/{wildcards.study}/{run_id}.json" for run_id in RUNS] + published


def get_all_raw_records(wildcards):
    return [f"results/raw/{STUDY}/{run_id}.json" for run_id in RUNS]


def get_platform_files(wildcards):
    return [f"results/platforms/{p}.yaml" for p in PLATFORMS]


def get_scheduler(wildcards):
    return config["validate"]["scheduler_address"] or ""


def print_summary():
    path = "results/report/summary.txt"
    try:
        with open(path, encoding="utf-8") as fh:
            print()
            print(fh.read())
    except FileNotFoundError:
        print(f"(no {path})")
