"""The tiny study, run once per session: the end-to-end test goes on with it, the browser test opens its report."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from tests.conftest import REPO

TINY = ("-c2", "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"))


def build_tiny(work, env) -> SimpleNamespace:
    """The tiny study run to the end in ``work`` under a probe of every job's memory (``first`` its Snakemake
    process, ``jobs`` each job's peak and estimate), and its report as first built (``report``), kept apart
    from what the end-to-end test does to the study afterwards."""
    from benchmarks.bench_memory import probe

    first, jobs = probe(list(TINY), work, env=env, timeout=600)  # each job's process tree polled every 20 ms
    report = work / "report-as-built"
    if first.returncode == 0:
        shutil.copytree(work / "results" / "tiny" / "report", report)
    return SimpleNamespace(work=work, first=first, jobs=jobs, report=report)


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory, env):
    """The tiny study (:func:`build_tiny`), built in the background from the session's start when the session
    holds a test that uses it (``tests/conftest.py``, :func:`studies_in_background`)."""
    from tests.conftest import built

    return built("tiny", lambda: build_tiny(tmp_path_factory.mktemp("tiny"), env))
