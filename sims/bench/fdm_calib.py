"""Calibration microbenchmarks of the FDM code's own kernels, for the calibrated FDM model.

Characterisation runs these when its study has FDM runs (for the FDM case's
backend and orders), never from the validation runs themselves:

* **half-steps** - the solver's own velocity and stress half-steps
  (:class:`sims.fdm.solver.Simulation` on one rank, its kernels and boxes as a
  run calls them) on blocks of several shapes (row lengths 24..192 at a few
  block sizes: the row-length and block-size effect) and absorbing-layer widths
  (0 = bulk kernel only; two widths separate the C-PML cost per row from its
  cost per layer point). Each is fitted, per order and half-step, to the linear
  cost of :mod:`sims.fdm.cost` by relative non-negative least squares.
* **pack / unpack** - the halo marshaling copies (:meth:`sims.fdm.solver.Halo._marshal`:
  the Numba pack kernel and the array module's slicing) of one ghost face per
  orientation (x and y faces are runs of whole rows, z faces single elements
  with a row-long stride) of every calibration block, each copy timed right
  after a velocity half-step on its block has written the fields it copies (as
  in a run: a block that fits in the caches leaves its faces there, a larger
  one does not - how much faster that is depends on the machine's caches):
  cost per field call plus cost per element, per orientation, each sample
  with its block's size.

Both are measured **alone** (one rank busy, the others waiting) and **shared**
(every characterisation rank running the same kernels at once, as the ranks of
a multi-rank run on one node do; CPU backends only). A study whose FDM runs put
more ranks on a node than it has cores also measures them **time-shared**: each
characterisation rank beside a co-runner on its own core (a forked copy of its
block running the half-steps, as a second rank on that core does), each kernel
timed in the CPU seconds it used (what it costs the core, cache evictions by the
co-runner included), and each unpack after yielding the core (a run's rank
unpacks after waiting in the exchange, while its core ran another rank). The
message latency and bandwidth come from the ping-pong (:mod:`sims.bench.pingpong`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from sims.fdm import cost
from sims.fdm.decomp import HALO
from sims.fdm.subnormals import flushed
from sims.fit import relative_nonnegative_fit

HALF_STEPS = ("velocity", "stress")
#: a relative residual beyond this flags the fit as poor, whatever its R²
POOR_RESIDUAL = 0.25


def run_doc(shape: Sequence[int], order: int, width: int, backend: str) -> dict[str, Any]:
    """A one-step run spec of a homogeneous block (the calibration's setup; nothing of it is timed)."""
    ext = [float(n) * 10.0 for n in shape]
    return {"grid": {"shape": [int(n) for n in shape], "spacing": 10.0}, "time": {"steps": 1}, "order": int(order),
            "backend": backend, "medium": {"homogeneous": {"vp": 2500.0, "vs": 1450.0, "rho": 2300.0}},
            "source": {"kind": "explosive", "f0": 4.0, "moment": 1.0e15, "position": [e / 2 for e in ext]},
            "boundary": {"kind": "cpml", "width": int(width)} if width else {"kind": "none"}}


def precompile(index: int, count: int, backend: str, orders: Sequence[int], blocks: Sequence[Sequence[int]],
               widths: Sequence[int], say: Callable[[str], None] | None = None) -> None:
    """Compile the Numba kernels the calibration will run, the half-steps split over ``count`` processes.

    The C-PML kernels of one order take about half a minute to compile, one half-step's copies no longer than
    the other's; compiled in two ranks at once, each into Numba's on-disk cache, every rank then loads the other's
    from the cache at first call. Process ``index`` compiles the half-steps ``HALF_STEPS[index::count]`` of a
    block with every kind of box (interior, x, y, x and y layers). Nothing here is timed. ``say`` hears of each
    kernel ready (compiled, or loaded from the cache), so a compile from nothing is never silent for long.
    """
    if backend != "numba":
        return
    from mpi4py import MPI

    from sims.fdm.solver import Simulation
    from sims.fdm.spec import parse

    width = max(widths)
    for order in orders:
        for phase in HALF_STEPS[index::count]:
            sim = Simulation(parse(run_doc(blocks[0], order, width, backend)), MPI.COMM_SELF)

            def progress(i: int, n: int, kernel: str, took: float, order: int = order, phase: str = phase) -> None:
                if say is not None:
                    say(f"order {order} {phase} half-step: kernel {i} of {n} ({kernel}) ready in {took:.1f} s")

            sim.compile_kernels((phase,), progress)
            del sim


def measure(active: bool, backend: str, orders: Sequence[int], blocks: Sequence[Sequence[int]],
            widths: Sequence[int], timed: Callable[[Callable[[], None] | None], list[float] | None],
            progress: Callable[[str], None] | None = None, corunner: bool = False) -> dict[str, Any] | None:
    """Half-step and marshaling samples of ``backend`` on this rank when ``active``.

    ``timed(work)`` is called the same number of times on every rank (``work`` None on an idle rank) and
    returns the seconds of each timed repetition of ``work`` (None when idle). Returns the samples on an
    active rank, None elsewhere. Subnormals are flushed to zero while it measures, as the solver runs
    (:mod:`sims.fdm.subnormals`). With ``corunner`` each block is measured time-shared (module notes): in CPU
    seconds, beside a co-runner on this core.
    """
    with flushed():
        return _measure(active, backend, orders, blocks, widths, timed, progress, corunner)


@contextlib.contextmanager
def sharing_core(sim: Any) -> Iterator[None]:
    """A co-runner on this process's core for the block: a forked child (the core affinity is inherited) running
    ``sim``'s velocity and stress half-steps on its own copy of the fields until the block is done, as a second
    rank on the core does. It calls no MPI and leaves by ``os._exit``; it is killed and reaped on the way out."""
    if sim is None:
        yield
        return
    pid = os.fork()
    if pid == 0:  # the co-runner: no MPI, no Python exit handlers
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            while True:
                sim._half_step("velocity")
                sim._half_step("stress")
        finally:
            os._exit(0)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _measure(active: bool, backend: str, orders: Sequence[int], blocks: Sequence[Sequence[int]],
             widths: Sequence[int], timed: Callable[[Callable[[], None] | None], list[float] | None],
             progress: Callable[[str], None] | None, corunner: bool = False) -> dict[str, Any] | None:
    from mpi4py import MPI

    from sims.fdm.solver import Halo, Simulation
    from sims.fdm.spec import parse

    half: list[dict[str, Any]] = []
    marshal: list[dict[str, Any]] = []
    for order in orders:
        for shape in blocks:
            for width in widths:
                sim = Simulation(parse(run_doc(shape, order, width, backend)), MPI.COMM_SELF) if active else None
                if sim is not None:
                    sim.warm_up()
                feats = cost.block_features(shape, (0, 0, 0), shape, width)
                with sharing_core(sim if corunner else None):
                    for phase in HALF_STEPS:
                        used: list[float] = []  # time-shared: the CPU seconds of each execution

                        def work(sim=sim, phase=phase, used=used) -> None:
                            c0 = time.thread_time()
                            sim._half_step(phase)
                            if sim.xp is not np:
                                sim.xp.cuda.Stream.null.synchronize()
                            used.append(time.thread_time() - c0)

                        times = timed(work if active else None)
                        if active:
                            half.append({"order": int(order), "phase": phase, "shape": [int(n) for n in shape],
                                         "width": int(width), **feats,
                                         "times_s": used[-len(times):] if corunner else times})
                    if width == 0:
                        marshal += _marshal_samples(sim, backend, order, shape, timed, Halo, corunner)
                del sim
            if progress:
                progress(f"order {order} block {list(shape)}")
    return {"half_steps": half, "marshal": marshal} if active else None


def _marshal_samples(sim: Any, backend: str, order: int, shape: Sequence[int], timed: Callable,
                     Halo: Any, corunner: bool = False) -> list[dict[str, Any]]:
    """Pack and unpack of one ghost face per orientation with every implementation the backend uses, for each
    of the run's two exchanges (the same calls on every rank; ``sim`` is None on an idle one).

    A run marshals a face once per exchange, right after the half-step that wrote the fields: each timed copy
    here follows that half-step on its block (not timed) and copies that exchange's fields (the three velocity
    fields after a velocity half-step, the six stress fields after a stress half-step). Whether the face is
    still in a cache then depends on the half-step, the block and the machine: a copy of the same face can cost
    twice as much after the one half-step as after the other, so each exchange is measured, not assumed to
    cost what the other does. A run unpacks a face into its ghost layers right after it packed the owned
    layers beside them (and received the buffer): a timed unpack here follows that pack too (not timed), so
    it finds in the caches what a run's does. Time-shared (``corunner``), a copy is timed in the CPU seconds it
    used, and an unpack follows a yield of the core: a run's rank unpacks after waiting in the exchange while
    its core ran another rank, which may have evicted the face.
    """
    from sims.fdm.solver import STRESS, VELOCITY

    width = int(order) // 2
    impls = ("numba", "xp") if backend == "numba" else ("xp",)
    clock = time.thread_time if corunner else time.perf_counter
    rows = []
    for axis in range(3):
        elements = cost.face_elements(shape, axis, width)
        for exchange, names in zip(HALF_STEPS, (VELOCITY, STRESS), strict=True):
            for impl in impls:
                # time-shared, only the unpack: a run's rank packs right after its own half-step, in its time slice
                for pack in ((False,) if corunner else (True, False)):
                    work = None
                    copies: list[float] = []
                    if sim is not None:
                        fields = [sim.fields[n] for n in names]
                        sl = [slice(HALO, HALO + m) for m in sim.block.n]
                        sl[axis] = slice(HALO, HALO + width)  # the owned low face, which a run packs
                        ghosts = list(sl)
                        ghosts[axis] = slice(HALO - width, HALO)  # the ghost layers beside it, which it unpacks
                        buf = sim.xp.zeros(len(names) * elements, dtype=np.float32)

                        def work(fields=fields, sl=tuple(sl), ghosts=tuple(ghosts), buf=buf, elements=elements,
                                 impl=impl, pack=pack, copies=copies, exchange=exchange) -> None:
                            sim._half_step(exchange)
                            if not pack:  # a run's unpack follows its pack of the face beside
                                Halo._marshal(fields, sl, buf, elements, impl == "numba", True)
                                if corunner:  # ...and a wait in the exchange, while another rank had the core
                                    os.sched_yield()
                            if sim.xp is not np:
                                sim.xp.cuda.Stream.null.synchronize()
                            t0 = clock()
                            Halo._marshal(fields, sl if pack else ghosts, buf, elements, impl == "numba", pack)
                            if sim.xp is not np:
                                sim.xp.cuda.Stream.null.synchronize()
                            copies.append(clock() - t0)

                    times = timed(work)
                    if sim is not None:
                        rows.append({"order": int(order), "impl": impl, "direction": "pack" if pack else "unpack",
                                     "axis": axis, "exchange": exchange, "elements": elements,
                                     "fields": len(names), "block_points": int(np.prod([int(n) for n in shape])),
                                     "times_s": copies[-len(times):]})
    return rows


def _poor(fit: Any) -> bool:
    return fit.poor or max(abs(r) for r in fit.residuals) > POOR_RESIDUAL


def fit_half_steps(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per order and half-step: the cost coefficients (s per unit of each feature), R², residuals, samples."""
    out: dict[str, Any] = {}
    for order in sorted({r["order"] for r in rows}):
        for phase in HALF_STEPS:
            sel = [r for r in rows if r["order"] == order and r["phase"] == phase]
            if not sel:
                continue
            y = [statistics.median(r["times_s"]) for r in sel]
            fit = relative_nonnegative_fit([[r[f] for r in sel] for f in cost.FEATURES], y)
            out.setdefault(str(order), {})[phase] = {
                "coefficients": dict(zip(cost.FEATURES, fit.coef, strict=True)),
                "unit": "s per point, row or layer point",
                "r2": fit.r2, "poor_fit": _poor(fit),
                "samples": [{"shape": r["shape"], "width": r["width"], **{f: r[f] for f in cost.FEATURES},
                             "time_median_s": t, "times_s": r["times_s"], "relative_residual": res}
                            for r, t, res in zip(sel, y, fit.residuals, strict=True)],
            }
    return out


def fit_marshal(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per order (the halo width: a z face of width 2 reads two neighbouring elements per row, of width 1 one),
    implementation, direction and face orientation: seconds per field call and per element over both exchanges;
    each sample names its exchange, and the model refits the samples of each exchange on its own
    (:func:`analysis.equations.fdm.local_marshal`)."""
    out: dict[str, Any] = {}
    for order in sorted({r["order"] for r in rows}):
        for impl in sorted({r["impl"] for r in rows}):
            for direction in ("pack", "unpack"):
                for axis in range(3):
                    _fit_marshal_one(rows, out, order, impl, direction, axis)
    return out


def _fit_marshal_one(rows: list[dict[str, Any]], out: dict[str, Any], order: int, impl: str, direction: str,
                     axis: int) -> None:
    sel = [r for r in rows if r["order"] == order and r["impl"] == impl and r["direction"] == direction
           and r["axis"] == axis]
    if len(sel) < 2:
        return
    y = [statistics.median(r["times_s"]) / r["fields"] for r in sel]
    fit = relative_nonnegative_fit([[1.0] * len(sel), [r["elements"] for r in sel]], y)
    out.setdefault(str(order), {}).setdefault(impl, {}).setdefault(direction, {})["xyz"[axis]] = {
        "per_call_s": fit.coef[0], "per_element_s": fit.coef[1], "r2": fit.r2, "poor_fit": _poor(fit),
        "samples": [{"elements": r["elements"], "block_points": r.get("block_points"), "time_per_field_s": t,
                     "exchange": r["exchange"], "times_s": r["times_s"], "relative_residual": res}
                    for r, t, res in zip(sel, y, fit.residuals, strict=True)],
    }


def document(samples: dict[str, dict[str, Any]], blocks: Sequence[Sequence[int]], widths: Sequence[int]) -> dict:
    """The platform file's ``fdm_calibration`` entry of one backend from its samples per mode."""
    return {
        "method": (f"the solver's velocity and stress half-steps on one rank, blocks {[list(b) for b in blocks]}, "
                   f"C-PML widths {list(widths)}, fitted to the linear cost of sims.fdm.cost by relative "
                   "non-negative least squares; pack/unpack of one ghost face per orientation and exchange (the 3 "
                   "velocity fields right after a velocity half-step, the 6 stress fields right after a stress "
                   "half-step, on its block), fitted as per-call + per-element cost; alone = "
                   "one rank busy, shared = every characterisation rank running the same kernels at once, "
                   "timeshared = every rank beside a co-runner on its core (a forked copy of its block running "
                   "the half-steps), each kernel in the CPU seconds it used and each unpack (no pack: a rank packs "
                   "right after its own half-step) after yielding the core"),
        "modes": {mode: {"half_steps": fit_half_steps(s["half_steps"]), "marshal": fit_marshal(s["marshal"])}
                  for mode, s in samples.items() if s is not None},
    }
