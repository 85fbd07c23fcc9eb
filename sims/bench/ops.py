"""Parametrised per-operation microbenchmarks (Kannan et al.): time against the number of operations.

For each operation (``add``, ``mul``, ``fma``, ``divide``, ``random``) and data
type (float32, float64) the kernel applies ``n_ops`` operations to every
element of an in-cache block, passed over enough times that one operation per
element takes at least :data:`MIN_REGION_S` on the machine at hand
(:func:`passes_for`), so that the measured time grows linearly with
the operation count and the slope is the operation's cost ``tau_op`` (s per
element-operation, as a compiled loop achieves it: vectorised where the
compiler vectorises). ``random`` is the random-access load: ``n_ops`` gathers
per element from an array several times the last-level cache.

Characterisation records the rows ``op, dtype, n_ops, elements, ops, bytes,
time_s`` (one per repetition, in the order of :func:`schedule`);
:func:`fit` is the per-operation model's least-squares fit for one (op,
dtype), ``T = tau_op * ops + c`` over each count's median, with R² and
residuals.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

from sims.backends.jit import jit
from sims.fit import linear_fit

OPS = ("add", "mul", "fma", "divide", "random")
DTYPES = ("float32", "float64")
N_OPS = (1, 2, 4, 8, 16)
BLOCK = 4096  # elements of the in-cache block
PASSES = 256  # times the block is processed per measured call, at least (see passes_for)
#: The shortest measured region (one operation per element) that :func:`passes_for` sizes the passes to: a
#: vectorised add over 256 passes of the block takes ~50 us here, where timer resolution, frequency changes and
#: interrupts are a large part of the time and the fit's R² fell to 0.87
MIN_REGION_S = 1e-3
MAX_PASSES = 64 * PASSES
OP_CODES = {name: n for n, name in enumerate(OPS)}


@jit(cache=True, error_model="numpy")  # numpy semantics for x/0: no check that would stop vectorisation
def _ops_nb(buf, table, idx, code, n_ops, passes, c, d):  # pragma: no cover - compiled
    m = buf.shape[0]
    for _ in range(passes):
        if code == 0:
            for _j in range(n_ops):
                for i in range(m):
                    buf[i] = buf[i] + c
        elif code == 1:
            for _j in range(n_ops):
                for i in range(m):
                    buf[i] = buf[i] * c
        elif code == 2:
            for _j in range(n_ops):
                for i in range(m):
                    buf[i] = buf[i] * c + d
        elif code == 3:
            for _j in range(n_ops):
                for i in range(m):
                    buf[i] = d / buf[i]
        else:
            for j in range(n_ops):
                for i in range(m):
                    buf[i] = buf[i] + table[idx[(i + j * m) % idx.shape[0]]]


def schedule(reps: int) -> list[tuple[int, str, str, int]]:
    """The order the measured calls are made in: ``(rep, op, dtype, n_ops)``, repetition outermost, so that a
    machine that slows down for a second or two (another process, a frequency change) costs one repetition of
    every fit rather than every repetition of one (which moved one fit's cost by 24-37 % between rounds)."""
    return [(r, op, dt, n) for r in range(int(reps)) for op in OPS for dt in DTYPES for n in N_OPS]


def setup(dtype: str, table_elements: int, seed: int) -> dict[str, Any]:
    """The block, the random-access table (``table_elements`` long) and its random indices."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    return {
        "buf": rng.uniform(0.5, 1.5, BLOCK).astype(dt),
        "table": _table(rng, int(table_elements), dt),
        "idx": rng.integers(0, int(table_elements), BLOCK * max(N_OPS)).astype(np.int64),
        # add: tiny step; mul: 1 + tiny; fma: contraction to a fixed point; divide: v -> d / v oscillates, bounded
        "c": {"add": 1e-7, "mul": 1.0 + 1e-7, "fma": 0.97, "divide": 1.0, "random": 0.0},
        "d": {"add": 0.0, "mul": 0.0, "fma": 0.03, "divide": 1.1, "random": 0.0},
        "dtype": dt,
    }


def _table(rng: np.random.Generator, n: int, dt: np.dtype) -> np.ndarray:
    """``n`` values uniform in [-1e-3, 1e-3) drawn directly in ``dt``: no float64 temporary beside the table."""
    table = rng.random(n, dtype=dt)
    table *= dt.type(2e-3)
    table -= dt.type(1e-3)
    return table


def passes_for(state: dict[str, Any], op: str, backend: str = "numba") -> int:
    """Passes of the block per call such that one operation per element takes at least :data:`MIN_REGION_S`
    on this machine (a power of two times :data:`PASSES`, at most :data:`MAX_PASSES`): timed once, after a
    warm-up call, at :data:`PASSES`."""
    run(state, op, 1, backend)
    t0 = time.perf_counter()
    run(state, op, 1, backend)
    took = time.perf_counter() - t0
    passes = PASSES
    while passes < MAX_PASSES and took * passes / PASSES < MIN_REGION_S:
        passes *= 2
    return passes


def run(state: dict[str, Any], op: str, n_ops: int, backend: str = "numba", passes: int = PASSES) -> int:
    """One measured call on ``backend`` (``numba`` or ``numpy``) of ``passes`` over the block; returns the
    element-operations executed."""
    dt = state["dtype"]
    c, d = dt.type(state["c"][op]), dt.type(state["d"][op])
    if backend == "numba":
        _ops_nb(state["buf"], state["table"], state["idx"], OP_CODES[op], int(n_ops), int(passes), c, d)
    elif backend == "numpy":
        buf, table, idx = state["buf"], state["table"], state["idx"]
        gathered = np.empty_like(buf)
        for _ in range(int(passes)):
            for j in range(int(n_ops)):
                if op == "add":
                    np.add(buf, c, out=buf)
                elif op == "mul":
                    np.multiply(buf, c, out=buf)
                elif op == "fma":
                    np.multiply(buf, c, out=buf)
                    np.add(buf, d, out=buf)
                elif op == "divide":
                    np.divide(d, buf, out=buf)
                else:
                    np.take(table, idx[j * BLOCK:(j + 1) * BLOCK], out=gathered)
                    np.add(buf, gathered, out=buf)
    else:
        raise ValueError(f"per-operation benchmarks run on numba or numpy, not {backend!r}")
    return BLOCK * int(passes) * int(n_ops)


def bytes_of(state: dict[str, Any], op: str, n_ops: int, passes: int = PASSES) -> int:
    """Main-memory bytes of one call as counted: only the random-access loads leave the cache."""
    return BLOCK * int(passes) * int(n_ops) * state["dtype"].itemsize if op == "random" else 0


def fit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Least squares ``T = tau * ops + c`` over the median time at each operation count of one (op, dtype):
    tau, intercept, R², the residual and the median time at each count (as the ping-pong's fit takes each
    size's median: a call slowed by the machine, not by the kernel, moves one sample and not the fit)."""
    counts = sorted({int(r["n_ops"]) for r in rows})
    if len(counts) < 2:
        raise ValueError("the per-operation fit needs samples at two or more operation counts")
    ops = np.array([statistics.median(r["ops"] for r in rows if r["n_ops"] == n) for n in counts], dtype=float)
    t = np.array([statistics.median(r["time_s"] for r in rows if r["n_ops"] == n) for n in counts], dtype=float)
    f = linear_fit([ops], t, intercept=True)
    return {"tau": f.coef[0], "intercept_s": f.coef[1], "r2": f.r2,
            "residuals_s": {n: float(r) for n, r in zip(counts, f.residuals, strict=True)},
            "median_time_s": {n: float(v) for n, v in zip(counts, t, strict=True)}, "n_samples": len(rows)}


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per ``op/dtype``: the fit and the median time per operation count."""
    out = {}
    for op in OPS:
        for dtype in DTYPES:
            sel = [r for r in rows if r["op"] == op and r["dtype"] == dtype]
            if not sel:
                continue
            out[f"{op}/{dtype}"] = fit(sel)
    return out
