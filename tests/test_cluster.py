"""What jobs ask a scheduler for, pinning inside a cpuset, and the placement a record carries."""

from __future__ import annotations

import json
import os
from itertools import pairwise

import pytest

from analysis.planning.config import ConfigError, load_config, study_matrix
from analysis.planning.jobs import (
    BATCH_OVERHEAD_MB,
    Layout,
    LayoutError,
    batch_cores,
    batch_request,
    batches,
    job_resources,
    launch_prefix,
    profile_defaults,
    scale_layout,
)
from sims import placement
from sims._threads import relative_cores


def test_cores_are_positions_in_the_rank_cpuset():
    assert relative_cores([0], range(8)) == [0] and relative_cores([1], range(8)) == [1]  # a whole machine
    assert relative_cores([0], [12, 13]) == [12] and relative_cores([1], [12, 13]) == [13]  # a SLURM cpuset
    assert relative_cores([1], [7]) == [7]  # srun already bound the rank to as many CPUs as it asks for
    assert relative_cores([0, 1], [4, 5, 6, 7]) == [4, 5]
    with pytest.raises(ValueError, match=r"cores \[3\] are positions in this rank's cpuset, which holds 2 CPU\(s\) \[4, 5\]"):
        relative_cores([3], [4, 5])
    with pytest.raises(ValueError, match="at least one core"):
        relative_cores([], [0, 1])


def test_scale_layout_from_nodes_and_ranks_per_node():
    assert scale_layout({"nodes": 4, "ranks_per_node": 8}) == {
        "ranks": 32, "nodes": 4, "ranks_per_node": 8, "threads_per_rank": 1, "gpus_per_node": 0}
    assert scale_layout({"ranks": 6, "nodes": 3})["ranks_per_node"] == 2
    with pytest.raises(LayoutError, match=r"cases.fdm.scales\[2\]: ranks 5 != nodes 2 x ranks_per_node 2"):
        scale_layout({"ranks": 5, "nodes": 2, "ranks_per_node": 2}, "cases.fdm.scales[2]")
    with pytest.raises(LayoutError, match="do not divide evenly"):
        scale_layout({"ranks": 5, "nodes": 2})
    with pytest.raises(LayoutError, match="give 'ranks'"):
        scale_layout({"nodes": 2})


def test_job_resources_follow_the_layout_and_the_platform():
    one = job_resources(Layout(ranks=1), None, "srun --mpi=pmi2")
    # the executor plugin refuses an MPI job of one task: a one-rank run is a plain job whose command starts it
    assert one["tasks"] == 1 and one["mpi"] == "" and one["nodes"] == 1 and one["gpu"] is None
    many = job_resources(Layout(ranks=16, nodes=4, threads_per_rank=2, gpus_per_node=4,
                                data_bytes_per_rank=2 * 2**30), {"slurm": {"partition": "gpu", "qos": "long"}},
                         "srun --mpi=pmi2", {"slurm_account": "proj", "slurm_partition": "cpu"})
    assert many["tasks"] is None and many["tasks_per_node"] == 4 and many["nodes"] == 4
    assert many["cpus_per_task"] == 2 and many["gpu"] == 16 and many["mpi"] == "srun --mpi=pmi2"
    assert many["slurm_partition"] == "gpu" and many["qos"] == "long" and many["slurm_account"] == "proj"
    assert many["mem_mb"] == 4 * (512 + 2048) * 1.25  # per node: 4 ranks x (base + data) x slack, in 256 MB steps
    # one rank per node on several nodes: tasks (the plugin's tasks_per_node must be > 1)
    spread = job_resources(Layout(ranks=4, nodes=4), None, "srun")
    assert spread["tasks"] == 4 and spread["tasks_per_node"] is None
    assert launch_prefix("srun --mpi=pmi2", Layout(ranks=8, nodes=2, threads_per_rank=3)) == "srun --mpi=pmi2 -n 8 -N 2 -c 3 --kill-on-bad-exit=1"
    assert launch_prefix("mpiexec", Layout(ranks=2)) == "mpiexec -n 2"
    assert profile_defaults(["runtime=30", "slurm_partition='debug'", "bad"]) == {"runtime": 30, "slurm_partition": "debug"}


