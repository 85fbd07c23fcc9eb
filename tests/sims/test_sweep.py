"""The intensity-sweep kernel, the roofline fit and the ping-pong fit."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sims.backends import get_backend
from sims.bench import pingpong, sweep


@pytest.mark.parametrize("k", [1, 3, 8, 24])
def test_sweep_kernel_computes_k_fmas_per_element(k):
    ref = None
    for name in ("numpy", "numba"):
        be = get_backend(name)
        st = sweep.setup(be, 5000, seed=3)
        sweep.run(be, st, k)
        expect = np.asarray(st["a"], dtype=np.float64)
        for _ in range(k):
            expect = expect * float(st["x"]) + float(st["y"])
        assert np.allclose(st["out"], expect, rtol=1e-5)
        ref = st["out"] if ref is None else ref
        assert np.allclose(st["out"], ref, rtol=1e-6)
        assert sweep.counts(st["n"], k) == (2 * k * 5000, 8 * 5000)


def test_roofline_fit_recovers_known_coefficients_from_noisy_samples():
    rng = np.random.default_rng(42)
    t_f, t_b = 1.0 / 50e9, 1.0 / 20e9
    n = 1e7
    flops = np.array([2 * k * n for k in sweep.KS])
    nbytes = np.full(len(sweep.KS), 8 * n)
    times = np.maximum(flops * t_f, nbytes * t_b) * rng.normal(1.0, 0.03, len(flops))
    fit = sweep.fit_roofline(flops, nbytes, times)
    assert fit["t_f"] == pytest.approx(t_f, rel=0.05) and fit["t_b"] == pytest.approx(t_b, rel=0.05)
    assert fit["r2"] > 0.99 and not fit["poor_fit"]
    # a kernel that is no roofline at all: flagged
    bad = sweep.fit_roofline(flops, nbytes, rng.uniform(0.1, 1.0, len(flops)))
    assert bad["poor_fit"]
    with pytest.raises(ValueError, match="at least 3 samples"):
        sweep.fit_roofline([1.0], [1.0], [1.0])


def test_pingpong_fit():
    rng = np.random.default_rng(1)
    latency, t_net = 3e-6, 1 / 5e9
    samples = {m: list(latency + m * t_net + rng.normal(0, 1e-8, 5)) for m in pingpong.SIZES}
    fit = pingpong.fit(samples)
    assert fit["latency_s"] == pytest.approx(latency, rel=0.05)
    assert fit["t_net"] == pytest.approx(t_net, rel=0.02)
    assert fit["r2"] > 0.999 and set(fit["residuals_s"]) == set(pingpong.SIZES)


@pytest.mark.parametrize("op", ["add", "mul", "fma", "divide", "random"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_per_operation_kernels_execute_their_chains(op, dtype):
    """Both backends apply exactly ``n_ops`` operations per element and pass, and agree: a compiled chain one
    operation longer (27 in all, not 24) or a pass fewer gives other values (divide, an involution, tells only
    an odd difference apart: the longer chain)."""
    from sims.bench import ops

    for backend in ops.BACKENDS:  # each equal to one reference: the backends agree
        st = ops.setup(dtype, 100_000, seed=5, backend=backend)
        m = ops.BLOCKS[backend]
        ref = st["buf"][:ops.NUMBA_BLOCK].astype(dtype)
        c, d = ref.dtype.type(st["c"][op]), ref.dtype.type(st["d"][op])
        for _ in range(3):  # the reference, element-wise in NumPy: three passes of 8 operations
            for j in range(8):
                if op == "add":
                    ref = ref + c
                elif op == "mul":
                    ref = ref * c
                elif op == "fma":
                    ref = ref * c + d
                elif op == "divide":
                    ref = d / ref
                else:
                    ref = ref + st["table"][st["idx"][j * ops.GATHER_STRIDE:j * ops.GATHER_STRIDE + ops.NUMBA_BLOCK]]
        assert ops.run(st, op, 8, passes=3) == m * 3 * 8
        np.testing.assert_array_equal(st["buf"][:ops.NUMBA_BLOCK], ref)
    with pytest.raises(ValueError, match="at most 64"):
        ops.run(st, op, 65)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_moves_and_short_adds_execute_their_chains(dtype):
    """``move`` copies the operand into the block ``n_ops`` times a pass; ``short_add`` adds ``n_ops`` times a pass
    into the block's first row only (:data:`sims.bench.ops.SHORT_BLOCK`). Compiled chains have neither."""
    from sims.bench import ops

    st = ops.setup(dtype, 100_000, seed=5, backend="numpy")
    assert ops.run(st, "move", 8, passes=3) == ops.NUMPY_BLOCK * 3 * 8 == ops.elements(st, "move", 3) * 8
    np.testing.assert_array_equal(st["buf"], np.ones(ops.NUMPY_BLOCK, dtype))
    step = st["dtype"].type(st["c"]["short_add"])
    row = st["buf"][:ops.SHORT_BLOCK].copy()
    for _ in range(3 * 16):
        row = row + step
    assert ops.run(st, "short_add", 16, passes=3) == ops.SHORT_BLOCK * 3 * 16 == ops.elements(st, "short_add", 3) * 16
    np.testing.assert_array_equal(st["buf"][:ops.SHORT_BLOCK], row)
    np.testing.assert_array_equal(st["buf"][ops.SHORT_BLOCK:], 1)  # the rest of the block untouched
    numba = ops.setup(dtype, 100_000, seed=5, backend="numba")
    for op in ops.NUMPY_OPS:
        with pytest.raises(ValueError, match="numpy only"):
            ops.run(numba, op, 8)


