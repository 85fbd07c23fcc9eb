"""Numba kernels of the staggered-grid elastic update: bulk, C-PML boxes, halo packing.

The arithmetic is that of :mod:`sims.fdm.kernels_xp` (the reference), operation
for operation, so the two agree to the last bit; only the loop structure differs:

* flat arrays and unsigned indices (no wrap-around checks, no per-row views);
* order 2 one loop per written array, order 4 the three velocities and the three
  shear stresses each in one loop;
* a box inside the x and/or y layer runs its own compiled copy whose row loops
  also update those layers' memory variables (each read and written once);
* the z layers in a pass over a plane's rows after its bulk rows, a rank's two
  z layers as one segment per pair of rows (ghost cells with weight 0);
* every kernel compiled ``noalias`` (no runtime overlap checks), once per space
  order, and once more with a ``prange`` outer loop for ranks of several threads.

The measurements behind each choice are in ``docs/fdm.md`` ("Why the Numba
kernels look as they do"). Why this module is long: the bulk rows, the C-PML
rows and the z-layer loops share inline helpers and must stay operation for
operation the reference's arithmetic: kept together, one reading shows that
they agree.
"""

from __future__ import annotations

import types

import numpy as np

from sims.backends.jit import jit

try:
    from numba import prange, uint64
except ImportError:  # pragma: no cover - numba is a declared dependency
    prange, uint64 = range, np.uint64

_OPTS = {"cache": True, "nogil": True, "boundscheck": False, "error_model": "numpy"}
ONE = np.uint64(1)
#: True in the compiled copies of order 4 (see :func:`_compile`); the loops of the other order are dead code there
_O4 = False
#: True in the compiled copies of the C-PML kernels for a box inside the x (``_XL``) or y (``_YL``) layer
_XL = _YL = False
#: planes of a C-PML box per pass: its bulk rows (with the x and y layers), then its z layers' corrections
CHUNK = 1


# -- staggered differences at a flat index q along the stride s ------------------------------------

@jit(inline="always")
def _fw(F, q, s, c1, c2):
    """Forward order-4 difference ``c1 (F[q+s] - F[q]) + c2 (F[q+2s] - F[q-s])`` (unscaled by 1/h)."""
    return c1 * (F[q + s] - F[q]) + c2 * (F[q + s + s] - F[q - s])


@jit(inline="always")
def _bw(F, q, s, c1, c2):
    """Backward order-4 difference ``c1 (F[q] - F[q-s]) + c2 (F[q+s] - F[q-2s])``."""
    return c1 * (F[q] - F[q - s]) + c2 * (F[q + s] - F[q - s - s])


@jit(inline="always")
def _dfw(F, q, s, c1, c2, o4):
    """The forward difference of the order: :func:`_fw` for order 4, ``F[q+s] - F[q]`` for order 2 (as the reference)."""
    return _fw(F, q, s, c1, c2) if o4 else F[q + s] - F[q]


@jit(inline="always")
def _dbw(F, q, s, c1, c2, o4):
    """The backward difference of the order: :func:`_bw` for order 4, ``F[q] - F[q-s]`` for order 2."""
    return _bw(F, q, s, c1, c2) if o4 else F[q] - F[q - s]


@jit(inline="always")
def _strides(a):
    """Flat plane and row strides of a C-ordered 3D array, unsigned."""
    return uint64(a.shape[1]) * uint64(a.shape[2]), uint64(a.shape[2])


@jit(inline="always")
def _at(i, j, k, P, R):
    """Flat index of ``[i, j, k]`` (all non-negative)."""
    return uint64(i) * P + uint64(j) * R + uint64(k)


# -- one row of the bulk update: n points from flat index q0, profile index w0 --------------------

@jit(inline="always")
def _velocity_row2(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, q0, w0, n, P, R):
    for k in range(n):
        q, w = q0 + k, w0 + k
        X[q] += bc[w] * ((XX[q + P] - XX[q]) + (XY[q] - XY[q - R]) + (XZ[q] - XZ[q - ONE]))
    for k in range(n):
        q, w = q0 + k, w0 + k
        Y[q] += bc[w] * ((XY[q] - XY[q - P]) + (YY[q + R] - YY[q]) + (YZ[q] - YZ[q - ONE]))
    for k in range(n):
        q, w = q0 + k, w0 + k
        Z[q] += bf[w] * ((XZ[q] - XZ[q - P]) + (YZ[q] - YZ[q - R]) + (ZZ[q + ONE] - ZZ[q]))


