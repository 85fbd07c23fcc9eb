"""Numba kernels of the staggered-grid elastic update: bulk, C-PML boxes, halo packing.

The arithmetic is that of :mod:`sims.fdm.kernels_xp` (the reference); only the
loop structure differs. Each ``(i, j)`` row is processed through one-dimensional
views that start two cells before the box, so that every index in the inner
``k`` loop is the loop variable plus a non-negative constant: Numba then emits
no negative-index wrap-around and LLVM vectorises the loop (with wrap-around
checks it stays scalar and runs about 4x slower). The components of a row are
updated in as few loops as LLVM still vectorises (one for the velocities; one,
or for order 4 four, for the stresses) while the row stays in cache, so every
wavefield row is read from memory once. Too many arrays written in one loop
need too many runtime aliasing checks and LLVM leaves the loop scalar.

Order 2 runs through the same kernels with ``c2 = 0``; the second-neighbour
rows it then reads are the ones order 4 reads, already in cache.
"""

from __future__ import annotations

from sims.backends.jit import jit

_OPTS = {"cache": True, "nogil": True, "boundscheck": False, "error_model": "numpy"}


@jit(inline="always")
def _d(a1, a0, b1, b0, c1, c2):
    """Staggered difference ``c1 (a1 - a0) + c2 (b1 - b0)`` (unscaled by 1/h)."""
    return c1 * (a1 - a0) + c2 * (b1 - b0)


@jit(**_OPTS)
def velocity_box(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, b_c, b_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2):  # noqa: PLR0913
    """v += dt/(h rho) div(sigma) over the box ``[lo, hi)`` (array indices), no absorbing layer."""
    n = hi2 - lo2
    z = lo2 - 2
    bc = b_c[z:]
    bf = b_f[z:]
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            ux, uy, uz = vx[i, j, z:], vy[i, j, z:], vz[i, j, z:]
            xx1, xx0, xx2, xxm = sxx[i + 1, j, z:], sxx[i, j, z:], sxx[i + 2, j, z:], sxx[i - 1, j, z:]
            xy0, xyjm, xyjp, xyjm2 = sxy[i, j, z:], sxy[i, j - 1, z:], sxy[i, j + 1, z:], sxy[i, j - 2, z:]
            xyim, xyip, xyim2 = sxy[i - 1, j, z:], sxy[i + 1, j, z:], sxy[i - 2, j, z:]
            yy1, yy0, yy2, yym = syy[i, j + 1, z:], syy[i, j, z:], syy[i, j + 2, z:], syy[i, j - 1, z:]
            xz0, xzim, xzip, xzim2 = sxz[i, j, z:], sxz[i - 1, j, z:], sxz[i + 1, j, z:], sxz[i - 2, j, z:]
            yz0, yzjm, yzjp, yzjm2 = syz[i, j, z:], syz[i, j - 1, z:], syz[i, j + 1, z:], syz[i, j - 2, z:]
            zz = szz[i, j, z:]
            for k in range(n):
                q = k + 2
                ux[q] += bc[q] * (_d(xx1[q], xx0[q], xx2[q], xxm[q], c1, c2)
                                  + _d(xy0[q], xyjm[q], xyjp[q], xyjm2[q], c1, c2)
                                  + _d(xz0[q], xz0[q - 1], xz0[q + 1], xz0[q - 2], c1, c2))
                uy[q] += bc[q] * (_d(xy0[q], xyim[q], xyip[q], xyim2[q], c1, c2)
                                  + _d(yy1[q], yy0[q], yy2[q], yym[q], c1, c2)
                                  + _d(yz0[q], yz0[q - 1], yz0[q + 1], yz0[q - 2], c1, c2))
                uz[q] += bf[q] * (_d(xz0[q], xzim[q], xzip[q], xzim2[q], c1, c2)
                                  + _d(yz0[q], yzjm[q], yzjp[q], yzjm2[q], c1, c2)
                                  + _d(zz[q + 1], zz[q], zz[q + 2], zz[q - 1], c1, c2))


