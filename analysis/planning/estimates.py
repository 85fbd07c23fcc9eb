"""A memory estimate for every job of the workflow, and the check that refuses a study whose job cannot fit.

Runs take theirs from their case's :class:`~analysis.planning.jobs.Layout`. The other jobs:

- **characterize** - two ranks, each its base plus the largest phase of arrays it holds
  (:mod:`sims.bench.plan`: the cache rule capped by the memory budget of the node it runs on);
- **ingest, gather, report** - one Python process: a base, plus a share per run for the tables it builds;
- **validate** - the Dask client, and a LocalCluster's scheduler and workers (one process each), plus a share
  per run.

The per-run shares and bases are upper bounds of peaks measured on the tiny and default studies with every
job's whole process tree summed (``benchmarks/bench_memory.py``; the tiny study's check is a test). Every
figure is MB per node, what the job asks a scheduler for (``mem_mb``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from analysis.planning.jobs import MEMORY_SLACK, RANK_BASE_MB, Layout

#: one light Python process (NumPy, pandas, pyarrow, the registries loaded), MB
PROCESS_MB = 384
#: a Dask scheduler or worker process beside the validation's client, MB
DASK_PROCESS_MB = 384
#: MB per run in the study for the jobs that hold every run's rows (gather, validate, report)
PER_RUN_MB = {"gather": 0.5, "validate": 1.0, "report": 1.0}
#: the inter-node ping-pong: one rank per node, 4 MiB messages
INTER_NODE_DATA_BYTES = 64 * 2**20


def _round(mb: float) -> int:
    return int(math.ceil(mb / 256.0) * 256)


def characterize_plan(config: Mapping[str, Any], platform: str, node_mb: float | None) -> Any:
    """The characterisation's sizing (:func:`sims.bench.plan.plan`) as it will come out on a node of
    ``node_mb`` MB with this machine's cache (or the configured ``characterize.llc_mib``)."""
    from sims.bench import plan
    from sims.memory import MemoryLimit, memory_limit

    char = config["characterize"]
    llc, source = plan.cache_size(char.get("llc_mib"))
    limit = MemoryLimit(int(node_mb * 2**20), "node") if node_mb else memory_limit()
    return plan.plan(llc, source, float(char["llc_factor"]), float(char["memory_fraction"]), limit, 2)


def characterize_layout(config: Mapping[str, Any], platform: str, node_mb: float | None = None) -> Layout:
    """What a characterisation job needs: two ranks, each holding its plan's largest phase or its largest
    transpose ceiling's two matrices (:func:`sims.bench.plan.transpose_sizes`), whichever is larger."""
    from sims.bench import plan
    from sims.la.matrix import DTYPES

    procs = next((p for p in config["platforms"] if p["name"] == platform), {})
    gpus = sum(1 for role in ("host", "accel") if (procs.get(role) or {}).get("backend") == "cupy")
    p = characterize_plan(config, platform, node_mb)
    sizes = transpose_sizes(config, platform)
    transposes = [2 * DTYPES[dt] * n * n for dt in DTYPES
                  for n in plan.transpose_sizes(sizes, p.elements, dt, p.budget_bytes)]
    return Layout(ranks=2, gpus_per_node=gpus, data_bytes_per_rank=float(max([p.peak_bytes, *transposes])))


def transpose_sizes(config: Mapping[str, Any], platform: str) -> list[int]:
    """The square sizes of the transpose ceiling on ``platform``: ``characterize.transpose_sizes``, else the sizes
    the study's transposes run at there (:func:`sims.la.matrix.transpose_size`); empty: none (characterisation
    then measures one size matched to the triad's memory)."""
    given = config["characterize"].get("transpose_sizes")
    if given:
        return sorted({int(n) for n in given})
    from analysis.registry import enabled_cases
    from sims.la.matrix import transpose_size

    found = (transpose_size(spec.get("params") or {}) for case in enabled_cases(config)
             for spec in case.expand(config) if spec.get("platform") == platform)
    return sorted({n for n in found if n})


def inter_node_layout() -> Layout:
    """The inter-node ping-pong: one rank on each of two nodes."""
    return Layout(ranks=2, nodes=2, data_bytes_per_rank=INTER_NODE_DATA_BYTES)


#: figures the report draws at once, each in a forked child (the report rule's ``threads``)
REPORT_DRAWS = 2


def light_mb(job: str, runs: int, workers: int = 0) -> int:
    """MB of a job that runs where Snakemake runs (``ingest``, ``gather``, ``report``) or of the validation
    (``validate``, with its LocalCluster's ``workers``).

    The report's children drawing figures are counted at the report's own size: they share its pages, but a
    meter that sums the resident memory of a job's processes counts those pages once per process."""
    if job == "ingest":
        return _round(PROCESS_MB * MEMORY_SLACK)
    if job == "validate":
        mb = RANK_BASE_MB + (workers + 1) * DASK_PROCESS_MB + PER_RUN_MB["validate"] * runs
    elif job == "report":
        mb = (1 + REPORT_DRAWS) * (RANK_BASE_MB + PER_RUN_MB[job] * runs)
    else:
        mb = RANK_BASE_MB + PER_RUN_MB[job] * runs
    return _round(mb * MEMORY_SLACK)


def validate_workers(config: Mapping[str, Any]) -> int:
    """Worker processes of the validation's own LocalCluster on this node (none for another cluster)."""
    v = config["validate"]
    local = not v.get("scheduler_address") and v.get("cluster", "local") == "local"
    return int(v.get("workers") or 2) if local else 0


def study_jobs(config: Mapping[str, Any], runs: list[dict[str, Any]],
               node_mb: Mapping[str, float | None]) -> list[tuple[str, int, float | None]]:
    """(job, MB per node, node MB) of every job but the runs: each platform's characterisation, then gather,
    validate and report on the node where Snakemake runs (``node_mb[""]``)."""
    n = len(runs)
    jobs = [(f"characterize_platform {p['name']}", characterize_layout(config, p["name"], node_mb.get(p["name"]))
             .mem_mb_per_node, node_mb.get(p["name"])) for p in config["platforms"]]
    here = node_mb.get("")
    jobs += [("gather_runs", light_mb("gather", n), here),
             ("validate_models", light_mb("validate", n, validate_workers(config)), here),
             ("report_validation", light_mb("report", n), here)]
    return jobs
