"""One rank's part of an FDM simulation: fields, boxes, halo exchange, sources, receivers, per-phase timers.

The owned block is cut into boxes along each axis at the C-PML edges; the
interior box runs the bulk kernel, the others the PML kernel with the memory
variables of the axes whose layer they lie in. Memory variables exist only
for the owned cells inside a layer. After the velocity update and after the
stress update the halos are exchanged one axis at a time (x, then y, then z)
with the marshaling design of the spec.

Why this module is long: one rank's time step is one object - its fields, boxes, halo buffers and
timers are shared state of the velocity and stress half-steps, and splitting the class across
modules would only pass that state around. The kernels themselves live in ``kernels_numba`` and
``kernels_xp``; the decomposition in ``decomp``.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sims.vocab import FDM_PHASES

from . import cpml, kernels_fused, kernels_xp
from .decomp import HALO, Block, block_of, choose_dims
from .spec import FDMSpec

VELOCITY = ("vx", "vy", "vz")
STRESS = ("sxx", "syy", "szz", "sxy", "sxz", "syz")
PHASES = FDM_PHASES
C4 = (9.0 / 8.0, -1.0 / 24.0)


@dataclass
class Timers:
    """Seconds spent per phase on this rank."""

    totals: dict = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    def add(self, phase: str, seconds: float) -> None:
        self.totals[phase] += seconds

    def reset(self) -> None:
        for k in self.totals:
            self.totals[k] = 0.0


def _array_module(backend: str):
    if backend == "cupy":
        import cupy  # noqa: PLC0415 - optional, imported only for GPU runs

        return cupy
    return np


_ALLOCATED = [0]


def _zeros(xp, shape):
    """A zeroed float32 array, touched now, whose start is staggered against the previous ones.

    Large NumPy arrays come from fresh ``mmap`` regions that all start at the
    same offset within a 4 KiB page; a stencil that streams nine such arrays
    then suffers 4K aliasing of loads against stores (measured here: the
    stress sweep about 1.5x slower). Each array therefore starts 448 bytes
    (7 cache lines) further into the page than the previous one.
    """
    if xp is not np:
        return xp.zeros(shape, dtype=xp.float32)
    n = int(np.prod(shape))
    shift = (_ALLOCATED[0] * 7 % 64) * 16  # floats: 7 cache lines per array, modulo a page
    _ALLOCATED[0] += 1
    raw = np.empty(n + shift + 16, dtype=np.float32)
    align = (-(raw.ctypes.data // 4)) % 16  # 64-byte aligned first, then shifted
    a = raw[align + shift:align + shift + n].reshape(shape)
    a.fill(0)
    return a


def _absent_layer():
    """Placeholders of an absent layer's memory variable, origin and profile: fresh for every argument slot, so
    that no two arguments of a ``noalias`` kernel share memory even where the kernel never touches them."""
    return np.zeros((3, 1, 1, 1), dtype=np.float32), np.zeros(3, dtype=np.int64), np.zeros((4, 1), dtype=np.float32)


def _check_disjoint(written, args) -> None:
    """The Numba kernels are compiled ``noalias``: no array a kernel writes may overlap another of its array
    arguments ``args`` (checked for every call when the plan is built, once per simulation)."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for w in written:
        for b in arrays:
            if b is not w and np.may_share_memory(w, b):
                raise RuntimeError("FDM kernel arguments overlap in memory: a wavefield or memory variable shares "
                                   "storage with another argument (the Numba kernels assume they do not)")


def _kernel_threads() -> int:
    """Threads Numba's parallel loops use in this process (``NUMBA_NUM_THREADS``, set from ``threads_per_rank``)."""
    import numba  # noqa: PLC0415 - only for the numba backend

    return int(numba.get_num_threads())


def _sync(xp) -> None:
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


