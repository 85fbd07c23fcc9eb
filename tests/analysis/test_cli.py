"""Every hetval subcommand through its error paths: one line on standard error, exit 2, never a traceback.

The subcommands run in this process (:func:`tests.conftest.cli`); the installed script itself, and a timeout
that needs a process of its own, run as the user runs them (:func:`script`)."""

from __future__ import annotations

import subprocess

import pytest

from analysis.storage.schema import FILE_SCHEMA
from tests.conftest import BIN, REPO, cli


def script(*args: str, env: dict, cwd=REPO, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "hetval"), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def one_line_error(out: subprocess.CompletedProcess, *expected: str) -> None:
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def test_version_and_help(env):
    out = script("--version", env=env)
    assert out.returncode == 0 and out.stdout.startswith("hetval ")
    out = script("validate", "--help", env=env)
    assert out.returncode == 0 and "(default: results/runs)" in " ".join(out.stdout.split())


@pytest.fixture
def dataset(tmp_path):
    """A dataset directory with one (empty) partition and a platform directory holding one platform file."""
    import shutil

    import pyarrow.parquet as pq

    part = tmp_path / "runs" / "study=s" / "case=sa" / "part.parquet"
    part.parent.mkdir(parents=True)
    pq.write_table(FILE_SCHEMA.empty_table(), part)
    (tmp_path / "platforms").mkdir()
    shutil.copy(REPO / "analysis" / "resources" / "reference" / "cpu-pair-numpy-numba.yaml", tmp_path / "platforms")
    return tmp_path


@pytest.mark.parametrize(("args", "expected"), [
    (["check-config", "--configfile", "/nonexistent.yaml"], ["hetval: config error:", "no such config file"]),
    (["matrix", "--run-id", "0" * 16], ["hetval matrix:", "is not in this study"]),
    (["gather", "bogus.json"], ["hetval gather:", "raw record bogus.json does not exist"]),
    (["gather"], ["hetval gather:", "nothing to gather"]),
    (["gather", "--raw-dir", "/nonexistent"], ["hetval gather:", "--raw-dir /nonexistent does not exist"]),
    (["validate", "--runs", "/nonexistent"], ["hetval validate:", "--runs /nonexistent does not exist"]),
    (["report", "--validation", "/nonexistent"], ["hetval report:", "--validation /nonexistent does not exist"]),
    (["ingest-published", "--table", "nope", "--study", "s", "--run-id", "0" * 16, "--out", "x.json"],
     ["hetval ingest-published:", "nope.yaml"]),
    (["attach-trace", "--raw-dir", "/nonexistent", "--trace", "/nonexistent.csv"],
     ["hetval attach-trace:", "--trace /nonexistent.csv does not exist"]),
    (["attach-trace", "--trace", "t.csv"], ["hetval attach-trace:", "give --raw-dir, --platform-file or both"]),
])
def test_missing_input_is_one_line_and_exit_2(tmp_path, args, expected):
    one_line_error(cli(*args, cwd=tmp_path), *expected)


def test_validate_needs_a_dataset_and_platforms(tmp_path, dataset):
    (tmp_path / "empty").mkdir()
    one_line_error(cli("validate", "--runs", str(tmp_path / "empty")), "holds no dataset")
    one_line_error(cli("validate", "--runs", str(dataset / "runs"), "--platform-file", "/nonexistent.yaml"),
                   "--platform-file /nonexistent.yaml does not exist")


def test_report_needs_validation_tables(tmp_path):
    (tmp_path / "val").mkdir()
    one_line_error(cli("report", "--validation", str(tmp_path / "val")), "holds no validation tables")


def test_unreachable_scheduler_is_one_line_within_the_timeout(env, dataset):
    out = script("validate", "--runs", str(dataset / "runs"), "--platforms", str(dataset / "platforms"),
                 "--out", str(dataset / "val"), "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "3",
                 "--published", "", env=env, timeout=90)
    one_line_error(out, "hetval validate:", "cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 3 s")


def test_track_and_compare_without_a_history_are_one_line(tmp_path):
    tiny = str(REPO / "config" / "studies" / "tiny.yaml")
    one_line_error(cli("track", "--history", str(tmp_path / "none"), "--configfile", tiny, cwd=tmp_path),
                   "hetval track:", "holds no snapshot")
    one_line_error(cli("compare", "latest", "previous", "--history", str(tmp_path / "none"), "--configfile", tiny,
                       cwd=tmp_path), "hetval compare:", "holds no snapshot")


def test_report_with_a_manifest_that_is_not_one_is_one_line(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "val").mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "val" / "runs.parquet")
    (tmp_path / "platforms").mkdir()
    (tmp_path / "bad.json").write_text("{not json")
    one_line_error(cli("report", "--validation", str(tmp_path / "val"), "--platform-dir", str(tmp_path / "platforms"),
                       "--manifest", str(tmp_path / "bad.json"), cwd=tmp_path),
                   "hetval report:", "is not a gather manifest")


def test_platform_options_are_spelt_alike_everywhere():
    for command in ("validate", "report", "attach-trace"):
        text = " ".join(cli(command, "--help").stdout.split())
        assert "--platform-file FILE [FILE ...]" in text, command
    for command in ("validate", "report"):
        assert "--platform-dir" in cli(command, "--help").stdout
