"""Energy columns of run records: only what a meter measured, wrap-around handled, sub-zones not double counted."""

from __future__ import annotations

import pytest

from sims.meters import open_meter
from sims.run import _energy_rows
from sims.timing import Measurement, Repetition
from tests.sims.test_meters import zone


def test_no_meter_means_no_energy():
    m = Measurement([Repetition(1.0, [1.0, 0.5])], 1e-9)
    assert _energy_rows(None, m) is None
    assert _energy_rows(open_meter("none"), m) is None


def test_rapl_energy_per_repetition(tmp_path):
    pkg = zone(tmp_path, "0", "package-0", 9_000_000, max_uj=10_000_000)
    dram = zone(tmp_path, "0:0", "dram", 100_000, max_uj=5_000_000)
    zone(tmp_path, "0:1", "core", 50_000)
    meter = open_meter("rapl", rapl_root=str(tmp_path))
    before = meter.read()
    (pkg / "energy_uj").write_text("1000000\n")  # wrapped: 9 J -> 10 J (wrap) -> 1 J = 2 J
    (dram / "energy_uj").write_text("600000\n")  # +0.5 J
    after = meter.read()
    rows = _energy_rows(meter, Measurement([Repetition(1.0, [1.0, 1.0], before, after)], 1e-9))
    assert rows == [{"energy_j": pytest.approx(2.5), "energy_source": "rapl"}]
