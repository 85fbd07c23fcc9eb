"""The tiny study, run once per session: the end-to-end test goes on with it, the browser test opens its report."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from tests.conftest import REPO

TINY = ("-c2", "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"))


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory, env):
    """The tiny study run to the end under a probe of every job's memory (``work``; ``first`` its Snakemake
    process, ``jobs`` each job's peak and estimate), and its report as first built (``report``), kept apart
    from what the end-to-end test does to the study afterwards."""
    from benchmarks.bench_memory import probe

    work = tmp_path_factory.mktemp("tiny")
    first, jobs = probe(list(TINY), work, env=env, timeout=600)  # each job's process tree polled every 20 ms
    report = work / "report-as-built"
    if first.returncode == 0:
        shutil.copytree(work / "results" / "tiny" / "report", report)
    return SimpleNamespace(work=work, first=first, jobs=jobs, report=report)
