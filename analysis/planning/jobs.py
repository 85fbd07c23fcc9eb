"""What each job of the workflow asks a batch scheduler for, computed from its run spec and its platform.

The workflow's rules take their Snakemake resources from :func:`job_resources`, so that under
``snakemake-executor-plugin-slurm`` every job requests exactly what it runs on:

- ``nodes``, ``tasks`` (or ``tasks_per_node`` on several nodes), ``cpus_per_task`` (threads per rank),
  ``gpu`` (GPUs of the whole job), ``mem_mb`` (per node) - from the run's :class:`Layout`, which its
  registered case computed once when it expanded the study and stored in the spec (``resources``);
- ``slurm_partition``, ``slurm_account``, ``constraint``, ``qos``, ``runtime`` and ``slurm_extra`` - from
  the platform entry's ``slurm`` mapping, so that one platform is one node type: its characterisation and
  its runs land on the same partition and constraint. Absent keys are left to the profile
  (``default-resources``) or the cluster's defaults, never hard-coded here;
- ``mpi`` - the launcher for a multi-rank job (the plugin then leaves the launch to it) and ``""`` for one
  rank (the plugin refuses an MPI job of one task; the run's own command still starts it with the
  launcher, so a one-rank run is a job step like any other).

The launcher itself (``launcher`` in the config: ``mpiexec`` by default, ``srun --mpi=pmi2`` in the SLURM
profile) starts the ranks inside the job; the pinning of each rank is relative to the cpuset the launcher
gave it (:func:`sims._threads.relative_cores`).
"""

from __future__ import annotations

import ast
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from itertools import pairwise
from typing import Any


def interpreter_first_on_path(environ: dict[str, str] | None = None, executable: str = sys.executable) -> None:
    """Put the bin directory of the Python running Snakemake first on ``PATH``, so that the rules' ``python``,
    ``hetval`` and ``mpiexec`` are that environment's also when Snakemake was started as
    ``.venv/bin/snakemake`` without activating it (a batch job inherits the variable)."""
    environ = os.environ if environ is None else environ
    here = os.path.dirname(executable)
    path = environ.get("PATH", "")
    if here and path.split(os.pathsep)[0] != here:
        environ["PATH"] = os.pathsep.join(filter(None, (here, path)))

#: Resident memory of one rank before its data (Python, NumPy, Numba, mpi4py), MB.
RANK_BASE_MB = 512
#: Slack on a memory estimate (allocator, temporaries, halo buffers).
MEMORY_SLACK = 1.25
#: Keys of a platform's ``slurm`` mapping -> the executor plugin's resource names.
SLURM_KEYS = {"partition": "slurm_partition", "account": "slurm_account", "constraint": "constraint",
              "qos": "qos", "runtime": "runtime", "extra": "slurm_extra"}


class LayoutError(ValueError):
    """A scale whose nodes, ranks and ranks per node do not agree."""


@dataclass(frozen=True)
class Layout:
    """How one run is laid out on the machine: what its job must be given."""

    ranks: int
    nodes: int = 1
    threads_per_rank: int = 1
    gpus_per_node: int = 0
    data_bytes_per_rank: float = 0.0
    #: A run that measures nothing (e.g. a published table ingested): made where Snakemake runs, never a batch job.
    local: bool = False

    def __post_init__(self) -> None:
        for name in ("ranks", "nodes", "threads_per_rank"):
            if int(getattr(self, name)) < 1:
                raise LayoutError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.gpus_per_node < 0:
            raise LayoutError(f"gpus_per_node must be >= 0, got {self.gpus_per_node}")
        if self.ranks % self.nodes:
            raise LayoutError(f"{self.ranks} ranks do not divide evenly over {self.nodes} nodes")

    @property
    def ranks_per_node(self) -> int:
        return self.ranks // self.nodes

    @property
    def cores(self) -> int:
        """Cores the run occupies on a local machine: its node's ranks x threads, never fewer than 2 for a
        job that is not local, so that two multi-rank jobs never share the cores."""
        return 1 if self.local else max(2, self.ranks_per_node * self.threads_per_rank)

    def spec(self) -> dict[str, Any]:
        """The layout as a run spec's ``resources`` entry (plain JSON)."""
        return asdict(self)

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> Layout:
        """The layout stored in a run spec's ``resources`` (:meth:`analysis.registry.Case.expand`)."""
        doc = spec.get("resources")
        if not isinstance(doc, Mapping):
            raise LayoutError(f"run {spec.get('run_id')} ({spec.get('case')}) has no 'resources' in its spec")
        unknown = sorted(set(doc) - {f.name for f in fields(cls)})
        if unknown:
            raise LayoutError(f"run {spec.get('run_id')} ({spec.get('case')}): unknown resources {', '.join(unknown)}")
        return cls(**doc)

    @property
    def mem_mb_per_node(self) -> int:
        """Memory one node's ranks need (MB, rounded up to 256 MB): base + data, with slack."""
        per_rank = RANK_BASE_MB + self.data_bytes_per_rank / 2**20
        mb = self.ranks_per_node * per_rank * MEMORY_SLACK
        return int(math.ceil(mb / 256.0) * 256)


