"""Drive one FDM run on a communicator: spec, setup, warm-up, timed repetitions, records, outputs."""

from __future__ import annotations

import io
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sims import placement
from sims import record as rec
from sims.atomic import atomic_write_bytes
from sims.vocab import ROLES
from sims.yamlfile import YAMLFileError, load_mapping

from . import counts
from .solver import PHASES, Simulation
from .spec import FDMSpec, SpecError, parse, run_identity
from .subnormals import flushed


@dataclass
class Result:
    """Rank 0's outcome: records (one per repetition, or one failed) and the seismograms (None on failure)."""

    records: list[dict[str, Any]]
    seismograms: dict[str, np.ndarray] | None

    def summary(self) -> str:
        r = self.records[0]
        times = [x["time_s"] for x in self.records]
        mlups = [r["points"] * r["steps"] / t / 1e6 for t in times]
        return (f"[hetval fdm] {r['grid']} order {r['order']} {r['boundary']} on {r['ranks']} ranks "
                f"{r['decomposition']} ({r['marshaling']}): median {statistics.median(times):.4g} s over "
                f"{len(times)} rep(s) (min {min(times):.4g}, max {max(times):.4g}); "
                f"median {statistics.median(mlups):.1f} MLUP/s")


def load_doc(path: str) -> dict:
    """The YAML run spec at ``path`` as a mapping."""
    try:
        return load_mapping(path, "run spec")
    except YAMLFileError as exc:
        raise SpecError(str(exc)) from None


def per_processor(processor: Any, flops: int, nbytes: int) -> dict[str, int]:
    """The solver's counts in the columns the two-processor cases use: all of it on ``processor`` (the platform's
    role whose backend the run drives), none on the other; nothing when the run names no processor."""
    if processor not in ROLES:
        return {}
    return {f"{k}_{role}": (v if role == processor else 0) for role in ROLES for k, v in (("flops", flops),
                                                                                         ("bytes", nbytes))}


def _base(ident: dict, ranks: int, started_at: str, config_hash: str) -> dict[str, Any]:
    return {
        **{name: None for name in rec.FIELD_TYPES},
        "run_id": rec.run_id_of(ident),
        "study": ident["study"],
        "case": "fdm",
        "variant": ident["variant"],
        "params": rec.canonical_json(ident["params"]),
        "platform": ident["platform"],
        "ranks": ranks,
        "rep": 0,
        "energy_source": "none",
        "started_at": started_at,
        "config_hash": config_hash,
        **rec.provenance(),
    }


def _count(doc: dict, key: str, default: int, least: int) -> int:
    """An integer run-spec key of at least ``least`` (a boolean or text is an error naming the key)."""
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SpecError(f"'{key}' must be an integer >= {least}, got {value!r}")
    return value


def _use_threads(spec: FDMSpec, wanted: int) -> None:
    """Run the Numba kernels on ``threads_per_rank`` threads; an error naming the key when the process was
    started with fewer (the thread pool's size is fixed when Numba loads: ``HETVAL_THREADS_PER_RANK``)."""
    if spec.backend != "numba":
        return
    import numba  # noqa: PLC0415 - only the numba backend has a thread pool

    if wanted > numba.config.NUMBA_NUM_THREADS:
        raise SpecError(f"'threads_per_rank' is {wanted} but this rank was started with {numba.config.NUMBA_NUM_THREADS} "
                        f"thread(s): launch it with HETVAL_THREADS_PER_RANK={wanted} (the workflow does)")
    numba.set_num_threads(wanted)


