"""Devito's elastic velocity-stress operator for the grid, order, medium, source and receiver of an hetval run spec.

Used by ``bench_fdm.py --compare devito`` (Devito is the optional ``bench``
extra: ``pip install -e .[bench]``). The operator is Devito's own
staggered-grid formulation (``VectorTimeFunction`` / ``TensorTimeFunction``,
``div``, ``grad``, ``diag``) with a homogeneous medium as ``Constant``\\ s, the
minimal operator for the same physics as hetval's ``boundary: none`` runs.

Grid correspondence: hetval's cell ``(i, j, k)``, whose centre carries the
normal stresses, is Devito's node ``(i, j, k)`` (Devito's normal stresses sit
on the nodes, its ``v_x`` half a cell ahead along x, as hetval's does on the
cell's +x face). The explosive source adds ``-Mdot((t + 1/2) dt) dt / h^3`` to
the three normal stresses after each stress update, as hetval does; the
receiver records the new velocity of each step at the receiver cell's centre.
"""

from __future__ import annotations

import numpy as np


def missing() -> str | None:
    """None when Devito can be imported, else what to do to get it."""
    try:
        import devito  # noqa: F401, PLC0415
    except ImportError:
        return ("Devito is not installed. It is the optional 'bench' extra, which pins NumPy below constraints.txt, "
                "so give it a venv of its own: `python3 -m venv .venv-bench && . .venv-bench/bin/activate && "
                "pip install -e '.[mpich,bench]'`, then run `python benchmarks/bench_fdm.py --compare devito` there")
    return None


def run(spec, threads: int, steps: int | None = None, repetitions: int = 1) -> dict:
    """Build and run Devito's operator for the checked hetval spec ``spec`` (:class:`sims.fdm.spec.FDMSpec`;
    homogeneous medium, explosive source, ``boundary: none``) on ``threads`` OpenMP threads.

    Returns, per repetition (from rest each time), the seconds of the time loop as Devito's own timer reports
    it (``apply``'s section timings summed, setup and compilation excluded) and MLUP/s, and the receivers'
    ``vx, vy, vz`` traces of the first.
    """
    import os  # noqa: PLC0415

    os.environ.setdefault("DEVITO_LANGUAGE", "openmp")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("DEVITO_LOGGING", "WARNING")
    from devito import (  # noqa: PLC0415
        Constant,
        Eq,
        Grid,
        Operator,
        SparseTimeFunction,
        TensorTimeFunction,
        VectorTimeFunction,
        configuration,
        diag,
        div,
        grad,
    )

    configuration["language"] = "openmp"
    if spec.source.kind != "explosive" or spec.boundary != "none" or spec.free_surface:
        raise ValueError("the Devito comparison covers explosive sources, boundary none and no free surface")
    medium = spec.medium
    if len(medium.vp) != 1:
        raise ValueError("the Devito comparison covers a homogeneous medium")
    vp, vs, rho = float(medium.vp[0]), float(medium.vs[0]), float(medium.rho[0])
    steps = int(steps or spec.steps)
    h, dt = float(spec.spacing), float(spec.dt)
    shape = tuple(int(n) for n in spec.shape)
    grid = Grid(shape=shape, extent=tuple((n - 1) * h for n in shape), dtype=np.float32)
    v = VectorTimeFunction(name="v", grid=grid, space_order=spec.order, time_order=1)
    tau = TensorTimeFunction(name="t", grid=grid, space_order=spec.order, time_order=1)
    b = Constant(name="b", value=1.0 / rho, dtype=np.float32)
    lam = Constant(name="lam", value=rho * (vp**2 - 2 * vs**2), dtype=np.float32)
    mu = Constant(name="mu", value=rho * vs**2, dtype=np.float32)
    s = grid.stepping_dim.spacing
    update_v = Eq(v.forward, v + s * b * div(tau))
    update_t = Eq(tau.forward, tau + s * lam * diag(div(v.forward))
                  + s * mu * (grad(v.forward) + grad(v.forward).transpose(inner=False)))
    cell = [min(int(np.floor(p / h)), n - 1) for p, n in zip(spec.source.position, shape, strict=True)]
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=steps)
    src.coordinates.data[0, :] = np.asarray(cell, dtype=float) * h
    t_half = (np.arange(steps) + 0.5) * dt
    src.data[:, 0] = -spec.source.time_function(t_half) * dt / h**3
    recs = []
    cells = [[min(int(np.floor(p / h)), n - 1) for p, n in zip(r, shape, strict=True)] for r in spec.receivers]
    terms = [update_v, update_t]
    for c in range(3):
        terms += src.inject(field=tau[c, c].forward, expr=src)
    for c in range(3):
        rec = SparseTimeFunction(name="rec" + "xyz"[c], grid=grid, npoint=len(cells), nt=steps)
        rec.coordinates.data[:] = np.asarray(cells, dtype=float) * h
        terms += rec.interpolate(expr=v[c].forward)
        recs.append(rec)
    op = Operator(terms, name="elastic")
    op.cfunction  # compile now: not part of the timed loop  # noqa: B018
    points, times, traces = int(np.prod(shape)), [], None
    for _ in range(max(1, int(repetitions))):
        for f in dict.fromkeys([*v, *tau]):
            f.data[:] = 0.0
        summary = op.apply(time_m=0, time_M=steps - 1, dt=dt, nthreads=int(threads))
        times.append(sum(float(sec.time) for sec in summary.values()))
        if traces is None:
            traces = np.stack([np.asarray(r.data[:, :], dtype=np.float64).T for r in recs])
    return {"time_s": times, "mlups": [points * steps / t / 1e6 for t in times], "steps": steps, "traces": traces}


def correlation(a, b) -> float:
    """Zero-lag normalised correlation of two traces (1 for identical shapes, whatever their scale)."""
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    den = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / den) if den > 0 else float("nan")
