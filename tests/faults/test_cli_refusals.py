"""Every ``hetval`` command refuses bad input in one line with exit 2 - never a traceback, never exit 0 on nothing,
never writing where it was not told to: the defects a hostile user found, each a test.

A read-only or full results directory is a small tmpfs of the test's own (root only: elsewhere those tests say
they are skipped and why)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, cli


def one_line(out: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2 and no traceback; the error is one line, the last (a long step's progress lines may come first)."""
    assert out.returncode == 2, (out.returncode, out.stdout[-2000:], out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert "Traceback" not in out.stderr and lines and lines[-1].startswith("hetval "), out.stderr
    assert all(line.startswith("[hetval ") for line in lines[:-1]), out.stderr
    for n in needles:
        assert n in lines[-1], out.stderr


@pytest.fixture
def copy(default_validation, tmp_path):
    """The default study's recorded runs, gathered and validated (a copy of its own)."""
    root = tmp_path / "r"
    shutil.copytree(default_validation, root)
    return root


def test_nothing_to_work_on_is_exit_2(copy, tmp_path):
    (tmp_path / "empty").mkdir()
    runs, plat = str(copy / "runs"), str(copy / "platform.yaml")
    one_line(cli("validate", "--runs", runs, "--platform-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "v")),
             "holds no platform file")
    one_line(cli("validate", "--runs", runs, "--platform-dir", "/nonexistent", "--out", str(tmp_path / "v")),
             "does not exist")
    one_line(cli("validate", "--runs", runs, "--platform-file", plat, "--study", "nosuch", "--out",
                 str(tmp_path / "v")), "--study nosuch", "holds no run of it")
    one_line(cli("report", "--validation", str(copy / "validation"), "--platform-file", plat, "--out",
                 str(tmp_path / "rep"), "--case", "bogus"), "--case bogus", "not a registered case")
    raw = sorted((copy / "raw" / "default").glob("*.json"))
    one_line(cli("gather", str(raw[0]), "--runs", str(tmp_path / "g"), "--max-attempts", "-1"), "--max-attempts")
    one_line(cli("attach-trace", "--raw-dir", str(tmp_path / "empty"), "--trace", str(plat)), "holds no raw record")
    one_line(cli("attach-trace", "--raw-dir", "/nonexistent", "--trace", plat), "does not exist")
    assert not (tmp_path / "v").exists() and not (tmp_path / "rep").exists() and not (tmp_path / "g").exists()


@pytest.mark.parametrize(("flags", "needle"), [
    (["--clock-offset", "nan"], "clock_offset_s"),
    (["--clock-offset", "inf"], "clock_offset_s"),
    (["--min-periods", "-1"], "min_periods"),
])
def test_attach_trace_refuses_values_no_meter_has_and_rewrites_nothing(copy, flags, needle):
    trace = copy / "trace.csv"
    trace.write_text("timestamp,channel,watts\n" + "".join(f"{1.7e9 + i},clamp,{10 + i}\n" for i in range(20)))
    raw = copy / "raw" / "default"
    before = {p.name: p.read_bytes() for p in raw.glob("*.json")}
    one_line(cli("attach-trace", "--raw-dir", str(raw), "--trace", str(trace), *flags), needle)
    assert {p.name: p.read_bytes() for p in raw.glob("*.json")} == before


@pytest.mark.parametrize("out", ["/proc/x", "/sys/x", "/"])
def test_no_output_under_the_kernels_pseudo_file_systems(copy, out):
    raw = sorted((copy / "raw" / "default").glob("*.json"))[:1]
    one_line(cli("gather", *map(str, raw), "--runs", out), "--runs")
    one_line(cli("report", "--validation", str(copy / "validation"), "--platform-file", str(copy / "platform.yaml"),
                 "--out", out), "--out")
    one_line(cli("validate", "--runs", str(copy / "runs"), "--platform-file", str(copy / "platform.yaml"), "--out",
                 out), "--out")


def test_a_directory_where_a_file_goes_and_back(copy, tmp_path):
    raw = sorted((copy / "raw" / "default").glob("*.json"))[:1]
    one_line(cli("gather", *map(str, raw), "--runs", str(tmp_path / "g"), "--manifest", str(tmp_path)),
             "--manifest", "is a directory")
    assert not (tmp_path / "g").exists()  # refused before the dataset was written
    (tmp_path / "file").write_text("x")
    one_line(cli("report", "--validation", str(copy / "validation"), "--platform-file", str(copy / "platform.yaml"),
                 "--out", str(tmp_path / "file")), "is a file")


def test_a_truncated_part_is_named_by_validate(copy, tmp_path):
    part = sorted((copy / "runs").glob("study=*/case=sa/*.parquet"))[0]
    with open(part, "r+b") as fh:
        fh.truncate(100)
    one_line(cli("validate", "--runs", str(copy / "runs"), "--platform-file", str(copy / "platform.yaml"), "--out",
                 str(tmp_path / "v")), str(part), "gather again")
    assert not (tmp_path / "v").exists()


def test_compare_refuses_what_is_not_a_scorecard(copy):
    card = copy / "validation" / "scorecard.parquet"
    one_line(cli("compare", str(card), str(copy / "validation" / "runs.parquet")), "not a scorecard")
    truncated = copy / "bad" / "scorecard.parquet"
    truncated.parent.mkdir()
    truncated.write_bytes(card.read_bytes()[:200])
    one_line(cli("compare", str(card), str(truncated)), "not a readable Parquet file")


def _tmpfs(where: Path, size: str) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("SKIPPED: a read-only or full file system is a tmpfs of the test's own, which needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"SKIPPED: cannot mount a tmpfs here ({done.stderr.strip()})")


@pytest.fixture
def small_disk(tmp_path):
    """A results directory on a tmpfs of 600 KiB (unmounted after the test)."""
    where = tmp_path / "disk"
    _tmpfs(where, "600k")
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_read_only_results_directory_is_one_line_before_any_work(copy, small_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    raw = sorted((copy / "raw" / "default").glob("*.json"))
    one_line(cli("gather", *map(str, raw), "--runs", str(small_disk / "runs"), "--quarantine",
                 str(small_disk / "q"), "--retry", str(small_disk / "r")), "cannot be written")
    out = cli("validate", "--runs", str(copy / "runs"), "--platform-file", str(copy / "platform.yaml"), "--out",
              str(small_disk / "v"))
    one_line(out, "cannot be written")
    assert "cannot reach" not in out.stderr  # a closed disk is not a cluster that cannot be reached
    one_line(cli("report", "--validation", str(copy / "validation"), "--platform-file", str(copy / "platform.yaml"),
                 "--out", str(small_disk / "rep")), "cannot be written")


def test_a_full_disk_leaves_no_half_written_output(copy, small_disk):
    """Each command that runs out of space names the file, exits 2 and leaves its output directory as it was."""
    (small_disk / "filler").write_bytes(b"\0" * (560 * 1024))
    out = cli("validate", "--runs", str(copy / "runs"), "--platform-file", str(copy / "platform.yaml"), "--out",
              str(small_disk / "v"), "--published", "", "--resamples", "50")
    one_line(out, "No space left on device", str(small_disk))
    assert not (small_disk / "v").exists() or not list((small_disk / "v").iterdir())
    assert not [p for p in small_disk.iterdir() if ".staging-" in p.name]
    out = cli("report", "--validation", str(copy / "validation"), "--platform-file", str(copy / "platform.yaml"),
              "--out", str(small_disk / "rep"), "--processes", "1")
    one_line(out, "No space left on device")
    assert not (small_disk / "rep").exists() or not list((small_disk / "rep").rglob("*.*"))
    raw = sorted((copy / "raw" / "default").glob("*.json"))
    out = cli("gather", *map(str, raw), "--runs", str(small_disk / "runs"), "--quarantine", str(small_disk / "q"),
              "--retry", str(small_disk / "r"), "--manifest", str(small_disk / "gathered.json"))
    one_line(out, "No space left on device")


def test_the_same_report_and_validation_as_before_where_the_disk_has_room(copy, tmp_path):
    """Staging changes nothing in what is written: the tables and the page land where they always did."""
    out = cli("report", "--validation", str(copy / "validation"), "--platform-file", str(copy / "platform.yaml"),
              "--out", str(tmp_path / "rep"), "--processes", "1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "rep" / "index.html").exists() and list((tmp_path / "rep" / "figures").glob("*.png"))
    assert not [p for p in tmp_path.iterdir() if ".staging-" in p.name]
    summary = json.loads((copy / "validation" / "summary.json").read_text())
    assert summary["runs_ok"]



def test_report_never_writes_or_prunes_through_a_linked_figures_folder(copy, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.png").write_text("precious")
    report = tmp_path / "rep"
    report.mkdir()
    (report / "figures").symlink_to(outside)
    out = cli("report", "--validation", str(copy / "validation"), "--platform-file", str(copy / "platform.yaml"),
              "--out", str(report), "--processes", "1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert sorted(p.name for p in outside.iterdir()) == ["victim.png"] and (outside / "victim.png").read_text()
    assert not (report / "figures").is_symlink() and list((report / "figures").glob("*.png"))


@pytest.mark.parametrize("link", ["runs/study=default/case=sa", "quarantine/default", "retry/default",
                                  "raw/default"])
def test_gather_neither_reads_nor_writes_through_a_linked_folder(copy, tmp_path, link):
    from analysis.storage.dataset import Matrix

    results = tmp_path / "results"
    shutil.copytree(copy / "raw", results / "raw")
    shutil.copytree(copy / "runs", results / "runs")
    outside = tmp_path / "outside"
    target = results / link
    if target.exists():
        shutil.move(str(target), outside)
    else:
        outside.mkdir()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside)
    before = sorted(p.name for p in outside.rglob("*"))
    raw = sorted(outside.glob("*.json")) if link == "raw/default" else sorted((results / "raw" / "default").glob("*"))
    rids = [p.stem for p in raw]
    Matrix("default", dict.fromkeys(rids, "sa")).write(tmp_path / "matrix.json")
    out = cli("gather", *(str(results / "raw" / "default" / p.name) for p in raw), "--runs", str(results / "runs"),
              "--quarantine", str(results / "quarantine"), "--retry", str(results / "retry"), "--matrix",
              str(tmp_path / "matrix.json"), cwd=tmp_path)
    one_line(out, "is a symbolic link", "neither reads nor writes through one")
    assert sorted(p.name for p in outside.rglob("*")) == before


def test_validate_holds_the_worker_flags_to_the_configs_rules(copy, tmp_path):
    base = ["validate", "--runs", str(copy / "runs"), "--platform-file", str(copy / "platform.yaml"), "--out",
            str(tmp_path / "v"), "--cluster", "slurm"]
    one_line(cli(*base, "--worker-memory", "lots"), "worker_memory")
    one_line(cli(*base, "--worker-partition", "debug\ntouch /tmp/x"), "partition", "no shell syntax")
    one_line(cli(*base, "--worker-walltime", "forever"), "worker_walltime")


def test_gather_against_a_matrix_of_no_run_removes_nothing(copy, tmp_path):
    from analysis.storage.dataset import Matrix, read_runs

    Matrix("default", {}).write(tmp_path / "m.json")
    raw = sorted((copy / "raw" / "default").glob("*.json"))
    before = read_runs(copy / "runs").num_rows
    one_line(cli("gather", *map(str, raw), "--runs", str(copy / "runs"), "--quarantine", str(tmp_path / "q"),
                 "--retry", str(tmp_path / "r"), "--matrix", str(tmp_path / "m.json")), "lists no run")
    assert read_runs(copy / "runs").num_rows == before


def test_one_record_by_two_spellings_is_gathered_once(copy, tmp_path):
    raw = sorted((copy / "raw" / "default").glob("*.json"))[0]
    relative = os.path.relpath(raw, tmp_path)
    out = cli("gather", str(raw), relative, "--runs", str(tmp_path / "g"), "--quarantine", str(tmp_path / "q"),
              "--retry", str(tmp_path / "r"), cwd=tmp_path)
    assert out.returncode == 0 and "1 run(s)" in out.stdout, out.stderr[-2000:]


def test_usage_errors_are_one_line():
    for argv in (["nosuchcommand"], ["track", "--min-history", "2.5"], ["report", "--case"]):
        out = subprocess.run([sys.executable, "-m", "analysis.cli", *argv], capture_output=True, text=True,
                             timeout=120, cwd=REPO)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, (argv, out.stderr)
        assert "--help" in out.stderr


def test_attach_trace_neither_reads_nor_replaces_a_linked_record(copy, tmp_path):
    outside = tmp_path / "outside.json"
    raw = copy / "raw" / "default"
    victim = sorted(raw.glob("*.json"))[0]
    shutil.move(str(victim), outside)
    victim.symlink_to(outside)
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,channel,watts\n" + "".join(f"{1.7e9 + i},clamp,{10 + i}\n" for i in range(20)))
    cli("attach-trace", "--raw-dir", str(raw), "--trace", str(trace))
    assert victim.is_symlink() and json.loads(outside.read_text())["run_id"] == victim.stem
