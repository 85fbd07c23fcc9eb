# Config validation, the study matrix and the input functions every rule uses.
# Nothing here branches on a case: every run's command, ranks and inputs come from its registered case.
import json
import os
import shlex
import sys
from types import SimpleNamespace

# the repository root (this workflow lives in its workflow/ directory)
REPO_DIR = os.path.dirname(WORKFLOW_DIR)
sys.path.insert(0, REPO_DIR)

from analysis.planning.jobs import COMPUTED, Layout, batch_cores, batch_request, batches, round_shares, interpreter_first_on_path, job_resources, launch_prefix, profile_defaults, scheduler_keys, shared_launch_prefix  # noqa: E402
from analysis.planning.checks import check_machine, command_line_values, merge, node_memory_mb  # noqa: E402
from analysis.planning.config import (  # noqa: E402
    ConfigError,
    characterize_spec,
    config_hash,
    load_schema,
    platform_layouts,
    study_matrix,
    validate_config,
)
from analysis.planning.estimates import REPORT_DRAWS, characterize_layout, inter_node_layout, light_mb, validate_workers  # noqa: E402
from analysis.registry import RegistryError, case, enabled_cases  # noqa: E402
from analysis.storage.dataset import Matrix  # noqa: E402
from analysis.storage.schema import identity  # noqa: E402
from analysis.planning.heal import at_start as heal_at_start  # noqa: E402
from analysis.resources import PUBLISHED_MACHINES  # noqa: E402
from analysis.scoring.validate import output_files  # noqa: E402
from sims.record import stable_hash  # noqa: E402

# the rules' python, hetval and mpiexec: the environment Snakemake runs in, activated or not
interpreter_first_on_path()

# A dry run (-n) plans and prints; it never needs the launcher, a GPU or a meter on the machine that previews.
# Snakemake picks its executor only after parsing, so workflow.dryrun reads False here: the output settings
# already carry -n.
DRYRUN = bool(workflow.dryrun or getattr(workflow.output_settings, "dryrun", False))

try:
    # --config 'runs={rounds: 2}': Snakemake passes a nested override's scalars as text; each takes its key's type
    merge(config, command_line_values(dict(workflow.config_settings.config), load_schema()))
    validate_config(config)
    if not DRYRUN and workflow.is_main_process:
        check_machine(config)  # where runs are about to start (a dry run may plan for a cluster elsewhere)
    # the memory check runs where the study is planned, not again inside each batch job (held to its allocation)
    RUNS = {spec["run_id"]: spec for spec in study_matrix(config, check=workflow.is_main_process)}
except (ConfigError, RegistryError) as exc:
    print("hetval: config error:", exc, file=sys.stderr)
    sys.exit(2)

STUDY = config["study"]
# Runs whose case measures nothing (e.g. published tables ingested): the ingest_run localrule makes them.
# Each run's layout was computed once, when its case expanded the study (the spec's `resources`).
LAYOUTS = {rid: Layout.of(spec) for rid, spec in RUNS.items()}
LIGHT_RUNS = sorted(rid for rid, layout in LAYOUTS.items() if layout.local)
LIGHT_RUNS_PATTERN = "|".join(LIGHT_RUNS) or "(?!)"
# Runs measured several to a job (batch_runs > 1, as the SLURM profile sets): each batch is a rule of its own
# (simulate.smk) whose outputs are its runs' records; every other run is a simulate_run job of its own.
BATCHES = {f"b{k}": rids for k, rids in enumerate(batches(RUNS, int(config["batch_runs"])), 1)}
SINGLE_RUNS_PATTERN = (f"(?!(?:{'|'.join(r for rids in BATCHES.values() for r in rids)}))" if BATCHES else "") + "[0-9a-f]{16}"
CASES = [c.name for c in enabled_cases(config)]
PLATFORMS = sorted(platform_layouts(config))
# platforms some of whose runs span nodes: they also need the ping-pong between two nodes (sims.bench.internode)
INTER_NODE_PLATFORMS = sorted({s["platform"] for rid, s in RUNS.items() if LAYOUTS[rid].nodes > 1})
# Every study's characterisation, validation and report live under results/<study>/.
OUT = f"results/{STUDY}"
# one table per name the registered cases declare, plus failed, published and summary.json
VALIDATION_FILES = output_files(f"{OUT}/validation")
# the papers' machine tables whose published claims the validation job recomputes
CATALOGS_DIGEST = stable_hash({p.name: p.read_text(encoding="utf-8") for p in sorted(PUBLISHED_MACHINES.glob("*.yaml"))})
# Provenance only: handed to the runner through the environment so that editing an
# unrelated config key never changes a rule's params (which would re-run every run).
os.environ.update(HETVAL_CONFIG_HASH=config_hash(config))
# The study's runs (run id -> case), which gather checks records against; its digest re-writes the
# matrix file (and so re-gathers) whenever a run joins or leaves the study.
MATRIX = {rid: spec["case"] for rid, spec in RUNS.items()}
# what each run's records must hold (variant, platform, ranks, size, params): gather believes nothing else
MATRIX_IDENTITY = {rid: identity(spec) for rid, spec in RUNS.items()}
MATRIX_DIGEST = stable_hash({"runs": MATRIX, "identity": MATRIX_IDENTITY})

