"""The same answers, kept across any change of the engine's structure: the validation of a fixed set of recorded
runs (analysis/resources/reference/default-records.json.gz, the default study's real measurements, and the platform file beside
them) gives the tables stored in tests/data/same-answers/, as the code before the redesign wrote them.

Every value is compared: text, integers, booleans and NaN positions exactly; floats to 1e-12 relative (the code
is deterministic - two validations here agree to the last bit - but a reduction NumPy vectorises may sum in
another order on another processor). A change that means to change an answer says so by writing the tables
anew (``HETVAL_WRITE_SAME_ANSWERS=1 pytest tests/analysis/test_same_answers.py``) and committing them with it.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO

STORED = REPO / "tests" / "data" / "same-answers"
TABLES = sorted(p.name for p in STORED.glob("*.parquet"))


def test_the_stored_tables_are_every_table_validation_writes(default_validation):
    written = sorted(p.name for p in (default_validation / "validation").glob("*.parquet"))
    if os.environ.get("HETVAL_WRITE_SAME_ANSWERS") == "1":
        STORED.mkdir(parents=True, exist_ok=True)
        for old in STORED.glob("*.parquet"):  # the spreads the answers were computed with stay
            old.unlink()
        for name in written:
            shutil.copy(default_validation / "validation" / name, STORED / name)
        pytest.skip("the tables were written anew: commit tests/data/same-answers/ with the change that meant it")
    assert written == TABLES


def _equal(name: str, a: pa.ChunkedArray, b: pa.ChunkedArray) -> None:
    assert a.type == b.type, (name, a.type, b.type)
    if pa.types.is_floating(a.type):
        x, y = a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=0.0, equal_nan=True, err_msg=name)
    elif pa.types.is_list(a.type) or pa.types.is_large_list(a.type):
        assert len(a) == len(b), name
        for i, (u, v) in enumerate(zip(a.to_pylist(), b.to_pylist(), strict=True)):
            if u is None or v is None:
                assert u is v, (name, i)
            else:
                np.testing.assert_allclose(np.asarray(u, dtype=float), np.asarray(v, dtype=float), rtol=1e-12,
                                           atol=0.0, equal_nan=True, err_msg=f"{name}[{i}]")
    else:
        assert a.equals(b), name


@pytest.mark.parametrize("table", TABLES)
def test_validation_gives_the_same_table(default_validation, table):
    got = pq.read_table(default_validation / "validation" / table)
    want = pq.read_table(STORED / table)
    assert got.column_names == want.column_names, table
    assert got.num_rows == want.num_rows, table
    for c in want.column_names:
        _equal(f"{table}:{c}", got[c], want[c])
    # the units and descriptions every reader sees
    assert [got.schema.field(c).metadata for c in got.column_names] == [
        want.schema.field(c).metadata for c in want.column_names], table
