"""Characterise each processor of a platform inside the platform's own MPI layout.

Usage (what the workflow's ``characterize_platform`` rule launches)::

    mpiexec -n 2 python -m mpi4py -m sims.bench --spec '<json>' --out results/platforms/<name>.yaml

Rank 0 is the ``host`` processor, rank 1 the ``accel`` processor, pinned and
threaded exactly as in the case-study runs. Each processor is measured in turn
while the other rank waits at the barrier: STREAM triad -> ``t_b`` (s/byte),
independent FMA chains -> ``t_f`` (s/flop), float32, and the compute ceilings per
kernel class and precision (:mod:`sims.bench.ceilings`: vector FMA chains and the
backend's GEMM, float32 and float64). A shared triad (both
processors streaming at once) is recorded too, because concurrent WPs share the
memory system. Medians, spread and raw samples go into the platform file.

Why this module is long: :func:`characterize` is one MPI program whose steps share their state - the sizes the
first step finds, the moments and slots it returns to between later steps (the triad, the FMA chains and the
operation costs are spread over the replicate), the stopping rule and its tally - and every rank must walk the
same schedule of collective measurements; the phases' kernels and fits live in their own modules.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from typing import Any

from sims import record as rec
from sims._threads import pin_cores
from sims.atomic import atomic_write_text
from sims.bench import KERNELS_READY
from sims.bench.document import RAW_FORMAT, choices, document
from sims.bench.stopping import Tally, stop_rule
from sims.fingerprint import machine_facts
from sims.memory import release_freed
from sims.timing import Until, measure, mpi_op
from sims.vocab import BANDWIDTH_CLASSES, ROLES


class Progress:
    """Rank 0's progress lines: what is being measured, how far along, the elapsed time, what comes next."""

    def __init__(self, comm: Any, platform: str) -> None:
        import time

        self.rank, self.platform, self.t0, self._clock = comm.Get_rank(), platform, time.perf_counter(), time.perf_counter

    def __call__(self, text: str, rank: int = 0) -> None:
        if self.rank == rank:
            print(f"[hetval characterize] {self.platform}: {text} [{self._clock() - self.t0:.0f} s]", flush=True)


#: moments of a replicate at which the triad and the FMA chains are measured, on each processor alone (``t_b``,
#: ``t_f``) and the triad on both at once (``t_b_shared``): step 1, the end of step 4 and of step 7. On a virtual
#: machine these move between states for seconds to minutes (the two ranks' shared bandwidth; the host's FMA
#: chains, which run from a core's L2 that others share), each state tight in its own samples. A replicate that
#: measured them at one moment saw one state; spread like the runs, its median is the state the runs mostly saw,
#: and its replicates disagree where they saw different ones (figures: docs/benchmarks.md).
MOMENTS = 3


def sizing(comm: Any, spec: dict[str, Any]) -> Any:
    """This rank's array sizes (:mod:`sims.bench.plan`): the cache rule capped by the job's memory budget."""
    from mpi4py import MPI

    from sims.bench import plan
    from sims.memory import memory_limit

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        sharing = node.Get_size()
    finally:
        node.Free()
    llc, source = plan.cache_size(spec.get("llc_mib"))
    return plan.plan(llc, source, float(spec.get("llc_factor", 12)), float(spec.get("memory_fraction", plan.FRACTION)),
                     memory_limit(), sharing)


