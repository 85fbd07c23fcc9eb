"""Schema checks and gathering: idempotent by run_id, quarantine with reasons, failed runs, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from analysis.storage import dataset
from analysis.storage.schema import FILE_SCHEMA, RUN_SCHEMA, RecordError, check_record
from sims.record import FIELDS, write_raw


def record(run_id: str = "a" * 16, rep: int = 0, **kw) -> dict:
    rec = {name: None for name, _, _ in FIELDS}
    rec.update(
        run_id=run_id, study="s", case="sa", variant="CO", params="{}", platform="p", ranks=2, rep=rep,
        status="ok", time_s=0.5 + rep, flops=100, bytes=10, energy_source="none",
        started_at="2026-11-22T03:00:00.000000Z", hostname="h", versions="{}", config_hash="c",
    )
    rec.update(kw)
    return rec


def write(raw_dir: Path, run_id: str, reps: int = 3, **kw) -> Path:
    path = raw_dir / "s" / f"{run_id}.json"
    write_raw(path, run_id, [record(run_id, r, **kw) for r in range(reps)])
    return path


@pytest.fixture
def dirs(tmp_path):
    return {k: tmp_path / k for k in ("raw", "runs", "quarantine", "retry")}


def gather(dirs, files):
    return dataset.gather(files, dirs["runs"], dirs["quarantine"], dirs["retry"], log=lambda *_: None)


def test_check_record_accepts_and_normalises():
    out = check_record(record())
    assert out["started_at"].tzinfo is not None
    assert out["time_s"] == 0.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ranks": "two"}, "field 'ranks': expected an integer"),
        ({"time_s": "fast"}, "field 'time_s': expected a number"),
        ({"rep": True}, "field 'rep': expected an integer"),
        ({"status": "maybe"}, "field 'status'"),
        ({"energy_source": "guess"}, "field 'energy_source'"),
        ({"hostname": None}, "required field 'hostname'"),
        ({"started_at": "yesterday"}, "not an ISO 8601 time"),
        ({"started_at": "2026-11-22T03:00:00"}, "no time zone"),
        ({"extra": 1}, "unknown field(s): extra"),
        ({"time_s": None}, "positive 'time_s'"),
        ({"energy_j": 3.0}, "energy_source is 'none'"),
        ({"status": "failed", "error": None}, "needs its 'error'"),
    ],
)
def test_check_record_rejects(change, message):
    rec = record()
    rec.update(change)
    with pytest.raises(RecordError) as err:
        check_record(rec)
    assert message in str(err.value)


def test_gather_writes_hive_partition_with_the_schema(dirs):
    files = [write(dirs["raw"], "a" * 16), write(dirs["raw"], "b" * 16)]
    res = gather(dirs, files)
    assert (res.runs, res.records) == (2, 6)
    parts = sorted((dirs["runs"] / "study=s" / "case=sa").glob("*.parquet"))
    assert [p.name for p in parts] == ["part-a.parquet", "part-b.parquet"]  # one bucket per first hex digit
    assert all(pq.read_schema(p).remove_metadata().equals(FILE_SCHEMA) for p in parts)
    table = dataset.read_runs(dirs["runs"])
    assert table.schema.equals(RUN_SCHEMA)
    assert table.num_rows == 6
    assert set(table["study"].to_pylist()) == {"s"}


def test_gather_is_idempotent_and_replaces_by_run_id(dirs):
    files = [write(dirs["raw"], "a" * 16), write(dirs["raw"], "b" * 16)]
    gather(dirs, files)
    first = dataset.read_runs(dirs["runs"])
    gather(dirs, files)
    again = dataset.read_runs(dirs["runs"])
    assert again.equals(first)
    # a run redone with fewer repetitions replaces all of its rows
    write(dirs["raw"], "a" * 16, reps=2, time_s=9.0)
    gather(dirs, [dirs["raw"] / "s" / ("a" * 16 + ".json")])
    table = dataset.read_runs(dirs["runs"]).to_pandas()
    assert len(table) == 5
    assert table[table.run_id == "a" * 16]["time_s"].tolist() == [9.0, 9.0]
    assert not table.duplicated(["run_id", "rep"]).any()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"run_id": "cccccccccccccccc", "records": [{"run_id": "ccc', "not valid JSON"),
        (None, "field 'ranks': expected an integer"),
    ],
)
def test_bad_record_is_quarantined_with_reason(dirs, content, reason):
    good = write(dirs["raw"], "a" * 16)
    bad = dirs["raw"] / "s" / ("c" * 16 + ".json")
    if content is None:
        write(dirs["raw"], "c" * 16, ranks="2")  # bypasses nothing: write_raw checks presence, not types
    else:
        bad.write_text(content)
    res = gather(dirs, [good, bad])
    moved = dirs["quarantine"] / "s" / bad.name
    assert moved.read_bytes() == bad.read_bytes()
    retry = json.loads((dirs["retry"] / "s" / ("c" * 16 + ".json")).read_text())
    assert retry["run_id"] == "c" * 16 and "quarantined" in retry["why"]
    assert moved.exists()
    why = (dirs["quarantine"] / "s" / f"{bad.name}.reason.txt").read_text()
    assert reason in why
    assert [q["file"] for q in res.quarantined] == [str(moved)]
    assert dataset.read_runs(dirs["runs"]).num_rows == 3


def test_failed_run_is_kept_in_dataset_and_a_retry_requested(dirs):
    path = dirs["raw"] / "s" / ("f" * 16 + ".json")
    write_raw(path, "f" * 16, [record("f" * 16, 0, status="failed", error="boom", time_s=None)])
    res = gather(dirs, [path])
    assert res.failed_runs == ["f" * 16]
    assert "failed: boom" in (dirs["retry"] / "s" / ("f" * 16 + ".json")).read_text()
    table = dataset.read_runs(dirs["runs"]).to_pandas()
    assert table["status"].tolist() == ["failed"]
    # the retry succeeds: its rows replace the failed one
    gather(dirs, [write(dirs["raw"], "f" * 16)])
    table = dataset.read_runs(dirs["runs"]).to_pandas()
    assert table["status"].tolist() == ["ok"] * 3


def test_interrupted_write_leaves_old_dataset_intact(dirs, monkeypatch):
    files = [write(dirs["raw"], "a" * 16)]
    gather(dirs, files)
    before = dataset.read_runs(dirs["runs"])

    def crash(table, where, *a, **k):
        Path(where).write_bytes(b"PAR1 partial")
        raise OSError("disk full")

    import pyarrow.parquet as pq

    monkeypatch.setattr(pq, "write_table", crash)
    with pytest.raises(OSError, match="disk full"):
        gather(dirs, [write(dirs["raw"], "b" * 16)])
    monkeypatch.undo()
    assert dataset.read_runs(dirs["runs"]).equals(before)
    assert not list(dirs["runs"].rglob("*.tmp"))


def test_file_name_must_match_run_id(dirs):
    path = dirs["raw"] / "s" / ("d" * 16 + ".json")
    write_raw(path, "e" * 16, [record("e" * 16)])
    res = gather(dirs, [path])
    assert "does not match its run_id" in res.quarantined[0]["reason"]


def test_write_raw_is_atomic_and_checks_required(tmp_path):
    with pytest.raises(ValueError, match="missing required fields: hostname"):
        write_raw(tmp_path / "x.json", "x", [record(hostname=None)])
    assert not list(tmp_path.iterdir())
    write_raw(tmp_path / "x.json", "x", [record("x")])
    assert json.loads((tmp_path / "x.json").read_text())["run_id"] == "x"


def test_one_new_run_rewrites_only_its_bucket_and_a_run_lives_in_one_file(dirs):
    ids = [f"{c}{i:015x}" for c in "0a5f" for i in range(3)]
    gather(dirs, [write(dirs["raw"], rid) for rid in ids])
    part = dirs["runs"] / "study=s" / "case=sa"
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in part.glob("*.parquet")}
    assert sorted(before) == ["part-0.parquet", "part-5.parquet", "part-a.parquet", "part-f.parquet"]
    res = gather(dirs, [write(dirs["raw"], "5" + "e" * 15)])
    assert res.partitions_written == [str(part / "part-5.parquet")]
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in part.glob("*.parquet")}
    assert {n for n in after if after[n] != before.get(n)} == {"part-5.parquet"}
    for p in part.glob("*.parquet"):
        assert {r[0] for r in pq.read_table(p, columns=["run_id"])["run_id"].to_pylist()} <= {p.stem[-1]}
    assert dataset.read_runs(dirs["runs"]).num_rows == 3 * 13


def test_a_partition_in_the_one_file_layout_is_split_into_buckets(dirs):
    files = [write(dirs["raw"], rid) for rid in ("1" * 16, "2" * 16, "3" * 16)]
    gather(dirs, files)
    part = dirs["runs"] / "study=s" / "case=sa"
    legacy = dataset.read_runs(dirs["runs"])
    for p in part.glob("*.parquet"):
        p.unlink()
    pq.write_table(legacy.drop_columns(["study", "case"]).cast(FILE_SCHEMA), part / "part.parquet")
    gather(dirs, [write(dirs["raw"], "2" * 16)])  # the newer record of run 22...: replaces the old rows
    assert sorted(p.name for p in part.glob("*.parquet")) == ["part-1.parquet", "part-2.parquet", "part-3.parquet"]
    table = dataset.read_runs(dirs["runs"])
    assert table.num_rows == 9 and len(set(zip(table["run_id"].to_pylist(), table["rep"].to_pylist(), strict=True))) == 9
