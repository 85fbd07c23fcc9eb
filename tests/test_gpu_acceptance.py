"""The GPU node's acceptance script (benchmarks/gpu_acceptance.py) where there is no GPU: its plan and what it
finds missing, the wheels its --prepare sends (the node's own packages never among them, at most 40 MiB), and a
run whose GPU steps fail, each saying why, the others still run, the exit naming the first that failed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "benchmarks" / "gpu_acceptance.py"
STEPS = ["install", "pytest-gpu", "fdm-gpu", "marshaling", "cases-nvml", "tiny-gpu"]
HAS_GPU = importlib.util.find_spec("cupy") is not None


def script(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


@pytest.mark.skipif(HAS_GPU, reason="CuPy is installed here: the plan finds the GPU")
def test_the_dry_run_prints_every_step_and_names_what_is_missing(tmp_path):
    out = script("--dry-run")
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[gpu-acceptance] step ")]
    assert [ln.split()[5] for ln in lines] == STEPS, out.stdout
    assert "install" in lines[0] and lines[0].endswith("- ready"), lines[0]  # hetval runs in this interpreter
    assert all("MISSING: the module cupy is not importable" in ln for ln in lines[1:]), out.stdout
    assert out.returncode == 1 and "first step missing a prerequisite: pytest-gpu" in out.stdout


def test_the_wheels_are_what_the_node_lacks_and_no_more():
    """hetval's requirements, pytest and what builds hetval, followed through their requirements on Linux, at the
    versions installed here; never a package the node brings."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import gpu_acceptance as g

    pins = dict(g.wheel_pins("3.12"))
    assert {"snakemake", "dask", "distributed", "jsonschema", "pytest", "setuptools", "jinja2", "pulp"} <= set(pins)
    assert not set(pins) & g.NODE_BASE
    from importlib import metadata

    assert pins["snakemake"] == metadata.version("snakemake")


def test_prepare_downloads_exactly_its_set_with_a_manifest_the_node_checks(tmp_path):
    """--prepare for real (three wheels and one package published as source only, which it builds: the whole set
    is about 34 MiB, which a full --prepare checks against its 40 MiB); the node's check of the folder."""
    wheels = tmp_path / "wheels"
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    out = script("--prepare", str(wheels), "--python", here, "--packages", "pytest", "pluggy", "iniconfig",
                 "connection-pool", timeout=300)
    if out.returncode != 0 and any(w in out.stderr for w in ("NewConnectionError", "Temporary failure in name "
                                                             "resolution", "Could not fetch URL")):
        pytest.skip(f"SKIPPED: PyPI cannot be reached from here: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert "built here from their sources (pure Python): connection-pool" in out.stdout
    doc = json.loads((wheels / "MANIFEST.json").read_text())
    assert sorted(e["name"] for e in doc["wheels"]) == ["connection-pool", "iniconfig", "pluggy", "pytest"]
    assert sorted(p.name for p in wheels.glob("*.whl")) == sorted(e["file"] for e in doc["wheels"])
    assert doc["total_bytes"] == sum(p.stat().st_size for p in wheels.glob("*.whl"))
    dry = script("--dry-run", "--wheels", str(wheels), "--only", "install")
    assert "- ready" in dry.stdout, dry.stdout
    victim = wheels / doc["wheels"][0]["file"]
    victim.write_bytes(b"not a wheel")
    dry = script("--dry-run", "--wheels", str(wheels), "--only", "install")
    assert dry.returncode == 1 and "is not the wheel --prepare downloaded" in dry.stdout, dry.stdout


@pytest.mark.skipif(HAS_GPU, reason="CuPy is installed here: its steps would run")
def test_a_run_without_a_gpu_fails_its_gpu_steps_runs_the_others_and_names_the_first(tmp_path):
    out = script(str(tmp_path / "out"), "--only", "install,pytest-gpu,fdm-gpu", "--sizes", "32")
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[gpu-acceptance] step ")]
    assert len(lines) == 3, out.stdout + out.stderr
    assert ": ok - this interpreter already runs hetval" in lines[0]
    assert all(": FAILED - MISSING: the module cupy is not importable" in ln for ln in lines[1:]), out.stdout
    assert out.returncode == 1 and "first failed step: pytest-gpu" in out.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [s["step"] for s in summary["steps"]] == ["install", "pytest-gpu", "fdm-gpu"]
    assert summary["first_failed"] == "pytest-gpu"
    assert all((tmp_path / "out" / f"{s}.json").exists() for s in ("install", "pytest-gpu", "fdm-gpu"))