def characterize(comm: Any, spec: dict[str, Any]) -> dict[str, Any] | None:
    """Measure ``t_f``, ``t_b`` and the rest on both processors; rank 0 returns the raw samples (every other
    rank None), of which :func:`document` makes the platform document, alone or pooled with other replicates'.

    One phase's arrays are held at a time (triad, then the sweep's, then the random-access tables), each
    sized by :func:`sizing`, so that a rank's peak is the plan's ``peak_bytes`` above its base.
    """
    from sims.backends import get_backend
    from sims.bench import kernels

    rank = comm.Get_rank()
    if comm.Get_size() != len(ROLES):
        raise ValueError(f"characterisation needs {len(ROLES)} ranks (host, accel), got {comm.Get_size()}")
    role = ROLES[rank]
    proc = spec["layout"][role]
    if proc.get("cores"):
        pin_cores(proc["cores"])
    backend = get_backend(proc["backend"], proc.get("device"))
    warmup, reps = int(spec["warmup"]), int(spec["repetitions"])
    factor = float(spec.get("min_region_factor", 1000.0))
    say = Progress(comm, spec["platform"])
    until = stop_rule(spec)
    tally = Tally(until)
    sizes = sizing(comm, spec)
    plans = comm.gather(sizes, root=0)
    if rank == 0:
        p = sizes
        say(f"at most {p.elements} elements per triad array ({4 * p.elements / 2**20:.0f} MiB; the cache rule "
            f"wants {4 * p.wanted_elements / 2**20:.0f} MiB for an LLC of {p.llc_bytes / 2**20:.0f} MiB, {p.llc_source}); "
            f"budget {p.budget_bytes / 2**30:.2f} GiB per rank of {p.limit_bytes / 2**30:.1f} GiB ({p.limit_source})"
            + ("; CAPPED by the memory budget" if p.capped else "")
            + ("; below 4 x LLC: the triad partly measures the cache" if p.below_stream_rule else ""))
    chosen = (spec.get("choices") or [None] * len(ROLES))[rank] or {}
    n_triad, found = _triad_length(comm, spec, backend, sizes.elements, chosen, factor, say)
    if rank == 0:
        say(f"{n_triad} elements per triad array ({4 * n_triad / 2**20:.0f} MiB): {found['how']}")
    triad_state = kernels.triad_setup(backend, n_triad, seed=1 + rank)
    fma_state = kernels.fma_setup(backend, seed=1 + rank)
    counted: dict[str, int] = {}

    def run(kind: str, active: set[str]):
        def work() -> None:
            if role in active:
                if kind == "triad":
                    counted[kind] = kernels.triad(backend, triad_state)
                else:
                    counted[kind] = kernels.fma_peak(backend, fma_state)

        m = measure(comm, work, backend.synchronize, warmup, reps, factor, until=until, active=role in active)
        tally.add("shared triad" if len(active) > 1 else f"{kind} alone", m)
        if role not in active:
            return None
        return [counted[kind] / r.own_s for r in m.repetitions]

    mine: dict[str, Any] = {"t_b": [], "t_f": [], "t_b_shared": []}

    def moment(step: str, k: int) -> None:
        """The triad, then the FMA chains, on each processor alone, then the triad on both at once, at moment ``k``
        of :data:`MOMENTS` of the replicate (the triad's arrays set up again after the first, and freed: one
        phase's arrays at a time)."""
        nonlocal triad_state
        if k:
            triad_state = kernels.triad_setup(backend, n_triad, seed=1 + rank)
        for i, target in enumerate(ROLES):
            say(f"{step}: triad over {n_triad} elements, then FMA chains, on {target} "
                f"({spec['layout'][target]['backend']}), {warmup} warm-up + {reps} timed each"
                + (f" (up to {until.at_most} while wider than {until.precision:.0%})" if until else "")
                + f" ({i + 1} of {len(ROLES)}), moment {k + 1} of {MOMENTS}")
            t_b = run("triad", {target})
            t_f = run("fma", {target})
            if role == target:
                mine["t_b"] += t_b
                mine["t_f"] += t_f
        say(f"{step}: triad on both processors at once, moment {k + 1} of {MOMENTS}")
        mine["t_b_shared"] += run("triad", set(ROLES))
        triad_state.clear()

    moment("step 1 of 7", 0)
    from sims.bench import ceilings, plan

    def timed(work: Any, warm: int = warmup, n: int = reps, step: str = "ceilings") -> list[float] | None:
        done: dict[str, int] = {}

        def body() -> None:
            if work is not None:
                done["count"] = work()

        rule = None if until is None else replace(until, at_least=n, at_most=max(n, until.at_most))
        m = measure(comm, body, backend.synchronize, warm, n, factor, until=rule, active=work is not None)
        tally.add(step, m)
        return [done["count"] / r.own_s for r in m.repetitions] if work is not None else None

    transposes = {dt: plan.transpose_sizes(spec.get("transpose_sizes"), n_triad, dt, sizes.budget_bytes, say)
                  for dt in ceilings.DTYPES}
    tr = "; ".join(f"{dt} n = {', '.join(map(str, ns))}" for dt, ns in transposes.items())
    rounds: list[Any] = []

    transpose_rounds = int(spec.get("transpose_rounds") or ceilings.TRANSPOSE_ROUNDS)

    def transpose_round(step: str) -> None:
        """One of the transposes' rounds (``transpose_rounds``: :data:`sims.bench.ceilings.TRANSPOSE_ROUNDS` in a
        platform characterised once, one per replicate otherwise) on each processor."""
        for target in ROLES:
            say(f"{step}: the transpose's bandwidth on {target} ({tr}), round {len(rounds) // len(ROLES) + 1} of "
                f"{transpose_rounds}")
            got = ceilings.measure_transposes(role, target, backend, lambda w: timed(w, 1, round_reps, "transposes"), 17 + rank,
                                              transposes)
            rounds.append(got)

    round_reps = max(2, -(-reps // transpose_rounds))
    transpose_round("step 1 of 7")
    from sims.bench import sweep

    sweep_state = sweep.setup(backend, n_triad, seed=7 + rank)
    if chosen.get("sweep_elements"):  # a later replicate measures the points the first one sized
        mine["sweep_elements"] = {int(k): int(n) for k, n in chosen["sweep_elements"].items()}
    else:
        # a point the processor's own t_f and t_b make compute-bound for certain runs over fewer elements
        own_t_f = 1.0 / statistics.median(mine["t_f"])
        own_t_b = 1.0 / statistics.median(mine["t_b"])
        mine["sweep_elements"] = {k: sweep.point_elements(n_triad, k, own_t_f, own_t_b) for k in sweep.KS}
    from sims.meters.node import attribute, node_rank, open_meters, share_or_total

    meters = open_meters(spec, role, proc, rank, node_rank(comm))
    metered = comm.allreduce(bool(meters.meters), op=mpi_op("LOR"))
    descs = comm.allgather(meters.describe())
    energies: dict[str, dict[int, list[float]]] = {r: {} for r in ROLES}
    period = comm.allreduce(meters.update_period_s, op=mpi_op("MAX"))
    # energy.update_period_s lengthens the sweep even with no meter now, for a trace attached later
    min_window = meters.settings.min_periods * period if period > 0 and meters.settings.short_region == "lengthen" \
        else 0.0
    # the host's wall-clock window of every sweep sample (rank 0's clock), for hetval attach-trace
    windows: dict[str, dict[int, list[dict[str, Any]]]] = {r: {} for r in ROLES}
    point_n = comm.allgather(mine["sweep_elements"])

    def joules(before: Any, after: Any, target: str | None, inner: int) -> float | None:
        """Measured joules of one window: the target processor's share when attributable, else the total."""
        deltas = comm.allgather(meters.deltas(before or {}, after or {}))
        return share_or_total(attribute(descs, deltas, inner=inner), target)

    def run_sweep(k: int, target: str) -> list[float] | None:
        def work() -> None:
            if role == target:
                sweep.run(backend, sweep_state, k, mine["sweep_elements"][k])

        m = measure(comm, work, backend.synchronize, 1, reps, factor, meter_read=meters.read if metered else None,
                    min_window_s=min_window, until=until, active=role == target)
        tally.add("intensity sweep", m)
        if metered:
            # a node meter covers both processors: the idle one's static power is in every sample
            energies[target][k] = [joules(r.meter_before, r.meter_after, target, m.inner) for r in m.repetitions]
        windows[target][k] = [{"window": list(r.wall_s), "inner": m.inner,
                               "elements": point_n[ROLES.index(target)][k]} for r in m.repetitions]
        return [r.own_s for r in m.repetitions] if role == target else None

    if metered or not chosen:
        say("step 2 of 7: idle power")
        idle, idle_windows = _idle_power(comm, meters, descs, spec, metered)
    else:  # no meter: the first replicate's idle windows are kept for a trace attached later; more add nothing
        say("step 2 of 7: idle power: no meter, and the first replicate kept its idle windows for a trace")
        idle, idle_windows = None, []
    for target in ROLES:
        times = {}
        for i, k in enumerate(sweep.KS):
            n_k = point_n[ROLES.index(target)][k]
            say(f"step 3 of 7: intensity sweep on {target}, point {i + 1} of {len(sweep.KS)} "
                f"({k / 4:g} flop/byte, {n_k} elements)")
            times[k] = run_sweep(k, target)
        if role == target:
            mine["sweep"] = times
    sweep_state.clear()
    from sims.bench import ops

    given = chosen.get("op_passes") or {}
    op_passes: dict[str, dict[tuple[str, str], int]] = {}  # each target's passes, sized in the first slot
    mine["operations"] = []

    def ops_slot(step: str, slot: int) -> None:
        """The per-operation benchmarks' repetitions of slot ``slot`` of :data:`MOMENTS` (repetition ``r`` in slot
        ``r % MOMENTS``): spread over the replicate like the triad and the FMA chains, since the host's operations
        run from its L2 cache as its FMA chains do, and one moment sees one state of it. Each slot sets up its
        arrays, warms every call up once and frees them again."""
        mine_reps = [r for r in range(reps) if r % MOMENTS == slot]
        if not mine_reps:
            return
        op_state = ops.states(n_triad, seed=11 + rank, backend=ops.backend_for(backend.name))
        for target in ROLES:
            sized = role == target and backend.name != "cupy"
            kind = ops.backend_for(spec["layout"][target]["backend"])  # the target's: every rank runs its schedule
            measured = ops.ops_for(kind)
            say(f"{step}: per-operation benchmarks on {target}: {', '.join(measured)} x {', '.join(ops.DTYPES)}, "
                f"{len(ops.N_OPS)} operation counts, repetition(s) {', '.join(str(r + 1) for r in mine_reps)} of "
                f"{reps} interleaved")
            if target not in op_passes:
                op_passes[target] = {
                    (op, dt): (int(given[f"{op}/{dt}"]) if f"{op}/{dt}" in given else ops.passes_for(op_state[dt], op))
                    if sized else ops.PASSES for op in measured for dt in ops.DTYPES}
            passes = op_passes[target]
            if role == target:
                mine["op_passes"] = {f"{op}/{dt}": int(n) for (op, dt), n in passes.items()}
            for rep, op, dt, n_ops in ops.schedule(reps, kind):
                if rep not in mine_reps:
                    continue

                def work(op=op, dt=dt, n_ops=n_ops, sized=sized, passes=passes[op, dt]) -> None:
                    if sized:
                        ops.run(op_state[dt], op, n_ops, passes)

                m = measure(comm, work, backend.synchronize, 1 if rep == mine_reps[0] else 0, 1, factor)
                if role == target and backend.name != "cupy":
                    elements = ops.elements(op_state[dt], op, passes[op, dt])
                    mine["operations"] += [
                        {"op": op, "dtype": dt, "rep": rep, "n_ops": n_ops, "elements": elements,
                         "ops": elements * n_ops, "bytes": ops.bytes_of(op_state[dt], op, n_ops, passes[op, dt]),
                         "time_s": r.own_s} for r in m.repetitions]
        op_state.clear()

    ops_slot("step 4 of 7", 0)
    moment("step 4 of 7", 1)
    gemm_sizes = [int(n) for n in spec.get("gemm_sizes") or ceilings.GEMM_SIZES]
    for target in ROLES:
        say(f"step 5 of 7: ceilings on {target}: vector FMA chains and GEMM n = {', '.join(map(str, gemm_sizes))}, "
            f"{' and '.join(ceilings.DTYPES)}")
        got = ceilings.measure_ceilings(role, target, backend, timed, gemm_sizes, seed=13 + rank)
        if role == target:
            mine["ceilings"] = got
    ops_slot("step 5 of 7", 1)
    fdm = spec.get("fdm") or None
    if fdm:
        mine["fdm_calibration"] = _fdm_calibration(comm, spec, fdm, warmup, reps, factor, say, until, tally)
        release_freed()  # the calibration's blocks were heap arrays: the triad's third moment would stand on them
    else:
        say("step 6 of 7: no FDM runs on this platform: the FDM kernels are not calibrated")
    from sims.bench import pingpong

    say(f"step 7 of 7: MPI ping-pong host <-> accel, {len(pingpong.SIZES)} sizes {pingpong.SIZES[0]} B .. "
        f"{pingpong.SIZES[-1]} B")
    pp = pingpong.measure(comm, repetitions=reps, say=say)
    ops_slot("step 7 of 7", 2)
    moment("step 7 of 7", 2)
    if transpose_rounds > 1:
        transpose_round("step 7 of 7")
    mine["ceilings"].update(ceilings.merge_rounds(rounds))  # this rank's own rounds (None where another measured)
    gathered = comm.gather(mine, root=0)
    if rank != 0:
        return None
    versions = rec.versions()
    return {
        "format": RAW_FORMAT,
        "measured_at": rec.utc_now(),
        "hostname": rec.provenance()["hostname"],
        "versions": versions,
        "machine": machine_facts(versions.get("mpi_library")),
        "warmup": warmup,
        "elements": n_triad,
        # the cap the cache rule and the memory budget set, and the length used: the plateau's, at most the cap
        "plans": [{**p.document(), "cap_elements": p.elements, "elements": n_triad, "triad_bytes_per_array": 4 * n_triad,
                   "plateau": found} for p in plans],
        "capped": [bool(p.capped) for p in plans],
        "descs": descs,
        "metered": bool(metered),
        "idle": idle,
        "idle_windows": idle_windows,
        "energies": {r: {str(k): v for k, v in energies[r].items()} for r in ROLES},
        "windows": {r: {str(k): v for k, v in windows[r].items()} for r in ROLES},
        "pingpong": {str(m): t for m, t in pp.items()},
        "repetitions": tally.document(),
        "ranks": [{**{k: v for k, v in data.items() if k not in ("sweep", "sweep_elements", "ceilings")},
                   "sweep": {str(k): v for k, v in data["sweep"].items()},
                   "sweep_elements": {str(k): v for k, v in data["sweep_elements"].items()},
                   "ceilings": {c: {str(n): v for n, v in by.items()} for c, by in data["ceilings"].items()}}
                  for data in gathered],
    }


def _triad_length(comm: Any, spec: dict[str, Any], backend: Any, cap: int, chosen: dict[str, Any], factor: float,
                  say: Progress) -> tuple[int, dict[str, Any]]:
    """The triad's (and the sweep's, the tables') length on every rank, and how it was found: an earlier
    replicate's; or where the triad's rate reaches its memory plateau on each processor in turn (the longer of the
    two; :func:`sims.bench.plan.plateau`), at most ``cap`` (the cache rule capped by the memory budget); or ``cap``
    itself when ``characterize.plateau`` is off."""
    from sims.bench import kernels, plan

    if chosen.get("triad_elements"):
        return int(chosen["triad_elements"]), {"how": "the first replicate's length"}
    if not spec.get("plateau", True):
        return cap, {"how": "the cache rule's length (characterize.plateau is off)"}
    rank, role = comm.Get_rank(), ROLES[comm.Get_rank()]
    found: dict[str, Any] = {}
    for target in ROLES:
        def rate(n: int, target: str = target) -> float:
            state = kernels.triad_setup(backend, n, seed=1 + rank) if role == target else None
            m = measure(comm, lambda: kernels.triad(backend, state) if state is not None else None,
                        backend.synchronize, 1, 3, factor)
            mine = statistics.median(kernels.TRIAD_BYTES_PER_ELEMENT * n / r.own_s for r in m.repetitions)
            got = comm.bcast(mine if role == target else None, root=ROLES.index(target))
            say(f"step 1 of 7: the triad's memory plateau on {target}: {4 * n / 2**20:.0f} MiB per array, "
                f"{got / 1e9:.1f} GB/s")
            return got

        n, steps, why = plan.plateau(rate, cap)
        found[target] = {"elements": n, "why": why, "steps": steps}
    n = max(f["elements"] for f in found.values())
    return n, {"how": "the longer of the processors' memory plateaus, at most the cache rule's length", **found}


def _fdm_calibration(comm: Any, spec: dict[str, Any], fdm: dict[str, Any], warmup: int, reps: int,
                     factor: float, say: Progress, until: Until | None = None,
                     tally: Tally | None = None) -> dict[str, Any] | None:
    """The FDM kernels' calibration samples (:mod:`sims.bench.fdm_calib`) for the study's FDM backend and orders.

    Alone on the first processor driving that backend (the host for a CPU backend no processor drives), then,
    on a CPU backend, shared: every rank running the same kernels at once. Rank 0 returns the samples (with the
    backend, blocks and widths), which :func:`document` fits.
    """
    from sims.bench import fdm_calib
    from sims.fdm import cost

    backend = str(fdm["backend"])
    orders = [int(o) for o in fdm.get("orders") or (2, 4)]
    blocks = [tuple(int(n) for n in b) for b in fdm.get("blocks") or cost.BLOCKS]
    widths = [int(w) for w in fdm.get("widths") or cost.WIDTHS]
    cost.check_blocks(blocks, widths)
    rank = comm.Get_rank()
    drivers = [i for i, r in enumerate(ROLES) if spec["layout"][r]["backend"] == backend]
    alone_rank = drivers[0] if drivers else 0

    # the calibration fits one model to hundreds of such measurements, whose number sets its precision: each keeps
    # its share of the repetitions (a warm-up that was still needed is taken as one, as everywhere)
    until = None if until is None else replace(until, at_most=until.at_least)

    def seconds(work: Any) -> list[float] | None:
        m = measure(comm, work if work is not None else (lambda: None), lambda: None, warmup, reps, factor,
                    until=until, active=work is not None)
        if tally is not None:
            tally.add("FDM kernels", m)
        return [r.own_s for r in m.repetitions] if work is not None else None

    points = len(orders) * len(blocks)

    def progress(what: str) -> Any:
        done = [0]

        def step(text: str) -> None:
            done[0] += 1
            say(f"step 6 of 7: FDM kernels ({backend}, {what}): {text} done ({done[0]} of {points})", rank=alone_rank)
        return step

    if backend == "numba":
        say(f"step 6 of 7: compiling the FDM kernels (orders {', '.join(map(str, orders))}), one half-step per rank",
            rank=alone_rank)
        began = time.perf_counter()
        fdm_calib.precompile(rank, comm.Get_size(), backend, orders, blocks, widths,
                             lambda text: print(f"[hetval characterize] {spec['platform']}: step 6 of 7: compiling "
                                                f"the FDM kernels, rank {rank}: {text}", flush=True))
        comm.Barrier()
        # a fresh clone compiles them (about 20 s here); later characterisations load them from Numba's cache
        say(KERNELS_READY.format(seconds=time.perf_counter() - began), rank=alone_rank)
    say(f"step 6 of 7: FDM kernels ({backend}): {points} blocks x {len(widths)} widths, alone"
        + (" then shared" if backend != "cupy" else ""), rank=alone_rank)
    modes = {"alone": fdm_calib.measure(rank == alone_rank, backend, orders, blocks, widths, seconds, progress("alone"))}
    if backend != "cupy":
        modes["shared"] = fdm_calib.measure(True, backend, orders, blocks, widths, seconds, progress("shared"))
        if fdm.get("timeshared"):  # the study puts more ranks on a node than it has cores
            say(f"step 6 of 7: FDM kernels ({backend}): time-shared, each rank beside a co-runner on its core",
                rank=alone_rank)
            modes["timeshared"] = fdm_calib.measure(True, backend, orders, blocks, widths, seconds,
                                                    progress("time-shared"), corunner=True)
    gathered = comm.gather(modes, root=0)
    if rank != 0:
        return None
    return {"backend": backend, "blocks": [list(b) for b in blocks], "widths": widths,
            "samples": {"alone": gathered[alone_rank]["alone"],
                        **{m: gathered[0][m] for m in ("shared", "timeshared") if m in modes}}}


def _idle_power(comm: Any, meters: Any, descs: list[dict[str, Any]], spec: dict[str, Any],
                metered: bool) -> tuple[dict[str, Any] | None, list[list[float]]]:
    """Static (idle) power: every rank sleeps through three windows of at least 1 s (and 10 meter updates).

    Returns the windows' power samples (None with no meter; :func:`document` takes their median) and their wall-clock
    ``[start, end]`` (rank 0's clock), kept so that a trace attached later can
    measure the idle power too.
    """
    import time

    from sims.meters.node import attribute

    period = comm.allreduce(meters.update_period_s, op=mpi_op("MAX"))
    window = max(1.0, meters.settings.min_periods * period)
    samples: list[dict[str, Any]] = []
    walls: list[list[float]] = []
    for _ in range(3):
        comm.Barrier()
        before = meters.read()
        wall0 = time.time()
        t0 = time.perf_counter()
        time.sleep(window)
        comm.Barrier()
        after = meters.read()
        walls.append([wall0, time.time()])
        elapsed = comm.allreduce(time.perf_counter() - t0, op=mpi_op("MAX"))
        if metered:
            row = attribute(descs, comm.allgather(meters.deltas(before, after)))
            samples.append({k: (v / elapsed if isinstance(v, float) else None)
                            for k, v in row.items() if k in ("energy_j", "energy_host_j", "energy_accel_j")})
    if comm.Get_rank() != 0 or not metered:
        return None, walls
    return {"samples": samples, "window_s": window}, walls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpi4py -m sims.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="platform spec as JSON text")
    parser.add_argument("--out", required=True, help="platform YAML to write")
    parser.add_argument("--raw", default=None,
                        help="also write the raw samples here (JSON), which sims.bench.replicates pools with other "
                             "replicates'")
    parser.add_argument("--choices", default=None,
                        help="an earlier replicate's raw samples: measure the sweep points and per-operation passes "
                             "it sized, so that the replicates' samples pool")
    args = parser.parse_args(argv)
    import yaml
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    spec = json.loads(args.spec)
    if args.choices:
        spec["choices"] = choices(json.loads(open(args.choices, encoding="utf-8").read()))
    raw = characterize(comm, spec)
    if raw is not None:
        if args.raw:
            atomic_write_text(args.raw, json.dumps(raw))
        doc = document([raw], spec)
        atomic_write_text(args.out, yaml.safe_dump(doc, sort_keys=False))
        for r, p in doc["processors"].items():
            print(
                f"[hetval characterize] {spec['platform']} {r} ({p['backend']}): "
                f"{p['t_f']['rate_median'] / 1e9:.2f} GFLOP/s, {p['t_b']['rate_median'] / 1e9:.2f} GB/s "
                f"(shared {p['t_b_shared']['rate_median'] / 1e9:.2f} GB/s); ceilings "
                + ", ".join(f"{c} {dt} {1 / q['value'] / 1e9:.1f} {'GB/s' if c in BANDWIDTH_CLASSES else 'GFLOP/s'}"
                            for c, by in p["ceilings"].items() for dt, q in by.items()),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