# What a killed or tampered invocation left behind becomes visible to Snakemake before it plans anything:
# a stale lock is removed, runs whose record is missing are named, runs that failed since the last gather are
# retried now, a dataset that differs from what gather recorded is gathered again, and runs
# given up after repeated failures are retried when asked (retry_failed) or when the code changed.
if workflow.is_main_process:
    heal_at_start(STUDY, bool(config["retry_failed"]), dryrun=DRYRUN, runs=RUNS,
                  max_attempts=int(config["runs"]["max_attempts"]), platforms=sorted(platform_layouts(config)),
                  replicates=int(config["characterize"]["replicates"]))


wildcard_constraints:
    study=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    platform=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    run_id=r"[0-9a-f]{16}",


def get_run(wildcards):
    try:
        return RUNS[wildcards.run_id]
    except KeyError:
        raise ValueError(f"run {wildcards.run_id} is not part of study {STUDY!r}") from None


# The launcher that starts a job's ranks: mpiexec here, `srun --mpi=pmi2` in the SLURM profile (config key).
LAUNCHER = config["launcher"]


def get_run_layout(wildcards):
    """Where the run's ranks sit (nodes, ranks, threads, GPUs, data), as its case expanded it."""
    get_run(wildcards)  # an unknown run is named
    return LAYOUTS[wildcards.run_id]


def get_run_json(wildcards):
    return json.dumps(get_run(wildcards), sort_keys=True)


def get_run_ranks(wildcards):
    return get_run_layout(wildcards).ranks


def get_run_threads(wildcards):
    return get_run_layout(wildcards).cores


# A job's resources come from its layout and its platform's `slurm` mapping (analysis.planning.jobs); a scheduler
# key no platform sets is not declared, so the profile's default-resources apply to it untouched.
PROFILE_DEFAULTS = profile_defaults(getattr(workflow.resource_settings.default_resources, "args", None))
JOB_RESOURCE_KEYS = [*COMPUTED, *scheduler_keys(platform_layouts(config))]


def _run_resource(name):
    def resource(wildcards):
        spec = get_run(wildcards)
        platform = platform_layouts(config).get(spec["platform"])
        return job_resources(get_run_layout(wildcards), platform, LAUNCHER, PROFILE_DEFAULTS)[name]

    return resource


def _characterize_resource(name):
    def resource(wildcards):
        platform = platform_layouts(config).get(wildcards.platform)
        return job_resources(get_characterize_layout(wildcards.platform), platform, LAUNCHER, PROFILE_DEFAULTS)[name]

    return resource


# what each run job and each characterisation job asks for: resources: **RUN_RESOURCES
RUN_RESOURCES = {k: _run_resource(k) for k in JOB_RESOURCE_KEYS}
CHARACTERIZE_RESOURCES = {k: _characterize_resource(k) for k in JOB_RESOURCE_KEYS}


# The memory of one node of each platform, and of the machine Snakemake runs on (its cgroup's limit where smaller)
NODE_MB = {p: node_memory_mb(config, p)[0] for p in PLATFORMS}


def get_characterize_layout(platform):
    """Two ranks, each holding the largest phase of its arrays: the cache rule capped by the node's budget."""
    return characterize_layout(config, platform, NODE_MB.get(platform))