def scale_layout(scale: Mapping[str, Any], where: str = "scale") -> dict[str, int]:
    """``ranks``, ``nodes``, ``ranks_per_node``, ``threads_per_rank``, ``gpus_per_node`` of a config scale.

    ``ranks`` may be given, or follow from ``nodes x ranks_per_node``; when both are given they must
    agree. Raises :class:`LayoutError` naming ``where``.
    """
    nodes = int(scale.get("nodes") or 1)
    rpn = scale.get("ranks_per_node")
    ranks = scale.get("ranks")
    if ranks is None and rpn is None:
        raise LayoutError(f"{where}: give 'ranks', or 'nodes' and 'ranks_per_node'")
    if ranks is None:
        ranks = nodes * int(rpn)
    ranks = int(ranks)
    if rpn is not None and nodes * int(rpn) != ranks:
        raise LayoutError(f"{where}: ranks {ranks} != nodes {nodes} x ranks_per_node {rpn}")
    if ranks % nodes:
        raise LayoutError(f"{where}: {ranks} ranks do not divide evenly over {nodes} nodes")
    return {"ranks": ranks, "nodes": nodes, "ranks_per_node": ranks // nodes,
            "threads_per_rank": int(scale.get("threads_per_rank") or 1),
            "gpus_per_node": int(scale.get("gpus_per_node") or 0)}


COMPUTED = ("nodes", "tasks", "tasks_per_node", "cpus_per_task", "mem_mb", "gpu", "mpi")


