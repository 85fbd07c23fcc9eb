"""Attribution of measured energy to processors: each channel counted once, shared sockets stay node-level."""

from __future__ import annotations

import pytest

from sims.meters.base import MeterUnavailable
from sims.meters.node import EnergySettings, RankMeters, attribute


def desc(rank, role, host="n1", packages=(0,), backend="numpy", meters=None, node_rank=None):
    return {"rank": rank, "role": role, "host": host, "node_rank": rank if node_rank is None else node_rank,
            "backend": backend, "packages": None if packages is None else list(packages),
            "meters": meters or {}, "notes": []}


RAPL = {"rapl": {"source": "rapl", "scope": "node", "channels": ["package-0", "package-1"], "update_period_s": 1e-3}}


def test_shared_socket_is_node_energy_counted_once():
    ranks = [desc(0, "host", meters=RAPL), desc(1, "accel", node_rank=1)]
    row = attribute(ranks, [{"rapl": {"package-0": 30.0, "package-1": 5.0}}, {}])
    assert row["energy_j"] == pytest.approx(35.0)
    assert row["energy_host_j"] is None and row["energy_accel_j"] is None
    assert row["energy_source"] == "rapl"
    ch = row["energy_detail"]["channels"]
    assert ch["n1/package-0"]["to"] == "node" and "share this socket" in ch["n1/package-0"]["why"]
    assert ch["n1/package-1"]["to"] == "node" and "idle socket" in ch["n1/package-1"]["why"]


def test_separate_sockets_are_attributed_per_processor():
    ranks = [desc(0, "host", packages=(0,), meters=RAPL), desc(1, "accel", packages=(1,), node_rank=1)]
    row = attribute(ranks, [{"rapl": {"package-0": 30.0, "package-1": 20.0, "package-0:dram": 4.0}}, {}])
    assert row["energy_host_j"] == pytest.approx(34.0)
    assert row["energy_accel_j"] == pytest.approx(20.0)
    assert row["energy_j"] == pytest.approx(54.0)


def test_unpinned_rank_makes_sockets_node_level():
    ranks = [desc(0, "host", packages=None, meters=RAPL), desc(1, "accel", packages=(1,), node_rank=1)]
    row = attribute(ranks, [{"rapl": {"package-0": 1.0, "package-1": 1.0}}, {}])
    assert row["energy_host_j"] is None and row["energy_j"] == 2.0
    assert "not pinned" in row["energy_detail"]["channels"]["n1/package-0"]["why"]


def test_gpu_rank_and_two_hosts():
    nvml = {"nvml": {"source": "nvml", "scope": "device", "channels": ["gpu0"], "update_period_s": 0.1}}
    ranks = [desc(0, "host", host="a", meters=RAPL),
             desc(1, "accel", host="b", backend="cupy", meters={**RAPL, **nvml})]
    row = attribute(ranks, [{"rapl": {"package-0": 10.0}},
                            {"rapl": {"package-0": 7.0}, "nvml": {"gpu0": 100.0}}])
    # host b's socket runs only the GPU-driving rank: hosting work, on the host side
    assert row["energy_host_j"] == pytest.approx(17.0)
    assert row["energy_accel_j"] == pytest.approx(100.0)
    assert row["energy_j"] == pytest.approx(117.0)
    assert row["energy_source"] == "nvml+rapl"


def test_trace_mapping_refusal_and_lengthened_regions():
    tr = {"trace": {"source": "trace", "scope": "external", "channels": ["a", "b", "w"], "update_period_s": 1.0,
                    "mapping": {"a": "host", "b": "accel", "w": "node"}}}
    ranks = [desc(0, "host", meters=tr), desc(1, "accel", node_rank=1)]
    row = attribute(ranks, [{"trace": {"a": 40.0, "b": 60.0, "w": 10.0}}, {}], inner=10, lengthened_why="x")
    assert (row["energy_host_j"], row["energy_accel_j"], row["energy_j"]) == pytest.approx((4.0, 6.0, 11.0))
    assert row["energy_detail"]["executions_per_region"] == 10 and row["energy_detail"]["region"] == "x"
    refused = attribute(ranks, [{"trace": {"refused": "trace: window not covered"}}, {}])
    assert refused["energy_j"] is None and refused["energy_source"] == "none"
    assert refused["energy_detail"]["refused"] == ["trace: window not covered"]


