"""A user's own cases and models as plugins: the example packages under examples/ are installed (into a
directory only the subprocesses see) and a study with their cases runs through Snakemake end to end. DAXPY is a
two-processor WP case; the triad is a case of its own shape (its own tables, model and report section): both get
their scorecard rows, matrix columns and report sections with no line of hetval naming them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import BIN, REPO

PLUGIN = REPO / "examples" / "hetval-daxpy"
TRIAD = REPO / "examples" / "hetval-triad"


def install_plugin(target: Path, env: dict[str, str]) -> dict[str, str]:
    """The example plugins installed into ``target``; the environment whose subprocesses see them."""
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--target", str(target), str(PLUGIN), str(TRIAD)], capture_output=True, text=True, env=env)
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
    assert "daxpy" in listed and "triad" in listed and "sa" in listed
    assert models == "['PerDome/PeaPaw', 'streaming (DAXPY)']"
    triad = run([sys.executable, "-c", "from analysis.registry import Case, cases; from analysis.cases.wp import "
                 "WPCase; c = cases()['triad']; print(isinstance(c, Case), isinstance(c, WPCase), c.tables)"],
                plugin_env)
    assert triad.stdout.split() == ["True", "False", "('triad_runs',", "'triad_fidelity')"], triad.stderr
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
    config = yaml.safe_load((PLUGIN / "study.yaml").read_text())  # DAXPY's study with the triad case beside it
    config["cases"]["triad"] = yaml.safe_load((TRIAD / "study.yaml").read_text())["cases"]["triad"]
    (root / "study.yaml").write_text(yaml.safe_dump(config))
    args = [str(BIN / "snakemake"), "-s", str(REPO / "workflow" / "Snakefile"), "-d", str(work), "-c2",
            "--configfile", str(root / "study.yaml")]
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
    # the triad: its own tables, scored by its own model only, on the scorecard, in the matrix and in its section
    triad = pd.read_parquet(study / "validation" / "triad_runs.parquet")
    assert len(triad) == 5 and set(triad["model"]) == {"streaming (triad)"} and triad["tightness"].gt(0).all()
    assert sorted(triad["alpha"]) == [0.0, 0.25, 0.5, 0.75, 1.0]
    ranked = pd.read_parquet(study / "validation" / "triad_fidelity.parquet")
    assert len(ranked) == 1 and int(ranked["n_alternatives"].iloc[0]) == 5
    card = pd.read_parquet(study / "validation" / "scorecard.parquet")
    mine = card[card["case"] == "triad"]
    assert list(mine["model"]) == ["streaming (triad)"] and list(mine["evidence"]) == ["triad"], card
    assert int(mine["runs"].iloc[0]) == 5 and int(mine["groups"].iloc[0]) == 1
    assert set(card["case"]) == {"daxpy", "triad"}
    assert 'id="triad"' in page and "STREAM triad split by fraction" in page and 'href="#triad"' in page
    again = run(args, plugin_env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_a_plugin_study_end_to_end():
    from tests.conftest import plugin_study_result

    plugin_study_result()
