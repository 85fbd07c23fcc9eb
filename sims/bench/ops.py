"""Parametrised per-operation microbenchmarks (Kannan et al.): time against the number of operations.

For each operation (``add``, ``mul``, ``fma``, ``divide``, ``random``) and data
type (float32, float64) a call applies ``n_ops`` operations to every element of
an in-cache block, passed over enough times that the shortest chain takes at
least :data:`MIN_REGION_S` on the machine at hand (:func:`passes_for`). The
measured time grows linearly with the operation count; its slope is the
operation's cost ``tau_op`` (s per element-operation).

The arithmetic operations follow the slides' example micro-benchmark: an
element is loaded once, the operation is applied ``n_ops`` times to a value in
a register, and the result is stored once (``reg2 = reg2 + reg1`` repeated).

* numba: one compiled kernel per (operation, count) with the count a constant,
  so the chain is unrolled and the element loop SIMD-vectorised, as the SA
  kernel's 63-multiply chain is. Counts start at 8 (:data:`N_OPS`): below that,
  the core overlaps a short chain with its neighbours' loads and stores and a
  chain costs about what its load and store cost, which would bend the line.
* numpy: NumPy's registers are arrays: a chain is ``n_ops`` in-place ufunc
  calls ``buf = buf op operand`` with the operand an array of the block's
  length, as ``reg1`` is a register, and each call's overhead is part of the
  per-element cost. The block is as long as one ufunc call of the SA NumPy
  kernel (:data:`NUMPY_BLOCK`), not an L1 block the calls' overhead would
  dominate.

``random`` is the random-access load: ``n_ops`` gathers per element from a
table several times the last-level cache, added into the element.

Two more run on NumPy only (:data:`NUMPY_OPS`), for what the SA's NumPy
PowAdd executes beside its block-long calls (:data:`sims.sa.counts.NUMPY_POWADD_BLOCKS`):
``move``, a chain of ``np.copyto`` from an in-cache operand into the block (the
kernel's copy of ``e`` into its buffer and fill of the power buffer), and
``short_add``, the ``add`` chain over one row of that buffer
(:data:`SHORT_BLOCK` elements, as the kernel adds each row into ``d``): a call's
fixed cost is 32 times larger per element there than over the whole block.

Characterisation records the rows ``op, dtype, rep, n_ops, elements, ops, bytes,
time_s`` (one per repetition, in the order of :func:`schedule`);
:func:`fit` is the per-operation model's least-squares fit for one (op,
dtype), ``T = tau_op * ops + c`` over each count's median, with R² and
residuals.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

import numpy as np

from sims.backends.jit import jit
from sims.backends.numpy_backend import placed_empty
from sims.fit import linear_fit
from sims.sa.counts import NUMPY_POWADD_BLOCK, NUMPY_POWADD_CALL

OPS = ("add", "mul", "fma", "divide", "random")
#: operations measured on the NumPy backend only: a compiled chain of moves or calls is no chain at all
NUMPY_OPS = ("move", "short_add")
DTYPES = ("float32", "float64")
N_OPS = (8, 16, 32, 64)
BACKENDS = ("numba", "numpy")
#: elements of the numba block (16 KiB of float32: L1)
NUMBA_BLOCK = 4096
#: elements of the numpy block: one in-place ufunc call of the SA NumPy PowAdd spans its (terms, block) buffer
NUMPY_BLOCK = NUMPY_POWADD_CALL
BLOCKS = {"numba": NUMBA_BLOCK, "numpy": NUMPY_BLOCK}
#: elements of the ``short_add`` chain's block: one row of the SA NumPy PowAdd's buffer
SHORT_BLOCK = NUMPY_POWADD_BLOCK
#: the gathers of operation ``j`` read ``idx[j * GATHER_STRIDE + i]``, the same on every backend
GATHER_STRIDE = max(BLOCKS.values())
PASSES = 1  # the fewest passes over the block per measured call
#: The shortest measured region (the smallest count's call) that :func:`passes_for` sizes the passes to: much
#: shorter, timer resolution, frequency changes and interrupts are a large part of the time and the fit's R² falls
MIN_REGION_S = 1e-3
MAX_PASSES = 1 << 16
#: calls timed per length while :func:`passes_for` doubles it
PROBES = 3
OP_CODES = {name: n for n, name in enumerate(OPS)}


@functools.cache
def _chain_kernel(code: int, n_ops: int):
    """The compiled chain of ``n_ops`` operations ``code`` per element: both are constants of the kernel (its
    closure), so LLVM unrolls the chain, drops the other operations' branches and vectorises over elements.
    Numba's cache keys a closure's compiled code on the values it closes over."""

    @jit(cache=True, error_model="numpy")  # numpy semantics for x/0: no check that would stop vectorisation
    def chain(buf, passes, c, d):  # pragma: no cover - compiled
        for _ in range(passes):
            for i in range(buf.shape[0]):
                x = buf[i]
                for _k in range(n_ops):
                    if code == 0:
                        x = x + c
                    elif code == 1:
                        x = x * c
                    elif code == 2:
                        x = x * c + d
                    else:
                        x = d / x
                buf[i] = x

    return chain


@jit(cache=True)
def _gather_nb(buf, table, idx, n_ops, passes, stride):  # pragma: no cover - compiled
    m = buf.shape[0]
    for _ in range(passes):
        for j in range(n_ops):
            base = (j * stride) % idx.shape[0]
            for i in range(m):
                buf[i] = buf[i] + table[idx[base + i]]


def ops_for(backend: str) -> tuple[str, ...]:
    """The operations measured on the benchmarks' ``backend`` (``numba`` or ``numpy``: :func:`backend_for`)."""
    return OPS + NUMPY_OPS if backend == "numpy" else OPS