@jit(**_OPTS)
def stress_box(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, l2m, lam, mu_c, mu_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2):  # noqa: PLR0913
    """sigma += dt/h C : grad(v) over the box ``[lo, hi)``, no absorbing layer.

    One loop per row for the normal stresses and one per shear stress: with all
    six in one loop LLVM does not vectorise it (too many aliasing checks), and
    the rows are still read from memory once.
    """
    n = hi2 - lo2
    z = lo2 - 2
    pl, pa, pc, pf = l2m[z:], lam[z:], mu_c[z:], mu_f[z:]
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            txx, tyy, tzz, txy, txz, tyz = sxx[i, j, z:], syy[i, j, z:], szz[i, j, z:], sxy[i, j, z:], sxz[i, j, z:], syz[i, j, z:]
            x0, xim, xip, xim2 = vx[i, j, z:], vx[i - 1, j, z:], vx[i + 1, j, z:], vx[i - 2, j, z:]
            xjp, xjp2, xjm = vx[i, j + 1, z:], vx[i, j + 2, z:], vx[i, j - 1, z:]
            y0, yjm, yjp, yjm2 = vy[i, j, z:], vy[i, j - 1, z:], vy[i, j + 1, z:], vy[i, j - 2, z:]
            yip, yip2, yim = vy[i + 1, j, z:], vy[i + 2, j, z:], vy[i - 1, j, z:]
            z0, zip_, zip2, zim = vz[i, j, z:], vz[i + 1, j, z:], vz[i + 2, j, z:], vz[i - 1, j, z:]
            zjp, zjp2, zjm = vz[i, j + 1, z:], vz[i, j + 2, z:], vz[i, j - 1, z:]
            for k in range(n):
                q = k + 2
                exx = _d(x0[q], xim[q], xip[q], xim2[q], c1, c2)
                eyy = _d(y0[q], yjm[q], yjp[q], yjm2[q], c1, c2)
                ezz = _d(z0[q], z0[q - 1], z0[q + 1], z0[q - 2], c1, c2)
                txx[q] += pl[q] * exx + pa[q] * (eyy + ezz)
                tyy[q] += pl[q] * eyy + pa[q] * (exx + ezz)
                tzz[q] += pl[q] * ezz + pa[q] * (exx + eyy)
            for k in range(n):
                q = k + 2
                txy[q] += pc[q] * (_d(xjp[q], x0[q], xjp2[q], xjm[q], c1, c2) + _d(yip[q], y0[q], yip2[q], yim[q], c1, c2))
            for k in range(n):
                q = k + 2
                txz[q] += pf[q] * (_d(x0[q + 1], x0[q], x0[q + 2], x0[q - 1], c1, c2) + _d(zip_[q], z0[q], zip2[q], zim[q], c1, c2))
            for k in range(n):
                q = k + 2
                tyz[q] += pf[q] * (_d(y0[q + 1], y0[q], y0[q + 2], y0[q - 1], c1, c2) + _d(zjp[q], z0[q], zjp2[q], zjm[q], c1, c2))


@jit(**_OPTS)
def velocity_box2(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, b_c, b_f, lo0, hi0, lo1, hi1, lo2, hi2):  # noqa: PLR0913
    """Order-2 :func:`velocity_box`: only the nearest-neighbour rows, so fewer views per row (about 2x faster)."""
    n = hi2 - lo2
    z = lo2 - 1
    bc = b_c[z:]
    bf = b_f[z:]
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            ux, uy, uz = vx[i, j, z:], vy[i, j, z:], vz[i, j, z:]
            xx1, xx0 = sxx[i + 1, j, z:], sxx[i, j, z:]
            xy, xyjm, xyim = sxy[i, j, z:], sxy[i, j - 1, z:], sxy[i - 1, j, z:]
            xz, xzim = sxz[i, j, z:], sxz[i - 1, j, z:]
            yz, yzjm = syz[i, j, z:], syz[i, j - 1, z:]
            yy1, yy0 = syy[i, j + 1, z:], syy[i, j, z:]
            zz = szz[i, j, z:]
            for k in range(n):
                q = k + 1
                ux[q] += bc[q] * ((xx1[q] - xx0[q]) + (xy[q] - xyjm[q]) + (xz[q] - xz[q - 1]))
                uy[q] += bc[q] * ((xy[q] - xyim[q]) + (yy1[q] - yy0[q]) + (yz[q] - yz[q - 1]))
                uz[q] += bf[q] * ((xz[q] - xzim[q]) + (yz[q] - yzjm[q]) + (zz[q + 1] - zz[q]))


