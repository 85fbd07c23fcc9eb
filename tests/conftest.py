"""Shared fixtures: the repository root, an environment whose PATH finds this interpreter's tools, mpiexec."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as _hypothesis_settings

# Property tests check answers, not speed: a per-example deadline fails them on a loaded or slow machine (the suite
# runs its studies in the background beside them), so there is none.
_hypothesis_settings.register_profile("hetval", deadline=None)
_hypothesis_settings.load_profile("hetval")

# the tiny study's end-to-end checks run outside a test module (in the background): their asserts still explain
pytest.register_assert_rewrite("tests.workflow.tiny")

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# the CLI run in this process (cli) finds this venv's tools as an activated venv would (mpiexec for check-config)
if str(BIN) not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def tool_env() -> dict[str, str]:
    """The environment for subprocesses: this venv's bin first (python, mpiexec, snakemake, hetval)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}".rstrip(os.pathsep)
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return env


#: what a newcomer's machine lacks: SLURM's programs (and Chromium, which no workflow test runs)
SLURM_PROGRAMS = ("srun", "sbatch", "squeue", "sinfo", "scancel", "scontrol", "salloc", "sacct", "slurmctld",
                  "slurmd", "munged")


def env_without(programs: tuple[str, ...], farm: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default :func:`tool_env`) as on a machine where ``programs`` are not installed: its PATH becomes
    one directory ``farm`` of links to every other program PATH finds, so that CI, which has them, also runs
    what a newcomer without them runs."""
    env = dict(env or tool_env())
    farm.mkdir(parents=True, exist_ok=True)
    for folder in env.get("PATH", "").split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = farm / entry.name
            if entry.name in programs or link.exists() or link.is_symlink():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    env["PATH"] = str(farm)
    return env


def default_dataset(root: Path) -> Path:
    """The default study's 73 real measured runs (analysis/resources/reference) gathered into ``root/runs``, with their
    platform file at ``root/platform.yaml``; returns ``root``."""
    import gzip
    import json

    from analysis.storage import dataset
    from sims.record import write_raw

    data = REPO / "analysis" / "resources" / "reference"
    files = []
    for doc in json.loads(gzip.decompress((data / "default-records.json.gz").read_bytes())):
        path = root / "raw" / "default" / f"{doc['run_id']}.json"
        write_raw(path, doc["run_id"], doc["records"])
        files.append(path)
    dataset.gather(files, root / "runs", root / "quarantine", root / "retry", log=lambda *_: None)
    shutil.copy(data / "cpu-pair-numpy-numba.yaml", root / "platform.yaml")
    return root


def cli(*args: str, cwd: Path | str = REPO) -> subprocess.CompletedProcess:
    """``hetval args`` run by the CLI's own ``main`` in this process, in ``cwd``: its exit code and what it printed,
    as the installed script would give them (an exception escaping ``main`` printed as a traceback, exit 1).
    A test of the script itself, or of a timeout, runs the script (``BIN / "hetval"``)."""
    import contextlib
    import io
    import traceback

    from analysis.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(list(args))
            except SystemExit as exc:  # argparse: --help, --version and usage errors
                rc = exc.code if isinstance(exc.code, int) else 1
            except Exception:  # noqa: BLE001 - what the script would show
                traceback.print_exc()
                rc = 1
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["hetval", *args], rc, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def default_validated(tmp_path_factory) -> Path:
    """The default study's real runs (:func:`default_dataset`) validated once per session, with the papers'
    published machines, on one worker and 50 resamples: ``root/validation`` holds every table. Read-only."""
    from analysis.planning.config import uncertainty_settings
    from analysis.resources import PUBLISHED_MACHINES
    from analysis.scoring import validate

    root = default_dataset(tmp_path_factory.mktemp("default-validated"))
    validate.validate(root / "runs", root, root / "validation", platform_files=[root / "platform.yaml"],
                      published_dir=PUBLISHED_MACHINES, log=lambda *_: None,
                      dask_settings=validate.DaskSettings(workers=1), uncertainty=uncertainty_settings(resamples=50))
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


def precompiled_runs() -> Path | None:
    """The directory where the background compile ran the invariance configurations on one rank (one thread and
    two), once it has ended well; None if there was none or it failed."""
    wait_for_precompile()
    proc = _COMPILE.get("proc")
    return _COMPILE["dir"] if proc is not None and proc.returncode == 0 else None  # type: ignore[return-value]


def pytest_sessionfinish(session, exitstatus) -> None:
    _CLUSTER.down()
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
def default_validation(tmp_path_factory) -> Path:
    """The default study's recorded runs (:func:`default_dataset`) validated once with the default settings, in
    this process's local Dask cluster: ``root/validation`` beside ``root/runs`` and ``root/platform.yaml`` (shared:
    a test that changes anything copies it first)."""
    from analysis.scoring.validate import validate

    root = default_dataset(tmp_path_factory.mktemp("default-validation"))
    # the between-study spreads the stored answers were computed with, not whatever the nights last shipped
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HETVAL_BETWEEN_STUDIES", str(REPO / "tests" / "data" / "same-answers" / "between_studies.json"))
        validate(root / "runs", root, root / "validation", platform_files=[root / "platform.yaml"], log=lambda *_: None)
    return root


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


class _Cluster:
    """The session's emulated SLURM cluster (tests/slurm_cluster.py), brought up once by whoever needs it first -
    the cluster study in the background, or a test - and stopped when the session ends."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.base: Path | None = None
        self.error: str | None = None

    def up(self, base: Path) -> Path:
        from tests import slurm_cluster

        with self.lock:
            if self.base is None and self.error is None:
                try:
                    slurm_cluster.start(base)
                    self.base = base
                except Exception as exc:  # noqa: BLE001 - said by every test that needs it
                    self.error = f"the emulated SLURM cluster did not come up: {exc}"
            if self.error:
                raise RuntimeError(self.error)
            assert self.base is not None
            return self.base

    def down(self) -> None:
        from tests import slurm_cluster

        with self.lock:
            if self.base is not None:
                slurm_cluster.stop(self.base)
                self.base = None


