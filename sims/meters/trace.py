"""External power-meter traces: a CSV of ``timestamp, channel, watts`` integrated over measured windows.

This is how the papers' current clamps and wall meters (WattsUp) enter the
pipeline. The file has a header row naming the three columns; ``timestamp`` is
POSIX seconds or ISO 8601 (naive = UTC), ``channel`` a free name (one per
clamp/meter), ``watts`` the power sample. Each channel's power is taken as
piecewise linear between its samples and integrated exactly (trapezoids, with
the window's ends interpolated).

The meter's clock rarely agrees with the host's: ``clock_offset_s`` is the
meter clock minus the host clock, so a host window ``[t0, t1]`` is looked up as
``[t0 + offset, t1 + offset]`` in the trace. ``channels`` maps trace channels to
what they measure: ``host``, ``accel`` or ``node`` (the whole machine - counted
in the total only). A window not fully covered by a channel's samples is refused
(:class:`TraceError`), never extrapolated.
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
import time
from dataclasses import dataclass

import numpy as np

from sims.meters.base import Meter, MeterUnavailable

TARGETS = ("host", "accel", "node")
COLUMNS = ("timestamp", "channel", "watts")


class TraceError(ValueError):
    """A trace file is malformed, or does not cover a window it was asked about."""


@dataclass(frozen=True)
class Channel:
    """One channel's samples, sorted by time (seconds, meter clock) with watts."""

    t: np.ndarray
    w: np.ndarray

    @property
    def period_s(self) -> float:
        """Median sampling interval (inf for a single sample)."""
        return float(np.median(np.diff(self.t))) if self.t.size > 1 else float("inf")


def _timestamp(text: str, where: str) -> float:
    s = text.strip()
    try:
        return float(s)
    except ValueError:
        pass
    try:
        ts = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise TraceError(f"{where}: timestamp {text!r} is neither POSIX seconds nor ISO 8601") from None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=_dt.UTC)
    return ts.timestamp()


