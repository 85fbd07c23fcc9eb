"""The run spec is checked with errors that name the key; decomposition arithmetic."""

from __future__ import annotations

import pytest

from sims.fdm.decomp import Block, balanced_dims, block_of, choose_dims, split
from sims.fdm.spec import SpecError, parse

from .conftest import base_spec


def test_defaults_and_cfl_dt():
    spec = parse(base_spec())
    assert spec.dt_from_cfl and spec.order == 2 and spec.boundary_label == "cpml(4)"
    assert spec.dt == pytest.approx(0.9 * 10.0 / (3600.0 * 3**0.5))
    assert spec.points == 24 * 22 * 20


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"grid": {"shape": [10, 10], "spacing": 10.0}}, "grid.shape"),
        ({"grid": {"shape": [20, 20, 20]}}, "missing key 'spacing'"),
        ({"order": 3}, "'order'"),
        ({"backend": "fortran"}, "'backend'"),
        ({"marshaling": "carrier-pigeon"}, "'marshaling'"),
        ({"time": {"steps": 10, "dt": 0.01}}, "'time.dt' = 0.01 s is unstable"),
        ({"time": {"steps": 0}}, "'time.steps'"),
        ({"source": {"kind": "explosive", "position": [115.0, 105.0, 95.0], "f0": 30.0, "moment": 1.0}},
         "under-resolved: .* points per minimum wavelength"),
        ({"source": {"kind": "explosive", "position": [500.0, 105.0, 95.0], "f0": 6.0, "moment": 1.0}},
         "'source.position' .* outside the grid"),
        ({"source": {"kind": "force", "position": [115.0, 105.0, 95.0], "f0": 6.0, "force": 1.0}}, "direction"),
        ({"receivers": [[0.0, 0.0, -1.0]]}, r"'receivers\[0\]'"),
        ({"boundary": {"kind": "cpml", "width": 11}}, "'boundary.width'"),
        ({"boundary": {"kind": "sponge"}}, "'boundary.kind'"),
        ({"decomposition": [2, 2]}, "'decomposition'"),
        ({"medium": {"homogeneous": {"vp": 1000.0, "vs": 900.0, "rho": 2000.0}}}, "'medium'.*sqrt"),
        ({"colour": "blue"}, "unknown key"),
        ({"free_surface": "yes"}, "'free_surface'"),
    ],
)
def test_bad_specs_name_the_key(change, message):
    with pytest.raises(SpecError, match=message):
        parse(base_spec(**change))


def test_split_and_blocks_cover_the_grid():
    assert split(10, 3) == [(0, 4), (4, 7), (7, 10)]
    with pytest.raises(ValueError, match="cannot split"):
        split(2, 3)
    shape, dims = (10, 7, 5), (3, 2, 1)
    cells = 0
    for cx in range(3):
        for cy in range(2):
            b = block_of(shape, dims, (cx, cy, 0))
            cells += b.points
            assert b.padded == tuple(n + 4 for n in b.n)
    assert cells == 10 * 7 * 5
    assert Block.whole(shape).local((0, 0, 0)) == (2, 2, 2)


def test_balanced_dims_are_mpis_own():
    from mpi4py import MPI

    for size in range(1, 1025):
        assert balanced_dims(size) == sorted(MPI.Compute_dims(size, [0, 0, 0]), reverse=True), size
    with pytest.raises(ValueError, match="at least one rank"):
        balanced_dims(0)


def test_choose_dims():
    assert choose_dims(4, (40, 20, 10)) == (2, 2, 1)
    assert choose_dims(3, (10, 40, 20)) == (1, 3, 1)
    assert choose_dims(2, (16, 16, 16)) == (1, 2, 1)  # equal axes: y first (smaller x planes), then x, then z
    assert choose_dims(4, (16, 16, 16)) == (2, 2, 1)
    assert choose_dims(8, (16, 16, 16)) == (2, 2, 2)
    assert choose_dims(2, (16, 12, 16)) == (2, 1, 1)
    assert choose_dims(2, (10, 10, 10), [1, 1, 2]) == (1, 1, 2)
    with pytest.raises(ValueError, match="needs 4 ranks"):
        choose_dims(2, (10, 10, 10), [2, 2, 1])
    with pytest.raises(ValueError, match="only 2 cells"):
        choose_dims(3, (2, 10, 10), [3, 1, 1])
