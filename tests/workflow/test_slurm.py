"""The workflow through Snakemake's SLURM executor plugin, in dry runs: each job asks for exactly its resources, and
short runs are batched. (A study run for real on the suite's emulated cluster: test_cluster_study.py.)"""

from __future__ import annotations

import re

import pytest

from analysis.planning.config import load_config, study_matrix
from analysis.planning.jobs import BATCH_OVERHEAD_MB, Layout, batches
from tests.conftest import REPO, SLURM_PROGRAMS, env_without
from tests.workflow.tiny import job_counts, snakemake

PROFILE = ["--workflow-profile", str(REPO / "workflow" / "profiles" / "slurm")]


@pytest.fixture(params=["as installed", "without SLURM"])
def preview_env(request, env, tmp_path_factory):
    """A cluster study is previewed (``-n -p``) on the machine it was written on, with or without SLURM: both
    worlds on every machine, so that CI, which has SLURM, also sees a newcomer's."""
    if request.param == "as installed":
        return env
    return env_without(SLURM_PROGRAMS, tmp_path_factory.mktemp("path-without-slurm"), env)


def jobs_of(dry_run: str, rule: str) -> list[dict[str, str]]:
    """Each ``rule`` job of a dry run (``-n -p``): its resources as a mapping, its wildcards and its command."""
    out = []
    for block in dry_run.split("\nrule ")[1:]:
        name, _, body = block.partition(":\n")
        if name.strip() != rule and not (rule.endswith("*") and name.strip().startswith(rule[:-1])):
            continue
        res = re.search(r"^\s+resources: (.*)$", body, re.M)
        wc = re.search(r"^\s+wildcards: (.*)$", body, re.M)
        cmd = re.search(r"^Shell command: (.*)$", body, re.M) or re.search(r"^\s{4}(\S.*python -m mpi4py.*)$", body, re.M)
        resources = dict(kv.split("=", 1) for kv in re.split(r", (?=\w+=)", res.group(1))) if res else {}
        wildcards = dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}
        outputs = re.search(r"^\s+output: (.*)$", body, re.M)
        out.append({"resources": resources, "wildcards": wildcards, "command": cmd.group(1) if cmd else "",
                    "output": outputs.group(1).split(", ") if outputs else []})
    return out


