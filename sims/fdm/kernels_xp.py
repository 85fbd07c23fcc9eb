"""Reference kernels of the staggered-grid elastic update, written against an array module ``xp``.

NumPy runs them as the reference backend and CuPy as the GPU backend; the
Numba kernels (:mod:`sims.fdm.kernels_numba`) compute the same expressions in
the same order.

Layout (Virieux 1986; Graves 1996): cell ``(i, j, k)`` has its centre, where
the normal stresses live, at ``((i, j, k) + 1/2) h``; ``vx`` is on its +x face,
``(i + 1, j + 1/2, k + 1/2) h``, likewise ``vy``, ``vz``; ``sxy`` on the edge at
``(i + 1, j + 1, k + 1/2) h``, likewise ``sxz``, ``syz``. The differences below
are the staggered ones of order 2, ``f[p + 1] - f[p]``, or order 4,
``c1 (f[p + 1] - f[p]) + c2 (f[p + 2] - f[p - 1])`` with ``c1 = 9/8``,
``c2 = -1/24`` (Levander 1988), forward (evaluated half a cell ahead) or
backward (half a cell behind). The ``1/h`` and ``dt`` factors are folded into
the medium profiles.

Updates, with ``D`` these differences (Graves 1996)::

    vx += dt/(h rho) (Dfwd_x sxx + Dbwd_y sxy + Dbwd_z sxz)
    vy += dt/(h rho) (Dbwd_x sxy + Dfwd_y syy + Dbwd_z syz)
    vz += dt/(h rho) (Dbwd_x sxz + Dbwd_y syz + Dfwd_z szz)
    sxx += dt/h ((lam + 2 mu) Dbwd_x vx + lam (Dbwd_y vy + Dbwd_z vz))   (and syy, szz)
    sxy += dt/h mu (Dfwd_y vx + Dfwd_x vy)                              (and sxz, syz)

Inside the C-PML each difference ``D`` along an absorbing axis gains a memory
variable: ``psi = b psi + a D`` and ``D -> D + psi`` (Komatitsch & Martin 2007,
with kappa = 1); the correction is added after the bulk update.
"""

from __future__ import annotations

#: which component's derivative along each axis sits on a face (profile ``face``) rather than a centre
VELOCITY_TERMS = (
    # (target, source field, axis, forward, profile-staggering) per axis; target index into (vx, vy, vz)
    ((0, "sxx", 0, True, "face"), (1, "sxy", 0, False, "centre"), (2, "sxz", 0, False, "centre")),
    ((0, "sxy", 1, False, "centre"), (1, "syy", 1, True, "face"), (2, "syz", 1, False, "centre")),
    ((0, "sxz", 2, False, "centre"), (1, "syz", 2, False, "centre"), (2, "szz", 2, True, "face")),
)


def _box(lo, hi, shift=(0, 0, 0)):
    return tuple(slice(lo[a] + shift[a], hi[a] + shift[a]) for a in range(3))


def _e(axis: int, d: int) -> tuple[int, int, int]:
    s = [0, 0, 0]
    s[axis] = d
    return tuple(s)  # type: ignore[return-value]


def diff(f, axis: int, forward: bool, lo, hi, c1: float, c2: float):
    """Staggered difference of ``f`` along ``axis`` over the box ``[lo, hi)`` (array indices)."""
    a = 1 if forward else 0
    d = f[_box(lo, hi, _e(axis, a))] - f[_box(lo, hi, _e(axis, a - 1))]
    if c2 == 0.0:
        return d
    return c1 * d + c2 * (f[_box(lo, hi, _e(axis, a + 1))] - f[_box(lo, hi, _e(axis, a - 2))])


def _zrow(profile, lo, hi):
    return profile[lo[2]:hi[2]][None, None, :]


def velocity(F: dict, P: dict, lo, hi, c1: float, c2: float) -> None:
    """Bulk velocity update of the box ``[lo, hi)`` (no absorbing layer)."""
    o = _box(lo, hi)
    bc, bf = _zrow(P["b_c"], lo, hi), _zrow(P["b_f"], lo, hi)
    F["vx"][o] += bc * (diff(F["sxx"], 0, True, lo, hi, c1, c2) + diff(F["sxy"], 1, False, lo, hi, c1, c2)
                        + diff(F["sxz"], 2, False, lo, hi, c1, c2))
    F["vy"][o] += bc * (diff(F["sxy"], 0, False, lo, hi, c1, c2) + diff(F["syy"], 1, True, lo, hi, c1, c2)
                        + diff(F["syz"], 2, False, lo, hi, c1, c2))
    F["vz"][o] += bf * (diff(F["sxz"], 0, False, lo, hi, c1, c2) + diff(F["syz"], 1, False, lo, hi, c1, c2)
                        + diff(F["szz"], 2, True, lo, hi, c1, c2))


