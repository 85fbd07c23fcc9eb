"""Attach an external meter's trace to runs that were measured before the trace was available.

Many power meters (WattsUp, PDUs, current-clamp loggers) hand over their log
after the fact. Every run record keeps the host's wall-clock window of each
repetition in ``energy_detail.window``; :func:`attach_trace` integrates a trace
over those windows and fills the energy columns of the raw records in place
(atomically), exactly as a trace meter during the run would have. Windows the
trace does not cover, or that are shorter than ``min_periods`` of its sampling
period, are refused and stay null with the reason. Records that already hold a
measured energy are left alone unless ``replace`` is set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sims.meters.node import attribute
from sims.meters.trace import TraceError, TraceMeter


def _descriptor(meter: TraceMeter) -> list[dict[str, Any]]:
    return [{"rank": 0, "role": "host", "host": "trace", "node_rank": 0, "backend": "none", "packages": None,
             "meters": {"trace": {"source": "trace", "scope": "external", "channels": list(meter.mapping),
                                  "update_period_s": meter.update_period_s, "mapping": meter.mapping}},
             "notes": []}]


def attach_trace(raw_dir: str | Path, trace: str | Path, channels: dict[str, str] | None = None,
                 clock_offset_s: float = 0.0, min_periods: float = 10.0, replace: bool = False,
                 log: Callable[[str], None] = print) -> dict[str, int]:
    """Fill the energy of every ``ok`` record under ``raw_dir`` from ``trace``; returns counts per outcome."""
    from sims import record as rec

    meter = TraceMeter(str(trace), clock_offset_s, channels)  # MeterUnavailable names the problem
    desc = _descriptor(meter)
    counts = {"attached": 0, "refused": 0, "no_window": 0, "already_metered": 0, "files_written": 0}
    for path in sorted(Path(raw_dir).glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        changed = False
        for r in doc.get("records", []):
            if r.get("status") != "ok":
                continue
            if r.get("energy_source") not in (None, "none") and not replace:
                counts["already_metered"] += 1
                continue
            detail = json.loads(r.get("energy_detail") or "{}")
            window = detail.get("window")
            if not window:
                counts["no_window"] += 1
                continue
            inner = int(detail.get("executions_per_region", 1))
            t0, t1 = float(window[0]), float(window[1])
            refused = None
            if t1 - t0 < min_periods * meter.update_period_s:
                refused = (f"window {t1 - t0:.3g} s is shorter than {min_periods:g} trace samples "
                           f"({meter.update_period_s:.3g} s each); set energy.update_period_s for such runs")
            else:
                try:
                    row = attribute(desc, [{"trace": meter.energy_between(t0, t1)}], inner=inner)
                except TraceError as exc:
                    refused = f"trace: {exc}"
            attached = {"trace": str(trace), "clock_offset_s": clock_offset_s, "at": rec.utc_now()}
            if refused:
                counts["refused"] += 1
                row = {"energy_j": None, "energy_host_j": None, "energy_accel_j": None, "energy_source": "none",
                       "energy_detail": {**detail, "refused": [refused]}}
            else:
                counts["attached"] += 1
                row["energy_detail"].update(window=window, executions_per_region=inner)
            row["energy_detail"]["attached"] = attached
            row["energy_detail"] = rec.canonical_json(row["energy_detail"])
            r.update(row)
            changed = True
        if changed:
            rec.write_raw(path, doc["run_id"], doc["records"])
            counts["files_written"] += 1
    log(f"[hetval attach-trace] {trace}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()))
    return counts