def test_every_run_of_the_default_and_cluster_studies_has_a_layout(repo):
    for study in ("config/config.yaml", "config/studies/fdm-cluster.yaml"):
        config = load_config(repo / study)
        for spec in study_matrix(config):
            layout = Layout.of(spec)
            assert layout.ranks == int(spec["ranks"]) and layout.mem_mb_per_node >= 512


def test_cluster_study_layouts_and_a_bad_scale(repo, tmp_path):
    config = load_config(repo / "config/studies/fdm-cluster.yaml")
    layouts = {(lay.nodes, lay.ranks, lay.threads_per_rank) for lay in
               (Layout.of(s) for s in study_matrix(config))}
    assert max(n for n, _, _ in layouts) == 64 and min(n for n, _, _ in layouts) == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("study: bad\ncases:\n  fdm:\n    scales:\n      - {nodes: 2, ranks_per_node: 2, ranks: 3, shape: [8, 8, 8]}\n")
    with pytest.raises(ConfigError, match=r"cases.fdm.scales\[0\]: ranks 3 != nodes 2 x ranks_per_node 2"):
        study_matrix(load_config(bad))


def test_placement_outside_and_inside_slurm():
    here = placement.placement([placement.rank_facts({})], env={})
    assert here["scheduler"] == "none" and here["job_id"] is None and placement.job_id(here) is None
    assert here["ranks"][0]["cpus"] == sorted(os.sched_getaffinity(0)) and here["ranks"][0]["gpus"] is None
    env = {"SLURM_JOB_ID": "812", "SLURM_STEP_ID": "3", "SLURM_JOB_PARTITION": "debug", "SLURM_JOB_NODELIST": "n[1-2]",
           "SLURM_JOB_NUM_NODES": "2", "CUDA_VISIBLE_DEVICES": "0,1"}
    facts = placement.placement([placement.rank_facts(env)], env=env)
    assert facts["scheduler"] == "slurm" and facts["partition"] == "debug" and facts["nodes"] == 2
    assert placement.job_id(facts) == "812.3" and facts["ranks"][0]["gpus"] == ["0", "1"]
    assert json.loads(json.dumps(facts)) == facts


def test_a_platforms_runs_on_one_node_are_batched_the_rest_run_alone(repo):
    tiny = {s["run_id"]: s for s in study_matrix(load_config(repo / "config" / "studies" / "tiny.yaml"))}
    assert batches(tiny, 1) == []
    groups = batches(tiny, 4)
    batched = [r for g in groups for r in g]
    assert len(batched) == len(set(batched)) and all(2 <= len(g) <= 4 for g in groups)
    for g in groups:  # one platform; the job's request fits every run, whatever its shape
        assert len({tiny[r]["platform"] for r in g}) == 1
        requests = [job_resources(Layout.of(tiny[r]), None, "mpiexec") for r in g]
        request = batch_request(requests)
        assert request["mem_mb"] == max(r["mem_mb"] for r in requests) + BATCH_OVERHEAD_MB and request["nodes"] == 1
        assert request["tasks"] == max(r["tasks"] for r in requests)
        assert batch_cores([Layout.of(tiny[r]) for r in g]) == max(Layout.of(tiny[r]).cores for r in g)
    assert max(map(len, groups)) - min(map(len, groups)) <= 4  # as few batches as the size allows, even sizes
    order = list(tiny)
    assert all(order.index(a) < order.index(b) for g in groups for a, b in pairwise(g))  # the matrix's order
    alone = set(tiny) - set(batched)
    assert all(Layout.of(tiny[r]).local for r in alone if tiny[r]["case"] == "published")
    whole = batches(tiny, 1000)  # the default: every run of the platform that measures something, in one job
    assert len(whole) == 1 and set(whole[0]) == {r for r in tiny if not Layout.of(tiny[r]).local}
    assert len({Layout.of(tiny[r]).ranks for r in whole[0]}) > 1  # shapes mixed: one launch per shape and round
    # runs over several nodes are never batched
    cluster = {s["run_id"]: s for s in study_matrix(load_config(repo / "config" / "studies" / "fdm-cluster.yaml"))}
    grouped = [r for g in batches(cluster, 8) for r in g]
    assert grouped and all(Layout.of(cluster[r]).nodes == 1 for r in grouped)
    assert any(Layout.of(cluster[r]).nodes > 1 for r in set(cluster) - set(grouped))