def stress(F: dict, P: dict, lo, hi, c1: float, c2: float) -> None:
    """Bulk stress update of the box ``[lo, hi)``."""
    o = _box(lo, hi)
    l2m, lam = _zrow(P["l2m"], lo, hi), _zrow(P["lam"], lo, hi)
    mu_c, mu_f = _zrow(P["mu_c"], lo, hi), _zrow(P["mu_f"], lo, hi)
    exx = diff(F["vx"], 0, False, lo, hi, c1, c2)
    eyy = diff(F["vy"], 1, False, lo, hi, c1, c2)
    ezz = diff(F["vz"], 2, False, lo, hi, c1, c2)
    F["sxx"][o] += l2m * exx + lam * (eyy + ezz)
    F["syy"][o] += l2m * eyy + lam * (exx + ezz)
    F["szz"][o] += l2m * ezz + lam * (exx + eyy)
    F["sxy"][o] += mu_c * (diff(F["vx"], 1, True, lo, hi, c1, c2) + diff(F["vy"], 0, True, lo, hi, c1, c2))
    F["sxz"][o] += mu_f * (diff(F["vx"], 2, True, lo, hi, c1, c2) + diff(F["vz"], 0, True, lo, hi, c1, c2))
    F["syz"][o] += mu_f * (diff(F["vy"], 2, True, lo, hi, c1, c2) + diff(F["vz"], 1, True, lo, hi, c1, c2))


def _profile(prof, axis: int, row: int, lo, hi):
    """Row ``row`` of an axis profile over the box, shaped to broadcast along ``axis``."""
    p = prof[row, lo[axis]:hi[axis]]
    return p[:, None, None] if axis == 0 else (p[None, :, None] if axis == 1 else p[None, None, :])


def _psi_view(psi, c: int, origin, lo, hi):
    return psi[(c, *(slice(lo[a] - origin[a], hi[a] - origin[a]) for a in range(3)))]


def velocity_pml(F: dict, P: dict, lo, hi, c1: float, c2: float, slabs) -> None:
    """C-PML correction of the velocities over the box ``[lo, hi)`` for each ``(axis, psi, origin, profile)`` in ``slabs``."""
    o = _box(lo, hi)
    weights = (_zrow(P["b_c"], lo, hi), _zrow(P["b_c"], lo, hi), _zrow(P["b_f"], lo, hi))
    targets = ("vx", "vy", "vz")
    for axis, psi, origin, prof in slabs:
        for c, (tgt, src, ax, fwd, stag) in enumerate(VELOCITY_TERMS[axis]):
            row = 0 if stag == "centre" else 2
            p = _psi_view(psi, c, origin, lo, hi)
            p[...] = _profile(prof, ax, row + 1, lo, hi) * p + _profile(prof, ax, row, lo, hi) * diff(F[src], ax, fwd, lo, hi, c1, c2)
            F[targets[tgt]][o] += weights[tgt] * p


def stress_pml(F: dict, P: dict, lo, hi, c1: float, c2: float, slabs) -> None:
    """C-PML correction of the stresses over the box ``[lo, hi)`` (see :func:`velocity_pml`)."""
    o = _box(lo, hi)
    l2m, lam = _zrow(P["l2m"], lo, hi), _zrow(P["lam"], lo, hi)
    mu_c, mu_f = _zrow(P["mu_c"], lo, hi), _zrow(P["mu_f"], lo, hi)
    normal = ("sxx", "syy", "szz")
    vel = ("vx", "vy", "vz")
    # shear terms per axis: (target, velocity differentiated, rigidity)
    shear = ((("sxy", "vy", mu_c), ("sxz", "vz", mu_f)),
             (("sxy", "vx", mu_c), ("syz", "vz", mu_f)),
             (("sxz", "vx", mu_f), ("syz", "vy", mu_f)))
    for axis, psi, origin, prof in slabs:
        a_c, b_c = _profile(prof, axis, 0, lo, hi), _profile(prof, axis, 1, lo, hi)
        a_f, b_f = _profile(prof, axis, 2, lo, hi), _profile(prof, axis, 3, lo, hi)
        p = _psi_view(psi, 0, origin, lo, hi)
        p[...] = b_c * p + a_c * diff(F[vel[axis]], axis, False, lo, hi, c1, c2)
        for n, name in enumerate(normal):
            F[name][o] += (l2m if n == axis else lam) * p
        for c, (tgt, src, mu) in enumerate(shear[axis], start=1):
            p = _psi_view(psi, c, origin, lo, hi)
            p[...] = b_f * p + a_f * diff(F[src], axis, True, lo, hi, c1, c2)
            F[tgt][o] += mu * p