class Simulation:
    """This rank's share of one run of ``spec`` on the communicator ``comm``."""

    def __init__(self, spec: FDMSpec, comm) -> None:
        from mpi4py import MPI

        self.spec = spec
        self.dims = choose_dims(comm.Get_size(), spec.shape, spec.decomposition)
        self.cart = comm.Create_cart(list(self.dims), periods=[False] * 3, reorder=False)
        self.coords = tuple(self.cart.Get_coords(self.cart.Get_rank()))
        self.block: Block = block_of(spec.shape, self.dims, self.coords)
        width = spec.order // 2
        for a in range(3):
            if self.dims[a] > 1 and self.block.n[a] < width:
                raise ValueError(f"decomposition {list(self.dims)} leaves {self.block.n[a]} cells on axis "
                                 f"{'xyz'[a]} of a rank, fewer than the {width} halo layers order {spec.order} needs")
        self.xp = _array_module(spec.backend)
        if spec.backend == "cupy" and hasattr(self.xp.cuda, "runtime"):
            # one GPU per rank, round robin over the node's devices
            self.xp.cuda.Device(comm.Get_rank() % self.xp.cuda.runtime.getDeviceCount()).use()
        self.use_numba = spec.backend == "numba"
        #: threads of this rank's kernels (Numba parallel loops; the thread-count variables set at start-up)
        self.threads = _kernel_threads() if self.use_numba else 1
        self.c1, self.c2 = (1.0, 0.0) if spec.order == 2 else C4
        self.timers = Timers()
        xp, b = self.xp, self.block
        self.fields = {name: _zeros(xp, b.padded) for name in VELOCITY + STRESS}
        prof = spec.medium.profiles(spec.shape[2], spec.spacing, spec.dt, HALO)
        self.profiles = {k: xp.asarray(v[b.start[2]:b.stop[2] + 2 * HALO]) for k, v in prof.items()}
        self._setup_boxes()
        # the free surface lies on the top row of cell centres (depth h/2), where the normal stresses live
        self.surface = spec.free_surface and self.block.start[2] == 0
        if self.surface:
            # surface row = global row 0, at index HALO of the global profiles
            self._lam_over_l2m = np.float32(prof["lam"][HALO] / prof["l2m"][HALO])
        self.halo = Halo(self, MPI)
        self._setup_source()
        self._setup_receivers()
        self._empty_calls: dict[str, list] = {"velocity": [], "stress": []}
        self._plans = {"velocity": self._plan("velocity"), "stress": self._plan("stress")}

    # -- geometry -----------------------------------------------------------------------------
    def _setup_boxes(self) -> None:
        spec, b, xp = self.spec, self.block, self.xp
        w = spec.pml_width if spec.boundary == "cpml" else 0
        parts = []  # per axis: list of (lo, hi, side) in array indices, side None | 0 | 1
        self.pml_profiles = []
        for a in range(3):
            n = spec.shape[a]
            if not w:
                cuts = [(0, n, None)]
            elif a == 2 and spec.free_surface:  # no absorbing layer under the free surface
                cuts = [(0, n - w, None), (n - w, n, 1)]
            else:
                cuts = [(0, w, 0), (w, n - w, None), (n - w, n, 1)]
            axis_parts = []
            for s, e, side in cuts:
                lo, hi = max(s, b.start[a]), min(e, b.stop[a])
                if lo < hi:
                    axis_parts.append((lo - b.start[a] + HALO, hi - b.start[a] + HALO, side))
            parts.append(axis_parts)
            prof = cpml.profiles(n, b.start[a], b.stop[a], HALO, max(w, 1), spec.spacing, spec.dt,
                                 spec.medium.vp_max, spec.source.f0)
            self.pml_profiles.append(xp.asarray(prof))
        # boxes are cut along x and y only; the z layers are handled per row at the ends of each row
        self.z_slabs = [(side, lo, hi) for lo, hi, side in parts[2] if side is not None]  # array indices
        self.z_merged = self.use_numba and len(self.z_slabs) == 2
        # memory variables: one array per (axis, side) slab, covering only owned cells in the layer (the Numba
        # kernels keep a rank's two z layers in one array, see _merge_z_layers)
        self.psi_v, self.psi_s = {}, {}
        for a in range(3):
            for lo, hi, side in parts[a]:
                if side is None or (a == 2 and self.z_merged):
                    continue
                shape = [b.n[0], b.n[1], b.n[2]]
                shape[a] = hi - lo
                origin = [HALO, HALO, HALO]
                origin[a] = lo
                for store in (self.psi_v, self.psi_s):
                    store[(a, side)] = (_zeros(xp, (3, *shape)), tuple(origin))
        if self.z_merged:
            self._merge_z_layers()
        zlo, zhi = HALO, HALO + b.n[2]
        self.boxes = []  # (lo, hi, sides per axis: x, y, and whether any z layer is present)
        for px, py in itertools.product(parts[0], parts[1]):
            self.boxes.append(((px[0], py[0], zlo), (px[1], py[1], zhi), (px[2], py[2], bool(self.z_slabs))))

    def _merge_z_layers(self) -> None:
        """The Numba kernels' layout when the rank holds both z layers: one memory variable per half-step whose
        segment ``j`` runs from the high layer of row ``j - 1`` through the ghost cells between the rows to
        the low layer of row ``j`` (contiguous in the wavefields), and the z profiles and weights along such a
        segment; a ghost cell gets ``a = 0``, ``b = 1`` and weight 0, so it stays untouched (``+ 0``)."""
        b, xp = self.block, self.xp
        (_, zl0, zl1), (_, zh0, zh1) = sorted(self.z_slabs)
        row = b.padded[2]
        idx = np.r_[zh0:zh1, zh1:row, 0:zl0, zl0:zl1]  # array z index of each cell of a segment
        ghost = np.r_[np.zeros(zh1 - zh0, bool), np.ones(row - zh1 + zl0, bool), np.zeros(zl1 - zl0, bool)]
        prof = np.asarray(self.pml_profiles[2])[:, idx]
        prof[0::2, ghost], prof[1::2, ghost] = 0.0, 1.0  # a, b of the centre and face nodes
        self.z_profile = xp.asarray(np.ascontiguousarray(prof))
        self.z_weights = {}
        for phase, names in (("velocity", ("b_c", "b_f")), ("stress", ("l2m", "lam", "mu_f"))):
            w = np.stack([np.asarray(self.profiles[n])[idx] for n in names])
            w[:, ghost] = 0.0
            self.z_weights[phase] = xp.asarray(np.ascontiguousarray(w, dtype=np.float32))
        for store in (self.psi_v, self.psi_s):
            store[(2, "merged")] = (_zeros(xp, (3, b.n[0], b.n[1] + 1, idx.size)), (HALO, HALO, 0))

    def _slab_args(self, store, sides, phase):
        """A C-PML kernel's layer arguments, and the memory variables among them (which the kernel writes)."""
        args, psis = [], []
        for a in range(2):  # whether the box lies in the x and y layers chooses the kernel's copy
            if sides[a] is None:
                psi, origin, prof = _absent_layer()
                args += [psi, origin, prof]
            else:
                psi, origin = store[(a, sides[a])]
                args += [psi, np.asarray(origin, dtype=np.int64), self.pml_profiles[a]]
            psis.append(psi)
        for side in (0, 1):
            slab = [zs for zs in self.z_slabs if zs[0] == side]
            if slab and not self.z_merged:
                psi, origin = store[(2, side)]
                args += [True, psi, np.asarray(origin, dtype=np.int64), slab[0][1], slab[0][2]]
            else:  # absent, or in the merged memory variable (the bounds still say where the layer is)
                psi, origin, _ = _absent_layer()
                args += [False, psi, origin, *(slab[0][1:] if slab else (0, 0))]
            psis.append(psi)
        args.append(self.pml_profiles[2])
        if self.z_merged:
            psi, origin = store[(2, "merged")]
            args += [True, psi, np.asarray(origin, dtype=np.int64), self.z_profile, self.z_weights[phase]]
        else:
            psi, origin, prof = _absent_layer()
            args += [False, psi, origin, prof, np.zeros((3, 1), dtype=np.float32)]
        psis.append(psi)
        return args, psis

    def _slabs_xp(self, store, sides, lo, hi):
        """(axis, psi, origin, profile, lo, hi) of the layers this box touches, each over its part of the box."""
        out = []
        for a in range(2):
            if sides[a] is not None:
                psi, origin = store[(a, sides[a])]
                out.append((a, psi, origin, self.pml_profiles[a], lo, hi))
        for side, k0, k1 in self.z_slabs:
            psi, origin = store[(2, side)]
            out.append((2, psi, origin, self.pml_profiles[2], (lo[0], lo[1], k0), (hi[0], hi[1], k1)))
        return out

    # -- sources and receivers --------------------------------------------------------------
    def _cell(self, pos) -> tuple[int, int, int]:
        h = self.spec.spacing
        return tuple(min(int(np.floor(pos[a] / h)), self.spec.shape[a] - 1) for a in range(3))  # type: ignore[return-value]

    def _setup_source(self) -> None:
        spec, b = self.spec, self.block
        src = spec.source
        self.src_cell = self._cell(src.position)
        self.source_position = (np.asarray(self.src_cell, dtype=float) + 0.5) * spec.spacing
        self._src_targets = []  # (field, local index, scale)
        h = spec.spacing
        if src.kind == "explosive":
            # stress glut of an isotropic moment tensor: sigma_ii -= Mdot dt / h^3 (Graves 1996)
            if b.owns(self.src_cell):
                loc = b.local(self.src_cell)
                for name in ("sxx", "syy", "szz"):
                    self._src_targets.append((name, loc, -spec.dt / h**3))
        else:
            # a point force at the cell centre, split over the two nodes of each component around it
            prof = spec.medium.profiles(spec.shape[2], h, spec.dt, HALO)
            for a, name in enumerate(VELOCITY):
                if src.direction[a] == 0.0:
                    continue
                for d in (0, -1):
                    idx = list(self.src_cell)
                    idx[a] += d
                    if idx[a] < 0 or not b.owns(idx):
                        continue
                    bprof = prof["b_f"] if a == 2 else prof["b_c"]
                    dt_over_rho_h = float(bprof[idx[2] + HALO])  # dt / (h rho) at that node
                    self._src_targets.append((name, b.local(idx), 0.5 * src.direction[a] * dt_over_rho_h / h**2))

    def _setup_receivers(self) -> None:
        spec, b = self.spec, self.block
        cells = [self._cell(p) for p in spec.receivers]
        self.receiver_positions = (np.asarray(cells, dtype=float).reshape(-1, 3) + 0.5) * spec.spacing
        self.rec_owned = [n for n, c in enumerate(cells) if b.owns(c)]
        padded = b.padded
        flat = []
        for n in self.rec_owned:
            loc = b.local(cells[n])
            pair = []
            for a in range(3):
                back = list(loc)
                back[a] -= 1
                pair.append((np.ravel_multi_index(loc, padded), np.ravel_multi_index(back, padded)))
            flat.append(pair)
        self._rec_idx_xp = self.xp.asarray(np.asarray(flat, dtype=np.int64).reshape(-1, 3, 2))
        self.traces = self.xp.zeros((len(self.rec_owned), 3, spec.steps), dtype=self.xp.float32)

    def _sample(self, it: int) -> None:
        if not self.rec_owned:
            return
        for a, name in enumerate(VELOCITY):
            f = self.fields[name].ravel()
            self.traces[:, a, it] = 0.5 * (f[self._rec_idx_xp[:, a, 0]] + f[self._rec_idx_xp[:, a, 1]])

    def _surface_velocity(self) -> None:
        """Velocities above the free surface (ghost rows), so that the stress update there has szz = 0.

        Levander (1988) / Graves (1996): at the surface row the vertical strain
        follows from szz = 0, ``ezz = -lam / (lam + 2 mu) (exx + eyy)``; the ghost
        ``vz`` above the surface is set so that the vertical difference equals it
        (for order 4 the second ghost row continues it linearly so the
        fourth-order difference equals it too); horizontal velocities are
        mirrored about the surface.
        """
        F, H, n = self.fields, HALO, self.block.n
        o = (slice(H, H + n[0]), slice(H, H + n[1]))
        xs = lambda d: slice(H + d, H + d + n[0])  # noqa: E731
        ys = lambda d: slice(H + d, H + d + n[1])  # noqa: E731
        vx, vy, vz = F["vx"], F["vy"], F["vz"]
        dvx = vx[o[0], o[1], H] - vx[xs(-1), o[1], H]
        dvy = vy[o[0], o[1], H] - vy[o[0], ys(-1), H]
        if self.c2 != 0.0:
            dvx = self.c1 * dvx + self.c2 * (vx[xs(1), o[1], H] - vx[xs(-2), o[1], H])
            dvy = self.c1 * dvy + self.c2 * (vy[o[0], ys(1), H] - vy[o[0], ys(-2), H])
        vz[o[0], o[1], H - 1] = vz[o[0], o[1], H] + self._lam_over_l2m * (dvx + dvy)
        vz[o[0], o[1], H - 2] = vz[o[0], o[1], H + 1] - 3 * (vz[o[0], o[1], H] - vz[o[0], o[1], H - 1])
        for v in (vx, vy):
            v[:, :, H - 1] = v[:, :, H + 1]
            v[:, :, H - 2] = v[:, :, H + 2]

    def _surface_stress(self) -> None:
        """Stress imaging (Levander 1988): szz = 0 on the surface row, szz, sxz, syz odd about it above."""
        F, H = self.fields, HALO
        F["szz"][:, :, H] = 0
        F["szz"][:, :, H - 1] = -F["szz"][:, :, H + 1]
        F["szz"][:, :, H - 2] = -F["szz"][:, :, H + 2]
        for name in ("sxz", "syz"):
            F[name][:, :, H - 1] = -F[name][:, :, H]
            F[name][:, :, H - 2] = -F[name][:, :, H + 1]

    def _inject(self, value: float) -> None:
        for name, loc, scale in self._src_targets:
            self.fields[name][loc] += np.float32(value * scale)

    # -- time stepping ----------------------------------------------------------------------
    def _plan(self, phase: str) -> list:
        """The kernel calls of one half-step, one per box, with their arguments bound once.

        The wavefields, memory variables and profiles are allocated once and
        updated in place, so the argument tuples stay valid for the whole run;
        the time step only makes the calls.
        """
        F, P, c1, c2 = self.fields, self.profiles, self.c1, self.c2
        psi = self.psi_v if phase == "velocity" else self.psi_s
        calls = []
        for lo, hi, sides in self.boxes:
            box = (lo[0], hi[0], lo[1], hi[1], lo[2], hi[2])
            if self.use_numba:
                from . import kernels_numba as K

                fields = tuple(F[n] for n in VELOCITY + STRESS)
                prof = (P["b_c"], P["b_f"]) if phase == "velocity" else (P["l2m"], P["lam"], P["mu_c"], P["mu_f"])
                coef = (np.float32(c1), np.float32(c2))
                kind = "pml" if sides != (None, None, False) else "box"
                kernel = K.kernel(phase, kind, self.spec.order, self.threads,
                                  x=kind == "pml" and sides[0] is not None, y=kind == "pml" and sides[1] is not None)
                extra, psis = self._slab_args(psi, sides, phase) if kind == "pml" else ((), [])
                args = (*fields, *prof, *coef, *box, *extra)
                _check_disjoint([*fields, *psis], args)
                calls.append((kernel, args))
                # the same call on no cell (hi0 = lo0): what compile_kernels compiles with the real calls' types
                self._empty_calls[phase].append((kernel, (*fields, *prof, *coef, lo[0], lo[0], *box[2:], *extra)))
            elif self.xp is np:  # the reference: array expressions
                bulk, pml = ((kernels_xp.velocity, kernels_xp.velocity_pml) if phase == "velocity"
                             else (kernels_xp.stress, kernels_xp.stress_pml))
                calls.append((bulk, (F, P, lo, hi, c1, c2)))
                for slab in self._slabs_xp(psi, sides, lo, hi):
                    calls.append((pml, (F, P, slab[4], slab[5], c1, c2, [slab[:4]])))
            else:  # a GPU: one fused kernel per half-step and box, one per C-PML slab, their views bound once
                bound = [kernels_fused.bind(self.xp, phase, F, P, lo, hi, c1, c2)]
                bound += [kernels_fused.bind(self.xp, phase, F, P, slab[4], slab[5], c1, c2, slab[:4])
                          for slab in self._slabs_xp(psi, sides, lo, hi)]
                calls += [(kernel, (args,)) for kernel, args in bound]
        return calls

    def _half_step(self, phase: str) -> None:
        for kernel, args in self._plans[phase]:
            kernel(*args)

    def _velocity(self, it: int) -> None:
        self._half_step("velocity")
        if self.spec.source.kind == "force" and self._src_targets:
            self._inject(float(self.spec.source.time_function(it * self.spec.dt)))

    def _stress(self, it: int) -> None:
        self._half_step("stress")
        if self.spec.source.kind == "explosive" and self._src_targets:
            self._inject(float(self.spec.source.time_function((it + 0.5) * self.spec.dt)))

    def step(self, it: int) -> None:
        """One leap-frog step: v^{it+1/2} from sigma^{it}, then sigma^{it+1}; receivers sample v^{it+1/2}."""
        xp, tm = self.xp, self.timers
        t0 = time.perf_counter()
        self._velocity(it)
        _sync(xp)
        tm.add("velocity", time.perf_counter() - t0)
        self.halo.exchange(VELOCITY)
        if self.surface:
            self._surface_velocity()
        self._sample(it)
        t0 = time.perf_counter()
        self._stress(it)
        if self.surface:
            self._surface_stress()
        _sync(xp)
        tm.add("stress", time.perf_counter() - t0)
        self.halo.exchange(STRESS)

    def reset(self) -> None:
        """Zero the wavefields, memory variables, traces and timers (a fresh run, same setup)."""
        for f in self.fields.values():
            f[...] = 0
        for store in (self.psi_v, self.psi_s):
            for psi, _ in store.values():
                psi[...] = 0
        self.traces[...] = 0
        self.timers.reset()

    def run(self) -> float:
        """Run all steps from rest; return this rank's wall time of the loop (s), ranks started together."""
        self.reset()
        self.cart.Barrier()
        t0 = time.perf_counter()
        for it in range(self.spec.steps):
            self.step(it)
        _sync(self.xp)
        return time.perf_counter() - t0

    def warm_up(self) -> None:
        """Compile and touch every kernel once (one step), then reset: setup, not measured."""
        self.compile_kernels()
        self.step(0)
        self.reset()

    def compile_kernels(self, phases: tuple[str, ...] = ("velocity", "stress"),
                        progress: Callable[[int, int, str, float], None] | None = None) -> None:
        """Compile (or load from Numba's cache) each Numba kernel the half-steps of ``phases`` and the halo
        copies call, each by a call on an empty box with the run's own arrays (so with the types of the real
        calls) under that kernel's machine-wide lock (:func:`sims.backends.jit.compile_once`): processes that
        start together compile each kernel once. Nothing is updated; nothing is communicated. ``progress(i, n,
        kernel, seconds)`` hears of each kernel done (compiling one from nothing takes seconds)."""
        if not self.use_numba:
            return
        from numba import typeof

        from sims.backends.jit import compile_once

        from . import kernels_numba as K

        def once(kernel, args) -> None:
            # the kernel, its source file (another checkout has its own cache) and the argument types
            key = ",".join([kernel.py_func.__code__.co_filename, *(str(typeof(a)) for a in args)])
            name = f"{kernel.__name__}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"
            compile_once(name, lambda: kernel(*args))

        calls = [call for phase in phases for call in self._empty_calls[phase]]
        if self.halo.axes and self.halo.numba_copies:
            field = self.fields[VELOCITY[0]]
            calls += [(kernel, (field, np.empty(0, np.float32), 0, 0, 0, 0, 0, 0)) for kernel in (K.pack, K.unpack)]
        # each rank starts at its own share of the list: the ranks of a run compile different kernels side by side
        start = self.cart.Get_rank() * len(calls) // self.cart.Get_size()
        for i, (kernel, args) in enumerate(calls[start:] + calls[:start], 1):
            began = time.perf_counter()
            once(kernel, args)
            if progress is not None:
                progress(i, len(calls), kernel.__name__, time.perf_counter() - began)

    def source_time_function(self) -> tuple[np.ndarray, np.ndarray]:
        """Times and values injected: moment rate (N m/s) at (it + 1/2) dt, or force (N) at it dt."""
        spec = self.spec
        shift = 0.5 if spec.source.kind == "explosive" else 0.0
        t = (np.arange(spec.steps) + shift) * spec.dt
        return t, spec.source.time_function(t)

    def gather_traces(self):
        """On rank 0: (vx, vy, vz) each ``n_receivers x steps`` float64; None elsewhere."""
        host = self.traces.get() if self.xp is not np else self.traces
        parts = self.cart.gather((self.rec_owned, np.asarray(host, dtype=np.float64)), root=0)
        if self.cart.Get_rank() != 0:
            return None
        out = np.zeros((3, len(self.spec.receivers), self.spec.steps))
        for owned, tr in parts:
            for r, n in enumerate(owned):
                out[:, n, :] = tr[r]
        return out[0], out[1], out[2]


