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


def read_trace(path: str | os.PathLike[str]) -> dict[str, Channel]:
    """Parse a trace CSV into channels; errors name the file, the line and the problem."""
    samples: dict[str, list[tuple[float, float]]] = {}
    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"trace {path}: cannot open ({exc})") from exc
    with fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise TraceError(f"trace {path}: empty file (expected a header {','.join(COLUMNS)})")
        cols = [h.strip().lower() for h in header]
        missing = [c for c in COLUMNS if c not in cols]
        if missing:
            raise TraceError(f"trace {path}: header {header} lacks column(s) {', '.join(missing)}")
        idx = [cols.index(c) for c in COLUMNS]
        for n, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            where = f"trace {path}, line {n}"
            try:
                ts, ch, w = (row[i] for i in idx)
            except IndexError:
                raise TraceError(f"{where}: expected {len(cols)} fields, got {len(row)}") from None
            try:
                watts = float(w)
            except ValueError:
                raise TraceError(f"{where}: watts {w!r} is not a number") from None
            if not np.isfinite(watts) or watts < 0:
                raise TraceError(f"{where}: watts {w!r} must be finite and >= 0")
            samples.setdefault(ch.strip(), []).append((_timestamp(ts, where), watts))
    if not samples:
        raise TraceError(f"trace {path}: no samples")
    out = {}
    for ch, pts in samples.items():
        arr = np.array(sorted(pts))
        if np.any(np.diff(arr[:, 0]) == 0):
            raise TraceError(f"trace {path}: channel {ch!r} has two samples with the same timestamp")
        out[ch] = Channel(arr[:, 0].copy(), arr[:, 1].copy())
    return out


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
    integrates every mapped channel over the window between two reads. The file
    is (re)loaded when it changes, so a logger may still be appending to it
    while the study runs.
    """

    source = "trace"
    scope = "external"

    def __init__(self, path: str, clock_offset_s: float = 0.0, channels: dict[str, str] | None = None) -> None:
        self.path = str(path)
        self.clock_offset_s = float(clock_offset_s)
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

    def _load(self) -> dict[str, Channel]:
        try:
            stamp = os.stat(self.path).st_mtime_ns
        except OSError as exc:
            raise TraceError(f"trace {self.path}: cannot open ({exc})") from exc
        if getattr(self, "_stamp", None) != stamp:
            self._data = read_trace(self.path)
            self._stamp = stamp
        return self._data

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(self.mapping)

    def read(self) -> float:
        return time.time()

    def energy_between(self, before, after):
        if before is None or after is None:
            return None
        data = self._load()
        t0, t1 = before + self.clock_offset_s, after + self.clock_offset_s
        return {ch: integrate(data[ch], t0, t1) for ch in self.mapping}
