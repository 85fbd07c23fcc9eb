"""The Numba kernels keep a rank's two z layers in one memory variable, ghost cells included (see the solver's
``_merge_z_layers``): the same bits as the reference and its layout, and the ghost cells between rows untouched."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from sims.fdm.decomp import HALO
from sims.fdm.solver import Simulation
from sims.fdm.spec import parse

from .conftest import base_spec


def _run(doc):
    sim = Simulation(parse(doc), MPI.COMM_SELF)
    sim.run()
    return sim


@pytest.mark.parametrize("order", [2, 4])
def test_merged_z_layers_match_the_reference_and_leave_the_ghost_cells_alone(order):
    doc = base_spec(order=order, time={"steps": 40})
    numba = _run(doc)
    assert numba.z_merged and (2, "merged") in numba.psi_v and (2, 0) not in numba.psi_v
    psi = numba.psi_s[(2, "merged")][0]
    w, (n0, n1, _) = 4, numba.block.n
    assert psi.shape == (3, n0, n1 + 1, w + 2 * HALO + w)  # slot j: the high layer of row j - 1, the low of row j
    assert np.abs(psi).max() > 0  # the layer did absorb something
    # ghost slots of a segment (a = 0, b = 1, weight 0) stay zero, and so do the wavefields' z ghost cells
    assert not psi[..., w:w + 2 * HALO].any()
    for name, f in numba.fields.items():
        assert not f[:, :, :HALO].any() and not f[:, :, -HALO:].any(), name
    ref = _run(dict(doc, backend="numpy"))
    assert not ref.z_merged and (2, 0) in ref.psi_v
    # the same arithmetic as the reference, operation for operation: the same bits
    assert np.abs(ref.traces).max() > 0 and np.array_equal(numba.traces, ref.traces)
    # the same memory variables as the reference's two arrays, slot by slot
    lo, hi = ref.psi_s[(2, 0)][0], ref.psi_s[(2, 1)][0]
    assert np.array_equal(psi[:, :, :-1, -w:], lo) and np.array_equal(psi[:, :, 1:, :w], hi)
    assert not psi[:, :, 0, :w].any() and not psi[:, :, -1, -w:].any()  # the halves no row owns


def test_one_z_layer_keeps_its_own_array():
    sim = Simulation(parse(base_spec(free_surface=True)), MPI.COMM_SELF)
    assert not sim.z_merged and (2, 1) in sim.psi_v and (2, 0) not in sim.psi_v


def test_compiling_the_kernels_says_each_one_is_ready():
    """A compile from nothing takes tens of seconds: each kernel ready is reported, so no step is silent long."""
    heard = []
    sim = Simulation(parse(base_spec(order=2)), MPI.COMM_SELF)
    sim.compile_kernels(("velocity", "stress"), lambda i, n, name, took: heard.append((i, n, name, took)))
    assert heard and [i for i, *_ in heard] == list(range(1, len(heard) + 1))
    assert all(n == len(heard) and name and took >= 0 for _, n, name, took in heard)
