"""Energy meters: RAPL from a fake powercap tree (incl. wrap-around), NVML via a fake module, fallback."""

import sys
import types

import pytest

from sims import meters
from sims.meters import MeterUnavailable, NoneMeter, NvmlMeter, RaplMeter, energy_between, total_joules


def zone(root, zid, name, uj, max_uj=262143328850):
    d = root / f"intel-rapl:{zid}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d


def test_none_meter():
    m = NoneMeter()
    assert m.source == "none" and m.read() is None
    assert m.energy_between(m.read(), m.read()) is None
    assert total_joules(None) is None


def test_unavailable_meters_say_why(tmp_path, monkeypatch):
    with pytest.raises(MeterUnavailable):
        RaplMeter(str(tmp_path))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(RuntimeError, match="pynvml"):
        NvmlMeter(0)


def test_rapl_channels_deltas_and_wraparound(tmp_path):
    z0 = zone(tmp_path, "0", "package-0", 1_000_000, max_uj=10_000_000)
    zd = zone(tmp_path, "0:0", "dram", 500_000, max_uj=5_000_000)
    zone(tmp_path, "0:1", "core", 200_000)
    m = RaplMeter(str(tmp_path))
    assert m.source == "rapl"
    assert set(m.channels) == {"package-0", "package-0:dram", "package-0:core"}
    before = m.read()
    assert before["package-0"] == pytest.approx(1.0)
    (z0 / "energy_uj").write_text("3500000\n")  # +2.5 J
    (zd / "energy_uj").write_text("100000\n")  # wrapped: 5.0 - 0.5 + 0.1 = 4.6 J
    after = m.read()
    e = m.energy_between(before, after)
    assert e["package-0"] == pytest.approx(2.5)
    assert e["package-0:dram"] == pytest.approx(4.6)
    assert e["package-0:core"] == pytest.approx(0.0)
    assert total_joules(e) == pytest.approx(7.1)  # core is inside the package: not added


def test_rapl_skips_unreadable_zones(tmp_path):
    zone(tmp_path, "0", "package-0", 10)
    z1 = zone(tmp_path, "1", "package-1", 10)
    (z1 / "energy_uj").unlink()
    m = meters.RaplMeter(str(tmp_path))
    assert m.channels == ("package-0",)


def test_energy_between_backwards_without_range_is_error():
    with pytest.raises(ValueError, match="backwards"):
        energy_between({"x": 5.0}, {"x": 1.0})
    assert energy_between({"x": 5.0}, {"x": 1.0}, {"x": 10.0}) == {"x": 6.0}


class FakeNvml(types.ModuleType):
    def __init__(self, supported=True):
        super().__init__("pynvml")
        self.energy_mj = 1_000_000
        self.supported = supported
        self.inited = 0

    def nvmlInit(self):
        self.inited += 1

    def nvmlShutdown(self):
        self.inited -= 1

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("handle", i)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.supported:
            raise RuntimeError("Not Supported")
        return self.energy_mj


def test_nvml_meter_with_fake_module(monkeypatch, tmp_path):
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    m = NvmlMeter(1)
    assert m.source == "nvml" and m.channels == ("gpu1",)
    before = m.read()
    fake.energy_mj += 12_345
    e = m.energy_between(before, m.read())
    assert e == {"gpu1": pytest.approx(12.345)}
    assert total_joules(e) == pytest.approx(12.345)
    m.close()
    assert fake.inited == 0
    with pytest.raises(MeterUnavailable, match="does not exist"):
        NvmlMeter(5)


def test_nvml_unsupported_counter_is_refused(monkeypatch):
    fake = FakeNvml(supported=False)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with pytest.raises(MeterUnavailable, match="total-energy"):
        NvmlMeter(0)
    assert fake.inited == 0