@jit(inline="always")
def _velocity_row4(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, c1, c2, q0, w0, n, P, R):
    # one loop for the three components (order 2 keeps one loop each: fused, it ran 1.6x slower)
    for k in range(n):
        q, w = q0 + k, w0 + k
        X[q] += bc[w] * (_fw(XX, q, P, c1, c2) + _bw(XY, q, R, c1, c2) + _bw(XZ, q, ONE, c1, c2))
        Y[q] += bc[w] * (_bw(XY, q, P, c1, c2) + _fw(YY, q, R, c1, c2) + _bw(YZ, q, ONE, c1, c2))
        Z[q] += bf[w] * (_bw(XZ, q, P, c1, c2) + _bw(YZ, q, R, c1, c2) + _fw(ZZ, q, ONE, c1, c2))


@jit(inline="always")
def _stress_row2(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, pl, pa, pc, pf, q0, w0, n, P, R):
    for k in range(n):
        q, w = q0 + k, w0 + k
        exx = VX[q] - VX[q - P]
        eyy = VY[q] - VY[q - R]
        ezz = VZ[q] - VZ[q - ONE]
        TXX[q] += pl[w] * exx + pa[w] * (eyy + ezz)
        TYY[q] += pl[w] * eyy + pa[w] * (exx + ezz)
        TZZ[q] += pl[w] * ezz + pa[w] * (exx + eyy)
    for k in range(n):
        q, w = q0 + k, w0 + k
        TXY[q] += pc[w] * ((VX[q + R] - VX[q]) + (VY[q + P] - VY[q]))
    for k in range(n):
        q, w = q0 + k, w0 + k
        TXZ[q] += pf[w] * ((VX[q + ONE] - VX[q]) + (VZ[q + P] - VZ[q]))
    for k in range(n):
        q, w = q0 + k, w0 + k
        TYZ[q] += pf[w] * ((VY[q + ONE] - VY[q]) + (VZ[q + R] - VZ[q]))


@jit(inline="always")
def _stress_row4(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, pl, pa, pc, pf, c1, c2, q0, w0, n, P, R):
    for k in range(n):
        q, w = q0 + k, w0 + k
        exx = _bw(VX, q, P, c1, c2)
        eyy = _bw(VY, q, R, c1, c2)
        ezz = _bw(VZ, q, ONE, c1, c2)
        TXX[q] += pl[w] * exx + pa[w] * (eyy + ezz)
        TYY[q] += pl[w] * eyy + pa[w] * (exx + ezz)
        TZZ[q] += pl[w] * ezz + pa[w] * (exx + eyy)
    for k in range(n):  # the three shear stresses in one loop (all six in one ran 2.6x slower)
        q, w = q0 + k, w0 + k
        TXY[q] += pc[w] * (_fw(VX, q, R, c1, c2) + _fw(VY, q, P, c1, c2))
        TXZ[q] += pf[w] * (_fw(VX, q, ONE, c1, c2) + _fw(VZ, q, P, c1, c2))
        TYZ[q] += pf[w] * (_fw(VY, q, ONE, c1, c2) + _fw(VZ, q, R, c1, c2))


@jit(inline="always")
def _velocity_row(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, c1, c2, o4, q0, w0, n, P, R):
    if not o4:
        _velocity_row2(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, q0, w0, n, P, R)
    else:
        _velocity_row4(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, c1, c2, q0, w0, n, P, R)


@jit(inline="always")
def _stress_row(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, pl, pa, pc, pf, c1, c2, o4, q0, w0, n, P, R):
    if not o4:
        _stress_row2(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, pl, pa, pc, pf, q0, w0, n, P, R)
    else:
        _stress_row4(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, pl, pa, pc, pf, c1, c2, q0, w0, n, P, R)


@jit(inline="always")
def _prof(pr, r):
    """The C-PML profile ``(a_centre, b_centre, a_face, b_face)`` at index ``r`` of its axis."""
    return pr[0, r], pr[1, r], pr[2, r], pr[3, r]


