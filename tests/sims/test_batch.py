"""sims.batch: several runs in one job, each under the guard and writing its own record; a run that writes none
is recorded as failed and the next one still runs."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO


def entry(tmp_path, name: str, command: str) -> dict:
    spec = {"study": "s", "case": "sa", "variant": "CO", "platform": "p", "run_id": name, "ranks": 2}
    return {"record": str(tmp_path / "raw" / f"{name}.json"), "spec": spec, "ranks": 2, "estimate_mb": 100.0,
            "command": command, "log": str(tmp_path / "logs" / f"{name}.log")}


def test_each_run_writes_its_record_and_a_run_that_dies_is_recorded_failed(tmp_path):
    (tmp_path / "raw").mkdir()
    write = "import json, sys; open(sys.argv[1], 'w').write(json.dumps({'run_id': sys.argv[2], 'records': []}))"
    runs = [entry(tmp_path, "aaaaaaaaaaaaaaaa", f"{sys.executable} -c \"{write}\" {tmp_path}/raw/aaaaaaaaaaaaaaaa.json a"),
            entry(tmp_path, "bbbbbbbbbbbbbbbb", f"{sys.executable} -c 'import sys; print(\"dying\"); sys.exit(3)'"),
            entry(tmp_path, "cccccccccccccccc", f"{sys.executable} -c \"{write}\" {tmp_path}/raw/cccccccccccccccc.json c")]
    out = subprocess.run([sys.executable, "-m", "sims.batch", "--runs", json.dumps(runs)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "run 3/3" in out.stdout and "3 run(s) recorded" in out.stdout
    failed = json.loads((tmp_path / "raw" / "bbbbbbbbbbbbbbbb.json").read_text())
    assert failed["records"][0]["status"] == "failed" and "exited with status 3" in failed["records"][0]["error"]
    assert (tmp_path / "raw" / "cccccccccccccccc.json").exists()  # the run after the failure still ran
    assert "dying" in (tmp_path / "logs" / "bbbbbbbbbbbbbbbb.log").read_text()  # each run its own log


def test_a_bad_batch_is_one_line():
    out = subprocess.run([sys.executable, "-m", "sims.batch", "--runs", '[{"record": "x"}]'], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "an entry lacks" in out.stderr and "Traceback" not in out.stderr


def test_a_launch_that_dies_at_once_writing_nothing_is_started_once_more(tmp_path):
    """An MPI start-up failing on one rank (exit 15 at once, no record): the guard starts the command again."""
    record, marker = tmp_path / "r.json", tmp_path / "first-launch"
    code = (f"import os, sys, json\nif not os.path.exists({str(marker)!r}):\n    open({str(marker)!r}, 'w').close()\n"
            f"    sys.exit(15)\nopen({str(record)!r}, 'w').write(json.dumps({{'run_id': 'x', 'records': []}}))")
    script = tmp_path / "flaky.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, "-m", "sims.guard", "--record", str(record), "--spec", "{}", "--", sys.executable,
                          str(script)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "starting it again (2 of 2)" in out.stderr, out.stderr
    assert json.loads(record.read_text())["run_id"] == "x"  # the second launch's own record, not a failed one