def get_characterize_launch(wildcards):
    return launch_prefix(LAUNCHER, get_characterize_layout(wildcards.platform))


def _inter_node_resource(name):
    def resource(wildcards):
        platform = platform_layouts(config).get(wildcards.platform)
        return job_resources(inter_node_layout(), platform, LAUNCHER, PROFILE_DEFAULTS)[name]

    return resource


INTER_NODE_RESOURCES = {k: _inter_node_resource(k) for k in JOB_RESOURCE_KEYS}


def get_inter_node_launch(wildcards):
    return launch_prefix(LAUNCHER, inter_node_layout())


# The jobs that run where Snakemake runs: their memory estimates (MB), by the runs they hold
LIGHT_MB = {job: light_mb(job, len(RUNS), validate_workers(config)) for job in ("ingest", "gather", "validate", "report")}


def get_inter_node_files(wildcards):
    return [f"{OUT}/platforms/{p}.network.json" for p in INTER_NODE_PLATFORMS]


def run_command(run_id, record, repetitions=None):
    """The run's command, by its registered case, started by the launcher on the run's layout (a p-DP split
    reads the characterised platform); with ``repetitions``, a command measuring that share of them only."""
    spec = part_spec(run_id, repetitions)
    return case(spec["case"]).command(spec, record, read_platform_file(spec), launch_prefix(LAUNCHER, LAYOUTS[run_id]))


def run_runner(run_id, record, repetitions=None):
    """The run's MPI program without its launcher (None when its case has only a command), which a shared
    launch measures (sims.launch); with ``repetitions``, measuring that share of them only."""
    spec = part_spec(run_id, repetitions)
    return case(spec["case"]).runner(spec, record, read_platform_file(spec))


def part_spec(run_id, repetitions=None):
    spec = RUNS[run_id]
    return spec if repetitions is None else case(spec["case"]).with_repetitions(spec, repetitions)


def read_platform_file(spec):
    """The characterised platform a run reads (a p-DP split; an input of its job): its first replicate, the one
    measured before the runs; else ""."""
    return replicate_file(spec["platform"], 1) if spec.get("needs_platform") else ""


# Each platform is characterised REPLICATES times, each in a process of its own (characterize.smk)
REPLICATES = int(config["characterize"]["replicates"])


def replicate_file(platform, k, kind="yaml"):
    return f"{OUT}/platforms/replicates/{platform}.{k}.{kind}"


def _replicate(wildcards):
    k = int(wildcards.replicate)
    if wildcards.platform not in PLATFORMS or not 1 <= k <= REPLICATES:
        raise ValueError(f"replicate {k} of platform {wildcards.platform!r} is not part of study {STUDY!r} "
                         f"(characterize.replicates: {REPLICATES}; platforms: {', '.join(PLATFORMS)})")
    return k


def get_replicate_inputs(wildcards):
    """A later replicate comes after every run of its platform (so the replicates bracket the runs' moments; a
    run measured again later does not characterise again: ancient) and measures what the first one sized (its
    raw samples: a first replicate made again makes the later ones again)."""
    if _replicate(wildcards) == 1:
        return {}
    runs = [ancient(f"results/raw/{STUDY}/{rid}.json") for rid, spec in RUNS.items()
            if spec["platform"] == wildcards.platform and not LAYOUTS[rid].local]
    return {"first": replicate_file(wildcards.platform, 1, "json"), "runs": runs}


def get_replicate_choices(wildcards):
    return "" if _replicate(wildcards) == 1 else f"--choices {shlex.quote(replicate_file(wildcards.platform, 1, 'json'))}"


def get_replicate_raws(wildcards):
    return [replicate_file(wildcards.platform, k, "json") for k in range(1, REPLICATES + 1)]


def get_run_command(wildcards, output):
    get_run(wildcards)  # an unknown run is named
    return run_command(wildcards.run_id, output.record)


def get_run_inputs(wildcards):
    """A run that reads the characterised platform (a p-DP split) takes it as an input; a retry request
    (written by gather for a failed or quarantined run) is a newer input, so that run is redone."""
    spec = get_run(wildcards)
    inputs = {}
    if read_platform_file(spec):
        inputs["platform"] = read_platform_file(spec)
    retry = f"results/retry/{wildcards.study}/{wildcards.run_id}.json"
    if os.path.exists(retry):
        inputs["retry"] = retry
    return inputs