# -- C-PML rows: the bulk update of a row inside an x and/or y layer and its corrections, in the same loops --------

@jit(inline="always")
def _cpml(S, p, b, a, d):
    """The memory variable ``psi = b psi + a d`` at ``p``, stored and returned (Komatitsch & Martin 2007)."""
    s = b * S[p] + a * d
    S[p] = s
    return s


@jit(inline="always")
def _xy(t, wt, k, xl, Sx, px, xb, xa, dx, yl, Sy, py, yb, ya, dy):
    """``t`` plus the corrections ``wt psi`` of the x layer (memory variable ``Sx[px + k]``, profile ``xb``,
    ``xa``, difference ``dx``) and then of the y layer, each when the copy has that layer."""
    if xl:
        t = t + wt * _cpml(Sx, px + k, xb, xa, dx)
    if yl:
        t = t + wt * _cpml(Sy, py + k, yb, ya, dy)
    return t


@jit(inline="always")
def _velocity_row_pml(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, c1, c2, o4, q0, w0, n, P, R,  # noqa: PLR0913
                      xl, Sx, xo, xpr, yl, Sy, yo, ypr):
    """:func:`_velocity_row` of a row inside the x layer (``xl``) and/or the y layer (``yl``): each component's
    loop also updates that axis's memory variable of the difference it has just taken and adds it, weighted as
    the bulk term, after the bulk term (the reference's order of operations: the same bits). Per layer: ``S?``
    its memory variable (flat), ``?o`` the index in it of the row's first cell and its component stride, ``?pr``
    the profile ``(a_centre, b_centre, a_face, b_face)`` at the row's plane (x) or row (y); an absent layer's
    are never read. One loop per component for both orders (order 4's one loop for the three, as in its bulk
    rows, ran slower here)."""
    (px, Cx), (py, Cy) = xo, yo
    for k in range(n):
        q, w = q0 + k, w0 + k
        dx, dy = _dfw(XX, q, P, c1, c2, o4), _dbw(XY, q, R, c1, c2, o4)
        t = X[q] + bc[w] * (dx + dy + _dbw(XZ, q, ONE, c1, c2, o4))
        X[q] = _xy(t, bc[w], k, xl, Sx, px, xpr[3], xpr[2], dx, yl, Sy, py, ypr[1], ypr[0], dy)
    for k in range(n):
        q, w = q0 + k, w0 + k
        dx, dy = _dbw(XY, q, P, c1, c2, o4), _dfw(YY, q, R, c1, c2, o4)
        t = Y[q] + bc[w] * (dx + dy + _dbw(YZ, q, ONE, c1, c2, o4))
        Y[q] = _xy(t, bc[w], k, xl, Sx, px + Cx, xpr[1], xpr[0], dx, yl, Sy, py + Cy, ypr[3], ypr[2], dy)
    for k in range(n):
        q, w = q0 + k, w0 + k
        dx, dy = _dbw(XZ, q, P, c1, c2, o4), _dbw(YZ, q, R, c1, c2, o4)
        t = Z[q] + bf[w] * (dx + dy + _dfw(ZZ, q, ONE, c1, c2, o4))
        Z[q] = _xy(t, bf[w], k, xl, Sx, px + Cx + Cx, xpr[1], xpr[0], dx, yl, Sy, py + Cy + Cy, ypr[1], ypr[0], dy)


