"""Threads per rank: the kernels' parallel copies, and a spec asking for more threads than the rank was started with."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from sims.fdm import kernels_numba as K


def _fields(shape, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(9)]


@pytest.mark.parametrize("order,c1,c2", [(2, 1.0, 0.0), (4, 9 / 8, -1 / 24)])
def test_parallel_kernels_give_the_serial_bits(order, c1, c2):
    shape = (14, 12, 20)
    prof = [np.random.default_rng(k).uniform(0.1, 1.0, shape[2]).astype(np.float32) for k in range(4)]
    box = (2, shape[0] - 2, 2, shape[1] - 2, 2, shape[2] - 2)
    f32 = np.float32
    for phase, nprof in (("velocity", 2), ("stress", 4)):
        serial, parallel = K.kernel(phase, "box", order, 1), K.kernel(phase, "box", order, 2)
        a, b = _fields(shape, 1), _fields(shape, 1)
        serial(*a, *prof[:nprof], f32(c1), f32(c2), *box)
        parallel(*b, *prof[:nprof], f32(c1), f32(c2), *box)
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
        assert not all(np.array_equal(x, y) for x, y in zip(a, _fields(shape, 1), strict=True))  # it did update


def test_more_threads_than_the_rank_was_started_with_is_an_error_naming_the_key(tmp_path):
    from mpi4py import MPI

    from sims.fdm.driver import execute
    from tests.fdm.conftest import base_spec

    doc = base_spec(order=2)
    doc["threads_per_rank"] = 4096
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    rec = execute(MPI.COMM_SELF, str(path)).records[0]
    assert rec["status"] == "failed" and "'threads_per_rank' is 4096" in rec["error"]
    assert "HETVAL_THREADS_PER_RANK=4096" in rec["error"]


def test_kernel_copies_per_layer_and_refusal():
    """A C-PML box inside the x and/or y layer gets its own compiled copy; a box without a layer has none."""
    copies = {K.kernel("stress", "pml", 2, 1, x=x, y=y) for x in (False, True) for y in (False, True)}
    assert len(copies) == 4 and K.kernel("stress", "pml", 2, 2, x=True) is not K.kernel("stress", "pml", 2, 1, x=True)
    with pytest.raises(ValueError, match="no x or y layer"):
        K.kernel("velocity", "box", 4, 1, x=True)
