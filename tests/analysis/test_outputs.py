"""Every output opens in one line in pandas, pyarrow, Polars and DuckDB, and says what its columns are (unit and
description in the field metadata; the tightness definition in the file's metadata). The dataset directory holds
nothing but Parquet. Built from the default study's 73 real runs."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis.scoring.metrics import TIGHTNESS
from analysis.storage import dataset


@pytest.fixture(scope="module")
def outputs(default_validated):
    return default_validated


def tables(root):
    return sorted((root / "validation").glob("*.parquet"))


def test_every_column_says_what_it_is(outputs):
    missing = []
    for path in tables(outputs):
        schema = pq.read_schema(path)
        assert schema.metadata[b"hetval.tightness"].decode() == TIGHTNESS
        for field in schema:
            if not (field.metadata and field.metadata.get(b"description")):
                missing.append(f"{path.stem}.{field.name}")
    assert missing == []
    runs = pq.read_schema(outputs / "validation" / "runs.parquet")
    assert runs.field("tightness").metadata[b"unit"] == b"fraction"
    assert runs.field("perf_measured").metadata[b"unit"] == b"flop/s"
    assert runs.field("time_median_s").metadata[b"unit"] == b"s"
    assert str(runs.field("params").type).startswith("struct<")  # the run's parameters, not JSON text
    reps = runs.field("time_reps_s").type
    assert pa.types.is_list(reps) and reps.value_type == pa.float64()
    assert runs.field("size").type == "int64"


def test_each_reader_opens_every_output_in_one_line(outputs):
    import duckdb
    import pandas as pd
    import polars as pl

    for path in tables(outputs):
        n = pq.read_table(path).num_rows
        assert len(pd.read_parquet(path)) == n, path
        assert pl.read_parquet(path).height == n, path
        assert duckdb.sql(f"select count(*) from read_parquet('{path}')").fetchall()[0][0] == n, path


def test_the_dataset_directory_holds_only_parquet_and_opens_as_one_table(outputs):
    import duckdb
    import pandas as pd
    import polars as pl

    runs = outputs / "runs"
    assert {p.suffix for p in runs.rglob("*") if p.is_file()} == {".parquet"}
    n = dataset.read_runs(runs).num_rows
    assert len(pd.read_parquet(runs)) == n
    assert pl.scan_parquet(str(runs / "**" / "*.parquet"), hive_partitioning=True).collect().height == n
    assert duckdb.sql(f"select count(*) from read_parquet('{runs}/**/*.parquet', hive_partitioning = true)"
                      ).fetchall()[0][0] == n


def test_published_claims_carry_both_numbers_the_tolerance_and_the_reason(outputs):
    import pandas as pd

    claims = pd.read_parquet(outputs / "validation" / "published.parquet")
    assert {"published_value", "ours_value", "tolerance", "difference", "reason"} <= set(claims.columns)
    missed = claims[~claims["reproduced"]]
    assert len(missed) and missed["reason"].str.contains("outside the tolerance").all()
    assert claims["published_value"].notna().sum() > 200


def test_the_dataset_keeps_structured_fields_as_arrow_maps(outputs):
    import pyarrow.parquet as pq

    from analysis.storage.schema import FILE_SCHEMA

    table = dataset.read_runs(outputs / "runs")
    for f in (outputs / "runs").rglob("*.parquet"):  # as written in every file, not as read_runs casts them
        import pyarrow as pa

        versions, phases = (pq.read_schema(f).field(n).type for n in ("versions", "phase_times"))
        assert pa.types.is_map(versions) and versions.key_type == versions.item_type == pa.string(), f
        assert pa.types.is_map(phases) and pa.types.is_list(phases.item_type), f
    fdm = [dict(v) for v, c in zip(table["phase_times"].to_pylist(), table["case"].to_pylist(), strict=True)
           if c == "fdm" and v is not None]
    assert fdm and {"velocity", "stress", "loop"} <= set(fdm[0]) and isinstance(fdm[0]["loop"], list)
    assert "numpy" in dict(table["versions"][0].as_py())
    files = list((outputs / "runs").rglob("*.parquet"))
    assert all(pq.read_schema(f).metadata == FILE_SCHEMA.metadata for f in files)