@jit(inline="always")
def _stress_row_pml(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, pl, pa, pc, pf, c1, c2, o4, q0, w0, n, P, R,  # noqa: PLR0913
                    xl, Sx, xo, xpr, yl, Sy, yo, ypr):
    """:func:`_stress_row` of a row inside the x and/or y layer (see :func:`_velocity_row_pml`): per axis the
    normal strain's memory variable (for the three normal stresses) and those of the two shear terms."""
    (px, Cx), (py, Cy) = xo, yo
    for k in range(n):
        q, w = q0 + k, w0 + k
        exx, eyy, ezz = _dbw(VX, q, P, c1, c2, o4), _dbw(VY, q, R, c1, c2, o4), _dbw(VZ, q, ONE, c1, c2, o4)
        txx = TXX[q] + (pl[w] * exx + pa[w] * (eyy + ezz))
        tyy = TYY[q] + (pl[w] * eyy + pa[w] * (exx + ezz))
        tzz = TZZ[q] + (pl[w] * ezz + pa[w] * (exx + eyy))
        if xl:
            v = _cpml(Sx, px + k, xpr[1], xpr[0], exx)
            txx, tyy, tzz = txx + pl[w] * v, tyy + pa[w] * v, tzz + pa[w] * v
        if yl:
            v = _cpml(Sy, py + k, ypr[1], ypr[0], eyy)
            txx, tyy, tzz = txx + pa[w] * v, tyy + pl[w] * v, tzz + pa[w] * v
        TXX[q], TYY[q], TZZ[q] = txx, tyy, tzz
    for k in range(n):
        q, w = q0 + k, w0 + k
        dy, dx = _dfw(VX, q, R, c1, c2, o4), _dfw(VY, q, P, c1, c2, o4)
        TXY[q] = _xy(TXY[q] + pc[w] * (dy + dx), pc[w], k, xl, Sx, px + Cx, xpr[3], xpr[2], dx,
                     yl, Sy, py + Cy, ypr[3], ypr[2], dy)
    for k in range(n):  # no y layer term: TXZ has no y derivative
        q, w = q0 + k, w0 + k
        dx = _dfw(VZ, q, P, c1, c2, o4)
        TXZ[q] = _xy(TXZ[q] + pf[w] * (_dfw(VX, q, ONE, c1, c2, o4) + dx), pf[w], k, xl, Sx, px + Cx + Cx,
                     xpr[3], xpr[2], dx, False, Sy, py, ypr[3], ypr[2], dx)
    for k in range(n):  # no x layer term
        q, w = q0 + k, w0 + k
        dy = _dfw(VZ, q, R, c1, c2, o4)
        TYZ[q] = _xy(TYZ[q] + pf[w] * (_dfw(VY, q, ONE, c1, c2, o4) + dy), pf[w], k, False, Sx, px, xpr[3],
                     xpr[2], dy, yl, Sy, py + Cy + Cy, ypr[3], ypr[2], dy)


@jit(inline="always")
def _psiz(T, W, S, F, q0, p0, w0, n, A, B, c1, c2, forward):
    """Along a z layer (profiles ``A``, ``B`` vary along the row): ``S = B S + A D(F)``, ``T += W S``."""
    for k in range(n):
        q, p, w = q0 + k, p0 + k, w0 + k
        d = _fw(F, q, ONE, c1, c2) if forward else _bw(F, q, ONE, c1, c2)
        S[p] = B[w] * S[p] + A[w] * d
        T[q] += W[w] * S[p]


@jit(inline="always")
def _dims(psi):
    """Component stride and the last two extents of a memory variable ``(3, L0, L1, L2)``, unsigned."""
    L0, L1, L2 = uint64(psi.shape[1]), uint64(psi.shape[2]), uint64(psi.shape[3])
    return L0 * L1 * L2, L1, L2


@jit(inline="always")
def _layer_arrays(psx, psy, pszl, pszh, prz):
    """The four memory variables of a C-PML kernel, flat (once per call: a reshape per row costs more than the
    row), and the z profile's rows ``a_centre, b_centre, a_face, b_face``."""
    return psx.reshape(-1), psy.reshape(-1), pszl.reshape(-1), pszh.reshape(-1), prz[0], prz[1], prz[2], prz[3]


@jit(inline="always")
def _layer_dims(psx, psy, pszl, pszh):
    """:func:`_dims` of the four memory variables, in one tuple."""
    return (*_dims(psx), *_dims(psy), *_dims(pszl), *_dims(pszh))


@jit(inline="always")
def _base(L1, L2, origin, i, j, k):
    """Flat index of the memory variable's ``[0, i, j, k]`` (array indices; ``origin`` is the array index of ``[0, 0, 0, 0]``)."""
    return (uint64(i - origin[0]) * L1 + uint64(j - origin[1])) * L2 + uint64(k - origin[2])


@jit(inline="always")
def _velocity_zcells(X, Y, Z, XZ, YZ, ZZ, b_c, b_f, c1, c2, S, C, ac, bc_, af, bf_, q0, p0, w0, n):
    """Velocity C-PML correction of ``n`` cells along z from flat index ``q0`` (memory variable ``p0``, profiles
    and weights ``w0``): one loop per memory variable and the target it feeds."""
    _psiz(X, b_c, S, XZ, q0, p0, w0, n, ac, bc_, c1, c2, False)
    _psiz(Y, b_c, S, YZ, q0, p0 + C, w0, n, ac, bc_, c1, c2, False)
    _psiz(Z, b_f, S, ZZ, q0, p0 + C + C, w0, n, af, bf_, c1, c2, True)