def execute(comm, config_path: str, config_hash: str = "unknown") -> Result | None:
    """Run the spec at ``config_path`` on every rank of ``comm``; rank 0 returns the :class:`Result`.

    Errors in the spec or the setup on any rank are gathered (no rank is left
    waiting) and become one ``failed`` record. A run whose wavefield becomes
    non-finite is recorded as failed too.
    """
    rank, size = comm.Get_rank(), comm.Get_size()
    started_at = rec.utc_now()
    doc: dict = {}
    spec: FDMSpec | None = None
    sim: Simulation | None = None
    error = None
    try:
        doc = load_doc(config_path)
        spec = parse(doc)
        if doc.get("ranks") is not None and int(doc["ranks"]) != size:
            raise SpecError(f"'ranks' is {doc['ranks']} but the job has {size} MPI ranks (mpiexec -n {doc['ranks']})")
        warmup, reps = _count(doc, "warmup", 0, 0), _count(doc, "repetitions", 1, 1)
        _use_threads(spec, _count(doc, "threads_per_rank", 1, 1))
        sim = Simulation(spec, comm)
    except Exception as exc:  # noqa: BLE001 - recorded, never swallowed
        error = f"rank {rank}: {exc}" if not isinstance(exc, SpecError) else str(exc)
    gathered = comm.allgather((error, placement.rank_facts()))
    errors = sorted({e for e, _ in gathered if e})
    ident = run_identity(doc) if isinstance(doc, dict) else run_identity({})
    base = _base(ident, size, started_at, config_hash)
    base.update(rec.placement_fields(placement.placement([facts for _, facts in gathered])))
    if errors:
        if rank != 0:
            return None
        base.update(status="failed", error="; ".join(errors) if len({e.split(': ', 1)[-1] for e in errors}) > 1 else errors[0])
        return Result([base], None)

    assert spec is not None and sim is not None
    per_rep = []
    with flushed():  # subnormals flushed to zero, as the kernels' calibration runs them (sims.fdm.subnormals)
        sim.warm_up()
        for r in range(warmup + reps):
            began = time.time()
            loop_s = sim.run()
            if r >= warmup:
                per_rep.append((loop_s, dict(sim.timers.totals), began))
    traces = sim.gather_traces()
    finite = bool(np.all(np.isfinite(sim.traces.get() if sim.xp is not np else sim.traces)))
    finite = all(comm.allgather(finite))
    gathered = comm.gather(per_rep, root=0)
    if rank != 0:
        return None

    step = counts.step_counts(spec.shape, spec.order, spec.pml_width if spec.boundary == "cpml" else 0, spec.free_surface)
    base.update(
        size=spec.points, points=spec.points, steps=spec.steps, order=spec.order,
        grid=rec.canonical_json({"shape": list(spec.shape), "spacing": spec.spacing}),
        decomposition=rec.canonical_json(list(sim.dims)), marshaling=spec.marshaling, boundary=spec.boundary_label,
        flops=step["flops"] * spec.steps, bytes=step["bytes"] * spec.steps,
        **per_processor(doc.get("processor"), step["flops"] * spec.steps, step["bytes"] * spec.steps),
        timer_resolution_s=time.get_clock_info("perf_counter").resolution,  # the clock the loop is timed with
    )
    if not finite:
        base.update(status="failed", error=f"the wavefield became non-finite (dt = {spec.dt:g} s): numerical instability")
        return Result([base], None)
    records = []
    for r in range(reps):
        loops = [gathered[k][r][0] for k in range(size)]
        phases = {p: [gathered[k][r][1][p] for k in range(size)] for p in PHASES}
        row = dict(base)
        row.update(
            rep=r, status="ok", time_s=max(loops), measured_at=rec.utc_at(gathered[0][r][2]), phase_times=rec.canonical_json({**phases, "loop": loops}),
            **{f"time_{p}_s": max(phases[p]) for p in PHASES},
        )
        records.append(row)
    t, mrate = sim.source_time_function()
    vx, vy, vz = traces
    seis = {
        "t": (np.arange(spec.steps) + 0.5) * spec.dt, "vx": vx, "vy": vy, "vz": vz,
        "moment_rate": mrate, "moment_rate_t": t,
        "source_position": sim.source_position, "receiver_positions": sim.receiver_positions,
        "dt": np.float64(spec.dt),
    }
    return Result(records, seis)


def write_outputs(out_dir: str, result: Result, raw_record: str | None = None) -> None:
    """Write ``seismograms.npz`` (removed when the run failed) and ``record.json``, each atomically.

    ``raw_record`` is a second place for the records (the workflow's raw-record path).
    """
    out = Path(out_dir)
    if result.seismograms is not None:
        buf = io.BytesIO()
        np.savez(buf, **result.seismograms)
        atomic_write_bytes(out / "seismograms.npz", buf.getvalue())
    else:
        (out / "seismograms.npz").unlink(missing_ok=True)  # never leave an older run's traces beside a failure
    rec.write_raw(out / "record.json", result.records[0]["run_id"], result.records)
    if raw_record:
        rec.write_raw(raw_record, result.records[0]["run_id"], result.records, keep=True)

