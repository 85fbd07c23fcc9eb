"""Static operation and memory-traffic counts of one elastic time step, per grid point.

Counted from the update expressions of :mod:`sims.fdm.kernels_xp` the way the
papers count (every add, subtract and multiply is one flop; bytes are the
compulsory traffic of float32 fields with perfect reuse of neighbours within a
sweep). The medium enters as per-depth profiles, which stay in cache, so only
the nine wavefields move: the velocity sweep reads all nine and writes three,
the stress sweep reads all nine and writes six.
"""

from __future__ import annotations

#: flops per point of the velocity and stress sweeps, by space order
FLOPS_VELOCITY = {2: 21, 4: 57}
FLOPS_STRESS = {2: 33, 4: 69}
#: bytes per point of the bulk step: velocity 9 reads + 3 writes, stress 9 reads + 6 writes, 4 B each
BYTES_BULK = 4 * (9 + 3 + 9 + 6)
#: extra bytes per point and per absorbing axis the point lies in: 3 + 3 memory variables read and written
BYTES_PML_AXIS = 4 * 2 * (3 + 3)
#: extra flops per point and per absorbing axis: per memory variable 1 difference, 2 mul + 1 add, then 1 mul + 1 add per target
FLOPS_PML_AXIS = {2: 3 * (1 + 3 + 2) + 3 * (1 + 3) + 3 * 2 + 2 * 2, 4: 3 * (5 + 3 + 2) + 3 * (5 + 3) + 3 * 2 + 2 * 2}


def flops_per_point(order: int) -> int:
    """Flops of one bulk step (velocity + stress) at one point."""
    return FLOPS_VELOCITY[order] + FLOPS_STRESS[order]


def step_counts(shape, order: int, pml_width: int, free_surface: bool = False) -> dict[str, int]:
    """Flops and compulsory bytes of one step over the whole grid, and the point-axis count inside the C-PML.

    With a free surface the top (low z) face has no absorbing layer.
    """
    nx, ny, nz = (int(s) for s in shape)
    points = nx * ny * nz
    pml_axis_points = 0
    if pml_width:
        # points inside the layer of each axis, summed over the axes (corners count once per axis)
        for a, (n, m) in enumerate(((nx, ny * nz), (ny, nx * nz), (nz, nx * ny))):
            sides = 1 if (a == 2 and free_surface) else 2
            pml_axis_points += min(sides * pml_width, n) * m
    return {
        "points": points,
        "pml_axis_points": pml_axis_points,
        "flops": points * flops_per_point(order) + pml_axis_points * FLOPS_PML_AXIS[order],
        "bytes": points * BYTES_BULK + pml_axis_points * BYTES_PML_AXIS,
    }