def test_cluster_study_dry_run_asks_each_job_for_its_own_resources(preview_env, tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="the [slurm] extra is not installed")
    study = REPO / "config" / "studies" / "fdm-cluster.yaml"
    out = snakemake([*PROFILE, "--configfile", str(study), "-n", "-p"], preview_env, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    specs = {s["run_id"]: s for s in study_matrix(load_config(study))}
    runs = jobs_of(out.stdout, "simulate_run")
    batched = [r for g in batches(specs, 16) for r in g]  # the profile's batch_runs: short 1-node runs share jobs
    assert len(runs) + len(batched) == len(specs) and len(runs) == job_counts(out.stdout)["simulate_run"]
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
    chars = jobs_of(out.stdout, "characterize_platform")  # the platform's node type: same partition
    assert len(chars) == 2  # two replicates, before the runs and after them
    assert all(c["resources"]["slurm_partition"] == "compute" and c["resources"]["tasks"] == "2" for c in chars)
    assert "64" in {j["resources"]["nodes"] for j in runs}  # one-node runs are batched: jobs of their own span nodes
    # its runs span nodes, so the platform's inter-node ping-pong: one rank on each of two nodes, same partition
    [net] = jobs_of(out.stdout, "characterize_inter_node")
    assert net["resources"]["nodes"] == "2" and net["resources"]["tasks"] == "2"  # -N 2 -n 2: one per node
    assert net["resources"]["slurm_partition"] == "compute" and "tasks_per_node" not in net["resources"]
    assert "srun --mpi=pmi2 -n 2 -N 2" in out.stdout and "sims.bench.internode" in out.stdout


def test_one_rank_runs_are_plain_jobs_and_short_runs_share_a_job(preview_env, tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="the [slurm] extra is not installed")
    study = REPO / "config" / "studies" / "tiny.yaml"
    out = snakemake([*PROFILE, "--configfile", str(study), "-n", "-p"], preview_env, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    specs = {s["run_id"]: s for s in study_matrix(load_config(study))}
    measured = {rid for rid, s in specs.items() if not Layout.of(s).local}
    seen = []
    for job in jobs_of(out.stdout, "simulate_run"):
        tasks = int(job["resources"]["tasks"])
        # the plugin refuses an MPI job with one task: such a job has mpi="" and its command starts the rank
        assert job["resources"]["mpi"] == ("srun --mpi=pmi2" if tasks > 1 else "")
        assert f"srun --mpi=pmi2 -n {tasks} --kill-on-bad-exit=1 python" in job["command"]
        seen.append(job["wildcards"]["run_id"])
    batches = jobs_of(out.stdout, "simulate_batch_*")
    assert batches, "the profile's batch_runs=16 batches the tiny study's runs"
    for job in batches:  # one job's request fits every run of the batch: one platform, the most any run needs
        runs = [re.search(r"([0-9a-f]{16})\.json$", o).group(1) for o in job["output"]]
        assert 2 <= len(runs) <= 16
        layouts = [Layout.of(specs[r]) for r in runs]
        assert len({specs[r]["platform"] for r in runs}) == 1
        assert int(job["resources"]["tasks"]) == max(lay.ranks for lay in layouts)
        assert int(job["resources"]["mem_mb"]) == max(lay.mem_mb_per_node for lay in layouts) + BATCH_OVERHEAD_MB
        seen += runs
    assert sorted(seen) == sorted(measured)  # every measured run once, in a batch or in a job of its own


def test_a_stale_link_to_the_suites_slurm_conf_is_dropped(tmp_path, monkeypatch):
    """A session killed before it stopped its cluster leaves ``/etc/slurm/slurm.conf`` linked to its own file; the
    next session removes the link wherever that session's temporary directory was (a ``--basetemp`` too), and
    never touches a site's own configuration."""
    from tests import slurm_cluster

    monkeypatch.setattr(slurm_cluster, "controller_running", lambda: False)  # the session's own may run
    conf = tmp_path / "etc" / "slurm.conf"
    conf.parent.mkdir()
    ours = tmp_path / "basetemp" / "popen-gw1" / "slurm0" / "slurm.conf"
    ours.parent.mkdir(parents=True)
    ours.write_text(f"ClusterName={slurm_cluster.CLUSTER}\nSlurmctldHost=vm\n")
    conf.symlink_to(ours)
    assert "left by a test session" in slurm_cluster.drop_stale_conf(conf) and not conf.is_symlink()
    conf.symlink_to(tmp_path / "gone" / "slurm0" / "slurm.conf")  # its session's directory deleted since
    assert slurm_cluster.drop_stale_conf(conf) and not conf.is_symlink()
    site = tmp_path / "site.conf"
    site.write_text("ClusterName=production\n")
    conf.symlink_to(site)  # a site's own configuration, linked: kept
    assert slurm_cluster.drop_stale_conf(conf) is None and conf.is_symlink()
    monkeypatch.setattr(slurm_cluster, "controller_running", lambda: True)
    conf.unlink()
    conf.symlink_to(ours)  # ours, but its controller runs: in use
    assert slurm_cluster.drop_stale_conf(conf) is None and conf.is_symlink()
    monkeypatch.setattr(slurm_cluster, "controller_running", lambda: False)
    conf.unlink()
    conf.write_text(f"ClusterName={slurm_cluster.CLUSTER}\n")  # a regular file is never ours
    assert slurm_cluster.drop_stale_conf(conf) is None and conf.exists()


def test_a_real_run_without_srun_is_refused_before_anything_runs(tmp_path, env):
    """The preview needs no launcher; running the same study for real on a machine without SLURM stops before the
    first job, naming the key."""
    no_slurm = env_without(SLURM_PROGRAMS, tmp_path / "bin", env)
    out = snakemake([*PROFILE, "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"), "--executor", "local",
                     "-c1"], no_slurm, tmp_path / "work")
    assert out.returncode != 0
    assert "hetval: config error: launcher: 'srun' is not found on PATH" in out.stderr, out.stderr[-2000:]
    assert not (tmp_path / "work" / "results").exists()  # nothing measured, nothing written
