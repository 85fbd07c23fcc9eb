"""Shared fixtures: the repository root, an environment whose PATH finds this interpreter's tools, mpiexec."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def tool_env() -> dict[str, str]:
    """The environment for subprocesses: this venv's bin first (python, mpiexec, snakemake, hetval)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}".rstrip(os.pathsep)
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return env


def default_dataset(root: Path) -> Path:
    """The default study's 73 real measured runs (tests/data) gathered into ``root/runs``, with their
    platform file at ``root/platform.yaml``; returns ``root``."""
    import gzip
    import json

    from analysis.storage import dataset
    from sims.record import write_raw

    data = REPO / "tests" / "data"
    files = []
    for doc in json.loads(gzip.decompress((data / "default-records.json.gz").read_bytes())):
        path = root / "raw" / "default" / f"{doc['run_id']}.json"
        write_raw(path, doc["run_id"], doc["records"])
        files.append(path)
    dataset.gather(files, root / "runs", root / "quarantine", root / "retry", log=lambda *_: None)
    shutil.copy(data / "cpu-pair-numpy-numba.yaml", root / "platform.yaml")
    return root


#: The background compile of the FDM kernels (:func:`pytest_collection_finish`), if one was started.
_COMPILE: dict[str, subprocess.Popen] = {}


def pytest_collection_finish(session) -> None:
    """Compiling the Numba FDM kernels with no cache (a fresh clone) keeps one core busy for minutes (serial and
    parallel variants, each order and boundary), and most tests before the FDM ones use one core: when FDM
    tests are selected, compile them from the start on the other core, as a singleton-MPI run of the
    invariance configurations on one thread and on two. The FDM tests wait for it (``tests/fdm/conftest.py``),
    so nothing compiles twice. ``HETVAL_TEST_NO_PRECOMPILE=1`` turns this off."""
    fdm = str(REPO / "tests" / "fdm")
    if os.environ.get("HETVAL_TEST_NO_PRECOMPILE") or not any(str(i.path).startswith(fdm) for i in session.items):
        return
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="hetval-precompile-"))
    worker = REPO / "tests" / "fdm" / "invariance_worker.py"
    env = dict(tool_env(), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    script = (f'"{sys.executable}" "{worker}" "{out}" && HETVAL_THREADS_PER_RANK=2 NUMBA_NUM_THREADS=2 '
              f'"{sys.executable}" "{worker}" "{out}"')
    _COMPILE["proc"] = subprocess.Popen(["bash", "-c", script], env=env, cwd=out, stdout=open(out / "log", "w"),
                                        stderr=subprocess.STDOUT, start_new_session=True)
    _COMPILE["dir"] = out  # type: ignore[assignment]


def wait_for_precompile(timeout: float = 900) -> None:
    """Wait for the background compile of the FDM kernels, if any (a failed one is not an error here: the
    tests then compile what they need themselves, and report any real fault)."""
    proc = _COMPILE.get("proc")
    if proc is not None and proc.poll() is None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()


def pytest_sessionfinish(session, exitstatus) -> None:
    proc = _COMPILE.pop("proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
    out = _COMPILE.pop("dir", None)
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)


def pytest_sessionstart(session) -> None:
    """A SLURM configuration left dangling by an earlier session that was killed (tests/slurm_cluster.py)
    would slow every Snakemake start by 9 s: remove it first, and say so."""
    if os.geteuid() == 0:
        from tests import slurm_cluster

        done = slurm_cluster.drop_stale_conf()
        if done:
            print(f"\nhetval tests: {done}")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def env() -> dict[str, str]:
    return tool_env()


@pytest.fixture(scope="session")
def mpiexec() -> str:
    """Path of mpiexec; a missing MPI is a failure of the setup, not a reason to skip."""
    found = BIN / "mpiexec"
    path = str(found) if found.exists() else shutil.which("mpiexec")
    if not path:
        pytest.fail("mpiexec not found: install the 'mpich' extra (pip install -e '.[mpich,test]') or a system MPI")
    return path


def run_mpi(mpiexec: str, n: int, args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """Launch ``python -m mpi4py <args>`` on ``n`` ranks and return the completed process."""
    return subprocess.run(
        [mpiexec, "-n", str(n), sys.executable, "-m", "mpi4py", *args],
        env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A real SLURM for the session: an emulated cluster of three nodes and two partitions (tests/slurm_cluster.py);
    skips, saying why, where it cannot run.

    ``HETVAL_REQUIRE_SLURM=1`` (set by .ci/run when it installed slurm-wlm) turns the skip into a failure.
    """
    from tests import slurm_cluster

    why = slurm_cluster.unavailable()
    if why:
        if os.environ.get("HETVAL_REQUIRE_SLURM") == "1":
            pytest.fail(f"SLURM is required here (HETVAL_REQUIRE_SLURM=1) but cannot run: {why}")
        pytest.skip(f"SKIPPED: no real SLURM here - {why}")
    base = tmp_path_factory.mktemp("slurm")
    slurm_cluster.start(base)
    try:
        yield base
    finally:
        slurm_cluster.stop(base)
