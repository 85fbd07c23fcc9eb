"""A job's rehearsal (sims.job.PhaseJob.rehearse) calls every kernel of its timed region on tiny arrays of the same
types, so that the region's first timed execution loads no compiled code; a transpose it runs whole."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from numba import typeof  # noqa: E402

from sims.la import kernels as la_kernels  # noqa: E402
from sims.la.job import MatrixRun  # noqa: E402
from sims.sa import kernels as sa_kernels  # noqa: E402
from sims.sa.job import REHEARSAL_ELEMENTS, SARun  # noqa: E402

LAYOUT = {"host": {"backend": "numpy"}, "accel": {"backend": "numba"}}


def _recording(monkeypatch, module, names):
    """Replace each compiled kernel ``names`` of ``module`` by one that notes its argument types and sizes."""
    calls: list[tuple[str, tuple, int]] = []
    for name in names:
        kernel = getattr(module, name)

        def noted(*args, _k=kernel, _n=name):
            calls.append((_n, tuple(str(typeof(a)) for a in args), max(getattr(a, "size", 1) for a in args)))
            return _k(*args)

        monkeypatch.setattr(module, name, noted)
    return calls


@pytest.mark.parametrize("variant", ["GO", "CP", "DP(0.5)"])
def test_sa_rehearsal_calls_the_timed_kernels_with_the_same_types_on_tiny_arrays(monkeypatch, variant):
    calls = _recording(monkeypatch, sa_kernels, ["_vecadd_nb", "_powadd_nb"])
    spec = {"params": {"size": 50_000}, "variant": variant, "layout": LAYOUT, "seed": 1}
    job = SARun(spec, "accel", None)
    job.rehearse()
    rehearsed = list(calls)
    calls.clear()
    job.work()
    assert rehearsed and [(n, t) for n, t, _ in rehearsed] == [(n, t) for n, t, _ in calls]
    assert max(s for *_, s in rehearsed) <= 32 * REHEARSAL_ELEMENTS < min(s for *_, s in calls)


@pytest.mark.parametrize("case,params,variant", [
    ("la", {"n_mm": 128, "n_tr": 256, "dtype": "float32"}, "GO"),
    ("peach", {"workload": "MatrixTranspose", "n": 256, "dtype": "float64"}, "DP(0.3)"),
])
def test_a_matrix_rehearsal_runs_the_transpose_whole_on_the_runs_own_arrays(monkeypatch, case, params, variant):
    # its output's first writes, in its own order, belong in setup (sims.la.job)
    calls = _recording(monkeypatch, la_kernels, ["_transpose_nb"])
    spec = {"case": case, "params": params, "variant": variant, "layout": LAYOUT, "seed": 1}
    job = MatrixRun(spec, "accel", None)
    job.rehearse()
    rehearsed = list(calls)
    calls.clear()
    job.work()
    assert rehearsed and rehearsed == calls


def test_a_matrix_rehearsal_multiplies_one_tile():
    spec = {"case": "peach", "params": {"workload": "MatrixMultiply", "n": 256, "dtype": "float64"},
            "variant": "DP(0.5)", "layout": LAYOUT, "seed": 1}
    job = MatrixRun(spec, "host", None)
    (product,) = job.steps
    (rehearsal,) = job.rehearsal
    assert product.__defaults__[1]["C"].shape == (128, 256)
    assert rehearsal.__defaults__[1]["C"].shape == (64, 64) and rehearsal.__defaults__[1]["C"].dtype == np.float64
    job.rehearse()
    assert not product.__defaults__[1]["C"].any()  # the run's own product is left to the timed executions


def test_an_sa_rehearsal_maps_the_runs_outputs_pages_and_leaves_them_zero(monkeypatch):
    # an output's pages mapped at its first write cost the first timed execution of a large run 2-3 %
    written = []
    spec = {"params": {"size": 4096}, "variant": "DP(0.5)", "layout": LAYOUT, "seed": 1}
    job = SARun(spec, "host", None)
    assert [a.size for a in job.outputs] == [2048, 2048]
    job.outputs = [_Noted(a, written) for a in job.outputs]
    job.rehearse()
    assert written == [2048, 2048] and not any(np.any(a.array) for a in job.outputs)


class _Noted:
    def __init__(self, array, written):
        self.array, self.written = array, written

    def fill(self, value):
        self.written.append(self.array.size)
        self.array.fill(value)
