"""Elastic media: homogeneous or horizontally layered, as per-depth profiles of effective parameters."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Medium:
    """Layers as parallel tuples; ``tops[0] == 0``; a homogeneous medium has one layer."""

    tops: tuple[float, ...]
    vp: tuple[float, ...]
    vs: tuple[float, ...]
    rho: tuple[float, ...]

    @classmethod
    def from_spec(cls, spec) -> Medium:
        """Build from ``{"vp", "vs", "rho"}`` or a list of ``{"top", "vp", "vs", "rho"}``."""
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - {"vp", "vs", "rho"})
            if unknown:
                raise ValueError(f"unknown key(s) {', '.join(map(str, unknown))} (known: vp, vs, rho)")
        layers = [dict(spec, top=0.0)] if isinstance(spec, dict) else list(spec)
        if not layers:
            raise ValueError("medium: need at least one layer")
        for n, lay in enumerate(layers):
            if not isinstance(lay, dict):
                raise ValueError(f"medium layer {n}: expected {{top, vp, vs, rho}}, got {lay!r}")
            unknown = sorted(set(lay) - {"top", "vp", "vs", "rho"})
            if unknown:
                raise ValueError(f"medium layer {n}: unknown key(s) {', '.join(map(str, unknown))} "
                                 "(known: top, vp, vs, rho)")
            for key in ("top", "vp", "vs", "rho"):
                if key not in lay:
                    raise ValueError(f"medium layer {n}: missing key {key!r}")
                v = lay[key]
                try:
                    ok = not isinstance(v, bool) and bool(np.isfinite(float(v)))
                except (TypeError, ValueError):
                    ok = False
                if not ok:
                    raise ValueError(f"medium layer {n}: {key!r} must be a finite number, got {v!r}")
                layers[n] = lay = {**lay, key: float(v)}
            if lay["vp"] <= 0 or lay["rho"] <= 0 or lay["vs"] < 0:
                raise ValueError(f"medium layer {n}: need vp > 0, vs >= 0, rho > 0")
            if lay["vs"] * np.sqrt(2.0) >= lay["vp"] and lay["vs"] > 0:
                raise ValueError(f"medium layer {n}: vp must exceed sqrt(2)*vs (lambda >= 0)")
        tops = [float(lay["top"]) for lay in layers]
        if tops[0] != 0.0:
            raise ValueError("medium: first layer 'top' must be 0")
        if any(b <= a for a, b in zip(tops, tops[1:], strict=False)):
            raise ValueError("medium: layer 'top' values must increase")
        return cls(tuple(tops), *(tuple(float(lay[k]) for lay in layers) for k in ("vp", "vs", "rho")))

    @property
    def vp_max(self) -> float:
        """Largest P velocity (m/s)."""
        return max(self.vp)

    @property
    def vp_min(self) -> float:
        """Smallest P velocity (m/s)."""
        return min(self.vp)

    @property
    def vs_min(self) -> float:
        """Smallest nonzero S velocity (m/s), else the smallest P velocity."""
        nz = [v for v in self.vs if v > 0]
        return min(nz) if nz else self.vp_min

    def layer_at(self, depth) -> np.ndarray:
        """Layer index for each depth (m)."""
        return np.searchsorted(np.asarray(self.tops), np.asarray(depth, dtype=float), side="right") - 1

    def profiles(self, nz: int, spacing: float, dt: float, halo: int) -> dict[str, np.ndarray]:
        """Effective staggered-grid parameters per depth row, pre-multiplied by ``dt / h``.

        A horizontally layered medium varies with depth only, so every coefficient
        the update needs is a function of the row index ``k``; storing it as a
        profile means the time step streams only the nine wavefields. Rows are
        padded with ``halo`` entries on both ends (edge values repeated).

        Cell ``k`` (centre at depth ``(k + 1/2) h``) takes the layer containing its
        centre. Averages follow Moczo et al. (2002) / Graves (1996): density at
        a velocity node is the arithmetic mean of the two cells it joins, rigidity
        at a shear-stress node the harmonic mean of the cells around it. Nodes on
        the row of cell centres (``vx``, ``vy``, ``sxy`` and the normal stresses)
        lie within one row; nodes at depth ``(k + 1) h`` (``vz``, ``sxz``, ``syz``)
        join rows ``k`` and ``k + 1``.

        Returns
        -------
        dict
            ``b_c`` (dt/(h rho) at centre depth: vx, vy), ``b_f`` (at face depth:
            vz), ``l2m`` (lambda + 2 mu), ``lam``, ``mu_c`` (sxy) and ``mu_f``
            (sxz, syz), each float32 of length ``nz + 2 halo``.
        """
        k = np.clip(np.arange(-halo, nz + halo), 0, nz - 1)
        kf = np.clip(np.arange(-halo, nz + halo) + 1, 0, nz - 1)
        lay, layf = self.layer_at((k + 0.5) * spacing), self.layer_at((kf + 0.5) * spacing)
        vp, vs, rho = (np.asarray(a, dtype=float) for a in (self.vp, self.vs, self.rho))
        mu = rho * vs**2
        lam = rho * vp**2 - 2 * mu
        s = dt / spacing
        rho_f = 0.5 * (rho[lay] + rho[layf])
        m0, m1 = mu[lay], mu[layf]
        with np.errstate(divide="ignore", invalid="ignore"):
            mu_f = np.where((m0 > 0) & (m1 > 0), 2.0 * m0 * m1 / (m0 + m1), 0.0)
        out = {
            "b_c": s / rho[lay], "b_f": s / rho_f, "l2m": s * (lam[lay] + 2 * mu[lay]),
            "lam": s * lam[lay], "mu_c": s * mu[lay], "mu_f": s * mu_f,
        }
        return {name: np.ascontiguousarray(v, dtype=np.float32) for name, v in out.items()}
