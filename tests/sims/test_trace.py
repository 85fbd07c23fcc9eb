"""External power-meter traces: parsing, exact integrals, clock offsets, uncovered windows, clear errors."""

from __future__ import annotations

import pytest

from sims.meters import MeterUnavailable, TraceError, TraceMeter, integrate, read_trace


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
    assert TraceMeter(path=str(p)).source == "trace"


def test_live_trace_partial_lines_and_waiting_for_the_window_end(tmp_path):
    """A logger appending while the run reads: half-written lines wait, a just-ended window is waited for."""
    import threading
    import time

    p = tmp_path / "live.csv"
    now = time.time()
    p.write_text("timestamp,channel,watts\n" + "".join(f"{now - 2 + 0.1 * i:.3f},w,20\n" for i in range(20)))
    m = TraceMeter(str(p), wait_s=3.0)
    assert m.update_period_s == pytest.approx(0.1, rel=1e-3)
    with open(p, "a") as fh:  # a sample half written: not read until its newline arrives
        fh.write(f"{now:.3f},w,2")
    assert m._load()["w"].t.size == 20
    with open(p, "a") as fh:
        fh.write("0\n")
    assert m._load()["w"].w[-1] == 20.0 and m._load()["w"].t.size == 21

    def logger():  # the meter's next samples arrive 0.3 s after the window ended
        time.sleep(0.3)
        with open(p, "a") as fh:
            fh.write("".join(f"{now + 0.1 * i:.3f},w,20\n" for i in range(1, 6)))

    t = threading.Thread(target=logger)
    t.start()
    t_end = now + 0.35
    while time.time() < t_end:
        time.sleep(0.01)
    e = m.energy_between(now - 1.0, t_end)
    t.join()
    assert e["w"] == pytest.approx(20 * 1.35, rel=1e-6)
    # an old window the trace will never cover is refused at once, without waiting
    t0 = time.perf_counter()
    with pytest.raises(TraceError, match="not covered"):
        m.energy_between(now - 100.0, now - 99.0)
    assert time.perf_counter() - t0 < 0.5


def test_live_trace_waits_no_longer_than_wait_s(tmp_path):
    import time

    now = time.time()
    p = write(tmp_path, "timestamp,channel,watts\n" + "".join(f"{now - 1 + 0.1 * i:.3f},w,5\n" for i in range(10)))
    m = TraceMeter(str(p), wait_s=0.3)
    t0 = time.perf_counter()
    with pytest.raises(TraceError, match="not covered"):
        m.energy_between(now - 0.5, time.time())
    assert 0.2 < time.perf_counter() - t0 < 2.0


def test_trace_replaced_or_truncated_is_read_again(tmp_path):
    import os

    p = write(tmp_path, "timestamp,channel,watts\n0,w,10\n1,w,10\n2,w,10\n")
    m = TraceMeter(str(p))
    assert m.energy_between(0.0, 2.0) == {"w": pytest.approx(20.0)}
    q = write(tmp_path, "timestamp,channel,watts\n0,w,1\n1,w,1\n", name="new.csv")
    os.replace(q, p)  # the logger rotated its file: shorter, another inode
    assert m.energy_between(0.0, 1.0) == {"w": pytest.approx(1.0)}


def test_hand_written_trace_without_final_newline(tmp_path):
    import os

    p = write(tmp_path, "timestamp,channel,watts\n0,w,10\n1,w,10\n2,w,30")
    os.utime(p, (1, 1))  # written long ago: its last line is complete
    assert TraceMeter(str(p)).energy_between(1.0, 2.0) == {"w": pytest.approx(20.0)}


@pytest.mark.parametrize("text, match", [
    ("timestamp,channel,watts\n1,a,1\nnan,a,2\n3,a,1\n", "line 3: timestamp 'nan' is not a finite time"),
    ("timestamp,channel,watts\n1,a,1\ninf,a,2\n", "line 3: timestamp 'inf'"),
    ("timestamp,channel,watts\n1,a,1\n2,a,nan\n", "line 3: watts 'nan' must be finite"),
    ("timestamp,channel\n1,a\n", "lacks column\\(s\\) watts"),
])
def test_non_finite_times_are_refused_by_line(tmp_path, text, match):
    with pytest.raises(TraceError, match=match):
        read_trace(write(tmp_path, text))


def test_a_byte_order_mark_before_the_header_is_no_problem(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf" + RAMP.encode())
    assert integrate(read_trace(p)["clamp"], 101.0, 105.0) == pytest.approx(120.0)
    m = TraceMeter(str(p), channels={"clamp": "host"})
    assert m.energy_between(101.0, 105.0) == {"clamp": pytest.approx(120.0)}


def test_a_trace_larger_than_a_block_streams_with_lines_counted_across_blocks(tmp_path, monkeypatch):
    from sims.meters import trace as tr

    monkeypatch.setattr(tr, "BLOCK_BYTES", 64)  # many blocks, lines split across block edges
    lines = [f"{i},{'ab'[i % 2]},{i % 7}\n" for i in range(400)]
    lines[313] = "313,b,oops\n"
    p = write(tmp_path, "timestamp,channel,watts\n" + "".join(lines))
    with pytest.raises(TraceError, match="line 315: watts 'oops'"):
        read_trace(p)
    lines[313] = f"313,b,{313 % 7}\n"
    ch = read_trace(write(tmp_path, "timestamp,channel,watts\n" + "".join(lines)))
    assert ch["a"].t.tolist() == [float(i) for i in range(0, 400, 2)]
    assert ch["b"].w.tolist() == [float(i % 7) for i in range(1, 400, 2)]


def test_a_second_meter_starts_from_the_first_ones_parse(tmp_path, monkeypatch):
    """Each run is its own process with its own meter: the parse is cached, and the next meter parses only
    the lines appended since (a line changed before the cached point is not seen: the cache is checked
    against the bytes just before it, so an edited file is parsed afresh)."""
    from sims.meters import trace as tr

    monkeypatch.setenv("HETVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tr._Cache, "MIN_BYTES", 1)
    p = write(tmp_path, "timestamp,channel,watts\n" + "".join(f"{i},w,10\n" for i in range(100)))
    import os

    os.utime(p, (1, 1))
    first = TraceMeter(str(p))
    assert first.energy_between(0.0, 99.0) == {"w": pytest.approx(990.0)}
    assert list((tmp_path / "cache" / "traces").glob("*.npz"))
    with open(p, "a") as fh:
        fh.write("".join(f"{i},w,20\n" for i in range(100, 110)))
    os.utime(p, (1, 1))
    fed: list[int] = []
    real = tr._Parser.feed
    monkeypatch.setattr(tr._Parser, "feed", lambda self, lines: (fed.append(len(lines)), real(self, lines))[1])
    second = TraceMeter(str(p))
    assert sum(fed) == 10  # only the appended lines were parsed
    assert second.energy_between(98.0, 105.0) == {"w": pytest.approx(10.0 + 15.0 + 5 * 20.0)}
    p.write_text("timestamp,channel,watts\n" + "".join(f"{i},w,30\n" for i in range(100)))
    os.utime(p, (1, 1))
    assert TraceMeter(str(p)).energy_between(0.0, 99.0) == {"w": pytest.approx(2970.0)}