def scheduler_keys(platforms: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The plugin resources that some platform's ``slurm`` mapping sets (only these are declared per job:
    a job resource declared as None would hide the profile's default)."""
    used = {SLURM_KEYS[k] for p in platforms.values() for k, v in ((p or {}).get("slurm") or {}).items()
            if k in SLURM_KEYS and v not in ("", None)}
    return [r for r in SLURM_KEYS.values() if r in used]


def profile_defaults(args: list[str] | None) -> dict[str, Any]:
    """``--default-resources`` entries (``key=value``, value a Python literal) as a mapping."""
    out: dict[str, Any] = {}
    for arg in args or []:
        key, sep, value = str(arg).partition("=")
        if not sep:
            continue
        try:
            out[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            out[key.strip()] = value.strip()
    return out


def job_resources(layout: Layout, platform: Mapping[str, Any] | None, launcher: str,
                  defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The Snakemake resources of a job laid out as ``layout`` on ``platform`` (its config entry).

    A value of None means "not asked for". A scheduler key the platform does not set takes the profile's
    default (``defaults``, from ``--default-resources``).
    """
    multi = layout.ranks > 1
    on_nodes = layout.nodes > 1 and layout.ranks_per_node > 1
    res: dict[str, Any] = {
        "nodes": layout.nodes,
        # the plugin takes tasks or tasks_per_node, not both; tasks_per_node only > 1
        "tasks": None if on_nodes else layout.ranks,
        "tasks_per_node": layout.ranks_per_node if on_nodes else None,
        "cpus_per_task": layout.threads_per_rank,
        "mem_mb": layout.mem_mb_per_node,
        "gpu": layout.gpus_per_node * layout.nodes or None,
        "mpi": launcher if multi else "",
    }
    slurm = (platform or {}).get("slurm") or {}
    for key, resource in SLURM_KEYS.items():
        value = slurm.get(key)
        res[resource] = value if value not in ("", None) else (defaults or {}).get(resource)
    return res


def batches(runs: Mapping[str, Mapping[str, Any]], size: int) -> list[list[str]]:
    """The study's runs measured ``size`` at a time in one job (``batch_runs``), in the matrix's order.

    A batch holds runs of one platform on one node, of any job shape: it measures them in rounds
    (``runs.rounds``), one launch per job shape and round (:mod:`sims.batch`), and its job asks for the most
    any of them needs (:func:`batch_request`). A pool of runs is cut into as few batches as ``size`` allows, of
    even sizes. Light runs and runs over several nodes stay jobs of their own, as does any run left alone in its
    batch: only batches of two or more are returned.
    """
    if size <= 1:
        return []
    pools: dict[str, list[str]] = {}
    for rid, spec in runs.items():
        layout = Layout.of(spec)
        if layout.local or layout.nodes > 1:
            continue
        pools.setdefault(str(spec["platform"]), []).append(rid)
    out = []
    for pool in pools.values():
        n = -(-len(pool) // size)
        cut = [round(k * len(pool) / n) for k in range(n + 1)]
        out += [chunk for a, b in pairwise(cut) if len(chunk := pool[a:b]) > 1]
    return out


def round_shares(repetitions: int, rounds: int) -> list[int]:
    """A run's repetitions split over ``rounds`` launches (``runs.rounds``) as evenly as they go, the larger
    shares first: ``round_shares(5, 2) == [3, 2]``."""
    rounds = max(1, min(int(rounds), int(repetitions)))
    base, extra = divmod(int(repetitions), rounds)
    return [base + (k < extra) for k in range(rounds)]


#: Memory of what runs a batch besides its runs' ranks (MB): the Snakemake process that executes the batch rule's
#: block and ``sims.batch``
BATCH_OVERHEAD_MB = 512


def batch_request(requests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What one job of a batch asks for, from its runs' own requests (:func:`job_resources`): the most tasks,
    CPUs per task and GPUs any of them needs, on one node, and the most memory plus :data:`BATCH_OVERHEAD_MB`; a
    multi-rank batch's launcher."""
    out = dict(requests[0])
    for key in ("tasks", "cpus_per_task", "mem_mb", "gpu"):
        values = [r[key] for r in requests if r.get(key) is not None]
        out[key] = max(values) if values else None
    if out["mem_mb"] is not None:
        out["mem_mb"] = int(out["mem_mb"]) + BATCH_OVERHEAD_MB
    out["nodes"] = 1
    out["tasks_per_node"] = None
    out["mpi"] = next((r["mpi"] for r in requests if r.get("mpi")), "")
    return out


def batch_cores(layouts: Sequence[Layout]) -> int:
    """The cores a batch job occupies locally: the most any of its runs occupies."""
    return max(lay.cores for lay in layouts)


def shared_launch_prefix(launcher: str, layout: Layout) -> str:
    """The prefix of a launch shared by several runs of ``layout``'s shape (:mod:`sims.launch`): the launcher's
    prefix, after the threads-per-rank variable when a rank runs several threads (the thread pools' size is
    fixed when the launch starts)."""
    from sims.placement import THREADS_VARIABLE

    env = f"{THREADS_VARIABLE}={layout.threads_per_rank} " if layout.threads_per_rank > 1 else ""
    return env + launch_prefix(launcher, layout)


def launch_prefix(launcher: str, layout: Layout) -> str:
    """The command prefix that starts ``layout``'s ranks (``mpiexec -n 4``, ``srun --mpi=pmi2 -n 8 -N 2 -c 2
    --kill-on-bad-exit=1``)."""
    words = launcher.split()
    if words and words[0].endswith("srun"):
        extra = f" -N {layout.nodes}" if layout.nodes > 1 else ""
        extra += f" -c {layout.threads_per_rank}" if layout.threads_per_rank > 1 else ""
        # a rank that dies (an MPI_Init that fails on one rank) ends the step, as mpiexec does, instead of
        # leaving the others waiting for it until the job's time limit
        return f"{launcher} -n {layout.ranks}{extra} --kill-on-bad-exit=1"
    return f"{launcher} -n {layout.ranks}"
