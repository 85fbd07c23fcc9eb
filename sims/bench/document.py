"""A platform document from characterisation replicates' raw samples: one builder for one replicate and for many.

:func:`sims.bench.characterize.characterize` returns its raw samples (rank 0); :func:`document` turns one or
more replicates' raw samples into the platform document every reader knows (``docs/contracts.md``), each
parameter from all the samples together (:func:`pool`). The replicates' own documents and their pooled one are
what :mod:`sims.bench.replicates` writes. Pure Python: no MPI, no kernels.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from sims.bench import RAW_FORMAT  # noqa: F401 - re-exported: its home is sims.bench
from sims.bench.energy import energy_fit, energy_parameters, idle_summary
from sims.bench.parameters import parameter
from sims.vocab import ROLES, UNITS


def choices(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """What a replicate sized by measuring, per rank: its triad's length, its sweep points' elements and its
    per-operation passes, which later replicates measure again (``spec["choices"]``) so that their samples pool."""
    return [{"sweep_elements": r.get("sweep_elements") or {}, "op_passes": r.get("op_passes") or {},
             "triad_elements": int(raw["elements"])} for r in raw["ranks"]]


def _pool_rows(rows_by_replicate: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Calibration rows of several replicates as one: rows that measured the same thing (every field but their
    ``times_s``) keep all their times, in replicate order."""
    out: dict[str, dict[str, Any]] = {}
    for rows in rows_by_replicate:
        for row in rows or []:
            key = json.dumps({k: v for k, v in row.items() if k != "times_s"}, sort_keys=True)
            if key in out:
                out[key]["times_s"] = out[key]["times_s"] + list(row["times_s"])
            else:
                out[key] = {**row, "times_s": list(row["times_s"])}
    return list(out.values())


def pool(raws: list[dict[str, Any]]) -> dict[str, Any]:
    """Several replicates' raw measurements as one: every sample of every replicate, in replicate order
    (per-operation repetitions renumbered through, so each replicate's stay apart)."""
    first = raws[0]
    ranks = []
    for i in range(len(first["ranks"])):
        mine = [raw["ranks"][i] for raw in raws]
        out = dict(mine[0])
        for key in ("t_f", "t_b", "t_b_shared"):
            out[key] = [x for m in mine for x in (m.get(key) or [])] or None
        out["sweep"] = {k: [x for m in mine for x in (m.get("sweep") or {}).get(k, [])] for k in mine[0]["sweep"]}
        rows, offset = [], 0
        for m in mine:
            reps = [int(r["rep"]) for r in m.get("operations") or []]
            rows += [{**r, "rep": int(r["rep"]) + offset} for r in m.get("operations") or []]
            offset += max(reps, default=-1) + 1
        out["operations"] = rows
        ceil: dict[str, dict[str, list[float]]] = {}
        for m in mine:
            for c, by in (m.get("ceilings") or {}).items():
                for n, rates in by.items():
                    if rates is not None:
                        ceil.setdefault(c, {}).setdefault(n, []).extend(rates)
        out["ceilings"] = ceil
        fdm = [m.get("fdm_calibration") for m in mine]
        if fdm[0]:
            out["fdm_calibration"] = {**fdm[0], "samples": {
                mode: {part: _pool_rows([(f["samples"].get(mode) or {}).get(part) for f in fdm if f])
                       for part in ("half_steps", "marshal")}
                for mode in fdm[0]["samples"] if fdm[0]["samples"].get(mode) is not None}}
        ranks.append(out)

    def lists(key: str) -> dict[str, dict[str, list[Any]]]:
        return {r: {k: [x for raw in raws for x in raw[key][r].get(k, [])] for k in first[key][r]} for r in ROLES}

    idle = [raw["idle"] for raw in raws if raw.get("idle")]
    return {**first, "ranks": ranks, "energies": lists("energies"), "windows": lists("windows"),
            "idle": {"samples": [x for i in idle for x in i["samples"]], "window_s": idle[0]["window_s"]} if idle else None,
            "idle_windows": [w for raw in raws for w in raw["idle_windows"]],
            "pingpong": {m: [t for raw in raws for t in raw["pingpong"].get(m, [])] for m in first["pingpong"]},
            "metered": all(raw["metered"] for raw in raws)}