def schedule(reps: int, backend: str = "numba") -> list[tuple[int, str, str, int]]:
    """The order the measured calls are made in on ``backend``: ``(rep, op, dtype, n_ops)``, repetition
    outermost, so that a machine that slows down for a second or two (another process, a frequency change) costs
    one repetition of every fit rather than every repetition of one (which moved one fit's cost by 24-37 %
    between rounds)."""
    return [(r, op, dt, n) for r in range(int(reps)) for op in ops_for(backend) for dt in DTYPES for n in N_OPS]


def setup(dtype: str, table_elements: int, seed: int, backend: str = "numba",
          idx: np.ndarray | None = None) -> dict[str, Any]:
    """The ``backend``'s block, the random-access table (``table_elements`` long) and the gathers' indices
    (``idx``, shared between states of one table size: :func:`states`)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if backend not in BLOCKS:
        raise ValueError(f"per-operation benchmarks run on {' or '.join(BACKENDS)}, not {backend!r}")
    dt = np.dtype(dtype)
    return {  # buf, table and idx from streams of their own: the same values whatever the block's length
        "buf": _placed(np.random.default_rng([seed, 0]).uniform(0.5, 1.5, BLOCKS[backend]).astype(dt), 0),
        "table": _table(np.random.default_rng([seed, 2]), int(table_elements), dt),
        "idx": _indices(seed, int(table_elements)) if idx is None else idx,
        # add: tiny step; mul: 1 + tiny; fma: contraction to a fixed point; divide: v -> d / v oscillates, bounded
        "c": {"add": 1e-7, "mul": 1.0 + 1e-7, "fma": 0.97, "divide": 1.0, "random": 0.0, "move": 1.0, "short_add": 1e-7},
        "d": {"add": 0.0, "mul": 0.0, "fma": 0.03, "divide": 1.1, "random": 0.0, "move": 0.0, "short_add": 0.0},
        "dtype": dt,
        "backend": backend,
    }


def backend_for(name: str) -> str:
    """The benchmarks' backend for a CPU processor's backend ``name``: its compiled chains on Numba, else NumPy."""
    return "numba" if name == "numba" else "numpy"


def states(table_elements: int, seed: int, backend: str) -> dict[str, dict[str, Any]]:
    """One state per data type, sharing one array of gather indices."""
    idx = _indices(seed, int(table_elements))
    return {dt: setup(dt, table_elements, seed, backend, idx) for dt in DTYPES}


def _indices(seed: int, table_elements: int) -> np.ndarray:
    """Random table positions for every (operation, element) a call can gather: ``max(N_OPS)`` strides."""
    return np.random.default_rng([seed, 1]).integers(0, table_elements, GATHER_STRIDE * max(N_OPS))


def _table(rng: np.random.Generator, n: int, dt: np.dtype) -> np.ndarray:
    """``n`` values uniform in [-1e-3, 1e-3) drawn directly in ``dt``: no float64 temporary beside the table."""
    table = rng.random(n, dtype=dt)
    table *= dt.type(2e-3)
    table -= dt.type(1e-3)
    return table


def passes_for(state: dict[str, Any], op: str) -> int:
    """Passes of the block per call such that the smallest count's call takes at least :data:`MIN_REGION_S`
    on this machine: a power of two times :data:`PASSES`, at most :data:`MAX_PASSES`, found by timing calls
    of doubling length after a warm-up call, each length's fastest of :data:`PROBES` calls: a call the OS
    preempted (a busy node) reads long, never short, and one such call would stop the doubling at a region
    far below the minimum."""
    run(state, op, N_OPS[0])
    passes = PASSES
    while passes < MAX_PASSES:
        if min(_call_s(state, op, passes) for _ in range(PROBES)) >= MIN_REGION_S:
            break
        passes *= 2
    return passes


def _call_s(state: dict[str, Any], op: str, passes: int) -> float:
    t0 = time.perf_counter()
    run(state, op, N_OPS[0], passes)
    return time.perf_counter() - t0


def elements(state: dict[str, Any], op: str, passes: int = PASSES) -> int:
    """Elements one call of ``op`` over ``passes`` passes operates on: the block's (for ``short_add``, its first
    :data:`SHORT_BLOCK`)."""
    return (SHORT_BLOCK if op == "short_add" else state["buf"].shape[0]) * int(passes)


def run(state: dict[str, Any], op: str, n_ops: int, passes: int = PASSES) -> int:
    """One measured call of ``passes`` over the state's block on the state's backend; returns the
    element-operations executed."""
    dt, buf = state["dtype"], state["buf"]
    c, d = dt.type(state["c"][op]), dt.type(state["d"][op])
    n_ops, passes = int(n_ops), int(passes)
    if n_ops > max(N_OPS):
        raise ValueError(f"at most {max(N_OPS)} operations per element, got {n_ops}")
    if op not in ops_for(state["backend"]):
        raise ValueError(f"{op!r} is measured on {' and '.join(b for b in BACKENDS if op in ops_for(b))} only")
    if op == "short_add":
        row, step = buf[:SHORT_BLOCK], _operand(state, "c", op)[:SHORT_BLOCK]
        for _ in range(passes):
            for _j in range(n_ops):
                np.add(row, step, out=row)
        return SHORT_BLOCK * passes * n_ops
    if state["backend"] == "numba":
        if op == "random":
            _gather_nb(buf, state["table"], state["idx"], n_ops, passes, GATHER_STRIDE)
        else:
            _chain_kernel(OP_CODES[op], n_ops)(buf, passes, c, d)
    else:
        table, idx, m = state["table"], state["idx"], buf.shape[0]
        if op == "random":
            gathered = np.empty_like(buf)
        else:
            c, d = _operand(state, "c", op), _operand(state, "d", op)
        for _ in range(passes):
            for j in range(n_ops):
                if op == "add":
                    np.add(buf, c, out=buf)
                elif op == "mul":
                    np.multiply(buf, c, out=buf)
                elif op == "fma":
                    np.multiply(buf, c, out=buf)
                    np.add(buf, d, out=buf)
                elif op == "divide":
                    np.divide(d, buf, out=buf)
                elif op == "move":
                    np.copyto(buf, c)
                else:
                    np.take(table, idx[j * GATHER_STRIDE:j * GATHER_STRIDE + m], out=gathered)
                    np.add(buf, gathered, out=buf)
    return buf.shape[0] * passes * n_ops


def _operand(state: dict[str, Any], which: str, op: str) -> np.ndarray:
    """The numpy chain's operand ``which`` (``c`` or ``d``) of ``op``: an array of the block's length, made once."""
    arrays = state.setdefault("operands", {})
    key = (which, op)
    if key not in arrays:
        arrays[key] = _placed(np.full_like(state["buf"], state[which][op]), OPERAND_OFFSET[which])
    return arrays[key]


#: where in its page each array of a NumPy chain starts (bytes past a page boundary: :func:`_placed`)
OPERAND_OFFSET = {"c": 1024, "d": 2048}


def _placed(values: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``values`` on a cache line, ``offset`` bytes past a page boundary
    (:func:`sims.backends.numpy_backend.placed_empty`): every characterisation measures the calls on aligned
    blocks, as the SA NumPy kernel runs them, instead of on wherever the heap put them."""
    out = placed_empty(values.shape, values.dtype, offset)
    out[...] = values
    return out