class Halo:
    """Halo exchange of one rank, one axis at a time, with the spec's marshaling design."""

    def __init__(self, sim: Simulation, MPI) -> None:
        self.sim, self.MPI = sim, MPI
        self.cart = sim.cart
        self.width = sim.spec.order // 2
        self.marshaling = sim.spec.marshaling
        #: whether the faces are copied by the Numba pack/unpack kernels (else by the array module's slicing)
        self.numba_copies = sim.use_numba and self.marshaling != "host-staging"
        self.xp = sim.xp
        b, w = sim.block, self.width
        self.axes = []
        for a in range(3):
            low, high = self.cart.Shift(a, 1)
            if low == MPI.PROC_NULL and high == MPI.PROC_NULL:
                continue
            n = b.n[a]
            owned = [(HALO, HALO + m) for m in b.n]

            def box(lo, hi, a=a, owned=owned):
                r = list(owned)
                r[a] = (lo, hi)
                return tuple(slice(s, e) for s, e in r)

            self.axes.append({
                "axis": a, "low": low, "high": high,
                "send_low": box(HALO, HALO + w), "send_high": box(HALO + n - w, HALO + n),
                "recv_low": box(HALO - w, HALO), "recv_high": box(HALO + n, HALO + n + w),
                "face": int(np.prod([w if x == a else b.n[x] for x in range(3)])),
            })
        self._bufs: dict = {}
        self._host_fields: dict = {}
        if self.marshaling == "gpu-aware" and self.axes and hasattr(getattr(self.xp, "cuda", None), "runtime"):
            from .gpu_aware import (
                device_buffers_supported,  # a real GPU: its device memory goes to MPI as it is
            )

            ok, why = device_buffers_supported()
            if not ok:
                raise ValueError(f"marshaling 'gpu-aware' hands device buffers to MPI, which this MPI does not take "
                                 f"({why}): use device-pack or host-staging")

    def _buffers(self, key, size, on_device: bool):
        k = (key, size, on_device)
        if k not in self._bufs:
            mod = self.xp if on_device else np
            self._bufs[k] = [mod.empty(size, dtype=np.float32) for _ in range(4)]
        return self._bufs[k]

    @staticmethod
    def _marshal(fields, sl, buf, face, use_numba: bool, pack: bool) -> None:
        """Copy the face ``sl`` of each field into its slot of ``buf`` (``pack``), or back (unpack)."""
        if use_numba:
            from . import kernels_numba as K

            kernel = K.pack if pack else K.unpack
            box = (sl[0].start, sl[0].stop, sl[1].start, sl[1].stop, sl[2].start, sl[2].stop)
            for f, arr in enumerate(fields):
                kernel(arr, buf[f * face:(f + 1) * face], *box)
            return
        view = buf.reshape(len(fields), -1)
        for f, arr in enumerate(fields):
            if pack:
                view[f] = arr[sl].ravel()
            else:
                arr[sl] = view[f].reshape(arr[sl].shape)

    def exchange(self, names) -> None:
        """Fill the ghost layers of ``names`` from the neighbours, axis by axis."""
        if not self.axes:
            return
        sim, MPI, xp, tm = self.sim, self.MPI, self.xp, self.sim.timers
        on_gpu = xp is not np
        staging = self.marshaling == "host-staging"
        fields = [sim.fields[n] for n in names]
        if on_gpu and staging:
            # whole fields to the host; pack, exchange and unpack there; whole fields back
            t0 = time.perf_counter()
            host = [self._host_fields.setdefault(n, np.empty(sim.block.padded, np.float32)) for n in names]
            for hf, df in zip(host, fields, strict=True):
                df.get(out=hf)
            tm.add("h2d", time.perf_counter() - t0)
            work, pack_numba, device_bufs = host, False, False
        else:
            work = fields
            pack_numba = self.numba_copies
            device_bufs = on_gpu
        for ax in self.axes:
            size = len(names) * ax["face"]
            s_lo, s_hi, r_lo, r_hi = self._buffers((ax["axis"], len(names)), size, device_bufs)
            mpi_bufs = (s_lo, s_hi, r_lo, r_hi)
            if device_bufs and self.marshaling == "device-pack":
                mpi_bufs = self._buffers((ax["axis"], len(names), "host"), size, False)
            t0 = time.perf_counter()
            reqs = []
            if ax["low"] != MPI.PROC_NULL:
                reqs.append(self.cart.Irecv(mpi_bufs[2], source=ax["low"], tag=2 * ax["axis"]))
            if ax["high"] != MPI.PROC_NULL:
                reqs.append(self.cart.Irecv(mpi_bufs[3], source=ax["high"], tag=2 * ax["axis"] + 1))
            t1 = time.perf_counter()
            if ax["high"] != MPI.PROC_NULL:
                self._marshal(work, ax["send_high"], s_hi, ax["face"], pack_numba, pack=True)
            if ax["low"] != MPI.PROC_NULL:
                self._marshal(work, ax["send_low"], s_lo, ax["face"], pack_numba, pack=True)
            if device_bufs:
                _sync(xp)
            t2 = time.perf_counter()
            tm.add("pack", t2 - t1)
            if device_bufs and self.marshaling == "device-pack":
                s_lo.get(out=mpi_bufs[0])
                s_hi.get(out=mpi_bufs[1])
                t3 = time.perf_counter()
                tm.add("h2d", t3 - t2)
                t2 = t3
            if ax["high"] != MPI.PROC_NULL:
                reqs.append(self.cart.Isend(mpi_bufs[1], dest=ax["high"], tag=2 * ax["axis"]))
            if ax["low"] != MPI.PROC_NULL:
                reqs.append(self.cart.Isend(mpi_bufs[0], dest=ax["low"], tag=2 * ax["axis"] + 1))
            MPI.Request.Waitall(reqs)
            t3 = time.perf_counter()
            tm.add("halo", (t3 - t2) + (t1 - t0))
            if device_bufs and self.marshaling == "device-pack":
                r_lo.set(mpi_bufs[2])
                r_hi.set(mpi_bufs[3])
                t4 = time.perf_counter()
                tm.add("h2d", t4 - t3)
                t3 = t4
            if ax["low"] != MPI.PROC_NULL:
                self._marshal(work, ax["recv_low"], r_lo, ax["face"], pack_numba, pack=False)
            if ax["high"] != MPI.PROC_NULL:
                self._marshal(work, ax["recv_high"], r_hi, ax["face"], pack_numba, pack=False)
            if device_bufs:
                _sync(xp)
            tm.add("unpack", time.perf_counter() - t3)
        if on_gpu and staging:
            t0 = time.perf_counter()
            for hf, df in zip(work, fields, strict=True):
                df.set(hf)
            _sync(xp)
            tm.add("h2d", time.perf_counter() - t0)
