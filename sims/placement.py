"""Where a run ran: the scheduler's job and step, and each rank's node, CPUs and GPUs.

Pure (standard library only): the runners call :func:`rank_facts` on every rank
after pinning, gather the facts on rank 0 and store :func:`placement` in the
record's ``placement`` field (JSON text) and the job id in ``job_id``, so a
record says on which allocation it was measured. Outside a batch scheduler
``scheduler`` is ``"none"`` and the job fields are null.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

#: Threads per rank the workflow gives a run whose scale has threads_per_rank > 1 (read by the FDM entry point).
THREADS_VARIABLE = "HETVAL_THREADS_PER_RANK"
#: Placement key -> the SLURM variable it comes from (srun sets these in every task it starts).
SLURM_VARIABLES = {
    "job_id": "SLURM_JOB_ID",
    "step_id": "SLURM_STEP_ID",
    "partition": "SLURM_JOB_PARTITION",
    "account": "SLURM_JOB_ACCOUNT",
    "qos": "SLURM_JOB_QOS",
    "nodelist": "SLURM_JOB_NODELIST",
    "nodes": "SLURM_JOB_NUM_NODES",
    "cluster": "SLURM_CLUSTER_NAME",
}
#: Variables naming the GPUs a process may use, in the order they are trusted.
GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "SLURM_STEP_GPUS",
                 "SLURM_JOB_GPUS")


def cpuset() -> list[int]:
    """The CPUs this process may run on (its affinity mask; all CPUs where the OS has no such call)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def rank_facts(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This rank's node, the CPUs it is bound to, the GPUs it may see (None: no restriction is set)."""
    env = os.environ if env is None else env
    gpus = next((env[v] for v in GPU_VARIABLES if env.get(v)), None)
    return {"host": socket.gethostname(), "cpus": cpuset(),
            "gpus": [g for g in gpus.split(",") if g] if gpus else None}


def scheduler_facts(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The batch job this process belongs to (``scheduler`` ``"slurm"`` or ``"none"``)."""
    env = os.environ if env is None else env
    if not env.get("SLURM_JOB_ID"):
        return {"scheduler": "none", **{k: None for k in SLURM_VARIABLES}}
    facts: dict[str, Any] = {"scheduler": "slurm"}
    for key, var in SLURM_VARIABLES.items():
        value = env.get(var) or None
        facts[key] = int(value) if key == "nodes" and value and value.isdigit() else value
    return facts


def placement(ranks: list[dict[str, Any]], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record's placement: the scheduler's facts and every rank's (index = rank)."""
    return {**scheduler_facts(env), "hosts": sorted({r["host"] for r in ranks}), "ranks": ranks}


def job_id(facts: Mapping[str, Any]) -> str | None:
    """``<job>.<step>`` (or the job alone) for the record's ``job_id`` field; None outside a scheduler."""
    if not facts.get("job_id"):
        return None
    return f"{facts['job_id']}.{facts['step_id']}" if facts.get("step_id") not in (None, "") else str(facts["job_id"])