@jit(**_OPTS)
def stress_box2(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, l2m, lam, mu_c, mu_f, lo0, hi0, lo1, hi1, lo2, hi2):  # noqa: PLR0913
    """Order-2 :func:`stress_box`."""
    n = hi2 - lo2
    z = lo2 - 1
    pl, pa, pc, pf = l2m[z:], lam[z:], mu_c[z:], mu_f[z:]
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            txx, tyy, tzz = sxx[i, j, z:], syy[i, j, z:], szz[i, j, z:]
            txy, txz, tyz = sxy[i, j, z:], sxz[i, j, z:], syz[i, j, z:]
            x0, xim, xjp = vx[i, j, z:], vx[i - 1, j, z:], vx[i, j + 1, z:]
            y0, yjm, yip = vy[i, j, z:], vy[i, j - 1, z:], vy[i + 1, j, z:]
            z0, zip_, zjp = vz[i, j, z:], vz[i + 1, j, z:], vz[i, j + 1, z:]
            for k in range(n):
                q = k + 1
                exx = x0[q] - xim[q]
                eyy = y0[q] - yjm[q]
                ezz = z0[q] - z0[q - 1]
                txx[q] += pl[q] * exx + pa[q] * (eyy + ezz)
                tyy[q] += pl[q] * eyy + pa[q] * (exx + ezz)
                tzz[q] += pl[q] * ezz + pa[q] * (exx + eyy)
                txy[q] += pc[q] * ((xjp[q] - x0[q]) + (yip[q] - y0[q]))
                txz[q] += pf[q] * ((x0[q + 1] - x0[q]) + (zip_[q] - z0[q]))
                tyz[q] += pf[q] * ((y0[q + 1] - y0[q]) + (zjp[q] - z0[q]))


@jit(inline="always")
def _psi_scalar(p, a1, a0, b1, b0, aa, bb, c1, c2, n):
    """``p = bb p + aa D`` over a row with a profile constant along it (x and y layers)."""
    if c2 == 0.0:  # order 2: the second neighbours are not read at all
        for k in range(n):
            p[k] = bb * p[k] + aa * (a1[k] - a0[k])
    else:
        for k in range(n):
            p[k] = bb * p[k] + aa * (c1 * (a1[k] - a0[k]) + c2 * (b1[k] - b0[k]))


@jit(inline="always")
def _add(t, w, p, n):
    """``t += w p`` over a row."""
    for k in range(n):
        t[k] += w[k] * p[k]


