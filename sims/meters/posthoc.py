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

from sims.meters.base import MeterUnavailable
from sims.meters.node import attribute
from sims.meters.trace import TraceError, TraceMeter
from sims.platform_file import overlay_path, read_raw


def _descriptor(meter: TraceMeter) -> list[dict[str, Any]]:
    return [{"rank": 0, "role": "host", "host": "trace", "node_rank": 0, "backend": "none", "packages": None,
             "meters": {"trace": {"source": "trace", "scope": "external", "channels": list(meter.mapping),
                                  "update_period_s": meter.update_period_s, "mapping": meter.mapping}},
             "notes": []}]


def window_energy(meter: TraceMeter, desc: list[dict[str, Any]], t0: float, t1: float, inner: int,
                  min_periods: float) -> tuple[dict[str, Any] | None, str | None]:
    """One host window's attributed energy from the trace, or None and why it was refused."""
    if t1 - t0 < min_periods * meter.update_period_s:
        return None, (f"window {t1 - t0:.3g} s is shorter than {min_periods:g} trace samples "
                      f"({meter.update_period_s:.3g} s each); set energy.update_period_s for such runs")
    try:
        return attribute(desc, [{"trace": meter.energy_between(t0, t1)}], inner=inner), None
    except TraceError as exc:
        return None, f"trace: {exc}"


def attach_trace(raw_dir: str | Path, trace: str | Path, channels: dict[str, str] | None = None,
                 clock_offset_s: float = 0.0, min_periods: float = 10.0, replace: bool = False,
                 log: Callable[[str], None] = print) -> dict[str, int]:
    """Fill the energy of every ``ok`` record under ``raw_dir`` from ``trace``; returns counts per outcome."""
    from sims import record as rec

    meter = TraceMeter(str(trace), clock_offset_s, channels)  # MeterUnavailable names the problem
    desc = _descriptor(meter)
    counts = {"attached": 0, "refused": 0, "no_window": 0, "already_metered": 0, "files_written": 0}
    for path in sorted(Path(raw_dir).glob("*.json")):
        if path.is_symlink() or not path.is_file():  # never read or replaced through a link
            print(f"[hetval attach-trace] {path}: not a regular file, left as it is", flush=True)
            continue
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
            row, refused = window_energy(meter, desc, float(window[0]), float(window[1]), inner, min_periods)
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


def attach_trace_to_platform(platform_file: str | Path, trace: str | Path, channels: dict[str, str] | None = None,
                             clock_offset_s: float = 0.0, min_periods: float = 10.0, replace: bool = False,
                             log: Callable[[str], None] = print) -> dict[str, Any]:
    """Idle power and the energy fit of a characterisation that ran without a meter, from a later trace.

    Characterisation keeps the wall-clock windows of its idle sleeps and of every
    intensity-sweep sample (``energy_windows``); the trace is integrated over
    them exactly as a trace meter during characterisation would have been, and
    Choi's ``E = e_f N_f + e_b N_b + p_s T`` is fitted to the sweep's samples.
    The result goes to the overlay file beside the platform file (see
    :func:`overlay_path`), written atomically; returns it.
    """

    from sims import record as rec
    from sims.atomic import atomic_write_text
    from sims.bench.energy import energy_fit, energy_parameters, idle_summary
    from sims.meters.node import share_or_total

    path = Path(platform_file)
    doc = read_raw(path)
    windows = doc.get("energy_windows")
    if not windows:
        raise MeterUnavailable(f"{path}: no energy_windows (characterised before hetval kept them): "
                               "characterise again, then attach the trace")
    procs = doc.get("processors") or {}
    if not replace and any(isinstance(p, dict) and isinstance(p.get("e_f"), dict) for p in procs.values()):
        raise MeterUnavailable(f"{path}: characterisation already measured energy (use --replace to override)")
    meter = TraceMeter(str(trace), clock_offset_s, channels)
    desc = _descriptor(meter)
    refused: list[str] = []

    def window_row(t0: float, t1: float, inner: int = 1) -> dict[str, Any] | None:
        row, why = window_energy(meter, desc, t0, t1, inner, min_periods)
        if why:
            refused.append(why)
        return row

    idle_rows = []
    for t0, t1 in windows.get("idle") or []:
        row = window_row(float(t0), float(t1))
        if row is not None:
            idle_rows.append({k: (row[k] / (float(t1) - float(t0)) if row[k] is not None else None)
                              for k in ("energy_j", "energy_host_j", "energy_accel_j")})
    idle = idle_summary(idle_rows, f"trace {trace} integrated over characterisation's idle windows, median") \
        if idle_rows else None
    out_procs: dict[str, Any] = {}
    for role, samples in (windows.get("sweep") or {}).items():
        times: dict[int, list[float]] = {}
        joules: dict[int, list[float | None]] = {}
        n: dict[int, int] = {}
        for s in samples:
            row = window_row(float(s["window"][0]), float(s["window"][1]), int(s["inner"]))
            # the energy fit's time base is what the reading covers: the window per execution
            n[int(s["k"])] = int(s.get("elements") or windows["elements"])  # per point since the sweep shortens some
            times.setdefault(int(s["k"]), []).append((float(s["window"][1]) - float(s["window"][0])) / int(s["inner"]))
            joules.setdefault(int(s["k"]), []).append(None if row is None else share_or_total(row, role))
        out_procs[role] = energy_parameters(energy_fit(times, joules, n, "trace"))
    fitted = [r for r, p in out_procs.items() if p.get("e_f") is not None]
    overlay = {
        "platform": doc.get("platform", path.stem),
        "trace": str(trace), "clock_offset_s": clock_offset_s, "channels": meter.mapping, "attached_at": rec.utc_now(),
        "idle_power": idle,
        "processors": {r: p for r, p in out_procs.items() if p.get("e_f") is not None},
        "energy": (f"fitted from trace {trace} attached after characterisation (Choi et al.): E = e_f N_f + e_b N_b "
                   f"+ p_s T over the intensity sweep's windows ({', '.join(fitted) or 'no processor'} fitted)"),
        "refused": sorted(set(refused)),
    }
    atomic_write_text(overlay_path(path), json.dumps(overlay, indent=1, sort_keys=True))
    log(f"[hetval attach-trace] {path.name}: idle power "
        + (f"{idle['value']:.3g} W" if idle and idle["value"] is not None else "not measured")
        + f"; energy fit for {', '.join(fitted) or 'no processor'}; {len(refused)} window(s) refused"
        + f" -> {overlay_path(path)}")
    return overlay