@jit(inline="always")
def _stress_zcells(VX, VY, VZ, TXX, TYY, TZZ, TXZ, TYZ, l2m, lam, mu_f, c1, c2, S, C, ac, bc_, af, bf_,  # noqa: PLR0913
                   q0, p0, w0, n):
    """Stress C-PML correction of ``n`` cells along z from flat index ``q0`` (see :func:`_velocity_zcells`)."""
    for k in range(n):  # the normal strain's memory variable and the three normal stresses it corrects
        q, p, w = q0 + k, p0 + k, w0 + k
        s = bc_[w] * S[p] + ac[w] * _bw(VZ, q, ONE, c1, c2)
        S[p] = s
        TXX[q] += lam[w] * s
        TYY[q] += lam[w] * s
        TZZ[q] += l2m[w] * s
    _psiz(TXZ, mu_f, S, VX, q0, p0 + C, w0, n, af, bf_, c1, c2, True)
    _psiz(TYZ, mu_f, S, VY, q0, p0 + C + C, w0, n, af, bf_, c1, c2, True)


@jit(inline="always")
def _zpair(R, origin, L1, L2, i, j, lo1, hi1, zl0, zl1, zh0, zh1):
    """Where the merged z segment ``j`` lies, and which of its cells a box with rows ``lo1..hi1`` updates.

    Segment ``j`` runs from cell ``zh0`` of row ``j - 1`` to cell ``zl1`` of row ``j`` (the high layer of one row,
    the ghost cells between the rows, the low layer of the next: contiguous in memory). A box's first segment
    holds only its first row's low layer, its last (``j = hi1``) only its last row's high layer. Returns the
    memory variable's flat index of the segment's first cell, and the first and the end cell updated.
    """
    p0 = _base(L1, L2, origin, i, j, 0)
    k0 = R - uint64(zh0) + uint64(zl0) if j == lo1 else uint64(0)
    k1 = uint64(zh1 - zh0) if j == hi1 else R - uint64(zh0) + uint64(zl1)
    return p0, k0, k1


# -- the kernels: a box [lo, hi) of array indices -------------------------------------------------

def _velocity_box(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, b_c, b_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2):  # noqa: PLR0913
    """v += dt/(h rho) div(sigma) over the box ``[lo, hi)`` (array indices), no absorbing layer."""
    o4 = _O4
    P, R = _strides(vx)
    X, Y, Z = vx.reshape(-1), vy.reshape(-1), vz.reshape(-1)
    XX, YY, ZZ, XY, XZ, YZ = sxx.reshape(-1), syy.reshape(-1), szz.reshape(-1), sxy.reshape(-1), sxz.reshape(-1), syz.reshape(-1)
    n = uint64(hi2 - lo2)
    for i in prange(lo0, hi0):
        for j in range(lo1, hi1):
            _velocity_row(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, b_c, b_f, c1, c2, o4, _at(i, j, lo2, P, R), uint64(lo2), n, P, R)


def _stress_box(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, l2m, lam, mu_c, mu_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2):  # noqa: PLR0913
    """sigma += dt/h C : grad(v) over the box ``[lo, hi)``, no absorbing layer."""
    o4 = _O4
    P, R = _strides(vx)
    VX, VY, VZ = vx.reshape(-1), vy.reshape(-1), vz.reshape(-1)
    TXX, TYY, TZZ, TXY, TXZ, TYZ = sxx.reshape(-1), syy.reshape(-1), szz.reshape(-1), sxy.reshape(-1), sxz.reshape(-1), syz.reshape(-1)
    n = uint64(hi2 - lo2)
    for i in prange(lo0, hi0):
        for j in range(lo1, hi1):
            _stress_row(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, l2m, lam, mu_c, mu_f, c1, c2, o4,
                        _at(i, j, lo2, P, R), uint64(lo2), n, P, R)