def test_per_operation_calls_are_sized_and_interleaved():
    from sims.bench import ops

    st = ops.setup("float32", 100_000, seed=5)
    passes = ops.passes_for(st, "add")
    assert ops.PASSES <= passes <= ops.MAX_PASSES and passes % ops.PASSES == 0 and (passes // ops.PASSES) & (
        passes // ops.PASSES - 1) == 0  # a power of two times PASSES
    order = ops.schedule(2)
    assert len(order) == 2 * len(ops.OPS) * len(ops.DTYPES) * len(ops.N_OPS)
    assert [r for r, *_ in order] == sorted(r for r, *_ in order)  # every fit's first repetition before any second
    assert order[0][1:] == (ops.OPS[0], ops.DTYPES[0], ops.N_OPS[0]) and order[-1][1:] == (ops.OPS[-1], ops.DTYPES[-1],
                                                                                            ops.N_OPS[-1])
    on_numpy = ops.schedule(2, "numpy")  # the NumPy-only operations after the others, in every repetition
    assert len(on_numpy) == 2 * len(ops.OPS + ops.NUMPY_OPS) * len(ops.DTYPES) * len(ops.N_OPS)
    assert [o for _, o, *_ in on_numpy[:len(on_numpy) // 2]] == [o for _, o, *_ in on_numpy[len(on_numpy) // 2:]]
    assert on_numpy[-1][1] == ops.NUMPY_OPS[-1] and not {o for _, o, *_ in order} & set(ops.NUMPY_OPS)
    with pytest.raises(ValueError, match="numba or numpy"):
        ops.setup("float32", 1000, seed=5, backend="cupy")


def test_a_preempted_probe_does_not_cut_the_region_short(monkeypatch):
    """A busy node: the OS preempts one probe call of each length for 3 ms. The passes are the same as on a quiet
    machine (the doubling went on), so the smallest count's call still takes the minimum region."""
    from sims.bench import ops

    st = ops.setup("float32", 100_000, seed=5)
    quiet = ops.passes_for(st, "mul")
    real, seen = ops.run, set()

    def preempted(state, op, n_ops, passes=ops.PASSES):
        if passes not in seen:  # the first call of each length
            seen.add(passes)
            time.sleep(3 * ops.MIN_REGION_S)
        return real(state, op, n_ops, passes)

    monkeypatch.setattr(ops, "run", preempted)
    busy = ops.passes_for(st, "mul")
    assert quiet > ops.PASSES  # one pass is far below the minimum region: the doubling has work to do
    assert quiet / 2 <= busy <= 2 * quiet  # the machine's own drift: one doubling either way


def test_per_operation_fit_recovers_the_cost():
    from sims.bench import ops

    rng = np.random.default_rng(3)
    tau, overhead = 2.5e-10, 1e-4
    rows = [{"op": "add", "dtype": "float32", "n_ops": n, "ops": 1_000_000 * n,
             "time_s": overhead + tau * 1_000_000 * n * rng.normal(1, 0.01)} for n in ops.N_OPS for _ in range(5)]
    f = ops.fit(rows)
    assert f["tau"] == pytest.approx(tau, rel=0.03) and f["intercept_s"] == pytest.approx(overhead, rel=0.3)
    assert f["r2"] > 0.99 and sorted(f["residuals_s"]) == list(ops.N_OPS)
    # one call slowed 3x by the machine (another process) moves one sample, not the fit
    slowed = [dict(r, time_s=r["time_s"] * 3) if i == 7 else r for i, r in enumerate(rows)]
    assert ops.fit(slowed)["tau"] == pytest.approx(tau, rel=0.03) and ops.fit(slowed)["r2"] > 0.99
    assert f["tau_spread"] is None and f["tau_by_rep"] is None  # rows without their repetition
    # with their repetitions (as characterisation records them): one repetition 1.5x slower moves tau_spread
    reps = [dict(r, rep=i % 5, time_s=r["time_s"] * (1.5 if i % 5 == 3 else 1.0)) for i, r in enumerate(rows)]
    spread = ops.fit(reps)
    assert len(spread["tau_by_rep"]) == 5 and spread["tau_spread"] == pytest.approx(1.5, rel=0.05)
    assert spread["tau"] == pytest.approx(tau, rel=0.03)  # the medians' fit does not move
    summary = ops.summarize(rows)
    assert set(summary) == {"add/float32"} and sorted(summary["add/float32"]["median_time_s"]) == list(ops.N_OPS)
    with pytest.raises(ValueError, match="two or more"):
        ops.fit(rows[:1])


def testenergy_fit_recovers_choi_coefficients():
    rng = np.random.default_rng(7)
    e_f, e_b, p_s = 50e-12, 400e-12, 25.0
    n = 1e7
    flops = np.array([2 * k * n for k in sweep.KS for _ in range(3)])
    nbytes = np.full(flops.shape, 8 * n)
    times = np.maximum(flops / 60e9, nbytes / 15e9) * rng.normal(1, 0.02, flops.size)
    energy = (e_f * flops + e_b * nbytes + p_s * times) * rng.normal(1, 0.002, flops.size)
    fit = sweep.fit_energy(flops, nbytes, times, energy)
    assert fit["e_f"] == pytest.approx(e_f, rel=0.1) and fit["p_s"] == pytest.approx(p_s, rel=0.05)
    assert fit["r2"] > 0.99 and not fit["unphysical"]
    with pytest.raises(ValueError, match="at least 4"):
        sweep.fit_energy([1.0], [1.0], [1.0], [1.0])


def test_characterisationenergy_parameters_from_metered_sweep():
    from sims.bench.energy import energy_fit, energy_parameters

    n = 1_000_000
    times = {k: [max(2 * k * n / 50e9, 8 * n / 10e9)] * 3 for k in sweep.KS}
    joules = {k: [60e-12 * 2 * k * n + 300e-12 * 8 * n + 20.0 * t for t in ts] for k, ts in times.items()}
    params = energy_parameters(energy_fit(times, joules, n, "rapl"))
    assert params["e_f"]["value"] == pytest.approx(60e-12, rel=1e-3) and params["e_f"]["obtained"] == "fitted"
    assert params["p_s"]["value"] == pytest.approx(20.0, rel=1e-3) and params["p_s"]["unit"] == "W"
    assert energy_parameters(None) == {"e_f": None, "e_b": None, "p_s": None}  # no meter: null, never estimated


class _OneRank:
    """The calls :func:`pingpong.measure` makes of its communicator, on rank 0 of one."""

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's name
        return 0

    def bcast(self, value, root=0):
        return value


def test_pingpong_measures_again_while_the_time_does_not_grow_with_size(monkeypatch):
    """A busy machine can tilt the fit (t_net <= 0): measured again, said, and the first sound samples kept;
    after the last attempt its samples are returned whatever they say."""
    tilted = {m: [1e-3 - m * 1e-10] * 3 for m in pingpong.SIZES}
    sound = {m: [2e-6 + m * 1e-10] * 3 for m in pingpong.SIZES}
    runs = iter([tilted, sound])
    monkeypatch.setattr(pingpong, "pingpong", lambda comm, repetitions: next(runs))
    said = []
    assert pingpong.measure(_OneRank(), attempts=3, say=said.append) is sound
    assert len(said) == 1 and "attempt 2 of 3" in said[0]
    monkeypatch.setattr(pingpong, "pingpong", lambda comm, repetitions: tilted)
    said.clear()
    assert pingpong.measure(_OneRank(), attempts=2, say=said.append) is tilted and len(said) == 1