def document(raws: list[dict[str, Any]], spec: dict[str, Any]) -> dict[str, Any]:
    """The platform document of one or more replicates' raw measurements (:func:`characterize`), every
    parameter computed from all their samples (:func:`pool`)."""
    from sims.bench import ceilings, fdm_calib

    raw = pool(raws) if len(raws) > 1 else raws[0]
    warmup, n_triad, descs, metered = int(raw["warmup"]), int(raw["elements"]), raw["descs"], bool(raw["metered"])
    gathered = raw["ranks"]
    sweep_n = [{int(k): int(n) for k, n in data["sweep_elements"].items()} for data in gathered]
    sweeps = [{int(k): v for k, v in data["sweep"].items()} for data in gathered]
    windows = {r: {int(k): v for k, v in raw["windows"][r].items()} for r in ROLES}
    energies = {r: {int(k): v for k, v in raw["energies"][r].items()} for r in ROLES}
    source = "+".join(sorted({m["source"] for d in descs for m in d["meters"].values()})) or "none"
    # the time base of the energy fit is what each energy reading covers: the window per execution
    covered = {r: {k: [(w["window"][1] - w["window"][0]) / w["inner"] for w in windows[r][k]] for k in windows[r]}
               for r in ROLES}
    energy_fits = {r: energy_fit(covered[r], energies[r], sweep_n[i], source) if metered else None
                   for i, r in enumerate(ROLES)}
    idle = None
    if raw.get("idle"):
        idle = idle_summary(raw["idle"]["samples"], f"all ranks asleep for {raw['idle']['window_s']:.3g} s, "
                            f"{len(raw['idle']['samples'])} windows, median; host/accel where attributable")

    processors = {}
    for i, (r, data) in enumerate(zip(ROLES, gathered, strict=True)):
        p = spec["layout"][r]
        processors[r] = {
            "backend": p["backend"],
            **({"cores": list(p["cores"])} if p.get("cores") else {}),
            **({"device": p["device"]} if p.get("device") is not None else {}),
            "t_f": parameter(data["t_f"], UNITS["t_f"], "independent FMA chains, float32, in-cache, FMA = 2 flops", warmup),
            "t_b": parameter(
                data["t_b"], UNITS["t_b"],
                f"STREAM triad a=b+s*c, float32, 12 B/element counted, {n_triad} elements, other processor idle"
                + (" (capped by the memory budget: see sizing)"
                   if raw["capped"][i] and int(raw["plans"][i].get("cap_elements", n_triad)) <= n_triad else ""),
                warmup,
            ),
            "ceilings": ceilings.document({c: {int(n): v for n, v in by.items()} for c, by in data["ceilings"].items()},
                                          UNITS["t_f"], warmup, UNITS["t_b"]),
            "roofline_fit": _roofline_fit(sweeps[i], sweep_n[i]),
            "operations": _operations(data["operations"], p["backend"]),
            "t_b_shared": parameter(
                data["t_b_shared"], UNITS["t_b"],
                "STREAM triad as t_b, both processors streaming at the same time, at three moments of each replicate", warmup,
            ),
            **energy_parameters(energy_fits[r]),
        }
    fdm = gathered[0].get("fdm_calibration")
    return {
        "platform": spec["platform"],
        "description": spec.get("description", ""),
        "obtained": "measured",
        "measured_at": raw["measured_at"],
        "hostname": raw["hostname"],
        "versions": raw["versions"],
        # what the history keys this platform's series by: a changed machine is never a model regression
        "machine": raw["machine"],
        # how large the arrays were and why: the cache rule, the memory budget, whether the cap bit
        "sizing": {r: raw["plans"][i] for i, r in enumerate(ROLES)},
        # how many timed repetitions each step's measurements took in each replicate, and why they stopped
        "repetitions": [r["repetitions"] for r in raws if r.get("repetitions")] or None,
        "energy": ("not measured: no energy meter was found (e_f, e_b, p_s and idle power are null); "
                   + "; ".join(n for d in descs for n in d["notes"]) if not metered else
                   f"fitted from the intensity sweep's {source} readings (Choi et al.): E = e_f N_f + e_b N_b "
                   "+ p_s T; where a meter covers the node, p_s includes the idle processor's static power"),
        "idle_power": idle,
        "energy_windows": {
            "clock": "POSIX seconds of the host running rank 0",
            "elements": n_triad,
            "idle": raw["idle_windows"],
            "sweep": {r: [{"k": k, "time_s": t, **w} for k in sorted(windows[r])
                          for t, w in zip(sweeps[i][k], windows[r][k], strict=True)]
                      for i, r in enumerate(ROLES)},
        },
        "processors": processors,
        "network": _network({int(m): t for m, t in raw["pingpong"].items()}),
        **({"fdm_calibration": {fdm["backend"]: fdm_calib.document(fdm["samples"], fdm["blocks"], fdm["widths"])}}
           if fdm else {}),
    }