def bytes_of(state: dict[str, Any], op: str, n_ops: int, passes: int = PASSES) -> int:
    """Main-memory bytes of one call as counted: only the random-access loads leave the cache."""
    return state["buf"].shape[0] * int(passes) * int(n_ops) * state["dtype"].itemsize if op == "random" else 0


def fit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Least squares ``T = tau * ops + c`` over the median time at each operation count of one (op, dtype):
    tau, intercept, R², the residual and the median time at each count (as the ping-pong's fit takes each
    size's median: a call slowed by the machine, not by the kernel, moves one sample and not the fit).

    Rows that carry their repetition (``rep``, as characterisation records them) also give ``tau`` fitted to
    each repetition alone (``tau_by_rep``) and ``tau_spread``, the largest over the smallest: how far the
    operation's cost moved while it was measured (repetitions are interleaved across every operation, so
    they lie seconds apart); null without ``rep``, with fewer than two complete repetitions, or when one
    repetition's own tau is not positive (its time did not grow with the count: no ratio measures the move)."""
    counts = sorted({int(r["n_ops"]) for r in rows})
    if len(counts) < 2:
        raise ValueError("the per-operation fit needs samples at two or more operation counts")
    ops = np.array([statistics.median(r["ops"] for r in rows if r["n_ops"] == n) for n in counts], dtype=float)
    t = np.array([statistics.median(r["time_s"] for r in rows if r["n_ops"] == n) for n in counts], dtype=float)
    f = linear_fit([ops], t, intercept=True)
    by_rep: dict[int, dict[int, dict[str, Any]]] = {}
    for r in rows:
        if r.get("rep") is not None:
            by_rep.setdefault(int(r["rep"]), {})[int(r["n_ops"])] = r
    taus = [linear_fit([[one[n]["ops"] for n in counts]], [one[n]["time_s"] for n in counts], intercept=True).coef[0]
            for _, one in sorted(by_rep.items()) if sorted(one) == counts]
    spread = max(taus) / min(taus) if len(taus) >= 2 and min(taus) > 0 else None
    return {"tau": f.coef[0], "intercept_s": f.coef[1], "r2": f.r2,
            "residuals_s": {n: float(r) for n, r in zip(counts, f.residuals, strict=True)},
            "median_time_s": {n: float(v) for n, v in zip(counts, t, strict=True)}, "n_samples": len(rows),
            "tau_by_rep": [float(x) for x in taus] if len(taus) >= 2 else None,
            "tau_spread": float(spread) if spread is not None else None}


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per ``op/dtype``: the fit and the median time per operation count."""
    out = {}
    for op in OPS + NUMPY_OPS:
        for dtype in DTYPES:
            sel = [r for r in rows if r["op"] == op and r["dtype"] == dtype]
            if not sel:
                continue
            out[f"{op}/{dtype}"] = fit(sel)
    return out
