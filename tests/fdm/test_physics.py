"""Physics checks: the analytic P wave of an explosion, and the C-PML's reflection."""

from __future__ import annotations

import numpy as np

from .conftest import base_spec

ALPHA, BETA, RHO, H = 3000.0, 1732.0, 2500.0, 10.0
HOMOGENEOUS = {"homogeneous": {"vp": ALPHA, "vs": BETA, "rho": RHO}}


def analytic_radial_velocity(t, mrate, r, rho, alpha):
    """Radial particle velocity of an isotropic explosion in a full space.

    From the displacement ``u_r = [M(tau) / r^2 + Mdot(tau) / (alpha r)] / (4 pi rho alpha^2)``,
    ``tau = t - r / alpha`` (Aki & Richards 2002, the far- and near-field P terms for ``M_ij = M delta_ij``):
    ``v_r = [Mdot(tau) / r^2 + Mddot(tau) / (alpha r)] / (4 pi rho alpha^2)``, near and far field.
    """
    mddot = np.gradient(mrate, t)
    tau = t - r / alpha
    md = np.interp(tau, t, mrate, left=0.0, right=0.0)
    mdd = np.interp(tau, t, mddot, left=0.0, right=0.0)
    return (md / r**2 + mdd / (alpha * r)) / (4.0 * np.pi * rho * alpha**2)


def test_explosion_matches_the_analytic_p_wave(run_local):
    f0, n, width = 5.0, 56, 10
    ppw = BETA / (2.5 * f0) / H
    assert ppw >= 12  # points per minimum (S) wavelength at 2.5 f0
    c = (n // 2 + 0.5) * H
    r_cells = 15
    dt = 0.9 * H / (ALPHA * 3**0.5)
    delay = 1.2 / f0
    steps = int((2 * delay + r_cells * H / ALPHA) / dt) + 1
    doc = base_spec(
        grid={"shape": [n, n, n], "spacing": H}, time={"steps": steps}, medium=HOMOGENEOUS,
        source={"kind": "explosive", "position": [c, c, c], "f0": f0, "moment": 1.0e15, "delay": delay},
        receivers=[[c + r_cells * H, c, c]], boundary={"kind": "cpml", "width": width}, order=2,
    )
    seis, _ = run_local(doc)
    r = float(np.linalg.norm(seis["receiver_positions"][0] - seis["source_position"]))
    # the analytic trace from the moment rate actually injected, evaluated on a fine grid, then at the trace times
    tf = np.linspace(0.0, seis["t"][-1] + 0.1, 20000)
    fine = analytic_radial_velocity(tf, np.interp(tf, seis["moment_rate_t"], seis["moment_rate"]), r, RHO, ALPHA)
    ref = np.interp(seis["t"], tf, fine)
    num = seis["vx"][0]
    corr = float(np.dot(num, ref) / np.sqrt(np.dot(num, num) * np.dot(ref, ref)))
    print(f"analytic P wave: correlation {corr:.4f}, peak ratio {np.abs(num).max() / np.abs(ref).max():.4f}, "
          f"transverse/radial {max(np.abs(seis['vy'][0]).max(), np.abs(seis['vz'][0]).max()) / np.abs(num).max():.2e}")
    assert corr >= 0.98, corr
    assert abs(np.abs(num).max() / np.abs(ref).max() - 1.0) <= 0.05, (np.abs(num).max(), np.abs(ref).max())
    transverse = max(np.abs(seis["vy"][0]).max(), np.abs(seis["vz"][0]).max())
    assert transverse < 0.02 * np.abs(num).max()


def test_cpml_reflection_below_one_percent(run_local):
    """A 10-cell C-PML against a reference domain so large that nothing returns within the window."""
    # order 4 and a stiff solid (vs = 2000 m/s) allow f0 = 15 Hz at >= 5 points per S wavelength: a short wavelet
    f0, order, delay, vs = 15.0, 4, 1.2 / 15.0, 2000.0
    medium = {"homogeneous": {"vp": ALPHA, "vs": vs, "rho": RHO}}
    small, width, rec_off = 60, 10, 10
    dt = 0.9 * H / (ALPHA * 3**0.5 * (9 / 8 + 1 / 24))
    # window: until the wave reflected anywhere in the +x layer (inner edge to outer edge) has passed the receiver
    inner = small // 2 - width
    path = inner + (inner - rec_off) + 2 * width
    window = 2 * delay + path * H / ALPHA
    steps = int(window / dt) + 1
    # reference: the first echo from its rigid edges (nearest: +x, at d cells) reaches the receiver after the window
    d = int(np.ceil((window * ALPHA / H + rec_off) / 2)) + 1
    big = 2 * d

    def run(n, boundary):
        c = (n // 2 + 0.5) * H
        doc = base_spec(
            grid={"shape": [n, n, n], "spacing": H}, time={"steps": steps}, medium=medium, order=order,
            source={"kind": "explosive", "position": [c, c, c], "f0": f0, "moment": 1.0e15, "delay": delay},
            receivers=[[c + rec_off * H, c, c], [c, c + rec_off * H, c + 3 * H]], boundary=boundary,
        )
        return run_local(doc)[0]

    test = run(small, {"kind": "cpml", "width": width})
    ref = run(big, {"kind": "none"})
    incident = max(np.abs(ref[c]).max() for c in ("vx", "vy", "vz"))
    reflected = max(np.abs(test[c] - ref[c]).max() for c in ("vx", "vy", "vz"))
    print(f"C-PML ({width} cells): reflected / incident = {reflected / incident:.4f} (reference {big}^3, {steps} steps)")
    assert reflected > 0  # the layer is there and does something
    assert reflected <= 0.01 * incident, reflected / incident


def test_free_surface_doubles_a_normally_incident_p_wave(run_local):
    """Vertical velocity at the free surface above an explosion is twice that of the same wave in a full space.

    The reference puts the same source-receiver pair deep inside a taller grid;
    at normal incidence the surface amplification of a P wave is 2.
    """
    f0, order, depth, width, n = 10.0, 4, 40, 10, 56
    nz, up = depth + width + 12, 40
    c = (n // 2 + 0.5) * H
    dt = 0.9 * H / (ALPHA * 3**0.5 * (9 / 8 + 1 / 24))
    steps = int((2.4 / f0 + depth * H / ALPHA + 0.05) / dt)

    def run(shape_z, z_src, z_rec, surface):
        src = {"kind": "explosive", "position": [c, c, z_src], "f0": f0, "moment": 1.0e15}
        doc = base_spec(grid={"shape": [n, n, shape_z], "spacing": H}, time={"steps": steps}, medium=HOMOGENEOUS,
                        order=order, source=src, receivers=[[c, c, z_rec]], boundary={"kind": "cpml", "width": width},
                        free_surface=surface)
        return run_local(doc)

    surf, records = run(nz, (depth + 0.5) * H, 0.5 * H, True)
    full, _ = run(nz + up, (depth + up + 0.5) * H, (up + 0.5) * H, False)
    assert records[0]["boundary"] == f"cpml({width})+free-surface"
    ratio = np.abs(surf["vz"][0]).max() / np.abs(full["vz"][0]).max()
    print(f"free surface: vertical amplification at normal incidence {ratio:.4f} (theory 2)")
    assert abs(ratio - 2.0) <= 0.1, ratio
