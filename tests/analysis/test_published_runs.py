"""Published measurements (PEACH Table VIII) as run records, and their validation."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from analysis.cases import published as published_runs
from analysis.storage.schema import check_record

TABLE = "peach-2014-table-viii"


def test_records_follow_the_contract():
    recs = published_runs.records(TABLE, "s")
    assert len(recs) == 12 and sorted(recs) == published_runs.run_ids(TABLE, "s")
    for run_id, (r,) in recs.items():
        check_record(r)  # the run-record schema: nothing outside the contract
        assert r["run_id"] == run_id and r["energy_source"] == "published" and r["case"] == "published"
        assert r["time_s"] > 0 and r["energy_j"] > 0 and r["status"] == "ok"
    # ids are stable and depend on the study
    assert published_runs.run_ids(TABLE, "s") == published_runs.run_ids(TABLE, "s")
    assert set(published_runs.run_ids(TABLE, "t")).isdisjoint(published_runs.run_ids(TABLE, "s"))


def test_validation_of_published_predictions():
    df = pd.DataFrame([r for rs in published_runs.records(TABLE, "s").values() for r in rs])
    runs, fid = published_runs.validate_runs(df)
    mm = runs[(runs["application"] == "MatrixMultiply (3200x3200)") & (runs["variant"] == "distribution/performance")].iloc[0]
    assert mm["rate_error"] == pytest.approx(1332 / 1238 - 1)
    assert mm["tightness_time"] == pytest.approx((1 / 1332) / (1 / 1238))
    # MatrixTranspose, DVFS, energy: measured at (2.4 GHz, 324 MHz), predicted at (2.5 GHz, 705 MHz)
    assert not runs[runs["rate_error"] > 0.08]["same_configuration"].any()
    assert len(fid) == 6 and set(fid["axis"]) == {"strategy by time", "strategy by energy"}
    assert (fid["top1_agreement"] == 1.0).all()


def test_bad_table_names_the_key(tmp_path):
    (tmp_path / "x.yaml").write_text(yaml.safe_dump({"paper": "p", "table": "t", "platform": "q", "rows": []}))
    with pytest.raises(ValueError, match="missing key 'applications'"):
        published_runs.load_table("x", tmp_path)
