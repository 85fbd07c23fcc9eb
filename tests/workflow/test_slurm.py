"""The workflow through Snakemake's SLURM executor plugin: the cluster study's dry run asks for the right
resources, and the tiny study runs end to end on the suite's real single-node SLURM."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest

from analysis.planning.config import load_config, study_matrix
from analysis.planning.jobs import Layout
from tests.conftest import REPO
from tests.workflow.test_workflow import job_counts, snakemake

PROFILE = ["--workflow-profile", str(REPO / "workflow" / "profiles" / "slurm")]


def jobs_of(dry_run: str, rule: str) -> list[dict[str, str]]:
    """Each ``rule`` job of a dry run (``-n -p``): its resources as a mapping, its wildcards and its command."""
    out = []
    for block in dry_run.split("\nrule ")[1:]:
        name, _, body = block.partition(":\n")
        if name.strip() != rule:
            continue
        res = re.search(r"^\s+resources: (.*)$", body, re.M)
        wc = re.search(r"^\s+wildcards: (.*)$", body, re.M)
        cmd = re.search(r"^Shell command: (.*)$", body, re.M) or re.search(r"^\s{4}(\S.*python -m mpi4py.*)$", body, re.M)
        resources = dict(kv.split("=", 1) for kv in re.split(r", (?=\w+=)", res.group(1))) if res else {}
        wildcards = dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}
        out.append({"resources": resources, "wildcards": wildcards, "command": cmd.group(1) if cmd else ""})
    return out


def test_cluster_study_dry_run_asks_each_job_for_its_own_resources(env, tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="the [slurm] extra is not installed")
    study = REPO / "config" / "studies" / "fdm-cluster.yaml"
    out = snakemake([*PROFILE, "--configfile", str(study), "-n", "-p"], env, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    specs = {s["run_id"]: s for s in study_matrix(load_config(study))}
    runs = jobs_of(out.stdout, "simulate_run")
    assert len(runs) == len(specs) == job_counts(out.stdout)["simulate_run"]
    for job in runs:
        spec = specs[job["wildcards"]["run_id"]]
        doc, res = spec["fdm_doc"], job["resources"]
        nodes, ranks, threads = int(doc.get("nodes", 1)), int(doc["ranks"]), int(doc.get("threads_per_rank", 1))
        assert int(res["nodes"]) == nodes and int(res["cpus_per_task"]) == threads
        if nodes > 1:  # the plugin takes tasks or tasks_per_node, never both
            assert int(res["tasks_per_node"]) == ranks // nodes and "tasks" not in res
        else:
            assert int(res["tasks"]) == ranks and "tasks_per_node" not in res
        assert res["mpi"] == "srun --mpi=pmi2" and res["slurm_partition"] == "compute" and res["runtime"] == "60"
        assert int(res["mem_mb"]) == Layout.of(spec).mem_mb_per_node
        launch = f"srun --mpi=pmi2 -n {ranks}" + (f" -N {nodes}" if nodes > 1 else "") + f" -c {threads}"
        assert launch in job["command"] and f"HETVAL_THREADS_PER_RANK={threads}" in job["command"]
    [char] = jobs_of(out.stdout, "characterize_platform")  # the platform's node type: same partition
    assert char["resources"]["slurm_partition"] == "compute" and char["resources"]["tasks"] == "2"
    assert {j["resources"]["nodes"] for j in runs} >= {"1", "64"}
    # its runs span nodes, so the platform's inter-node ping-pong: one rank on each of two nodes, same partition
    [net] = jobs_of(out.stdout, "characterize_inter_node")
    assert net["resources"]["nodes"] == "2" and net["resources"]["tasks"] == "2"  # -N 2 -n 2: one per node
    assert net["resources"]["slurm_partition"] == "compute" and "tasks_per_node" not in net["resources"]
    assert "srun --mpi=pmi2 -n 2 -N 2" in out.stdout and "sims.bench.internode" in out.stdout


def test_one_rank_runs_are_plain_jobs_and_the_tiny_study_asks_for_two_tasks(env, tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="the [slurm] extra is not installed")
    out = snakemake([*PROFILE, "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"), "-n", "-p"],
                    env, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    for job in jobs_of(out.stdout, "simulate_run"):
        tasks = int(job["resources"]["tasks"])
        # the plugin refuses an MPI job with one task: such a job has mpi="" and its command starts the rank
        assert job["resources"]["mpi"] == ("srun --mpi=pmi2" if tasks > 1 else "")
        assert f"srun --mpi=pmi2 -n {tasks} python" in job["command"]


@pytest.mark.slurm
@pytest.mark.slow
def test_tiny_study_through_a_real_slurm(env, tmp_path, slurm):
    tiny = [*PROFILE, "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"), "-j", "4"]
    started = time.monotonic()
    out = snakemake(tiny, env, tmp_path, timeout=1500)
    took = time.monotonic() - started
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    results = tmp_path / "results"
    specs = {s["run_id"]: s for s in study_matrix(load_config(REPO / "config" / "studies" / "tiny.yaml"))}
    host = socket.gethostname().split(".")[0]
    measured = 0
    for path in sorted((results / "raw" / "tiny").glob("*.json")):
        doc = json.loads(path.read_text())
        spec = specs[doc["run_id"]]
        for r in doc["records"]:
            if r["case"] == "published":  # ingested where Snakemake runs: no job
                assert r["job_id"] is None
                continue
            assert r["status"] == "ok", r.get("error")
            where = json.loads(r["placement"])
            # the MPI world each run saw is the ranks it asked for, inside a SLURM job step on this node
            assert r["ranks"] == int(spec["ranks"]) == len(where["ranks"])
            assert where["scheduler"] == "slurm" and re.fullmatch(r"\d+\.\d+", r["job_id"])
            assert where["partition"] == "debug" and where["nodelist"] == host and where["hosts"] == [host]
            assert all(rank["cpus"] for rank in where["ranks"])
            measured += 1
    assert measured >= 22 * 3
    assert (results / "tiny" / "report" / "index.html").exists()
    log = out.stdout + out.stderr
    for light in ("ingest_run", "gather_runs", "validate_models", "report_validation"):  # never batch jobs
        assert f"localrule {light}:" in log, light
    again = snakemake(tiny, env, tmp_path, timeout=300)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    print(f"tiny study through SLURM: {took:.0f} s")
