"""Point sources (explosive moment tensor or force) with a Ricker wavelet."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def ricker(t, f0: float, delay: float):
    """Ricker wavelet ``(1 - 2 a) exp(-a)``, ``a = (pi f0 (t - delay))^2`` (peak 1 at ``delay``)."""
    a = (np.pi * f0 * (np.asarray(t, dtype=float) - delay)) ** 2
    return (1.0 - 2.0 * a) * np.exp(-a)


@dataclass(frozen=True)
class Source:
    """``kind`` 'explosive' (moment rate M0*ricker, N m/s) or 'force' (F*ricker*direction, N); default delay 1.5/f0."""

    kind: str
    position: tuple[float, float, float]
    f0: float
    amplitude: float
    direction: tuple[float, float, float] = (0.0, 0.0, 1.0)
    delay: float = 0.0

    @classmethod
    def from_spec(cls, spec: dict) -> Source:
        """Build from a run-spec source mapping."""
        kind = spec.get("kind")
        if kind not in ("explosive", "force"):
            raise ValueError(f"source 'kind' must be 'explosive' or 'force', got {kind!r}")
        for key in ("position", "f0"):
            if key not in spec:
                raise ValueError(f"source: missing key {key!r}")
        pos = tuple(float(p) for p in spec["position"])
        if len(pos) != 3:
            raise ValueError("source 'position' must have 3 coordinates")
        f0 = float(spec["f0"])
        if f0 <= 0:
            raise ValueError("source 'f0' must be positive")
        delay = float(spec.get("delay", 1.5 / f0))
        if kind == "explosive":
            if "moment" not in spec:
                raise ValueError("explosive source: missing key 'moment'")
            return cls(kind, pos, f0, float(spec["moment"]), delay=delay)
        if "force" not in spec or "direction" not in spec:
            raise ValueError("force source: needs keys 'force' and 'direction'")
        d = np.asarray(spec["direction"], dtype=float)
        if d.shape != (3,) or not np.linalg.norm(d) > 0:
            raise ValueError("force source 'direction' must be a nonzero 3-vector")
        d = d / np.linalg.norm(d)
        return cls(kind, pos, f0, float(spec["force"]), tuple(d.tolist()), delay)

    def time_function(self, t) -> np.ndarray:
        """Moment rate (N m/s) or force (N) at times ``t``."""
        return self.amplitude * ricker(t, self.f0, self.delay)