def _operations(rows: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    """Per-operation samples and, per op/dtype, the least-squares cost ``tau`` (s per element-operation)."""
    from sims.bench import ops

    if not rows:
        return {"note": f"per-operation benchmarks are not implemented for the {backend} backend", "fits": {},
                "samples": []}
    return {
        "method": (f"{ops.BLOCKS[ops.backend_for(backend)]}-element in-cache block x passes "
                   f"sized so that the shortest chain's call takes >= {ops.MIN_REGION_S * 1e3:g} ms ({ops.PASSES} to "
                   f"{ops.MAX_PASSES}), chains of n_ops = {list(ops.N_OPS)} operations per element and pass "
                   "(numba: in registers, one load and one store per element; numpy: one in-place ufunc call per "
                   "operation, block and operands on cache lines at distinct page offsets), repetitions "
                   "interleaved across operations and spread over the replicate (repetition r at the r mod 3-th "
                   "of three moments, each after a warm-up call); "
                   "random = gathers from an array beyond the LLC; numpy only: move = np.copyto from an in-cache "
                   "operand, short_add = add in calls of one SA buffer row; least squares T = tau * ops + c over "
                   "each count's median per op/dtype; tau_spread = largest / smallest tau fitted to one repetition alone"),
        "fits": ops.summarize(rows),
        "samples": rows,
    }



def _roofline_fit(times: dict[int, list[float]], n: dict[int, int]) -> dict[str, Any]:
    """The intensity sweep's samples (``n[k]`` elements at point ``k``) and the roofline fitted to them (t_f, t_b
    with R², residuals)."""
    from sims.bench import sweep

    ks = sorted(times)
    flops = [sweep.counts(n[k], k)[0] for k in ks]
    nbytes = [sweep.counts(n[k], k)[1] for k in ks]
    med = [statistics.median(times[k]) for k in ks]
    f = sweep.fit_roofline(flops, nbytes, med)
    return {
        "t_f": {"value": f["t_f"], "unit": UNITS["t_f"], "obtained": "fitted", "rate": 1.0 / f["t_f"]},
        "t_b": {"value": f["t_b"], "unit": UNITS["t_b"], "obtained": "fitted", "rate": 1.0 / f["t_b"]},
        "balance": f["t_b"] / f["t_f"],
        "r2": f["r2"],
        "poor_fit": bool(f["poor_fit"]),
        "method": (f"least squares T = max(N_f t_f, N_b t_b) over a float32 stream with k FMAs per element "
                   f"(8 B, 2k flops), k = {ks[0]}..{ks[-1]}, up to {max(n.values())} elements (fewer at a point "
                   f"compute-bound by {sweep.COMPUTE_MARGIN:g}x at the processor's t_f, t_b); R² of log T"),
        "samples": [{"k": k, "intensity": 2 * k / sweep.BYTES_PER_ELEMENT, "elements": n[k], "flops": fl, "bytes": b,
                     "time_median_s": t, "times_s": times[k], "relative_residual": res}
                    for k, fl, b, t, res in zip(ks, flops, nbytes, med, f["relative_residuals"], strict=True)],
    }



def _network(samples: dict[int, list[float]]) -> dict[str, Any]:
    """The interconnect between the two ranks (here: MPI over shared memory) from the ping-pong fit."""
    from sims.bench import pingpong

    f = pingpong.fit(samples)
    return {
        "latency": {"value": f["latency_s"], "unit": UNITS["time"], "obtained": "measured",
                    "method": "MPI ping-pong host <-> accel: median one-way time of the smallest message; t_net from the least-squares T(m) = L + m t_net"},
        "t_net": {"value": f["t_net"], "unit": UNITS["t_b"], "obtained": "measured", "method": "same fit (slope)",
                  "rate_median": 1.0 / f["t_net"] if f["t_net"] > 0 else None},
        "r2": f["r2"],
        "residuals_s": f["residuals_s"],
        "samples_s": f["samples_s"],
    }


