"""Run one two-processor case-study run as one MPI job and write its raw record.

Usage (what the workflow's ``simulate_run`` rule launches for the SA, LA and PEACH cases)::

    mpiexec -n 2 python -m mpi4py -m sims.run --spec '<json>' --out results/raw/<study>/<run_id>.json

Rank 0 plays the platform's ``host`` processor and rank 1 its ``accel``
processor. The spec names its *job*, ``"job": "package.module:Class"``: the
case's per-rank work (see :class:`sims.job.Job`), imported here by name, so a case from
a plugin package runs through this same runner. Any error on any rank - a bad
spec, a missing backend, a region too short to time - becomes one ``failed``
record; the job itself exits 0 so the study goes on.

Importing this module has no side effects; the thread limit is set by
:func:`main`'s caller (``python -m``) before NumPy or Numba load.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import sys
import traceback
from typing import Any

from sims import placement
from sims import record as rec
from sims._threads import limit_threads, pin_cores
from sims.timing import Measurement, measure, mpi_op
from sims.vocab import ROLES


def load_job(path: str) -> Any:
    """The job class named ``package.module:Class`` (a run spec's ``job``)."""
    module, sep, name = str(path).partition(":")
    if not sep or not module or not name:
        raise ValueError(f"job {path!r} is not 'package.module:Class'")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"job {path!r} cannot be loaded: {exc}") from exc


def _base_record(spec: dict[str, Any], run_id: str, started_at: str, ranks: int,
                 where: dict[str, Any] | None = None) -> dict[str, Any]:
    prov = rec.provenance()
    params = spec.get("params", {})
    size = spec.get("size")  # the case's problem size, set when the case expanded the study
    return {
        **{name: None for name in rec.FIELD_TYPES},
        "run_id": run_id,
        "study": spec["study"],
        "case": spec["case"],
        "variant": spec["variant"],
        "params": rec.canonical_json(params),
        "platform": spec["platform"],
        "ranks": ranks,
        "size": int(size) if size is not None else None,
        "energy_source": "none",
        "started_at": started_at,
        "config_hash": spec.get("config_hash", "unknown"),
        **prov,
        **rec.placement_fields(where),
    }