@jit(**_OPTS)
def velocity_pml(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, b_c, b_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2,  # noqa: PLR0913
                 inx, psx, ox, prx, iny, psy, oy, pry, zlo, pszl, ozl, zl0, zl1, zhi, pszh, ozh, zh0, zh1, prz):
    """Velocity update of a box inside the C-PML of the axes flagged ``in{x,y,z}``.

    The bulk update first, then, per flagged axis, the memory variables
    ``psi = b psi + a D`` of that axis's three derivatives and ``v += dt/(h rho) psi``
    (Komatitsch & Martin 2007, with kappa = 1). ``ps?`` are the axis's
    memory variables ``(3, L0, L1, L2)`` whose element ``[c, 0, 0, 0]`` is at
    array index ``o?``; ``pr?`` its profiles ``(a_centre, b_centre, a_face, b_face)``
    along the axis. The rows of a box stay in cache between the passes, so the
    extra memory traffic is that of the memory variables. Each pass over a row
    writes one array, which keeps LLVM's aliasing checks few enough to vectorise.
    """
    n = hi2 - lo2
    z = lo2
    bc, bf = b_c[z:], b_f[z:]
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            # the bulk update of this row, then its corrections while the row is in cache
            if c2 == 0.0:
                velocity_box2(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, b_c, b_f, i, i + 1, j, j + 1, lo2, hi2)
            else:
                velocity_box(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, b_c, b_f, c1, c2, i, i + 1, j, j + 1, lo2, hi2)
            ux, uy, uz = vx[i, j, z:], vy[i, j, z:], vz[i, j, z:]
            if inx:
                p0, p1, p2 = psx[0, i - ox[0], j - ox[1], lo2 - ox[2]:], psx[1, i - ox[0], j - ox[1], lo2 - ox[2]:], psx[2, i - ox[0], j - ox[1], lo2 - ox[2]:]
                _psi_scalar(p0, sxx[i + 1, j, z:], sxx[i, j, z:], sxx[i + 2, j, z:], sxx[i - 1, j, z:], prx[2, i], prx[3, i], c1, c2, n)
                _psi_scalar(p1, sxy[i, j, z:], sxy[i - 1, j, z:], sxy[i + 1, j, z:], sxy[i - 2, j, z:], prx[0, i], prx[1, i], c1, c2, n)
                _psi_scalar(p2, sxz[i, j, z:], sxz[i - 1, j, z:], sxz[i + 1, j, z:], sxz[i - 2, j, z:], prx[0, i], prx[1, i], c1, c2, n)
                _add(ux, bc, p0, n)
                _add(uy, bc, p1, n)
                _add(uz, bf, p2, n)
            if iny:
                p0, p1, p2 = psy[0, i - oy[0], j - oy[1], lo2 - oy[2]:], psy[1, i - oy[0], j - oy[1], lo2 - oy[2]:], psy[2, i - oy[0], j - oy[1], lo2 - oy[2]:]
                _psi_scalar(p0, sxy[i, j, z:], sxy[i, j - 1, z:], sxy[i, j + 1, z:], sxy[i, j - 2, z:], pry[0, j], pry[1, j], c1, c2, n)
                _psi_scalar(p1, syy[i, j + 1, z:], syy[i, j, z:], syy[i, j + 2, z:], syy[i, j - 1, z:], pry[2, j], pry[3, j], c1, c2, n)
                _psi_scalar(p2, syz[i, j, z:], syz[i, j - 1, z:], syz[i, j + 1, z:], syz[i, j - 2, z:], pry[0, j], pry[1, j], c1, c2, n)
                _add(ux, bc, p0, n)
                _add(uy, bc, p1, n)
                _add(uz, bf, p2, n)
        # the z layers: a few cells at both ends of every row, too short for a loop per row; one pass
        # per (i, k) line of the layer with j innermost instead (scalar, but no per-row overhead),
        # while the x plane is still in cache
        for on, psz, oz, z0, z1 in ((zlo, pszl, ozl, zl0, zl1), (zhi, pszh, ozh, zh0, zh1)):
            if not on:
                continue
            for q in range(z0, z1):
                ac, bb, af, bff, wc, wf = prz[0, q], prz[1, q], prz[2, q], prz[3, q], b_c[q], b_f[q]
                ii, kk = i - oz[0], q - oz[2]
                for j in range(lo1, hi1):
                    jj = j - oz[1]
                    d0 = _d(sxz[i, j, q], sxz[i, j, q - 1], sxz[i, j, q + 1], sxz[i, j, q - 2], c1, c2)
                    d1 = _d(syz[i, j, q], syz[i, j, q - 1], syz[i, j, q + 1], syz[i, j, q - 2], c1, c2)
                    d2 = _d(szz[i, j, q + 1], szz[i, j, q], szz[i, j, q + 2], szz[i, j, q - 1], c1, c2)
                    p0 = bb * psz[0, ii, jj, kk] + ac * d0
                    p1 = bb * psz[1, ii, jj, kk] + ac * d1
                    p2 = bff * psz[2, ii, jj, kk] + af * d2
                    psz[0, ii, jj, kk] = p0
                    psz[1, ii, jj, kk] = p1
                    psz[2, ii, jj, kk] = p2
                    vx[i, j, q] += wc * p0
                    vy[i, j, q] += wc * p1
                    vz[i, j, q] += wf * p2


