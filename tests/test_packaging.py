"""A non-editable install works: the wheel carries the schema, the papers' tables and the report template, and
the CLI finds them without a checkout (it asks for a study file where a checkout's default is not there)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel installed into a fresh virtual environment that borrows this one's dependencies but not its
    editable hetval (a .pth line adds site-packages without running the editable finder's .pth)."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(root / "dist"), str(REPO)], check=True, capture_output=True, timeout=600)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    wheel = next((root / "dist").glob("hetval-*.whl"))
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # this environment's pip, installing for the new one's interpreter (its scripts start that interpreter)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--force-reinstall", str(wheel)], check=True, timeout=600, env=clean)
    site = next((venv / "lib").glob("python3*/site-packages"))  # after the install: pip must not see the editable one
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd,
                          timeout=300, env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)})


def test_the_installed_package_is_not_the_checkout(installed, tmp_path):
    out = run(installed, "python", "-c", "import analysis; print(analysis.__file__)", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert str(installed) in out.stdout and str(REPO) not in out.stdout


def test_the_cli_checks_a_study_with_the_shipped_schema(installed, tmp_path):
    # installed without the mpich extra: the study's launcher is not on this environment's PATH, which the check says
    out = run(installed, "hetval", "check-config", "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"),
              cwd=tmp_path)
    assert out.returncode == 2 and "launcher: 'mpiexec' is not found on PATH" in out.stderr, out.stderr
    here = tmp_path / "here.yaml"
    here.write_text("launcher: python\n")  # a program this environment has
    out = run(installed, "hetval", "check-config", "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"),
              "--configfile", str(here), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "config ok: study 'tiny'" in out.stdout
    out = run(installed, "hetval", "matrix", "--json", "--configfile", str(REPO / "config" / "config.yaml"),
              cwd=tmp_path)
    assert out.returncode == 0 and '"published"' in out.stdout, out.stderr  # the published tables ingest from the wheel


def test_without_a_study_it_says_which_file_it_wants(installed, tmp_path):
    out = run(installed, "hetval", "check-config", cwd=tmp_path)
    assert out.returncode == 2 and "no config/config.yaml in" in out.stderr and "Traceback" not in out.stderr


def test_the_papers_tables_and_the_report_template_are_in_the_wheel(installed, tmp_path):
    code = ("from analysis.scoring.claims import evaluate; from importlib.resources import files; "
            "claims = evaluate(); print(len(claims)); "
            "print(files('analysis.report').joinpath('templates/page.html.j2').is_file())")
    out = run(installed, "python", "-c", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    count, template = out.stdout.split()
    assert int(count) > 40 and template == "True"