_CLUSTER = _Cluster()


class Background:
    """Work run in a thread while the suite goes on; :meth:`result` waits for it and returns or re-raises."""

    def __init__(self, fn: Any, *args: Any) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn, *args), daemon=True, name="hetval-background")
        self.thread.start()

    def _run(self, fn: Any, *args: Any) -> None:
        try:
            self.value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            self.error = exc

    def wait(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def result(self) -> Any:
        self.wait()
        if self.error is not None:
            raise self.error
        return self.value


def _need_slurm() -> None:
    """Skip (or, with ``HETVAL_REQUIRE_SLURM=1``, fail) saying why SLURM cannot run here."""
    from tests import slurm_cluster

    if _BACKGROUND or _CLUSTER.base is not None:  # the slurmctld running is this session's
        return
    why = slurm_cluster.unavailable()
    if why:
        if os.environ.get("HETVAL_REQUIRE_SLURM") == "1":
            pytest.fail(f"SLURM is required here (HETVAL_REQUIRE_SLURM=1) but cannot run: {why}")
        pytest.skip(f"SKIPPED: no real SLURM here - {why}")


#: the test module whose study runs in the background from the session's start (:func:`cluster_study`)
CLUSTER_STUDY = REPO / "tests" / "workflow" / "test_cluster_study.py"


@pytest.fixture(scope="session", autouse=True)
def cluster_study(request, tmp_path_factory, env):
    """The cluster study (tests/workflow/test_cluster_study.py) through the emulated SLURM cluster, started when
    the session starts and run while the other tests go on: half its time is Snakemake's SLURM executor waiting
    between status checks. The kill tests, the end-to-end studies and the modules that use the cluster
    themselves run after the others and wait for it (:func:`_order`, :func:`pytest_runtest_setup`,
    :func:`slurm`). None when that module is not selected or SLURM cannot run here (the study's fixture then
    says why)."""
    from tests import slurm_cluster

    if not any(Path(str(i.path)) == CLUSTER_STUDY for i in request.session.items) or slurm_cluster.unavailable():
        yield None
        return
    from tests.workflow.test_cluster_study import run_study

    base, work = tmp_path_factory.mktemp("slurm"), tmp_path_factory.mktemp("cluster-ci")
    job = Background(lambda: run_study(_CLUSTER.up(base), env, work))
    _BACKGROUND.append(job)
    try:
        yield job
    finally:
        job.wait(1800)


@pytest.fixture(scope="session")
def slurm(tmp_path_factory, cluster_study):
    """A real SLURM for the session: an emulated cluster of three nodes and two partitions (tests/slurm_cluster.py),
    once the cluster study running in the background is done with it; skips, saying why, where it cannot run.

    ``HETVAL_REQUIRE_SLURM=1`` (set by .ci/run when it installed slurm-wlm) turns the skip into a failure.
    """
    _need_slurm()
    if cluster_study is not None:
        cluster_study.wait()
    return _CLUSTER.base or _CLUSTER.up(tmp_path_factory.mktemp("slurm"))


#: the kill tests (tests/faults/test_kill.py): their trials run in the background while group 1 goes on
KILL_TESTS = "tests/faults/test_kill.py"
#: the fixture of the session's tiny study (tests/workflow/tiny.py), whose measurements are checked: it is built alone
_QUIET = "tiny_study"
#: the tiny study: how to build it and whether its end-to-end checks are selected (:func:`tiny_plan`), the built
#: study, and those checks once started in the background
_TINY: dict[str, Any] = {}
#: the cluster study running in the background, once started (:func:`cluster_study`)
_BACKGROUND: list[Background] = []
#: the kill trials: how to start them (:func:`kill_trials`), and the trials once started
_KILL: dict[str, Any] = {}
#: the micro study the kill trials start from: how to build it, and the build once started
_KILL_BASE: dict[str, Any] = {}
#: the plugin's study end to end (its test module and test), run in the background from group 1 on
PLUGIN_STUDY = (REPO / "tests" / "test_plugin.py", "test_a_plugin_study_end_to_end")
#: the plugin's study: how to start it (:func:`plugin_study`), and the study once started
_PLUGIN: dict[str, Any] = {}


def _order(item) -> tuple[int, int]:
    """The order the suite runs in, by what may share the machine with what:

    0. the tests that may run beside the cluster study in the background (the FDM tests last, once the background
       compile of their kernels has had the most time);
    1. once it is done, the tests that may run beside the kill trials and the plugin's study in the background:
       those that use SLURM (none of them checks a measurement);
    2. the kill tests and the plugin's study's test, which wait for them;
    3. the tests of the tiny study, which wait for its end-to-end checks.

    Before group 1 starts (once the cluster study is done), the tiny study, whose measurements are checked, is
    built alone (:func:`build_tiny`); its end-to-end checks, which re-invoke it and check no measurement, then run
    in the background beside group 1, the kill trials and the plugin's study."""
    path = Path(str(item.path))
    rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else ""
    if _QUIET in getattr(item, "fixturenames", ()):
        return 3, 0
    if rel == KILL_TESTS or _is_plugin_study(item):
        return 2, 0
    if (path == CLUSTER_STUDY or path.name == "test_dask_clusters.py"
            or "slurm" in getattr(item, "fixturenames", ())):
        return 1, 1
    return 0, int(path.is_relative_to(REPO / "tests" / "fdm"))


@pytest.fixture(scope="session", autouse=True)
def kill_trials(request, tmp_path_factory):
    """How to start the trials of the kill tests selected, if any (tests/faults/killing.py), beside tests that check
    no measurement (contention only lengthens a stage's life, and each kill lands in the first half of it): the
    micro study they start from is built beside the FDM tests at the end of group 0, and must be done before the
    tiny study is built alone; the trials start when group 1 begins (:func:`pytest_runtest_setup`)."""
    stages = sorted({i.callspec.params["stage"] for i in request.session.items
                     if Path(str(i.path)) == REPO / KILL_TESTS and hasattr(i, "callspec")})
    if stages:
        from tests.faults import killing

        base = tmp_path_factory.mktemp("micro-base")
        _KILL_BASE["start"] = lambda: killing.build_base(base)
        _KILL["start"] = lambda: killing.run_trials(tmp_path_factory, stages, base, _started(_KILL_BASE).result())
    yield
    _wait_and_forget(_KILL, "job")
    _wait_and_forget(_KILL_BASE, "job")


@pytest.fixture(scope="session", autouse=True)
def plugin_study(request, tmp_path_factory, env):
    """How to start the plugin's study, if its test is selected: a chain of one-core processes that checks no
    measurement, started when group 1 begins (:func:`pytest_runtest_setup`) and waited for by its test."""
    if any(_is_plugin_study(i) for i in request.session.items):
        from tests.test_plugin import plugin_study as run

        _PLUGIN["start"] = lambda: run(tmp_path_factory.mktemp("plugin-study"), env)
    yield
    _wait_and_forget(_PLUGIN, "job")


def _is_plugin_study(item) -> bool:
    return (Path(str(item.path)), item.name) == PLUGIN_STUDY


def plugin_study_result() -> None:
    """Wait for the plugin's study and raise what it raised (started here if no test of group 1 started it)."""
    _started(_PLUGIN).result()


def _start(store: dict[str, Any]) -> None:
    """Start ``store["start"]`` in the background, if it is there and not started yet."""
    if "start" in store and "job" not in store:
        store["job"] = Background(store["start"])


def _started(store: dict[str, Any]) -> Background:
    """The background job of ``store``, started here if it was not."""
    _start(store)
    return store["job"]


def _wait_and_forget(store: dict[str, Any], key: str) -> None:
    """At the session's end: wait for the background job ``store[key]``, if one was started, then clear ``store``."""
    job = store.get(key)
    store.clear()
    if job is not None:
        job.wait(1800)


def kill_results() -> Any:
    """The kill trials' results (``(trial by stage, each stage's life)``), once done; started here if no test of
    group 1 started them."""
    return _started(_KILL).result()


@pytest.fixture(scope="session", autouse=True)
def tiny_plan(request, tmp_path_factory, env):
    """How to build the tiny study if a selected test needs it, and whether its end-to-end checks are selected."""
    items = request.session.items
    if any(_QUIET in getattr(i, "fixturenames", ()) for i in items):
        _TINY["work"] = lambda: tmp_path_factory.mktemp("tiny")
        _TINY["env"] = env
        _TINY["checks_selected"] = any(i.name == "test_tiny_study_end_to_end" for i in items)
    yield
    _wait_and_forget(_TINY, "checks")


def build_tiny() -> None:
    """Build the tiny study, if needed and not built yet (the caller makes sure nothing else runs), then start
    its end-to-end checks in the background if they are selected. A build that raises is raised by the tiny
    study's own tests, not by whichever test's setup happened to build it."""
    if "work" not in _TINY or "built" in _TINY:
        return
    from tests.workflow import tiny

    try:
        _TINY["built"] = tiny.build(_TINY["work"](), _TINY["env"])
    except Exception as exc:  # noqa: BLE001 - raised by tiny_built
        _TINY["built"] = exc
        return
    if _TINY["checks_selected"]:
        _TINY["checks"] = Background(tiny.end_to_end, _TINY["built"], _TINY["env"])


def tiny_built() -> Any:
    """The built tiny study (built here if no hook has built it yet: a test that asks for it alone)."""
    build_tiny()
    if isinstance(_TINY["built"], Exception):
        raise _TINY["built"]
    return _TINY["built"]


def tiny_end_to_end() -> None:
    """Wait for the tiny study's end-to-end checks and raise what they raised."""
    tiny_built()
    _TINY["checks"].result()


def pytest_collection_modifyitems(session, config, items) -> None:
    """The order of :func:`_order`; pytest's order within each group."""
    items[:] = [item for _, item in sorted(enumerate(items), key=lambda pair: (_order(pair[1]), pair[0]))]


def pytest_runtest_setup(item) -> None:
    """The FDM tests start the build of the kill trials' micro study in the background. From group 1 on, a test
    starts once the cluster study and that build are done and the tiny study has been built alone; its end-to-end
    checks, the kill trials and the plugin's study then run in the background (the tests of each wait for them)."""
    group, fdm = _order(item)
    if group == 0 and fdm:  # the FDM tests check no measurement: the kill trials' micro study is built beside them
        _start(_KILL_BASE)
    if _BACKGROUND and group >= 1:
        _BACKGROUND[0].wait()
    if group >= 1:
        if "job" in _KILL_BASE:  # done before the tiny study is built alone
            _KILL_BASE["job"].wait()
        build_tiny()
        _start(_KILL)
        _start(_PLUGIN)
