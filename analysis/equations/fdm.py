"""Performance model of the FDM-seismology code: per-rank stencil, halo exchange and host<->device time.

Per time step and rank ``r`` (Panwar 2014, ch. 4's decomposition of an FDM
step into computation and the data movement of each marshaling design; the
compute term is the roofline of Williams et al.)::

    T_compute(r) = max(B(r) t_b, F(r) t_f) * oversubscription
    T_pack(r)    = T_unpack(r) = 2 H(r) t_b          (read the face, write the buffer)
    T_halo(r)    = sum over exchanges and split axes of (L + h_axis(r) t_net)
                   (L_inter + h_axis(r) t_net_inter for a neighbour on another node)
    T_h2d(r)     = host-staging: 2 x the exchanged fields' bytes t_pcie
                   device-pack:  2 H(r) t_pcie
                   gpu-aware:    0  (also 0 on CPU backends: nothing lives on a device)

``B``, ``F`` are the step's compulsory bytes and flops on the rank's block
(:mod:`sims.fdm.counts`), ``H`` the halo bytes it sends per step, ``L`` and
``t_net`` the ping-pong latency and inverse bandwidth. The run's predicted
time is ``steps x max_r sum`` of the terms, the slowest rank setting the pace
as the measured ``time_s`` does. When several ranks share the cores of a
node, ``t_b`` is the bandwidth each core gets while all stream at once
(the platform's ``t_b_shared``) and ranks beyond the core count time-share
(``oversubscription = ranks per node / cores``). A run over several nodes
places its ranks in consecutive blocks per node; a halo message to a rank on
another node takes the inter-node ping-pong's latency and bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sims.fdm import counts
from sims.fdm.decomp import split

#: float32 wavefields exchanged after the velocity and after the stress update
EXCHANGED_FIELDS = (3, 6)
MARSHALING = ("host-staging", "device-pack", "gpu-aware")


@dataclass(frozen=True)
class RankGeometry:
    """Per-rank quantities of one decomposed grid, as arrays over ranks."""

    points: np.ndarray  # owned cells
    padded_points: np.ndarray  # cells including two ghost layers per side
    pml_axis_points: np.ndarray  # owned cells inside the layer of an axis, summed over axes
    face_points: np.ndarray  # (ranks, 3): cells of one ghost layer normal to each axis
    neighbours: np.ndarray  # (ranks, 3): neighbours along each axis (0, 1 or 2)
    off_node: np.ndarray | None = None  # (ranks, 3): of those, neighbours on another node (None: one node)
    nodes: int = 1  # nodes the ranks are placed on, in consecutive blocks


def thread_share(g: RankGeometry, threads: int) -> np.ndarray | float:
    """The fraction of each rank's stencil work its busiest thread does: ``ceil(n_x / threads) / n_x`` (the
    kernels' parallel loop deals out the block's ``n_x = points / (n_y n_z)`` x planes); 1 with one thread."""
    if threads <= 1:
        return 1.0
    n = np.round(g.points / g.face_points[:, 0])
    return np.ceil(n / threads) / n


def rank_blocks(shape, dims) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """Every rank's owned block ``(start, stop)``, ranks in the Cartesian communicator's order (last axis fastest)."""
    parts = [split(int(shape[a]), int(dims[a])) for a in range(3)]
    return [((px[0], py[0], pz[0]), (px[1], py[1], pz[1]))
            for px in parts[0] for py in parts[1] for pz in parts[2]]


def rank_geometry(shape, dims, pml_width: int = 0, free_surface: bool = False, nodes: int = 1) -> RankGeometry:
    """The blocks of a ``dims`` decomposition of ``shape`` (as :mod:`sims.fdm.decomp` cuts them).

    With a free surface the top (low z) face has no absorbing layer. With ``nodes > 1`` the ranks are
    placed in blocks of ``ceil(ranks / nodes)`` consecutive ranks per node (the batch scheduler's default
    block distribution; ranks numbered as the Cartesian communicator numbers them, last axis fastest), and
    ``off_node`` counts each rank's neighbours on another node.
    """
    shape = [int(s) for s in shape]
    dims = [int(d) for d in dims]
    if len(shape) != 3 or len(dims) != 3 or min(dims) < 1 or any(d > n for d, n in zip(dims, shape, strict=True)):
        raise ValueError(f"cannot decompose grid {shape} over process grid {dims}")

    pts, padded, pml, faces, nbrs = [], [], [], [], []
    coords = [(cx, cy, cz) for cx in range(dims[0]) for cy in range(dims[1]) for cz in range(dims[2])]
    for c, (start, stop) in zip(coords, rank_blocks(shape, dims), strict=True):
        rng = tuple(zip(start, stop, strict=True))
        n = [e - s for s, e in rng]
        pts.append(n[0] * n[1] * n[2])
        padded.append(math.prod(m + 4 for m in n))
        inside = 0
        if pml_width:
            for a in range(3):
                s, e = rng[a]
                low = 0 if (a == 2 and free_surface) else max(0, min(e, pml_width) - s)
                layer = low + max(0, e - max(s, shape[a] - pml_width))
                inside += min(layer, n[a]) * math.prod(n[b] for b in range(3) if b != a)
        pml.append(inside)
        faces.append([n[1] * n[2], n[0] * n[2], n[0] * n[1]])
        nbrs.append([(c[a] > 0) + (c[a] < dims[a] - 1) for a in range(3)])
    off_node = None
    if nodes > 1:
        per_node = -(-math.prod(dims) // int(nodes))
        coords = np.array(coords)
        rank_of = lambda c: (c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2]  # noqa: E731
        here = rank_of(coords) // per_node
        off = np.zeros((len(coords), 3))
        for a in range(3):
            for step in (-1, 1):
                other = coords.copy()
                other[:, a] += step
                inside = (other[:, a] >= 0) & (other[:, a] < dims[a])
                off[:, a] += inside & (rank_of(np.where(inside[:, None], other, coords)) // per_node != here)
        off_node = off
    return RankGeometry(np.array(pts, float), np.array(padded, float), np.array(pml, float),
                        np.array(faces, float), np.array(nbrs, float), off_node, max(1, int(nodes)))


def halo_links(shape, dims, nodes: int = 1) -> tuple[int, int]:
    """Halo messages of one exchange over the link each takes: ``(within a node, between nodes)``, counted over
    every rank and neighbour with the placement :func:`rank_geometry` assumes (consecutive blocks per node)."""
    g = rank_geometry(shape, dims, nodes=nodes)
    total = int(np.sum(g.neighbours))
    inter = int(np.sum(g.off_node)) if g.off_node is not None else 0
    return total - inter, inter


def messages(g: RankGeometry, order: int, latency: float, t_net: float, latency_inter: float | None = None,
             t_net_inter: float | None = None) -> np.ndarray:
    """Seconds per step every rank spends in its halo messages: per exchange and split axis with a neighbour,
    ``latency + h t_net`` (``latency_inter + h t_net_inter`` when the neighbour is on another node; the two
    directions of an axis overlap, so an axis costs the dearer of its messages)."""
    out = np.zeros(len(g.points))
    for cost, inter in _message_costs(g, order, latency, t_net, latency_inter, t_net_inter):
        if inter is not None:
            # every neighbour of the axis on another node: its link alone; one of each: the dearer of the two
            cost = np.where(g.off_node >= g.neighbours, inter,
                            np.where(g.off_node > 0, np.maximum(cost, inter), cost))
        out += np.sum(np.where(g.neighbours > 0, cost, 0.0), axis=1)
    return out


def _message_costs(g: RankGeometry, order: int, latency: float, t_net: float, latency_inter: float | None,
                   t_net_inter: float | None):
    """Per exchange, ``(ranks, 3)`` seconds of one message to a neighbour along each axis within a node, and
    between nodes (None when no rank has a neighbour on another node)."""
    w = order // 2
    across = g.off_node is not None and bool(np.any(g.off_node > 0))
    for nf in EXCHANGED_FIELDS:
        per_axis = 4.0 * w * nf * g.face_points
        yield latency + per_axis * t_net, (latency_inter + per_axis * t_net_inter) if across else None


def transfers(g: RankGeometry, order: int, latency: float, t_net: float, latency_inter: float | None = None,
              t_net_inter: float | None = None) -> np.ndarray:
    """Seconds per step every rank's incoming halo messages take to move, each message counted (the two
    directions of an axis are two transfers): per exchange and neighbour, ``latency + h t_net`` (between nodes
    ``latency_inter + h t_net_inter``). The ping-pong that measures them runs each rank on a core of its own,
    where the directions overlap (:func:`messages`); ranks that time-share cores move each message on a core
    that does nothing else meanwhile."""
    out = np.zeros(len(g.points))
    for cost, inter in _message_costs(g, order, latency, t_net, latency_inter, t_net_inter):
        if inter is None:
            out += np.sum(g.neighbours * cost, axis=1)
        else:
            out += np.sum((g.neighbours - g.off_node) * cost + g.off_node * inter, axis=1)
    return out


def step_time(geometry: RankGeometry, order: int, marshaling: str, *, t_f: float, t_b: float, latency: float,
              t_net: float, t_pcie: float | None = None, on_device: bool = False, cores: int | None = None,
              latency_inter: float | None = None, t_net_inter: float | None = None,
              threads: int = 1) -> dict[str, np.ndarray]:
    """Predicted seconds per step for every rank: ``compute``, ``pack``, ``unpack``, ``halo``, ``h2d``, ``total``.

    ``t_b`` is the per-core inverse bandwidth that applies with all ranks of the
    node streaming; ``cores`` the cores they share on a node (None: one per rank).
    A rank of ``threads`` threads splits its stencil over them by x planes, as the
    kernels' parallel loop does: its compute is that of its largest share,
    ``ceil(n_x / threads)`` of its ``n_x`` planes; marshaling stays on one thread,
    and time sharing counts ``ranks per node x threads`` against the cores.
    A message to a neighbour on another node (the geometry's ``off_node``) costs
    ``latency_inter + h t_net_inter`` (the platform's inter-node ping-pong)
    instead of the intra-node ``latency + h t_net``; the two directions of an
    axis overlap, so an axis costs the dearer of its messages.
    """

    if order not in counts.FLOPS_VELOCITY:
        raise ValueError(f"order must be 2 or 4, got {order!r}")
    if marshaling not in MARSHALING:
        raise ValueError(f"marshaling must be one of {', '.join(MARSHALING)}, got {marshaling!r}")
    for name, v in (("t_f", t_f), ("t_b", t_b), ("latency", latency), ("t_net", t_net)):
        if not (v >= 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a finite non-negative number, got {v!r}")
    g = geometry
    spans = g.off_node is not None and bool(np.any(g.off_node > 0))
    if spans:
        for name, v in (("latency_inter", latency_inter), ("t_net_inter", t_net_inter)):
            if v is None or not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"the ranks span nodes: {name} (the inter-node ping-pong) must be a finite "
                                 f"non-negative number, got {v!r}")
    ranks = len(g.points)
    threads = max(1, int(threads))
    per_node = -(-ranks // g.nodes)
    # time sharing of the node's cores: by every thread in the stencil, by one thread per rank in marshaling
    over, over_marshal = ((max(1.0, per_node * threads / cores), max(1.0, per_node / cores)) if cores else (1.0, 1.0))
    nbytes = g.points * counts.BYTES_BULK + g.pml_axis_points * counts.BYTES_PML_AXIS
    flops = g.points * counts.flops_per_point(order) + g.pml_axis_points * counts.FLOPS_PML_AXIS[order]
    compute = np.maximum(nbytes * t_b, flops * t_f) * over * thread_share(g, threads)
    w = order // 2
    fields = sum(EXCHANGED_FIELDS)
    sent = 4.0 * w * fields * np.sum(g.face_points * g.neighbours, axis=1)  # bytes sent per step
    pack = 2.0 * sent * t_b * over_marshal
    unpack = pack.copy()
    halo = messages(g, order, latency, t_net, latency_inter, t_net_inter)
    h2d = np.zeros(ranks)
    if on_device:
        if t_pcie is None:
            raise ValueError("a device run needs t_pcie (host<->device s/byte)")
        exchanging = np.sum(g.neighbours, axis=1) > 0
        if marshaling == "host-staging":
            h2d = np.where(exchanging, 2.0 * 4.0 * fields * g.padded_points * t_pcie, 0.0)
        elif marshaling == "device-pack":
            h2d = 2.0 * sent * t_pcie
    total = compute + pack + unpack + halo + h2d
    return {"compute": compute, "pack": pack, "unpack": unpack, "halo": halo, "h2d": h2d, "total": total}


def run_time(shape, dims, order: int, steps: int, marshaling: str, pml_width: int = 0, free_surface: bool = False,
             nodes: int = 1, **params) -> dict[str, float]:
    """Predicted run time (s) and its parts on the slowest rank: ``steps x max over ranks``."""
    parts = step_time(rank_geometry(shape, dims, pml_width, free_surface, nodes), order, marshaling, **params)
    slowest = int(np.argmax(parts["total"]))
    return {k: float(v[slowest]) * steps for k, v in parts.items()}


# --------------------------------------------------------------------------- calibrated model

def marshal_impl(backend: str, marshaling: str) -> str:
    """Which copy the solver marshals halos with: the Numba pack kernel, or the array module's slicing."""
    return "numba" if backend == "numba" and marshaling != "host-staging" else "xp"


#: width (octaves of block points) of the Gaussian that weights the calibration's samples near a rank's block
LOCAL_OCTAVES = 0.5


def local_coefficients(fit: dict, points: float) -> np.ndarray:
    """A half-step's cost coefficients (:data:`sims.fdm.cost.FEATURES` order) at a block of ``points`` cells:
    the calibration's samples refitted, each weighted by a Gaussian in ``log2(points_s / points)`` of
    :data:`LOCAL_OCTAVES` (a sample at twice or half the size weighs 0.14; the same relative non-negative least
    squares as the calibration's own fit).

    A block whose fields fit in the caches costs less per point than one streamed from memory, and where that
    happens depends on the machine's caches, not on the code: one linear cost over blocks of 0.1-1 M points
    averages the two regimes. Weighting by block size lets the samples at a run's own block sizes (the study's
    blocks are among the calibration's: :func:`analysis.planning.config.study_fdm_blocks`) speak for it. A fit
    without samples (an older platform file) gives its global coefficients."""
    from sims.fdm import cost
    from sims.fit import relative_nonnegative_fit

    samples = fit.get("samples") or []
    if len(samples) < len(cost.FEATURES):
        return np.array([fit["coefficients"][f] for f in cost.FEATURES], dtype=float)
    weights = _size_weights([s["bulk_points"] + s["pml_points"] for s in samples], points)
    local = relative_nonnegative_fit([[s[f] for s in samples] for f in cost.FEATURES],
                                     [s["time_median_s"] for s in samples], weights)
    return np.array(local.coef, dtype=float)


def _size_weights(sizes, points: float) -> np.ndarray:
    """Gaussian weights in ``log2(size / points)`` of :data:`LOCAL_OCTAVES`, the nearest size weighing 1."""
    log_w = -0.5 * (np.log2(np.asarray(sizes, dtype=float) / max(float(points), 1.0)) / LOCAL_OCTAVES) ** 2
    return np.exp(log_w - log_w.max())


def local_marshal(fit: dict, points: float, exchange: str = "velocity") -> tuple[float, float]:
    """A marshaling fit's (per field call, per element) seconds in one exchange (``velocity`` or ``stress``) for a
    rank whose block holds ``points`` cells: that exchange's samples refitted, weighted by their blocks'
    closeness in size (:func:`local_coefficients`; a face right after a half-step is still in a cache on a
    block that fits there, and how much of it depends on which half-step wrote it). Samples that name no
    exchange (an older platform file, which copied the velocity fields only) stand for both exchanges; a fit
    whose samples carry no block size gives its global figures."""
    from sims.fit import relative_nonnegative_fit

    samples = [s for s in fit.get("samples") or [] if s.get("block_points")]
    own = [s for s in samples if s.get("exchange", exchange) == exchange]
    samples = own if len({s["elements"] for s in own}) >= 2 else samples
    if len({s["elements"] for s in samples}) < 2:
        return float(fit["per_call_s"]), float(fit["per_element_s"])
    local = relative_nonnegative_fit([[1.0] * len(samples), [s["elements"] for s in samples]],
                                     [s["time_per_field_s"] for s in samples],
                                     _size_weights([s["block_points"] for s in samples], points))
    return float(local.coef[0]), float(local.coef[1])


def calibrated_step_time(shape, dims, order: int, marshaling: str, calibration: dict, *, backend: str,
                         latency: float, t_net: float, pml_width: int = 0, free_surface: bool = False,
                         cores: int | None = None, nodes: int = 1, latency_inter: float | None = None,
                         t_net_inter: float | None = None, threads: int = 1) -> dict[str, np.ndarray]:
    """Seconds per step of every rank and phase (the solver's phases, :data:`sims.vocab.FDM_PHASES`, and
    ``total``) from the FDM kernels' calibration (:mod:`sims.bench.fdm_calib`, one mode's ``half_steps`` and ``marshal`` fits).

    Per rank ``r`` and step, with the features ``x(r)`` of :func:`sims.fdm.cost.block_features` and the
    coefficients refitted at the rank's block size (:func:`local_coefficients`)::

        velocity(r) = c_velocity(r) . x(r)         stress(r) = c_stress(r) . x(r)
        pack(r)     = sum over the two exchanges (3 and 6 fields) and the axes with neighbours of
                      neighbours x fields x (per_call + per_element x face elements), the per-call and
                      per-element costs of that axis and exchange refitted at the rank's block size
                      (:func:`local_marshal`)
        unpack(r)   = the same with the unpack fits
        busy(r)     = velocity + stress + pack + unpack
        message(r)  = the analytical model's halo term (ping-pong latency + bytes x t_net per exchange and axis)

    The ranks of a step wait for each other in the halo exchange, so a step lasts ``max_r (busy + message)``
    and a rank's measured halo phase is that step minus its own busy time. When a node holds more ranks than
    cores, the ranks time-share them: a step lasts at least the node's busy time and its ranks' message
    transfers (:func:`transfers`: every message moved on a core, both directions counted) divided by its cores
    (work-conserving time sharing: a rank waiting for a message spins in MPI, so no core idles). Such a run is
    priced with the calibration's *timeshared* mode where the study measured it: each kernel's CPU seconds beside
    a co-runner on its core, the cache evictions of time sharing included, and each unpack after a yield of the
    core (:mod:`sims.bench.fdm_calib`).

    A rank of ``threads`` threads runs its half-steps in the kernels' parallel loop over x planes: each
    half-step takes :func:`thread_share` of its one-thread time (the busiest thread's planes; the
    calibration's *shared* mode is the per-core cost with every core busy), marshaling stays on one
    thread, and for time sharing the half-steps occupy ``threads`` cores.
    """
    if order not in counts.FLOPS_VELOCITY:
        raise ValueError(f"order must be 2 or 4, got {order!r}")
    if marshaling not in MARSHALING:
        raise ValueError(f"marshaling must be one of {', '.join(MARSHALING)}, got {marshaling!r}")
    if backend == "cupy":
        raise ValueError("the calibrated FDM model does not cover GPU runs: their host<->device copies and kernel "
                         "launches are not calibrated")
    from sims.fdm import cost

    half = calibration["half_steps"].get(str(order))
    if not half or any(p not in half for p in ("velocity", "stress")):
        raise KeyError(f"no half-step calibration for order {order}")
    impl = (calibration["marshal"].get(str(order)) or {}).get(marshal_impl(backend, marshaling)) or {}
    geometry = rank_geometry(shape, dims, pml_width, free_surface, nodes)
    blocks = rank_blocks(shape, dims)
    feats = np.array([[cost.block_features(shape, s, e, pml_width, free_surface)[f] for f in cost.FEATURES]
                      for s, e in blocks], dtype=float)
    threads = max(1, int(threads))
    share = thread_share(geometry, threads)
    points = feats[:, cost.FEATURES.index("bulk_points")] + feats[:, cost.FEATURES.index("pml_points")]
    out = {}
    for p in ("velocity", "stress"):
        coef = {n: local_coefficients(half[p], n) for n in np.unique(points)}
        out[p] = np.einsum("rf,rf->r", feats, np.array([coef[n] for n in points])) * share
    w = order // 2
    for direction in ("pack", "unpack"):
        fits = impl.get(direction) or {}
        t = np.zeros(len(blocks))
        for a in range(3):
            if not np.any(geometry.neighbours[:, a] > 0):
                continue
            fit = fits.get("xyz"[a])
            if fit is None:
                raise KeyError(f"no {direction} calibration for {marshal_impl(backend, marshaling)} on axis {'xyz'[a]}")
            for exchange, fields in zip(("velocity", "stress"), EXCHANGED_FIELDS, strict=True):
                local = {n: local_marshal(fit, n, exchange) for n in np.unique(points)}
                per_call = np.array([local[n][0] for n in points])
                per_element = np.array([local[n][1] for n in points])
                t += geometry.neighbours[:, a] * fields * (per_call + per_element * w * geometry.face_points[:, a])
        out[direction] = t
    message = messages(geometry, order, latency, t_net, latency_inter, t_net_inter)
    busy = out["velocity"] + out["stress"] + out["pack"] + out["unpack"]
    step = float(np.max(busy + message))
    per_node = -(-len(blocks) // geometry.nodes)
    if cores and per_node * threads > cores:
        node = np.arange(len(blocks)) // per_node
        core_seconds = ((out["velocity"] + out["stress"]) * threads + out["pack"] + out["unpack"]
                        + transfers(geometry, order, latency, t_net, latency_inter, t_net_inter))
        step = max(step, float(np.max(np.bincount(node, core_seconds)[node] / cores)))
    out["halo"] = np.where(np.sum(geometry.neighbours, axis=1) > 0, step - busy, 0.0)
    out["h2d"] = np.zeros(len(blocks))
    out["total"] = busy + out["halo"]
    return out


def calibrated_run_time(shape, dims, order: int, steps: int, marshaling: str, calibration: dict,
                        **params) -> dict[str, float]:
    """Predicted run time (s): ``steps x`` the slowest rank's step, and per phase ``steps x`` the phase's slowest
    rank (as the runs record each phase: its maximum over the ranks)."""
    parts = calibrated_step_time(shape, dims, order, marshaling, calibration, **params)
    return {k: float(np.max(v)) * steps for k, v in parts.items()}
