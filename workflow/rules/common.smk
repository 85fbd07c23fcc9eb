# Config validation, the study matrix and the input functions every rule uses.
# Nothing here branches on a case: every run's command, ranks and inputs come from its registered case.
import json
import os
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
from analysis.registry import RegistryError, case, enabled_cases  # noqa: E402
from analysis.validate import output_files  # noqa: E402

try:
    validate_config(config)
    RUNS = {spec["run_id"]: spec for spec in study_matrix(config)}
except (ConfigError, RegistryError) as exc:
    print("hetval: config error:", exc, file=sys.stderr)
    sys.exit(2)

STUDY = config["study"]
CASES = [c.name for c in enabled_cases(config)]
PLATFORMS = sorted(platform_layouts(config))
# Every study's characterisation, validation and report live under results/<study>/.
OUT = f"results/{STUDY}"
# one table per name the registered cases declare, plus failed, published and summary.json
VALIDATION_FILES = output_files(f"{OUT}/validation")
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


def get_run_tasks(wildcards):
    """MPI ranks of the run (its case decided them when it expanded the study)."""
    return int(get_run(wildcards)["ranks"])


def get_run_threads(wildcards):
    spec = get_run(wildcards)
    return case(spec["case"]).threads(spec)


def get_run_command(wildcards, output, resources):
    """The run's launch, by its registered case (``resources.mpi`` is the launcher, e.g. mpiexec or srun)."""
    spec = get_run(wildcards)
    return case(spec["case"]).command(spec, output.record, get_platform_file_arg(wildcards), resources.mpi)


def get_run_inputs(wildcards):
    """A run that reads the characterised platform (a p-DP split) takes it as an input; a retry request
    (written by gather for a failed or quarantined run) is a newer input, so that run is redone."""
    spec = get_run(wildcards)
    inputs = {}
    if case(spec["case"]).needs_platform(spec):
        inputs["platform"] = f"results/{wildcards.study}/platforms/{spec['platform']}.yaml"
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
    return [f"results/raw/{wildcards.study}/{run_id}.json" for run_id in RUNS]


def get_all_raw_records(wildcards):
    return [f"results/raw/{STUDY}/{run_id}.json" for run_id in RUNS]


def get_platform_files(wildcards):
    return [f"{OUT}/platforms/{p}.yaml" for p in PLATFORMS]


def get_scheduler(wildcards):
    return config["validate"]["scheduler_address"] or ""


def print_summary():
    path = f"{OUT}/report/summary.txt"
    try:
        with open(path, encoding="utf-8") as fh:
            print()
            print(fh.read())
    except FileNotFoundError:
        print(f"(no {path})")
