"""What one rank's half-step costs in terms the calibrated FDM model and its microbenchmark share.

The solver (:class:`sims.fdm.solver.Simulation`) cuts a rank's owned block
into boxes along x and y at the absorbing layer's edges and calls one kernel
per box. A box runs the *C-PML kernel* when it lies in an x or y layer or when
the block reaches a z layer (per x plane: the rows, with the x or y layer's
corrections in the same loops, then the z layers' cells at the ends of every
row, one segment per pair of rows where the block holds both z layers), and the
*bulk kernel* otherwise. The cost of a half-step is modelled as
linear in the quantities that drive these loops::

    T = c_bp P_bulk + c_br R_bulk + c_pp P_pml + c_pr R_pml + c_pxy Q_xy + c_pz Q_z

``P`` are the points a kernel updates, ``R`` its rows (innermost loops along
z: a short row pays the loop start-up per fewer points, the row-length
effect), ``Q_xy`` the points inside an x or y layer counted once per layer
axis, ``Q_z`` the points inside a z layer. :func:`block_features` computes
them for any block of any decomposition, exactly as the solver cuts it (a
test checks them against a real ``Simulation``'s boxes); the microbenchmark
(:mod:`sims.bench.fdm_calib`) times the solver's own half-steps on blocks of
several shapes and layer widths and fits the coefficients.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

#: default calibration blocks (nx, ny, nz): row lengths 24..192, 0.2 to 0.9 M points
BLOCKS = ((96, 96, 96), (192, 96, 48), (384, 96, 24), (48, 48, 96), (24, 48, 192), (96, 96, 48), (128, 128, 32),
          (48, 96, 96))
#: default calibration absorbing-layer widths: bulk, and two widths
WIDTHS = (0, 5, 10)
#: the columns of a half-step's feature vector, in order
FEATURES = ("bulk_points", "bulk_rows", "pml_points", "pml_rows", "pml_layer_xy", "pml_layer_z")


def _cuts(n: int, width: int, lo_free: bool) -> list[tuple[int, int, int | None]]:
    """The solver's cuts of one axis of the global grid: (start, stop, side) with side None in the interior."""
    if not width:
        return [(0, n, None)]
    if lo_free:  # no absorbing layer under the free surface
        return [(0, n - width, None), (n - width, n, 1)]
    return [(0, width, 0), (width, n - width, None), (n - width, n, 1)]


def block_features(shape, start, stop, pml_width: int = 0, free_surface: bool = False) -> dict[str, int]:
    """Feature counts (:data:`FEATURES`) of the owned block ``[start, stop)`` of a global grid ``shape``.

    ``pml_width`` 0 means no absorbing layer; with ``free_surface`` the top (low z) face has none.
    """
    shape = [int(s) for s in shape]
    start = [int(s) for s in start]
    stop = [int(s) for s in stop]
    n = [e - s for s, e in zip(start, stop, strict=True)]
    parts = []
    for a in range(3):
        axis_parts = []
        for s, e, side in _cuts(shape[a], int(pml_width), a == 2 and free_surface):
            lo, hi = max(s, start[a]), min(e, stop[a])
            if lo < hi:
                axis_parts.append((hi - lo, side))
        parts.append(axis_parts)
    z_layer = sum(m for m, side in parts[2] if side is not None)
    out = dict.fromkeys(FEATURES, 0)
    for (mx, sx), (my, sy) in itertools.product(parts[0], parts[1]):
        points, rows = mx * my * n[2], mx * my
        if sx is None and sy is None and not z_layer:
            out["bulk_points"] += points
            out["bulk_rows"] += rows
            continue
        out["pml_points"] += points
        out["pml_rows"] += rows
        out["pml_layer_xy"] += points * ((sx is not None) + (sy is not None))
        out["pml_layer_z"] += rows * z_layer
    return out


def face_elements(n, axis: int, width: int) -> int:
    """Elements of one field in one ghost face of an owned block of ``n`` cells, normal to ``axis``."""
    m = [int(x) for x in n]
    m[axis] = int(width)
    return m[0] * m[1] * m[2]


def check_blocks(blocks: Sequence[Sequence[int]], widths: Sequence[int]) -> None:
    """Raise ValueError naming the problem when the blocks and widths cannot calibrate every coefficient."""
    for b in blocks:
        if len(b) != 3 or min(int(n) for n in b) < 8:
            raise ValueError(f"an FDM calibration block is [nx, ny, nz] with every side >= 8, got {list(b)}")
        for w in widths:
            if 2 * int(w) >= min(int(n) for n in b):
                raise ValueError(f"layer width {w} leaves no interior in calibration block {list(b)}")
    if 0 not in widths or len({int(w) for w in widths if w}) < 2:
        raise ValueError(f"FDM calibration widths need 0 and two positive widths, got {list(widths)}")
    if len({int(b[2]) for b in blocks}) < 2 or len(blocks) < 3:
        raise ValueError("FDM calibration needs at least three blocks with at least two row lengths (nz)")
