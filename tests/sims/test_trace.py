"""External power-meter traces: parsing, exact integrals, clock offsets, uncovered windows, clear errors."""

from __future__ import annotations

import pytest

from sims.meters import MeterUnavailable, TraceError, TraceMeter, integrate, open_meter, read_trace


def write(tmp_path, text, name="trace.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


RAMP = "timestamp,channel,watts\n" + "".join(f"{100 + i},clamp,{10 * i}\n" for i in range(11)) + \
       "".join(f"{100 + 2 * i},wall,50\n" for i in range(6))


def test_known_integrals(tmp_path):
    ch = read_trace(write(tmp_path, RAMP))
    # power 10 (t - 100) W: integral over [101, 105] = 5 (25 - 1) = 120 J; ends interpolated
    assert integrate(ch["clamp"], 101.0, 105.0) == pytest.approx(120.0)
    assert integrate(ch["clamp"], 101.5, 102.5) == pytest.approx(20.0)  # mid-sample window, linear power
    assert integrate(ch["wall"], 100.0, 110.0) == pytest.approx(500.0)
    assert integrate(ch["wall"], 103.0, 103.0) == 0.0
    assert ch["wall"].period_s == pytest.approx(2.0)


def test_uncovered_window_is_refused_not_extrapolated(tmp_path):
    ch = read_trace(write(tmp_path, RAMP))
    with pytest.raises(TraceError, match="not covered"):
        integrate(ch["clamp"], 99.0, 101.0)
    with pytest.raises(TraceError, match="not covered"):
        integrate(ch["clamp"], 109.0, 111.0)


def test_iso_timestamps_and_extra_columns(tmp_path):
    text = ("watts,timestamp,channel,note\n"
            "100,2026-01-01T00:00:00Z,w,a\n100,2026-01-01T00:00:10+00:00,w,b\n300,2026-01-01T00:00:20,w,c\n")
    ch = read_trace(write(tmp_path, text))["w"]
    t0 = ch.t[0]
    assert integrate(ch, t0, t0 + 20) == pytest.approx(1000 + 2000)


@pytest.mark.parametrize("text, match", [
    ("", "empty file"),
    ("time,channel,watts\n1,a,2\n", "lacks column"),
    ("timestamp,channel,watts\n1,a,x\n", "line 2: watts 'x' is not a number"),
    ("timestamp,channel,watts\n1,a,1\nnot-a-time,a,2\n", "line 3: timestamp"),
    ("timestamp,channel,watts\n1,a,-3\n", "must be finite and >= 0"),
    ("timestamp,channel,watts\n1,a,1\n1,a,2\n", "same timestamp"),
    ("timestamp,channel,watts\n", "no samples"),
])
def test_malformed_traces_name_the_problem(tmp_path, text, match):
    with pytest.raises(TraceError, match=match):
        read_trace(write(tmp_path, text))


def test_trace_meter_offset_and_mapping(tmp_path):
    p = write(tmp_path, RAMP)
    # the meter's clock runs 100 s ahead of the host's: host window [1, 5] is trace [101, 105]
    m = TraceMeter(str(p), clock_offset_s=100.0, channels={"clamp": "host", "wall": "node"})
    assert m.update_period_s == pytest.approx(2.0)  # the slowest mapped channel
    assert m.energy_between(1.0, 5.0) == {"clamp": pytest.approx(120.0), "wall": pytest.approx(200.0)}
    assert m.energy_between(None, 5.0) is None
    with pytest.raises(TraceError):
        m.energy_between(1.0, 50.0)


def test_trace_meter_reloads_a_growing_file(tmp_path):
    p = write(tmp_path, "timestamp,channel,watts\n0,w,10\n1,w,10\n")
    m = TraceMeter(str(p))
    with pytest.raises(TraceError):
        m.energy_between(0.0, 3.0)
    import os

    p.write_text("timestamp,channel,watts\n0,w,10\n1,w,10\n2,w,10\n3,w,10\n")
    os.utime(p, ns=(1, 10**18))
    assert m.energy_between(0.0, 3.0) == {"w": pytest.approx(30.0)}


def test_trace_meter_configuration_errors(tmp_path):
    p = write(tmp_path, RAMP)
    with pytest.raises(MeterUnavailable, match="not in the file"):
        TraceMeter(str(p), channels={"nope": "host"})
    with pytest.raises(MeterUnavailable, match="each channel maps to one of host, accel, node"):
        TraceMeter(str(p), channels={"clamp": "gpu"})
    with pytest.raises(MeterUnavailable, match="cannot open"):
        TraceMeter(str(tmp_path / "missing.csv"))
    with pytest.raises(MeterUnavailable, match="needs energy.trace"):
        open_meter("trace")
    assert open_meter("trace", trace={"path": str(p)}).source == "trace"
