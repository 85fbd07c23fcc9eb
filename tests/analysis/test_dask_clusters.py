"""The validation job on real Dask clusters: an external scheduler with two workers on loopback, a worker
killed mid-validation, and a SLURMCluster on the test SLURM. Each must write the same tables, row for row
and value for value, as a LocalCluster run on the same data (73 real runs of the default study, 5 repetitions
each, measured on this kind of machine: analysis/resources/reference/default-records.json.gz). The tests that mostly wait out a
timeout come first, while the suite's background work keeps the cores busy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import BIN, default_dataset

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """The default study's real raw records gathered into a dataset (returns the working directory)."""
    return default_dataset(tmp_path_factory.mktemp("dask"))


def validate(root: Path, out: str, env: dict[str, str], *extra: str, timeout: float = 600,
             popen: bool = False) -> subprocess.CompletedProcess | subprocess.Popen:
    cmd = [str(BIN / "hetval"), "validate", "--runs", str(root / "runs"), "--platform-file", str(root / "platform.yaml"),
           "--out", str(root / out), "--published", "", "--resamples", "200", *extra]
    if popen:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=root)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=root)


def tables(where: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in sorted(where.glob("*.parquet"))}


def assert_same_tables(a: Path, b: Path) -> None:
    """Same files, same rows, same values, bit for bit (compared as Arrow tables: struct columns included)."""
    import pyarrow.parquet as pq

    ta, tb = tables(a), tables(b)
    assert ta.keys() == tb.keys()
    for name in ta:
        left, right = pq.read_table(a / f"{name}.parquet"), pq.read_table(b / f"{name}.parquet")
        assert left.schema.equals(right.schema), name
        assert left.equals(right), name
    assert sum(len(t) for t in ta.values()) > 100