def _velocity_pml(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, b_c, b_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2,  # noqa: PLR0913
                  psx, ox, prx, psy, oy, pry, zlo, pszl, ozl, zl0, zl1, zhi, pszh, ozh, zh0, zh1, prz,
                  zm, psm, om, prm, wm):
    """Velocity update of a box inside the C-PML: the x and/or y layer as the compiled copy says (``_XL``,
    ``_YL``; see :func:`kernel`), the z layers as flagged (``zlo``, ``zhi``, or ``zm``).

    Per x plane: the rows, each with the memory variables ``psi = b psi + a D``
    of its x and y layers' derivatives and ``v += dt/(h rho) psi`` in the same
    loops (Komatitsch & Martin 2007, with kappa = 1), then the z layers over
    each row's cells inside them. ``ps?`` are the axis's memory variables
    ``(3, L0, L1, L2)`` whose element ``[c, 0, 0, 0]`` is at array index ``o?``;
    ``pr?`` its profiles ``(a_centre, b_centre, a_face, b_face)`` along the
    axis. For an absent layer the solver passes one-element stand-ins: a copy
    without that layer loads at most their first profile entry and uses none.

    With ``zm`` the rank's two z layers share one memory variable ``psm`` ``(3, L0, L1 + 1, m)`` whose slot
    ``[c, i, j, :]`` is the merged segment ``j + om[1]`` of plane ``i + om[0]`` (see :func:`_zpair`), ``prm``
    the z profiles and ``wm`` the weights (``b_c, b_f``) along a segment, ghost cells included (``a = 0``,
    ``b = 1``, weight 0: they receive ``+ 0``); ``pszl``, ``pszh`` are then unused.
    """
    o4, xl, yl = _O4, _XL, _YL
    P, R = _strides(vx)
    X, Y, Z = vx.reshape(-1), vy.reshape(-1), vz.reshape(-1)
    XX, YY, ZZ, XY, XZ, YZ = sxx.reshape(-1), syy.reshape(-1), szz.reshape(-1), sxy.reshape(-1), sxz.reshape(-1), syz.reshape(-1)
    n, w0 = uint64(hi2 - lo2), uint64(lo2)
    Sx, Sy, Szl, Szh, zac, zbc, zaf, zbf = _layer_arrays(psx, psy, pszl, pszh, prz)
    Cx, L1x, L2x, Cy, L1y, L2y, Czl, L1zl, L2zl, Czh, L1zh, L2zh = _layer_dims(psx, psy, pszl, pszh)
    Sm = psm.reshape(-1)
    Cm, L1m, L2m = _dims(psm)
    for c in prange((hi0 - lo0 + CHUNK - 1) // CHUNK):
        i0 = lo0 + c * CHUNK
        i1 = min(i0 + CHUNK, hi0)
        for i in range(i0, i1):
            xr = i if xl else 0  # an absent layer's profile has one entry
            xpr = _prof(prx, xr)
            for j in range(lo1, hi1):
                q0 = _at(i, j, lo2, P, R)
                yr = j if yl else 0
                ypr = _prof(pry, yr)
                if xl or yl:
                    _velocity_row_pml(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, b_c, b_f, c1, c2, o4, q0, w0, n, P, R,
                                      xl, Sx, (_base(L1x, L2x, ox, i, j, lo2), Cx), xpr,
                                      yl, Sy, (_base(L1y, L2y, oy, i, j, lo2), Cy), ypr)
                else:
                    _velocity_row(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, b_c, b_f, c1, c2, o4, q0, w0, n, P, R)
        if zm:  # both z layers in one memory variable: a loop per pair of rows' segments (see _zpair)
            for i in range(i0, i1):
                for j in range(lo1, hi1 + 1):
                    p0, k0, k1 = _zpair(R, om, L1m, L2m, i, j, lo1, hi1, zl0, zl1, zh0, zh1)
                    _velocity_zcells(X, Y, Z, XZ, YZ, ZZ, wm[0], wm[1], c1, c2, Sm, Cm, prm[0], prm[1], prm[2], prm[3],
                                     _at(i, j - 1, zh0, P, R) + k0, p0 + k0, k0, k1 - k0)
        elif zlo or zhi:
            for i in range(i0, i1):
                for j in range(lo1, hi1):
                    if zlo:
                        _velocity_zcells(X, Y, Z, XZ, YZ, ZZ, b_c, b_f, c1, c2, Szl, Czl, zac, zbc, zaf, zbf,
                                         _at(i, j, zl0, P, R), _base(L1zl, L2zl, ozl, i, j, zl0), uint64(zl0),
                                         uint64(zl1 - zl0))
                    if zhi:
                        _velocity_zcells(X, Y, Z, XZ, YZ, ZZ, b_c, b_f, c1, c2, Szh, Czh, zac, zbc, zaf, zbf,
                                         _at(i, j, zh0, P, R), _base(L1zh, L2zh, ozh, i, j, zh0), uint64(zh0),
                                         uint64(zh1 - zh0))


def _stress_pml(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, l2m, lam, mu_c, mu_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2,  # noqa: PLR0913
                psx, ox, prx, psy, oy, pry, zlo, pszl, ozl, zl0, zl1, zhi, pszh, ozh, zh0, zh1, prz,
                zm, psm, om, prm, wm):
    """Stress update of a box inside the C-PML (see :func:`velocity_pml` for the arguments).

    Per axis the memory variables are those of the normal strain (shared by
    the three normal stresses) and of the two shear-strain derivatives. With ``zm``, ``wm`` holds the weights
    ``l2m, lam, mu_f`` along a merged z segment.
    """
    o4, xl, yl = _O4, _XL, _YL
    P, R = _strides(vx)
    VX, VY, VZ = vx.reshape(-1), vy.reshape(-1), vz.reshape(-1)
    TXX, TYY, TZZ, TXY, TXZ, TYZ = sxx.reshape(-1), syy.reshape(-1), szz.reshape(-1), sxy.reshape(-1), sxz.reshape(-1), syz.reshape(-1)
    n, w0 = uint64(hi2 - lo2), uint64(lo2)
    Sx, Sy, Szl, Szh, zac, zbc, zaf, zbf = _layer_arrays(psx, psy, pszl, pszh, prz)
    Cx, L1x, L2x, Cy, L1y, L2y, Czl, L1zl, L2zl, Czh, L1zh, L2zh = _layer_dims(psx, psy, pszl, pszh)
    Sm = psm.reshape(-1)
    Cm, L1m, L2m = _dims(psm)
    for c in prange((hi0 - lo0 + CHUNK - 1) // CHUNK):
        i0 = lo0 + c * CHUNK
        i1 = min(i0 + CHUNK, hi0)
        for i in range(i0, i1):
            xr = i if xl else 0  # an absent layer's profile has one entry
            xpr = _prof(prx, xr)
            for j in range(lo1, hi1):
                q0 = _at(i, j, lo2, P, R)
                yr = j if yl else 0
                ypr = _prof(pry, yr)
                if xl or yl:
                    _stress_row_pml(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, l2m, lam, mu_c, mu_f, c1, c2, o4,
                                    q0, w0, n, P, R, xl, Sx, (_base(L1x, L2x, ox, i, j, lo2), Cx), xpr,
                                    yl, Sy, (_base(L1y, L2y, oy, i, j, lo2), Cy), ypr)
                else:
                    _stress_row(VX, VY, VZ, TXX, TYY, TZZ, TXY, TXZ, TYZ, l2m, lam, mu_c, mu_f, c1, c2, o4,
                                q0, w0, n, P, R)
        if zm:  # both z layers in one memory variable (see _velocity_pml)
            for i in range(i0, i1):
                for j in range(lo1, hi1 + 1):
                    p0, k0, k1 = _zpair(R, om, L1m, L2m, i, j, lo1, hi1, zl0, zl1, zh0, zh1)
                    _stress_zcells(VX, VY, VZ, TXX, TYY, TZZ, TXZ, TYZ, wm[0], wm[1], wm[2], c1, c2, Sm, Cm,
                                   prm[0], prm[1], prm[2], prm[3], _at(i, j - 1, zh0, P, R) + k0, p0 + k0, k0, k1 - k0)
        elif zlo or zhi:
            for i in range(i0, i1):
                for j in range(lo1, hi1):
                    if zlo:
                        _stress_zcells(VX, VY, VZ, TXX, TYY, TZZ, TXZ, TYZ, l2m, lam, mu_f, c1, c2, Szl, Czl,
                                       zac, zbc, zaf, zbf, _at(i, j, zl0, P, R), _base(L1zl, L2zl, ozl, i, j, zl0),
                                       uint64(zl0), uint64(zl1 - zl0))
                    if zhi:
                        _stress_zcells(VX, VY, VZ, TXX, TYY, TZZ, TXZ, TYZ, l2m, lam, mu_f, c1, c2, Szh, Czh,
                                       zac, zbc, zaf, zbf, _at(i, j, zh0, P, R), _base(L1zh, L2zh, ozh, i, j, zh0),
                                       uint64(zh0), uint64(zh1 - zh0))


def _compile(fn, order: int, parallel: bool, x: bool = False, y: bool = False):
    """``fn`` compiled for one space order, serial or with its ``prange`` parallel, and (the C-PML kernels) for a
    box inside the x and/or y layer or neither, under its own name (so each copy has its own cache entry). The
    order and the layers are the copy's globals ``_O4``, ``_XL``, ``_YL``, constants to Numba, so that each copy
    holds only its own loops. The copy's globals are a snapshot of the module's when it is made: the module's
    constants (``CHUNK``) are read then, not when it runs."""
    layers = ("x" if x else "") + ("y" if y else "")
    name = f"{fn.__name__.lstrip('_')}{'_' + layers if layers else ''}_o{order}" + ("_par" if parallel else "")
    scope = dict(fn.__globals__, _O4=order == 4, _XL=x, _YL=y)
    copy = types.FunctionType(fn.__code__, scope, name, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__doc__ = name, fn.__doc__
    return jit(parallel=parallel, noalias=True, **_OPTS)(copy)


#: the compiled kernels by ``(phase, kind, order, parallel, x, y)``: phase ``velocity`` or ``stress``; kind ``box``
#: (no absorbing layer) or ``pml``, and for ``pml`` whether the box lies in the x and the y layer; compiled on
#: first call
KERNELS = {(phase, kind, order, parallel, x, y): _compile(fn, order, parallel, x, y)
           for (phase, kind), fn in {("velocity", "box"): _velocity_box, ("stress", "box"): _stress_box,
                                     ("velocity", "pml"): _velocity_pml, ("stress", "pml"): _stress_pml}.items()
           for order in (2, 4) for parallel in (False, True)
           for x in ((False, True) if kind == "pml" else (False,)) for y in ((False, True) if kind == "pml" else (False,))}


def kernel(phase: str, kind: str, order: int, threads: int = 1, x: bool = False, y: bool = False):
    """The kernel of a half-step (``velocity`` or ``stress``) over a box of ``kind`` (``box`` or ``pml``), for a
    space order of 2 or 4, its parallel copy when the rank has several ``threads``; a ``pml`` box inside the x
    and/or y layer (``x``, ``y``) gets the copy that updates their memory variables. Call it with that order's
    coefficients ``c1, c2`` (``1, 0`` for order 2; the solver derives both from the spec's order): the copy
    decides which differences it computes, the coefficients only weigh them."""
    if kind == "box" and (x or y):
        raise ValueError("a box without an absorbing layer has no x or y layer")
    return KERNELS[(phase, kind, order, threads > 1, bool(x), bool(y))]


@jit(**_OPTS)
def pack(field, buf, lo0, hi0, lo1, hi1, lo2, hi2):
    """Copy the box ``[lo, hi)`` of the C-contiguous ``field`` into the contiguous ``buf`` (C order), a row at a
    time over flat unsigned indices (3D indexing kept the copy scalar: 7 GB/s in cache against 90)."""
    F = field.reshape(-1)
    P, R = _strides(field)
    n, m = uint64(hi2 - lo2), uint64(0)
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            q = _at(i, j, lo2, P, R)
            for k in range(n):
                buf[m + k] = F[q + k]
            m += n


@jit(**_OPTS)
def unpack(field, buf, lo0, hi0, lo1, hi1, lo2, hi2):
    """Copy ``buf`` (C order) into the box ``[lo, hi)`` of the C-contiguous ``field`` (see :func:`pack`)."""
    F = field.reshape(-1)
    P, R = _strides(field)
    n, m = uint64(hi2 - lo2), uint64(0)
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            q = _at(i, j, lo2, P, R)
            for k in range(n):
                F[q + k] = buf[m + k]
            m += n