@jit(**_OPTS)
def stress_pml(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, l2m, lam, mu_c, mu_f, c1, c2, lo0, hi0, lo1, hi1, lo2, hi2,  # noqa: PLR0913
               inx, psx, ox, prx, iny, psy, oy, pry, zlo, pszl, ozl, zl0, zl1, zhi, pszh, ozh, zh0, zh1, prz):
    """Stress update of a box inside the C-PML (see :func:`velocity_pml` for the arguments).

    Per axis the memory variables are those of the normal strain (shared by
    the three normal stresses) and of the two shear-strain derivatives.
    """
    n = hi2 - lo2
    z = lo2
    pl, pa, pc, pf = l2m[z:], lam[z:], mu_c[z:], mu_f[z:]
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            if c2 == 0.0:
                stress_box2(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, l2m, lam, mu_c, mu_f, i, i + 1, j, j + 1, lo2, hi2)
            else:
                stress_box(vx, vy, vz, sxx, syy, szz, sxy, sxz, syz, l2m, lam, mu_c, mu_f, c1, c2, i, i + 1, j, j + 1, lo2, hi2)
            txx, tyy, tzz = sxx[i, j, z:], syy[i, j, z:], szz[i, j, z:]
            txy, txz, tyz = sxy[i, j, z:], sxz[i, j, z:], syz[i, j, z:]
            if inx:
                p0, p1, p2 = psx[0, i - ox[0], j - ox[1], lo2 - ox[2]:], psx[1, i - ox[0], j - ox[1], lo2 - ox[2]:], psx[2, i - ox[0], j - ox[1], lo2 - ox[2]:]
                _psi_scalar(p0, vx[i, j, z:], vx[i - 1, j, z:], vx[i + 1, j, z:], vx[i - 2, j, z:], prx[0, i], prx[1, i], c1, c2, n)
                _psi_scalar(p1, vy[i + 1, j, z:], vy[i, j, z:], vy[i + 2, j, z:], vy[i - 1, j, z:], prx[2, i], prx[3, i], c1, c2, n)
                _psi_scalar(p2, vz[i + 1, j, z:], vz[i, j, z:], vz[i + 2, j, z:], vz[i - 1, j, z:], prx[2, i], prx[3, i], c1, c2, n)
                _add(txx, pl, p0, n)
                _add(tyy, pa, p0, n)
                _add(tzz, pa, p0, n)
                _add(txy, pc, p1, n)
                _add(txz, pf, p2, n)
            if iny:
                p0, p1, p2 = psy[0, i - oy[0], j - oy[1], lo2 - oy[2]:], psy[1, i - oy[0], j - oy[1], lo2 - oy[2]:], psy[2, i - oy[0], j - oy[1], lo2 - oy[2]:]
                _psi_scalar(p0, vy[i, j, z:], vy[i, j - 1, z:], vy[i, j + 1, z:], vy[i, j - 2, z:], pry[0, j], pry[1, j], c1, c2, n)
                _psi_scalar(p1, vx[i, j + 1, z:], vx[i, j, z:], vx[i, j + 2, z:], vx[i, j - 1, z:], pry[2, j], pry[3, j], c1, c2, n)
                _psi_scalar(p2, vz[i, j + 1, z:], vz[i, j, z:], vz[i, j + 2, z:], vz[i, j - 1, z:], pry[2, j], pry[3, j], c1, c2, n)
                _add(txx, pa, p0, n)
                _add(tyy, pl, p0, n)
                _add(tzz, pa, p0, n)
                _add(txy, pc, p1, n)
                _add(tyz, pf, p2, n)
        for on, psz, oz, z0, z1 in ((zlo, pszl, ozl, zl0, zl1), (zhi, pszh, ozh, zh0, zh1)):
            if not on:
                continue
            for q in range(z0, z1):
                ac, bb, af, bff = prz[0, q], prz[1, q], prz[2, q], prz[3, q]
                wl, wa, wf = l2m[q], lam[q], mu_f[q]
                ii, kk = i - oz[0], q - oz[2]
                for j in range(lo1, hi1):
                    jj = j - oz[1]
                    d0 = _d(vz[i, j, q], vz[i, j, q - 1], vz[i, j, q + 1], vz[i, j, q - 2], c1, c2)
                    d1 = _d(vx[i, j, q + 1], vx[i, j, q], vx[i, j, q + 2], vx[i, j, q - 1], c1, c2)
                    d2 = _d(vy[i, j, q + 1], vy[i, j, q], vy[i, j, q + 2], vy[i, j, q - 1], c1, c2)
                    p0 = bb * psz[0, ii, jj, kk] + ac * d0
                    p1 = bff * psz[1, ii, jj, kk] + af * d1
                    p2 = bff * psz[2, ii, jj, kk] + af * d2
                    psz[0, ii, jj, kk] = p0
                    psz[1, ii, jj, kk] = p1
                    psz[2, ii, jj, kk] = p2
                    sxx[i, j, q] += wa * p0
                    syy[i, j, q] += wa * p0
                    szz[i, j, q] += wl * p0
                    sxz[i, j, q] += wf * p1
                    syz[i, j, q] += wf * p2


@jit(**_OPTS)
def pack(field, buf, lo0, hi0, lo1, hi1, lo2, hi2):
    """Copy the box ``[lo, hi)`` of ``field`` into the contiguous ``buf`` (C order)."""
    n = 0
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            for k in range(lo2, hi2):
                buf[n] = field[i, j, k]
                n += 1


@jit(**_OPTS)
def unpack(field, buf, lo0, hi0, lo1, hi1, lo2, hi2):
    """Copy ``buf`` (C order) into the box ``[lo, hi)`` of ``field``."""
    n = 0
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            for k in range(lo2, hi2):
                field[i, j, k] = buf[n]
                n += 1

