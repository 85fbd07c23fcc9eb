"""A user's own case and model as a plugin: the example package under examples/ is installed (into a
directory only the subprocesses see) and a study with its case runs through Snakemake end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import BIN, REPO

PLUGIN = REPO / "examples" / "hetval-daxpy"


def install_plugin(target: Path, env: dict[str, str]) -> dict[str, str]:
    """The example plugin installed into ``target``; the environment whose subprocesses see it."""
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--target", str(target), str(PLUGIN)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in (str(target), env.get("PYTHONPATH", "")) if p)}


@pytest.fixture(scope="module")
def plugin_env(env, tmp_path_factory):
    return install_plugin(tmp_path_factory.mktemp("plugin"), env)


def run(args, env, cwd=REPO, timeout=600):
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def test_the_plugin_registers_its_case_and_model(plugin_env):
    code = ("from analysis.registry import cases, models_for; "
            "print(sorted(cases())); print([m.name for m in models_for('daxpy')])")
    out = run([sys.executable, "-c", code], plugin_env)
    assert out.returncode == 0, out.stderr
    listed, models = out.stdout.splitlines()
    assert "daxpy" in listed and "sa" in listed
    assert models == "['PerDome/PeaPaw', 'streaming (DAXPY)']"
    check = run([str(BIN / "hetval"), "check-config", "--configfile", str(PLUGIN / "study.yaml")], plugin_env)
    assert check.returncode == 0 and "6 run(s)" in check.stdout, check.stderr


def test_without_the_plugin_its_case_is_an_unknown_key(env):
    out = run([str(BIN / "hetval"), "check-config", "--configfile", str(PLUGIN / "study.yaml")], env)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("hetval: config error: cases.daxpy: unknown key (allowed here:")


def plugin_study(root: Path, env: dict[str, str]) -> None:
    """The plugin's study through Snakemake end to end under ``root``, with the plugin installed there (assertions:
    raises on the first that fails), its platform characterised too (small arrays, two replicates). It checks no
    measurement: the suite runs it in the background beside the tests after the tiny study's build
    (``plugin_study`` in tests/conftest.py)."""
    plugin_env = install_plugin(root / "plugin", env)
    work = root / "work"
    args = [str(BIN / "snakemake"), "-s", str(REPO / "workflow" / "Snakefile"), "-d", str(work), "-c2",
            "--configfile", str(PLUGIN / "study.yaml")]
    first = run(args, plugin_env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert (work / "results" / "daxpy" / "platforms" / "replicates" / "cpu-pair-numpy-numba.2.yaml").exists()
    assert "[hetval run] daxpy daxpy p-DP on cpu-pair-numpy-numba: ok" in first.stdout
    study = work / "results" / "daxpy"
    runs = pd.read_parquet(study / "validation" / "runs.parquet")
    assert set(runs["case"]) == {"daxpy"} and set(runs["model"]) == {"PerDome/PeaPaw", "streaming (DAXPY)"}
    assert len(runs) == 2 * 6 and runs["tightness"].notna().all()
    assert (runs["flops"] == 2 * 4194304).all() and (runs["bytes"] == 24 * 4194304).all()
    fid = pd.read_parquet(study / "validation" / "fidelity.parquet")
    assert set(fid["axis"]) == {"wp", "alpha"} and set(fid["model"]) == set(runs["model"])
    page = (study / "report" / "index.html").read_text()
    assert "streaming (DAXPY)" in page and "FDM seismology" not in page  # only the study's own cases
    again = run(args, plugin_env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_a_plugin_study_end_to_end():
    from tests.conftest import plugin_study_result

    plugin_study_result()
