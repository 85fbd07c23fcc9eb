"""The cluster study a user copies (config/studies/cluster-ci.yaml), run for real through Snakemake's SLURM executor
plugin on the suite's emulated cluster (tests/slurm_cluster.py: n1, n2 in partition ``cpu``, n3 in ``big``), with a
node lost mid-study; then what it measured, placed and predicted across nodes."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis.equations import fdm
from analysis.planning.config import load_config, study_matrix
from tests import slurm_cluster
from tests.conftest import REPO, _need_slurm
from tests.workflow.tiny import snakemake

STUDY = REPO / "config" / "studies" / "cluster-ci.yaml"
#: exactly the command the study file and the README give (snakemake finds the root Snakefile)
COMMAND = ["--workflow-profile", "workflow/profiles/slurm", "--configfile", "config/studies/cluster-ci.yaml", "-j", "8"]

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def run_study(slurm: Path, env: dict[str, str], work: Path) -> dict:
    """The study in ``work``, with every process of n2 killed while a job runs on it and the node back 5 s later;
    then the next plain invocation, then one more. The suite starts it when the session starts and goes on with
    other tests meanwhile (``cluster_study`` in tests/conftest.py)."""
    lost: dict = {}

    def busy() -> bool:  # a job step and its ranks on n2, beyond the daemon's own processes
        return len(slurm_cluster.node_processes(slurm, "n2")) > 3

    def lose_n2() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and "done" not in lost:
            jobs = slurm_cluster.jobs_on("n2")
            if jobs and busy():
                time.sleep(1.0)  # let it start measuring
                if not busy():  # that job ended meanwhile: wait for the next one
                    continue
                lost["jobs"] = jobs
                lost["killed"] = slurm_cluster.kill_node(slurm, "n2")
                lost.setdefault("losses", 0)
                lost["losses"] += 1
                time.sleep(5)  # down for a while, then back, as an admin brings a node back: jobs that need
                slurm_cluster.restart_node(slurm, "n2")  # two nodes wait for it, the others went to n1
                if lost["killed"] > 3:
                    return
                # the job ended between the count and the kill: the node was lost idle; lose it again under a job
            time.sleep(0.5)

    killer = threading.Thread(target=lose_n2, daemon=True)
    killer.start()
    started = time.monotonic()
    first = snakemake(COMMAND, env, work, timeout=1500, snakefile=None)
    lost["done"] = True
    killer.join(timeout=30)
    took = time.monotonic() - started
    specs = {s["run_id"]: s for s in study_matrix(load_config(STUDY))}
    missing = [r for r in specs if not (work / "results" / "raw" / "cluster-ci" / f"{r}.json").exists()]
    second = snakemake(COMMAND, env, work, timeout=1500, snakefile=None)
    third = snakemake(COMMAND, env, work, timeout=300, snakefile=None)
    print(f"cluster-ci through SLURM: {took:.0f} s with n2 lost ({lost}); {len(missing)} run(s) redone")
    return {"work": work, "first": first, "second": second, "third": third, "lost": lost, "missing": missing,
            "specs": specs}


@pytest.fixture(scope="module")
def study(cluster_study):
    _need_slurm()  # skips, or fails, saying why where SLURM cannot run
    return cluster_study.result()


def records(study) -> dict[str, list[dict]]:
    out = {}
    for path in sorted((study["work"] / "results" / "raw" / "cluster-ci").glob("*.json")):
        doc = json.loads(path.read_text())
        out[doc["run_id"]] = doc["records"]
    return out


def test_a_node_lost_mid_study_heals_on_the_next_invocation(study):
    assert study["lost"].get("killed", 0) > 3, f"no job's processes were killed on n2: {study['lost']}"
    second, third = study["second"], study["third"]
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-5000:]
    log = second.stdout + second.stderr
    if study["missing"]:  # what the lost node took is measured again, and said
        assert "measuring them again" in log and all(r in log for r in study["missing"][:8]), log[-3000:]
    assert third.returncode == 0 and "Nothing to be done" in third.stdout + third.stderr
    for light in ("gather_runs", "validate_models", "report_validation"):  # never batch jobs
        assert f"localrule {light}:" in study["first"].stdout + study["first"].stderr + log, light
    recs = records(study)
    assert set(recs) == set(study["specs"])  # no run lost
    reps = int(yaml.safe_load(STUDY.read_text())["runs"]["repetitions"])
    for rid, rows in recs.items():  # no duplicate: each repetition of each rank once
        assert all(r["status"] == "ok" for r in rows), (rid, [r.get("error") for r in rows])
        keys = [(r["rep"], r.get("rank")) for r in rows]
        assert len(keys) == len(set(keys)) and {r["rep"] for r in rows} == set(range(reps)), rid


def test_each_node_type_is_characterised_and_runs_on_its_own_partition(study):
    platforms = study["work"] / "results" / "cluster-ci" / "platforms"
    node_of = {"cpu-node": {"n1", "n2"}, "big-node": {"n3"}}
    for name, nodes in node_of.items():
        doc = yaml.safe_load((platforms / f"{name}.yaml").read_text())
        assert doc["hostname"] in nodes, (name, doc["hostname"])
    for rid, rows in records(study).items():
        spec = study["specs"][rid]
        for r in rows:
            where = json.loads(r["placement"])
            assert where["scheduler"] == "slurm" and re.fullmatch(r"\d+\.\d+", r["job_id"])
            assert where["partition"] == {"cpu-node": "cpu", "big-node": "big"}[spec["platform"]]
            assert set(where["hosts"]) <= node_of[spec["platform"]]
            # the world each run saw is the ranks it asked for, each rank's host named
            assert r["ranks"] == int(spec["ranks"]) == len(where["ranks"])
            assert all(rank["host"] in node_of[spec["platform"]] for rank in where["ranks"])


def test_two_node_fdm_runs_span_two_hosts_and_match_the_one_node_seismograms(study):
    work, recs = study["work"], records(study)
    fdm_runs = {rid: s for rid, s in study["specs"].items() if s["case"] == "fdm"}
    by_layout: dict[tuple, dict[int, str]] = {}
    for rid, spec in fdm_runs.items():
        doc = spec["fdm_doc"]
        where = json.loads(recs[rid][0]["placement"])
        nodes = int(doc.get("nodes") or 1)
        assert len(set(where["hosts"])) == nodes
        hosts = [rank["host"] for rank in where["ranks"]]
        per_node = int(doc["ranks"]) // nodes
        assert hosts == sorted(hosts) and all(hosts.count(h) == per_node for h in set(hosts))  # blocks per node
        key = (int(doc["ranks"]), json.dumps(doc["decomposition"]), doc["marshaling"])
        by_layout.setdefault(key, {})[nodes] = rid
    pairs = [v for v in by_layout.values() if {1, 2} <= set(v)]
    assert pairs, by_layout
    for pair in pairs:  # 2 ranks on one node and on two: bitwise the same traces
        one, two = (np.load(work / "results" / "fdm" / "cluster-ci" / pair[n] / "seismograms.npz") for n in (1, 2))
        assert sorted(one.files) == sorted(two.files)
        for k in one.files:
            assert one[k].tobytes() == two[k].tobytes(), k


def test_the_link_each_halo_takes_is_measured_and_modelled(study):
    work = study["work"]
    net = json.loads((work / "results" / "cluster-ci" / "platforms" / "cpu-node.network.json").read_text())
    inter = net["inter_node"]
    assert sorted(inter["nodes"]) == ["n1", "n2"] and inter["same_node"] is False
    assert not (work / "results" / "cluster-ci" / "platforms" / "big-node.network.json").exists()  # never spans
    intra = yaml.safe_load((work / "results" / "cluster-ci" / "platforms" / "cpu-node.yaml").read_text())["network"]
    lat, t_net = intra["latency"]["value"], intra["t_net"]["value"]
    lat_i, t_net_i = inter["latency"]["value"], inter["t_net"]["value"]
    runs = pd.read_parquet(work / "results" / "cluster-ci" / "validation" / "fdm_runs.parquet")
    expected_links = {(1, 1): "none", (2, 1): "intra-node", (2, 2): "inter-node", (4, 2): "intra-node+inter-node"}
    for r in runs.itertuples():
        assert r.links == expected_links[(r.ranks, r.nodes)], (r.ranks, r.nodes, r.links)
    # two ranks on one node and on two: the analytical model's halo differs by exactly what the links measured
    two = runs[(runs.ranks == 2) & (runs.model == "FDM")]
    for (_marshaling, steps, order, grid), g in two.groupby(["marshaling", "steps", "order", "grid"]):
        one_node, two_nodes = g[g.nodes == 1].iloc[0], g[g.nodes == 2].iloc[0]
        face = np.prod(json.loads(grid)["shape"][1:])
        w = order // 2
        per_step = sum((lat_i - lat) + 4.0 * w * nf * face * (t_net_i - t_net) for nf in fdm.EXCHANGED_FIELDS)
        assert two_nodes.halo_pred_s - one_node.halo_pred_s == pytest.approx(steps * per_step, rel=1e-9)
    calibrated = runs[(runs.model == "FDM-calibrated") & (runs.ranks == 2)]
    assert calibrated["halo_pred_s"].notna().all() and calibrated["nodes"].nunique() == 2


def test_the_report_and_scorecard_show_both_node_types_and_dask_used_two_nodes(study):
    work = study["work"]
    card = pd.read_parquet(work / "results" / "cluster-ci" / "validation" / "scorecard.parquet")
    sa = card[card["case"] == "sa"]
    assert set(sa["platform"]) == {"cpu-node", "big-node"}
    html = (work / "results" / "cluster-ci" / "report" / "index.html").read_text()
    assert "cpu-node" in html and "big-node" in html
    log = (study["first"].stdout + study["first"].stderr + study["second"].stdout + study["second"].stderr)
    line = next((ln for ln in log.splitlines() if "SLURMCluster's workers ran on" in ln), None)
    if line is None:  # the validation ran as a local rule: its log holds the line
        logs = sorted((work / "logs" / "cluster-ci").glob("validate*.log"))
        line = next(ln for p in logs for ln in p.read_text().splitlines() if "SLURMCluster's workers ran on" in ln)
    hosts = line.split("ran on", 1)[1].strip().split(", ")
    assert len(set(hosts) & {"n1", "n2"}) == 2, line