def _records(spec, run_id, started_at, ranks, job: Any, m: Measurement, energy, extra: dict[str, Any],
             where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    base = _base_record(spec, run_id, started_at, ranks, where)
    params = dict(spec.get("params", {}))
    params.update(job.describe(), **extra)
    base["params"] = rec.canonical_json(params)
    host, accel = job.parts["host"], job.parts["accel"]
    out = []
    for i, r in enumerate(m.repetitions):
        row = dict(base)
        row.update(
            rep=i,
            measured_at=rec.utc_at(r.wall_s[0]) if r.wall_s else None,
            status="ok",
            alpha=job.alpha,
            time_s=r.slowest_s,
            time_host_s=None if host.idle else r.per_rank_s[0],
            time_accel_s=None if accel.idle else r.per_rank_s[1],
            flops=host.flops + accel.flops,
            bytes=host.bytes + accel.bytes,
            flops_host=host.flops,
            bytes_host=host.bytes,
            flops_accel=accel.flops,
            bytes_accel=accel.bytes,
            executed_flops_host=job.executed["host"],
            executed_flops_accel=job.executed["accel"],
            timer_resolution_s=m.resolution_s,
        )
        if energy is not None:
            e = dict(energy[i])
            # the host's wall-clock window of the repetition: a meter trace that arrives later can
            # still be integrated over it (hetval attach-trace)
            e["energy_detail"] = rec.canonical_json({**e["energy_detail"], "window": r.wall_s})
            row.update(e)
        out.append(row)
    return out


def _energy(comm: Any, meters: Any, m: Measurement, lengthened: str | None) -> list[dict[str, Any]] | None:
    """Energy columns per repetition, attributed on rank 0 from every rank's own meter readings."""
    from sims.meters.node import attribute

    mine = (meters.describe(), [meters.deltas(r.meter_before or {}, r.meter_after or {}) for r in m.repetitions],
            meters.update_period_s)
    gathered = comm.gather(mine, root=0)
    if comm.Get_rank() != 0:
        return None
    descs = [g[0] for g in gathered]
    if not any(d["meters"] for d in descs):
        notes = [n for d in descs for n in d["notes"]]
        return [{"energy_j": None, "energy_host_j": None, "energy_accel_j": None, "energy_source": "none",
                 "energy_detail": {"measured": False, "why": "no energy meter on any rank",
                                   "executions_per_region": m.inner, **({"region": lengthened} if lengthened else {}),
                                   **({"notes": notes} if notes else {})}}
                for _ in m.repetitions]
    rows = []
    for i, r in enumerate(m.repetitions):
        deltas = [g[1][i] for g in gathered]
        settings = meters.settings
        period = max(g[2] for g in gathered)
        window = r.slowest_s * m.inner
        row = attribute(descs, deltas, inner=m.inner, lengthened_why=lengthened)
        if settings.short_region == "refuse" and window < settings.min_periods * period:
            row = {"energy_j": None, "energy_host_j": None, "energy_accel_j": None, "energy_source": "none",
                   "energy_detail": {**row["energy_detail"], "refused": row["energy_detail"].get("refused", []) + [
                       f"region {window:.3g} s is shorter than {settings.min_periods:g} meter update periods "
                       f"({period:.3g} s each); energy.short_region is 'refuse'"]}}
        rows.append(row)
    return rows


def execute(comm: Any, spec: dict[str, Any], platform_file: str | None) -> list[dict[str, Any]] | None:
    """Run ``spec`` on every rank of ``comm``; rank 0 returns the records (others return None).

    Errors are gathered at two collective points (after setup, after the
    measurement) so that a failure on one rank never leaves another waiting in
    a barrier; any error turns the run into one ``failed`` record, and a
    frequency that cannot be set into one ``skipped`` record.
    """
    from sims.la.frequency import NotControllable, pinned
    from sims.meters.node import node_rank, open_meters

    rank, size = comm.Get_rank(), comm.Get_size()
    run_id = rec.run_id_of(spec)
    started_at = rec.utc_now()
    on_node = node_rank(comm)  # collective: before anything that may fail on one rank only
    job: Any = None
    meters = None
    error: str | None = None
    skipped: str | None = None
    freq = (spec.get("params") or {}).get("frequency") or {}
    proc: dict[str, Any] = {}
    try:
        asked = int((spec.get("resources") or {}).get("ranks") or len(ROLES))  # the layout its case planned
        if size != len(ROLES) or size != asked:
            raise ValueError(f"a {spec.get('case')} run needs {len(ROLES)} ranks (host, accel) and its spec's "
                             f"resources ask for {asked}; the launcher started {size}")
        role = ROLES[rank]
        proc = dict(spec["layout"][role])
        if proc.get("cores"):
            # positions in this rank's cpuset -> the CPUs bound (what the meters and cpufreq act on)
            proc["cores"] = pin_cores(proc["cores"])
        if not spec.get("job"):
            raise ValueError(f"the run spec names no job ('job': 'package.module:Class') for case {spec.get('case')!r}")
        job = load_job(spec["job"])(spec, role, platform_file)
        if hasattr(job, "rehearse"):  # each kernel's first call in this process, in setup (sims.job.PhaseJob)
            job.rehearse()
        meters = open_meters(spec, role, proc, rank, on_node)
    except Exception as exc:  # noqa: BLE001 - recorded, never swallowed
        error = f"rank {rank}: {type(exc).__name__}: {exc}"
    gathered = comm.allgather((error, placement.rank_facts()))  # after pinning: the CPUs each rank is bound to
    errors = [e for e, _ in gathered if e]
    where = placement.placement([facts for _, facts in gathered])

    m: Measurement | None = None
    lengthened: str | None = None
    energy = None
    if not errors:
        failure: list[str] = []

        def guarded() -> None:
            if not failure:
                try:
                    job.work()
                except Exception as exc:  # noqa: BLE001
                    failure.append(f"rank {rank}: {type(exc).__name__}: {exc}")

        period = comm.allreduce(meters.update_period_s, op=mpi_op("MAX"))
        metered = comm.allreduce(bool(meters.meters), op=mpi_op("LOR"))
        min_window = 0.0
        if period > 0 and meters.settings.short_region == "lengthen":
            min_window = meters.settings.min_periods * period
        with contextlib.ExitStack() as stack:
            # Set the frequencies first and agree on the outcome: a rank that cannot set its
            # frequency must not leave the others waiting in the measurement's barriers.
            try:
                f_c = freq.get("f_C") if role == "host" else None
                f_g = freq.get("f_G") if role == "accel" else None
                if f_g is not None and proc.get("backend") != "cupy":
                    raise NotControllable(f"f_G = {f_g} MHz is a GPU clock, but the accel processor is a CPU "
                                          f"({proc.get('backend')})")
                stack.enter_context(pinned(f_c, f_g, proc.get("cores"), proc.get("device")))
            except NotControllable as exc:
                skipped = f"rank {rank}: {exc}"
            except OSError as exc:  # writing cpufreq files went wrong mid-way
                failure.append(f"rank {rank}: setting the frequency failed: {exc}")
            if not any(comm.allgather(bool(skipped or failure))):
                try:
                    m = measure(
                        comm, guarded, job.sync, int(spec["warmup"]), int(spec["repetitions"]),
                        float(spec.get("min_region_factor", 1000.0)),
                        meter_read=meters.read if metered else None, min_window_s=min_window,
                    )
                except Exception as exc:  # noqa: BLE001 - RegionTooShortError is raised on all ranks alike
                    failure.append(f"{type(exc).__name__}: {exc}")
        skips = sorted({s for s in comm.allgather(skipped) if s})
        errors = sorted({e for errs in comm.allgather(failure) for e in errs})
        if skips and not errors:
            skipped = "; ".join(skips)
        if m is not None and not errors and not skips:
            if m.inner > 1:
                lengthened = (f"lengthened: {m.inner} executions per measured region so that it spans "
                              f"{meters.settings.min_periods:g} updates of the slowest meter ({period:.3g} s); "
                              "time_s and energy are per execution")
            energy = _energy(comm, meters, m, lengthened)
    if meters is not None:
        meters.close()

    if rank != 0:
        return None
    if errors or skipped:
        row = _base_record(spec, run_id, started_at, size, where)
        if errors:
            row.update(rep=0, status="failed", error="; ".join(errors))
        else:
            row.update(rep=0, status="skipped", error=skipped)
        return [row]
    extra = {"executions_per_region": m.inner} if m.inner > 1 else {}
    return _records(spec, run_id, started_at, size, job, m, energy, extra, where)


def _progress(records: list[dict[str, Any]]) -> str:
    first = records[0]
    head = f"[hetval run] {first['study']} {first['case']} {first['variant']} on {first['platform']}"
    if first["status"] != "ok":
        return f"{head}: FAILED - {first['error']}"
    times = [r["time_s"] for r in records]
    return (
        f"{head}: ok, median {statistics.median(times):.4g} s over {len(times)} reps "
        f"(min {min(times):.4g}, max {max(times):.4g})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpi4py -m sims.run", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="the run spec as JSON text")
    parser.add_argument("--out", required=True, help="where rank 0 writes the raw record (JSON)")
    parser.add_argument("--platform-file", default=None, help="characterised platform YAML (needed by p-DP)")
    parser.add_argument(
        "--config-hash", default=os.environ.get("HETVAL_CONFIG_HASH", "unknown"),
        help="hash of the study config (provenance; default $HETVAL_CONFIG_HASH)",
    )
    args = parser.parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    try:
        spec = json.loads(args.spec)
        spec["config_hash"] = args.config_hash
    except json.JSONDecodeError as exc:
        if comm.Get_rank() == 0:
            print(f"[hetval run] --spec is not valid JSON: {exc}", file=sys.stderr)
        return 2
    try:
        records = execute(comm, spec, args.platform_file)
    except Exception:  # noqa: BLE001 - an error in the runner itself: say where, still exit non-zero
        traceback.print_exc()
        return 1
    if records is not None:
        rec.write_raw(args.out, rec.run_id_of(spec), records, keep=True)
        print(_progress(records), flush=True)
    return 0


if __name__ == "__main__":
    limit_threads(1)  # before the job's imports load NumPy / Numba thread pools
    sys.exit(main())