def test_settings_errors_name_the_key():
    with pytest.raises(ValueError, match="energy: unknown key"):
        EnergySettings.from_spec({"metre": "rapl"})
    with pytest.raises(ValueError, match="energy.short_region"):
        EnergySettings.from_spec({"short_region": "stretch"})
    with pytest.raises(ValueError, match=r"energy.meter must be one of auto, nvml, rapl, trace, none, got 'wattmeter'"):
        EnergySettings.from_spec({"meter": "wattmeter"})
    with pytest.raises(MeterUnavailable, match="energy.trace"):  # the meter itself says what it lacks
        RankMeters(EnergySettings.from_spec({"meter": "trace"}), "host", "n1", 0, 0).open()


def test_meters_come_from_the_registry_like_cases_and_models():
    from sims.meters import registry
    from sims.meters.base import Meter

    found = registry.meters()
    assert list(found) == ["nvml", "rapl", "trace"] == list(registry.names())
    assert all(issubclass(cls, Meter) and cls.source == name for name, cls in found.items())
    assert [n for n, cls in found.items() if cls.auto] == ["nvml", "rapl"]  # a trace must be asked for
    assert registry.kinds() == ("auto", "nvml", "rapl", "trace", "none")


def test_rank_meters_open_only_what_this_rank_reads(tmp_path):
    from tests.sims.test_meters import zone

    zone(tmp_path, "0", "package-0", 1_000_000)
    s = EnergySettings.from_spec({"meter": "auto", "rapl_root": str(tmp_path)})
    leader = RankMeters(s, "host", "n1", 0, 0).open()
    other = RankMeters(s, "accel", "n1", 1, 1).open()
    assert list(leader.meters) == ["rapl"] and not other.meters
    assert leader.update_period_s == pytest.approx(1e-3)
    none = RankMeters(EnergySettings.from_spec({"meter": "none"}), "host", "n1", 0, 0).open()
    assert not none.meters and none.update_period_s == 0.0
    with pytest.raises(Exception, match="no RAPL zones"):
        RankMeters(EnergySettings.from_spec({"meter": "rapl", "rapl_root": str(tmp_path / "x")}),
                   "host", "n1", 0, 0).open()


def test_lengthened_regions_span_the_window_even_when_the_first_execution_is_slow():
    """The execution count is probed until the region spans the meter's window, not extrapolated from one execution."""
    import time

    from mpi4py import MPI

    from sims.timing import measure

    calls = []

    def work():  # the first execution takes 50 ms (a cold library), the others 5 ms
        time.sleep(0.05 if not calls else 0.005)
        calls.append(1)

    m = measure(MPI.COMM_SELF, work, lambda: None, warmup=0, repetitions=3, min_region_factor=1.0,
                min_window_s=0.05)
    assert m.inner >= 10
    for r in m.repetitions:
        assert r.wall_s[1] - r.wall_s[0] >= 0.05


def test_a_run_over_two_nodes_sums_each_nodes_leader_and_records_each_node():
    # one leader per node reads its node's RAPL; each node's host rank is pinned to its own socket
    ranks = [desc(0, "host", host="n1", meters=RAPL), desc(1, "host", host="n2", node_rank=0, meters=RAPL)]
    row = attribute(ranks, [{"rapl": {"package-0": 30.0, "package-1": 2.0}},
                            {"rapl": {"package-0": 20.0, "package-1": 3.0}}])
    assert row["energy_j"] == pytest.approx(55.0)
    nodes = row["energy_detail"]["nodes"]
    assert set(nodes) == {"n1", "n2"}
    assert nodes["n1"]["joules"] == pytest.approx(32.0) and nodes["n2"]["joules"] == pytest.approx(23.0)
    assert sum(n["joules"] for n in nodes.values()) == pytest.approx(row["energy_j"])
    for n in nodes.values():
        assert n["host"] + n["accel"] + n["node"] == pytest.approx(n["joules"])
