"""The inter-node ping-pong (sims.bench.internode) on two real MPI ranks, and its network overlay."""

from __future__ import annotations

import json

import pytest
import yaml

from analysis.storage.platforms import Platforms
from sims.platform_file import network_overlay_path, read_platform
from tests.conftest import run_mpi

pytestmark = pytest.mark.mpi


def test_two_ranks_on_one_node_are_refused_with_one_line(mpiexec, env, tmp_path):
    out = tmp_path / "p.network.json"
    proc = run_mpi(mpiexec, 2, ["-m", "sims.bench.internode", "--platform", "p", "--out", str(out)], env)
    assert proc.returncode != 0 and not out.exists()
    assert "both ranks run on node" in proc.stderr and "srun --mpi=pmi2 -n 2 -N 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ping_pong_writes_the_overlay_that_the_platform_reader_merges(mpiexec, env, tmp_path):
    out = tmp_path / "p.network.json"
    proc = run_mpi(mpiexec, 2, ["-m", "sims.bench.internode", "--platform", "p", "--out", str(out),
                                "--repetitions", "3", "--allow-same-node"], env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    inter = doc["inter_node"]
    assert inter["same_node"] is True and len(inter["nodes"]) == 2  # said plainly: this ran on one machine
    assert inter["latency"]["value"] > 0 and inter["t_net"]["value"] > 0
    assert all(len(v) == 3 for v in inter["samples_s"].values())
    # beside a platform file, it becomes network.inter_node and the FDM model's inter-node columns
    platform = tmp_path / "p.yaml"
    platform.write_text(yaml.safe_dump({
        "platform": "p", "network": {"latency": {"value": 1e-6}, "t_net": {"value": 1e-10}},
        "processors": {r: {"backend": "numpy", "t_f": {"value": 1e-10}, "t_b": {"value": 1e-10}}
                       for r in ("host", "accel")}}))
    assert network_overlay_path(platform) == out
    merged = read_platform(platform)
    assert merged["network"]["inter_node"]["latency"]["value"] == inter["latency"]["value"]
    row = Platforms.from_files([platform]).backends.iloc[0]
    assert row["latency_inter"] == pytest.approx(inter["latency"]["value"])
    assert row["t_net_inter"] == pytest.approx(inter["t_net"]["value"])
    out.write_text("{not json")
    with pytest.raises(ValueError, match="unreadable network overlay"):
        read_platform(platform)
