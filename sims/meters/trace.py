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
from pathlib import Path
from typing import Any

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
        x = float(s)
    except ValueError:
        try:
            ts = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            raise TraceError(f"{where}: timestamp {text!r} is neither POSIX seconds nor ISO 8601") from None
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=_dt.UTC)
        return ts.timestamp()
    if not np.isfinite(x):
        raise TraceError(f"{where}: timestamp {text!r} is not a finite time")
    return x


#: Bytes read and parsed at a time: a trace streams through in blocks, whatever its size.
BLOCK_BYTES = 4 << 20


class _Parser:
    """Rows of a trace CSV into per-channel samples, a block of lines at a time: each block becomes NumPy
    arrays at once (memory about the samples' numeric size, not a Python object per value); errors name the
    file, the line and the problem."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self.idx: list[int] | None = None
        self.ncols = 0
        self.line = 0
        self.pending: dict[str, list[np.ndarray]] = {}  # (n, 2) blocks parsed since the channels were built
        self.built: dict[str, Channel] = {}

    def feed(self, lines: list[str]) -> None:
        rows = list(csv.reader(lines))
        first = self.line + 1
        self.line += len(lines)
        if self.idx is None:
            while rows and self.idx is None:
                self._header(rows.pop(0))
                first += 1
        for ch, block in self._block(rows, first).items():
            self.pending.setdefault(ch, []).append(block)

    def _header(self, row: list[str]) -> None:
        cols = [h.strip().lower().lstrip("\ufeff") for h in row]
        missing = [c for c in COLUMNS if c not in cols]
        if missing:
            raise TraceError(f"trace {self.path}: header {row} lacks column(s) {', '.join(missing)} "
                             f"(expected a header row naming {', '.join(COLUMNS)})")
        self.idx, self.ncols = [cols.index(c) for c in COLUMNS], len(cols)

    def _block(self, rows: list[list[str]], first: int) -> dict[str, np.ndarray]:
        """Rows (the first on line ``first``) as ``{channel: (n, 2) array of (t, watts)}``."""
        assert self.idx is not None
        need = max(self.idx)
        lines, ts, chs, ws = [], [], [], []
        for n, row in enumerate(rows):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) <= need:
                raise TraceError(f"trace {self.path}, line {first + n}: expected {self.ncols} fields, got {len(row)}")
            lines.append(first + n)
            ts.append(row[self.idx[0]])
            chs.append(row[self.idx[1]].strip())
            ws.append(row[self.idx[2]])
        if not lines:
            return {}
        try:
            watts = np.array(ws, dtype=float)
        except ValueError:
            bad = next(i for i, w in enumerate(ws) if not _is_float(w))
            raise TraceError(f"trace {self.path}, line {lines[bad]}: watts {ws[bad]!r} is not a number") from None
        wrong = ~(np.isfinite(watts) & (watts >= 0))
        if wrong.any():
            i = int(np.argmax(wrong))
            raise TraceError(f"trace {self.path}, line {lines[i]}: watts {ws[i]!r} must be finite and >= 0")
        try:
            t = np.array(ts, dtype=float)
        except ValueError:  # ISO 8601 (or garbage): one at a time
            t = np.array([_timestamp(x, f"trace {self.path}, line {ln}") for x, ln in zip(ts, lines, strict=True)])
        wrong = ~np.isfinite(t)
        if wrong.any():
            i = int(np.argmax(wrong))
            raise TraceError(f"trace {self.path}, line {lines[i]}: timestamp {ts[i]!r} is not a finite time")
        names = np.array(chs, dtype=object)
        out = {}
        for ch in dict.fromkeys(chs):
            mask = names == ch
            out[ch] = np.column_stack((t[mask], watts[mask]))
        return out

    def tail(self, line: str) -> tuple[str, float, float] | None:
        """A last line without its newline, parsed without consuming it (the header must be known)."""
        if self.idx is None:
            return None
        rows = list(csv.reader([line]))
        got = self._block(rows, self.line + 1) if rows else {}
        return next(((ch, float(b[0, 0]), float(b[0, 1])) for ch, b in got.items()), None)

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
        for ch, blocks in self.pending.items():
            self.built[ch] = self._merge(ch, self.built.get(ch), np.concatenate(blocks))
        self.pending = {}
        if extra is None:
            return dict(self.built)
        out = dict(self.built)
        out[extra[0]] = self._merge(extra[0], out.get(extra[0]), np.array([extra[1:]], dtype=float))
        return out

    def _merge(self, ch: str, old: Channel | None, new: np.ndarray) -> Channel:
        if new.shape[0] > 1 and np.any(np.diff(new[:, 0]) < 0):
            new = new[np.argsort(new[:, 0], kind="stable")]
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


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _stream(fh: Any, parser: _Parser, start: int, end: int, path: Any) -> int:
    """Feed the complete lines of bytes ``[start, end)`` of ``fh`` to ``parser`` a block at a time (a UTF-8
    byte-order mark at the file's start is dropped); returns the offset after the last complete line."""
    fh.seek(start)
    offset, carry = start, b""
    while offset + len(carry) < end:
        chunk = carry + fh.read(min(BLOCK_BYTES, end - offset - len(carry)))
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            if offset + len(chunk) >= end:
                break
            carry = chunk
            continue
        body = chunk[:cut]
        if offset == 0 and body.startswith(b"\xef\xbb\xbf"):
            body = body[3:]
        try:
            parser.feed(body.decode("utf-8").splitlines())
        except UnicodeDecodeError as exc:
            raise TraceError(f"trace {path}: not UTF-8 text ({exc})") from None
        offset += cut
        carry = chunk[cut:]
    return offset


def read_trace(path: str | os.PathLike[str]) -> dict[str, Channel]:
    """Parse a whole trace CSV into channels, streamed in blocks; errors name the file, the line and the
    problem. A last line without its newline counts."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise TraceError(f"trace {path}: cannot open ({exc})") from exc
    parser = _Parser(path)
    with fh:
        size = os.fstat(fh.fileno()).st_size
        done = _stream(fh, parser, 0, size, path)
        fh.seek(done)
        tail = fh.read()
    if tail.strip():
        if done == 0 and tail.startswith(b"\xef\xbb\xbf"):
            tail = tail[3:]
        parser.feed([tail.decode("utf-8", errors="replace")])
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


class _Cache:
    """A trace parsed once per invocation, not once per run: each run is its own process with its own meter,
    so the parsed channels (and how far into the file they go, with a checksum of the bytes just before
    that point) are kept in ``$HETVAL_CACHE_DIR`` (default ``~/.cache/hetval``) ``/traces/``. A meter
    starts from them when the file is the same one (device, inode) and still holds those bytes, and parses
    only what was appended since. Best effort: a cache that cannot be read or written is ignored."""

    MIN_BYTES = 1 << 20  # a smaller trace parses faster than it caches

    def __init__(self, path: str) -> None:
        import hashlib

        root = Path(os.environ.get("HETVAL_CACHE_DIR") or Path.home() / ".cache" / "hetval") / "traces"
        key = hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:24]
        self.file = root / f"{key}.npz"

    @staticmethod
    def _check(fh: Any, offset: int) -> str:
        import hashlib

        fh.seek(max(0, offset - 4096))
        return hashlib.sha256(fh.read(min(offset, 4096))).hexdigest()

    def restore(self, fh: Any, ident: tuple[int, int], size: int, parser: _Parser) -> int:
        """Load the cached parse into ``parser`` when it fits this file; the offset to parse on from."""
        import json

        try:
            with np.load(self.file, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if tuple(meta["ident"]) != tuple(ident) or not 0 < meta["offset"] <= size or \
                        self._check(fh, meta["offset"]) != meta["check"]:
                    return 0
                parser.idx, parser.ncols, parser.line = list(meta["idx"]), int(meta["ncols"]), int(meta["line"])
                parser.built = {ch: Channel(z[f"t{i}"], z[f"w{i}"]) for i, ch in enumerate(meta["channels"])}
                return int(meta["offset"])
        except (OSError, KeyError, ValueError, TypeError):
            return 0

    def save(self, ident: tuple[int, int] | None, offset: int, parser: _Parser) -> None:
        import json

        from sims.atomic import atomic_path

        if ident is None or parser.idx is None or parser.pending:
            return
        try:
            with open(parser.path, "rb") as fh:
                check = self._check(fh, offset)
            names = list(parser.built)
            meta = {"ident": list(ident), "offset": offset, "check": check, "idx": parser.idx,
                    "ncols": parser.ncols, "line": parser.line, "channels": names}
            arrays = {f"{k}{i}": getattr(parser.built[ch], k) for i, ch in enumerate(names) for k in ("t", "w")}
            with atomic_path(self.file) as tmp, open(tmp, "wb") as out:
                np.savez(out, meta=np.array(json.dumps(meta)), **arrays)
        except OSError:
            pass


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

    @classmethod
    def reads_on(cls, rank: Any) -> bool:
        return rank.world_rank == 0  # one reader of the whole trace

    @classmethod
    def open(cls, settings: Any, rank: Any) -> TraceMeter:
        if not settings.trace:
            raise MeterUnavailable("energy.trace (path, clock_offset_s, channels) is required when energy.meter is trace")
        return cls(**settings.trace)

    @classmethod
    def owner(cls, channel: str, rank: dict[str, Any], meter: dict[str, Any],
              ranks: list[dict[str, Any]]) -> tuple[str, str, str | None]:
        return meter["mapping"][channel], "energy.trace.channels", None

    def __init__(self, path: str, clock_offset_s: float = 0.0, channels: dict[str, str] | None = None,
                 wait_s: float | None = None) -> None:
        self.path = str(path)
        self.clock_offset_s = float(clock_offset_s)
        self._parser: _Parser | None = None
        self._ident: tuple[int, int] | None = None
        self._offset = 0
        self._saved = 0
        self._cache = _Cache(self.path)
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
        """The channels as of now: complete lines appended since the last call are parsed and added (a fresh
        meter starts from the parse another process of this invocation left in the cache, :class:`_Cache`)."""
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise TraceError(f"trace {self.path}: cannot open ({exc})") from exc
        with fh:
            st = os.fstat(fh.fileno())
            ident = (st.st_dev, st.st_ino)
            if self._parser is None or ident != self._ident or st.st_size < self._offset:
                self._parser, self._ident, self._offset, self._data = _Parser(self.path), ident, 0, {}
                self._offset = self._cache.restore(fh, ident, st.st_size, self._parser)
                self._saved = self._offset
            if st.st_size == self._offset and self._data:
                return self._data
            before = self._offset
            self._offset = _stream(fh, self._parser, self._offset, st.st_size, self.path)
            fh.seek(self._offset)
            tail = fh.read(st.st_size - self._offset)
        try:
            tail_text = tail.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(f"trace {self.path}: not UTF-8 text ({exc})") from None
        if self._offset == 0 and tail_text.startswith("\ufeff"):
            tail_text = tail_text[1:]
        extra = None
        if tail_text.strip() and time.time() - st.st_mtime > 1.0:
            # a last line without its newline in a file nobody has written to for a second is
            # complete (a hand-written trace); a fresher one may still be being written
            if self._parser.idx is None:
                self._parser.feed([tail_text])
                self._offset += len(tail)
            else:
                extra = self._parser.tail(tail_text)
        if not self._data or self._offset != before or extra is not None:
            self._data = self._parser.channels(extra)
            if self._offset - self._saved >= _Cache.MIN_BYTES:
                self._cache.save(self._ident, self._offset, self._parser)
                self._saved = self._offset
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