def batch_inputs(run_ids):
    """The inputs of a batch: every one of its runs' (a retry request for any of them redoes the batch)."""

    def inputs(wildcards):
        out = {}
        for rid in run_ids:
            for key, path in get_run_inputs(SimpleNamespace(study=STUDY, run_id=rid)).items():
                out[f"{key}_{rid}"] = path
        return out

    return inputs


def batch_runs_json(run_ids):
    """What ``python -m sims.batch`` runs: each run's record, spec, ranks, memory estimate, command and log,
    its runner and its shape's shared launch prefix where its case gives a runner (one launch then measures
    every run of that shape in a round), and its parts: one launch's record, command and runner per round
    (runs.rounds), each measuring its share of the repetitions (their records under results/raw/<study>/.parts/)."""
    entries = []
    for rid in run_ids:
        shares = round_shares(int(RUNS[rid].get("repetitions", config["runs"]["repetitions"])), config["runs"]["rounds"])
        record = f"results/raw/{STUDY}/{rid}.json"
        entry = {"record": record, "spec": RUNS[rid], "ranks": LAYOUTS[rid].ranks,
                 "estimate_mb": LAYOUTS[rid].mem_mb_per_node, "command": run_command(rid, record),
                 "log": f"logs/{STUDY}/simulate/{rid}.log"}
        runner = run_runner(rid, record)
        if runner is not None:
            entry.update(runner=runner, launch=shared_launch_prefix(LAUNCHER, LAYOUTS[rid]))
        if len(shares) > 1:
            parts = [f"results/raw/{STUDY}/.parts/{rid}.{k}.json" for k in range(len(shares))]
            entry["parts"] = [{"record": part, "command": run_command(rid, part, share),
                               **({"runner": run_runner(rid, part, share)} if runner is not None else {})}
                              for part, share in zip(parts, shares)]
        entries.append(entry)
    return json.dumps(entries, sort_keys=True)


def write_runs_file(path, text):
    """A batch's runs, written atomically where sims.batch reads them."""
    from sims.atomic import atomic_write_text

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    atomic_write_text(path, text)


def batch_resources(run_ids):
    """One job's request fits every run of a batch (the most tasks, CPUs, GPUs and memory any of them asks for);
    its runtime is the runs' runtimes summed."""
    requests = [job_resources(LAYOUTS[r], platform_layouts(config).get(RUNS[r]["platform"]), LAUNCHER,
                              PROFILE_DEFAULTS) for r in run_ids]
    res = batch_request(requests)
    res = {k: res[k] for k in JOB_RESOURCE_KEYS}
    if res.get("runtime"):
        res["runtime"] = int(res["runtime"]) * len(run_ids)
    return res


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


def get_dask_options(wildcards):
    """The validation's Dask cluster options; SLURMCluster workers go to the first platform's partition/account."""
    v = config["validate"]
    slurm = (config["platforms"][0].get("slurm") or {}) if config["platforms"] else {}
    words = [f"--cluster {v['cluster']}", f"--workers {int(v['workers'])}",
             f"--connect-timeout {float(v['connect_timeout']):g}"]
    if v["cluster"] == "slurm":
        words += [f"--worker-memory {shlex.quote(v['worker_memory'])}",
                  f"--worker-walltime {shlex.quote(v['worker_walltime'])}"]
        words += [f"--worker-{k} {shlex.quote(str(slurm[k]))}" for k in ("partition", "account") if slurm.get(k)]
    return " ".join(words)


def print_summary(log=None):
    """The report's summary and, from Snakemake's log of this invocation, where its time went."""
    path = f"{OUT}/report/summary.txt"
    try:
        with open(path, encoding="utf-8") as fh:
            print()
            print(fh.read())
    except FileNotFoundError:
        print(f"(no {path})")
    logs = [log] if isinstance(log, str) else [str(p) for p in (log or [])]  # Snakemake gives a list of its logs
    for path in logs[-1:]:
        from analysis.planning.stages import summary_line

        try:
            with open(path, encoding="utf-8") as fh:
                print(summary_line(fh.read()))
        except OSError:
            pass