@pytest.fixture(scope="module")
def local(runs, env) -> Path:
    out = validate(runs, "local", env, "--workers", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "a local cluster of 2 worker process(es)" in out.stdout + out.stderr  # 365 records: not small
    return runs / "local"


class DaskCluster:
    """``dask scheduler`` and ``dask worker`` processes on loopback (no nanny: a killed worker stays dead)."""

    def __init__(self, root: Path, env: dict[str, str], workers: int = 2):
        self.file = root / f"scheduler-{time.monotonic_ns()}.json"
        self.env = env
        self.scheduler = subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(self.file)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.address = self._address(deadline=time.monotonic() + 60)
        self.workers = [subprocess.Popen(
            [str(BIN / "dask"), "worker", "--scheduler-file", str(self.file), "--nthreads", "1", "--no-nanny",
             "--no-dashboard", "--name", f"w{i}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i in range(workers)]
        from distributed import Client

        self.client = Client(self.address, timeout=30)
        self.client.wait_for_workers(workers, timeout=60)

    def _address(self, deadline: float) -> str:
        """The scheduler's address from its file, once the file is whole: the scheduler creates it, then writes it
        (not atomically), so a file that exists may still be empty or cut short."""
        while True:
            try:
                return json.loads(self.file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                assert self.scheduler.poll() is None, f"dask scheduler exited ({self.scheduler.returncode})"
                assert time.monotonic() < deadline, "dask scheduler did not start (no whole scheduler file)"
                time.sleep(0.2)

    def close(self) -> None:
        self.client.close()
        for p in [*self.workers, self.scheduler]:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in [*self.workers, self.scheduler]:
            try:  # a worker sometimes keeps retrying a scheduler that is going away: nothing here to wait for
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _serve(runs, env):
    """A scheduler and its workers for the test(s) of the fixture's scope, closed after them."""
    c = DaskCluster(runs, env)
    yield c
    c.close()


#: a cluster of its own, for the test that kills one of its workers
cluster = pytest.fixture(name="cluster")(_serve)
#: one cluster for the validations that leave it whole, one after another (the second finds the first's)
shared = pytest.fixture(scope="module", name="shared")(_serve)


def test_slurm_cluster_without_a_worker_in_time_is_one_line(runs, env):
    """A SLURMCluster whose workers never start (no sbatch that works) fails in one line within the timeout."""
    pytest.importorskip("dask_jobqueue", reason="the [slurm] extra is not installed")
    fake = runs / "fakebin"
    fake.mkdir(exist_ok=True)
    for tool in ("sbatch", "squeue", "scancel"):
        (fake / tool).write_text("#!/bin/sh\necho 'sbatch: error: Batch job submission failed' >&2\nexit 1\n")
        (fake / tool).chmod(0o755)
    started = time.monotonic()
    proc = validate(runs, "never", {**env, "PATH": f"{fake}{os.pathsep}{env['PATH']}"}, "--cluster", "slurm",
                    "--connect-timeout", "5", popen=True)
    lines = []
    for line in proc.stdout:  # the error is the last thing it says; then it exits at once
        lines.append(line.rstrip())
        said = time.monotonic()
    assert proc.wait(timeout=60) == 2, lines
    exited = time.monotonic()
    assert "Traceback" not in "\n".join(lines) and lines[-1].startswith("hetval validate:"), lines
    assert said - started < 60
    # no wait at exit for jobs that never started (distributed's exit hook would retry closing them for 10 s)
    assert exited - said < 5, exited - said


def test_a_scheduler_that_accepts_and_never_answers_is_one_line_within_the_timeout(runs, env):
    """A listener that takes the TCP connection and then says nothing (a wrong port, a hung scheduler)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        started = time.monotonic()
        out = validate(runs, "silent", env, "--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "3",
                       timeout=60)
        took = time.monotonic() - started
    finally:
        listener.close()
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "did not answer within 3 s" in out.stderr
    assert took < 30


def test_gather_fails_in_one_line_when_the_cluster_loses_every_worker(runs, env):
    """Results that can never come: the only worker is killed while its task runs."""
    from analysis.scoring.tasks import WorkersLost, gather_watched

    c = DaskCluster(runs, env, workers=1)
    try:
        (address,) = c.client.scheduler_info()["workers"]
        pid = c.client.run(os.getpid, workers=[address])[address]
        future = c.client.submit(time.sleep, 600, pure=False)
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(WorkersLost, match="no worker for 3 s"):
            gather_watched(c.client, [future], patience=3, poll=0.5)
        assert time.monotonic() - started < 30
    finally:
        c.close()


def test_external_scheduler_writes_the_same_tables_as_a_local_cluster(runs, env, local, shared):
    out = validate(runs, "external", env, "--scheduler", shared.address)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Dask scheduler {shared.address} (2 workers" in out.stdout + out.stderr
    assert_same_tables(local, runs / "external")


def test_dask_scheduler_address_from_the_environment(runs, env, local, shared):
    out = validate(runs, "from-env", {**env, "DASK_SCHEDULER_ADDRESS": shared.address})
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Dask scheduler {shared.address}" in out.stdout + out.stderr
    assert_same_tables(local, runs / "from-env")


def test_a_worker_killed_mid_validation_changes_nothing(runs, env, local, cluster):
    """Kill -9 a worker the moment it holds results of the validation graph: the scheduler recomputes its
    tasks on the other worker, and the tables are the same."""
    victim_address = sorted(cluster.client.scheduler_info()["workers"])[0]
    pid = cluster.client.run(os.getpid, workers=[victim_address])[victim_address]
    proc = validate(runs, "killed", env, "--scheduler", cluster.address, popen=True)
    held = 0
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        held = len(cluster.client.has_what().get(victim_address, ()))
        if held:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    output, _ = proc.communicate(timeout=600)
    assert held, "the validation ended before the worker held any result: nothing was killed mid-way"
    assert proc.returncode == 0, output
    assert len(cluster.client.scheduler_info()["workers"]) == 1  # the victim is gone for good
    assert_same_tables(local, runs / "killed")


@pytest.mark.slurm
def test_slurm_cluster_workers_are_slurm_jobs(runs, env, local, slurm):
    out = validate(runs, "slurm", env, "--cluster", "slurm", "--workers", "2", "--worker-memory", "2GiB",
                   "--connect-timeout", "120")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "a SLURMCluster of 2 worker job(s)" in out.stdout + out.stderr
    assert_same_tables(local, runs / "slurm")


@pytest.mark.slurm
def test_a_slurm_workers_node_lost_mid_validation(runs, env, local, slurm):
    """Every process of one worker's node killed while the validation runs (the emulated cluster's n2): the
    tables are the same as a LocalCluster's, or the failure is one line and the next invocation heals."""
    from tests import slurm_cluster

    args = ("--cluster", "slurm", "--workers", "2", "--worker-memory", "2GiB", "--connect-timeout", "120")
    proc = validate(runs, "node-lost", env, *args, popen=True)
    killed = 0
    deadline = time.monotonic() + 300
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if slurm_cluster.jobs_on("n1") and slurm_cluster.jobs_on("n2"):  # a worker on each node (LLN)
                time.sleep(2.0)  # let the graph start on both
                killed = slurm_cluster.kill_node(slurm, "n2")
                break
            time.sleep(0.2)
        output, _ = proc.communicate(timeout=600)
    finally:
        slurm_cluster.restart_node(slurm, "n2")
    assert killed, f"the workers never ran on two nodes: {output[-2000:]}"
    if proc.returncode != 0:  # one line, then a plain re-run heals
        assert "Traceback" not in output and output.strip().splitlines()[-1].startswith("hetval"), output[-3000:]
        again = validate(runs, "node-lost", env, *args)
        assert again.returncode == 0, again.stdout + again.stderr
    assert_same_tables(local, runs / "node-lost")
    print(f"worker node lost mid-validation ({killed} processes killed): "
          + ("same tables at once" if proc.returncode == 0 else f"failed in one line ({output.strip().splitlines()[-1]}), "
             "healed by the next invocation"))