class _Parser:
    """Rows of a trace CSV into per-channel samples; errors name the file, the line and the problem."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self.idx: list[int] | None = None
        self.ncols = 0
        self.line = 0
        self.pending: dict[str, list[tuple[float, float]]] = {}  # parsed since the channels were last built
        self.built: dict[str, Channel] = {}

    def feed(self, lines: list[str]) -> None:
        for row in csv.reader(lines):
            self.line += 1
            sample = self._sample(row, self.line)
            if sample is not None:
                self.pending.setdefault(sample[0], []).append(sample[1:])

    def _sample(self, row: list[str], line: int) -> tuple[str, float, float] | None:
        """One row as ``(channel, t, watts)``; the header row sets the columns and gives None."""
        if self.idx is None:
            cols = [h.strip().lower() for h in row]
            missing = [c for c in COLUMNS if c not in cols]
            if missing:
                raise TraceError(f"trace {self.path}: header {row} lacks column(s) {', '.join(missing)}")
            self.idx, self.ncols = [cols.index(c) for c in COLUMNS], len(cols)
            return None
        if not row or all(not c.strip() for c in row):
            return None
        where = f"trace {self.path}, line {line}"
        try:
            ts, ch, w = (row[i] for i in self.idx)
        except IndexError:
            raise TraceError(f"{where}: expected {self.ncols} fields, got {len(row)}") from None
        try:
            watts = float(w)
        except ValueError:
            raise TraceError(f"{where}: watts {w!r} is not a number") from None
        if not np.isfinite(watts) or watts < 0:
            raise TraceError(f"{where}: watts {w!r} must be finite and >= 0")
        return ch.strip(), _timestamp(ts, where), watts

    def tail(self, line: str) -> tuple[str, float, float] | None:
        """A last line without its newline, parsed without consuming it (the header must be known)."""
        if self.idx is None:
            return None
        rows = list(csv.reader([line]))
        return self._sample(rows[0], self.line + 1) if rows else None

    def channels(self, extra: tuple[str, float, float] | None = None) -> dict[str, Channel]:
        """Every channel's samples in time order, with ``extra`` (not kept) added.

        Samples parsed since the last call are appended to the arrays built
        before - a copy of the new part only when they arrive in time order, as
        a logger writes them - so a long live trace is not re-sorted per region.
        """
        if self.idx is None:
            raise TraceError(f"trace {self.path}: empty file (expected a header {','.join(COLUMNS)})")
        if not self.pending and not self.built:
            raise TraceError(f"trace {self.path}: no samples")
        for ch, pts in self.pending.items():
            self.built[ch] = self._merge(ch, self.built.get(ch), pts)
        self.pending = {}
        if extra is None:
            return dict(self.built)
        out = dict(self.built)
        out[extra[0]] = self._merge(extra[0], out.get(extra[0]), [extra[1:]])
        return out

    def _merge(self, ch: str, old: Channel | None, pts: list[tuple[float, float]]) -> Channel:
        new = np.array(sorted(pts), dtype=float).reshape(-1, 2)
        if old is not None and old.t.size and new[0, 0] > old.t[-1]:
            t, w = np.concatenate((old.t, new[:, 0])), np.concatenate((old.w, new[:, 1]))
            dup = bool(np.any(np.diff(new[:, 0]) == 0))
        else:
            if old is not None:
                new = np.concatenate((np.column_stack((old.t, old.w)), new))
                new = new[np.argsort(new[:, 0], kind="stable")]
            t, w = new[:, 0].copy(), new[:, 1].copy()
            dup = bool(np.any(np.diff(t) == 0))
        if dup:
            raise TraceError(f"trace {self.path}: channel {ch!r} has two samples with the same timestamp")
        return Channel(t, w)


def read_trace(path: str | os.PathLike[str]) -> dict[str, Channel]:
    """Parse a whole trace CSV into channels; errors name the file, the line and the problem."""
    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"trace {path}: cannot open ({exc})") from exc
    parser = _Parser(path)
    with fh:
        parser.feed(fh.read().splitlines())
    return parser.channels()


def integrate(channel: Channel, t0: float, t1: float) -> float:
    """Joules of a piecewise-linear power channel over ``[t0, t1]`` (meter clock); refuses uncovered windows."""
    if not t1 >= t0:
        raise TraceError(f"window end {t1} precedes its start {t0}")
    t, w = channel.t, channel.w
    if t.size < 2 or t0 < t[0] or t1 > t[-1]:
        span = f"[{t[0]:.3f}, {t[-1]:.3f}]" if t.size else "nothing"
        raise TraceError(f"window [{t0:.3f}, {t1:.3f}] is not covered by the trace (samples span {span})")
    inside = (t > t0) & (t < t1)
    ts = np.concatenate(([t0], t[inside], [t1]))
    ws = np.interp(ts, t, w)
    return float(np.sum(0.5 * (ws[1:] + ws[:-1]) * np.diff(ts)))


class TraceMeter(Meter):
    """Energy from an external power-meter trace, integrated over each region's wall-clock window.

    ``read()`` returns the host's wall-clock time; :meth:`energy_between`
    integrates every mapped channel over the window between two reads. A logger
    may still be appending to the file while the study runs: new complete lines
    are read incrementally (a line still being written is left for the next
    read), and a window that ended less than ``wait_s`` ago but is not yet covered
    by every channel is waited for (the file polled) before it is refused. A file
    that shrank or was replaced is read again from the start.
    """

    source = "trace"
    scope = "external"

    def __init__(self, path: str, clock_offset_s: float = 0.0, channels: dict[str, str] | None = None,
                 wait_s: float | None = None) -> None:
        self.path = str(path)
        self.clock_offset_s = float(clock_offset_s)
        self._parser: _Parser | None = None
        self._ident: tuple[int, int] | None = None
        self._offset = 0
        self._data: dict[str, Channel] = {}
        try:
            data = self._load()
        except TraceError as exc:
            raise MeterUnavailable(str(exc)) from exc
        mapping = dict(channels) if channels else {ch: "node" for ch in data}
        bad = {ch: tgt for ch, tgt in mapping.items() if tgt not in TARGETS}
        if bad:
            raise MeterUnavailable(f"energy.trace.channels: {bad} - each channel maps to one of {', '.join(TARGETS)}")
        absent = sorted(set(mapping) - set(data))
        if absent:
            raise MeterUnavailable(f"trace {self.path}: channel(s) {', '.join(absent)} named in energy.trace.channels "
                                   f"are not in the file (it has {', '.join(sorted(data))})")
        self.mapping = mapping
        self.update_period_s = max(data[ch].period_s for ch in mapping)
        if wait_s is None:
            finite = self.update_period_s if np.isfinite(self.update_period_s) else 1.0
            wait_s = max(2.0, 3.0 * finite)
        self.wait_s = float(wait_s)

    def _load(self) -> dict[str, Channel]:
        """The channels as of now: complete lines appended since the last call are parsed and added."""
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise TraceError(f"trace {self.path}: cannot open ({exc})") from exc
        with fh:
            st = os.fstat(fh.fileno())
            ident = (st.st_dev, st.st_ino)
            if self._parser is None or ident != self._ident or st.st_size < self._offset:
                self._parser, self._ident, self._offset, self._data = _Parser(self.path), ident, 0, {}
            if st.st_size == self._offset and self._data:
                return self._data
            fh.seek(self._offset)
            chunk = fh.read(st.st_size - self._offset)
        end = chunk.rfind(b"\n") + 1
        try:
            text, tail = chunk[:end].decode("utf-8"), chunk[end:].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(f"trace {self.path}: not UTF-8 text ({exc})") from None
        if end:
            self._parser.feed(text.splitlines())
            self._offset += end
        extra = None
        if tail.strip() and time.time() - st.st_mtime > 1.0:
            # a last line without its newline in a file nobody has written to for a second is
            # complete (a hand-written trace); a fresher one may still be being written
            if self._parser.idx is None:
                self._parser.feed([tail])
                self._offset += len(chunk) - end
            else:
                extra = self._parser.tail(tail)
        if not self._data or end or extra is not None:
            self._data = self._parser.channels(extra)
        return self._data

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(self.mapping)

    def read(self) -> float:
        return time.time()

    def energy_between(self, before, after):
        if before is None or after is None:
            return None
        t0, t1 = before + self.clock_offset_s, after + self.clock_offset_s
        data = self._load()
        # a live logger writes a sample after the fact: give it until wait_s after the window's end
        deadline = after + self.wait_s
        poll = min(0.05, max(self.update_period_s / 4.0, 0.001)) if np.isfinite(self.update_period_s) else 0.05
        while any(data[ch].t[-1] < t1 for ch in self.mapping) and time.time() < deadline:
            time.sleep(poll)
            data = self._load()
        return {ch: integrate(data[ch], t0, t1) for ch in self.mapping}
