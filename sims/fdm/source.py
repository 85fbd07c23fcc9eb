"""Point sources (explosive moment tensor or force) with a Ricker wavelet."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def ricker(t, f0: float, delay: float):
    """Ricker wavelet ``(1 - 2 a) exp(-a)``, ``a = (pi f0 (t - delay))^2`` (peak 1 at ``delay``)."""
    a = (np.pi * f0 * (np.asarray(t, dtype=float) - delay)) ** 2
    return (1.0 - 2.0 * a) * np.exp(-a)


def _finite(value, key: str) -> float:
    """``value`` as a finite float, naming ``key`` otherwise. Text that reads as a number is a number (YAML 1.1
    reads ``1.0e15``, without the exponent's sign, as text); a boolean is not."""
    try:
        if isinstance(value, bool):
            raise ValueError
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"source {key!r} must be a number, got {value!r}") from None
    if not np.isfinite(x):
        raise ValueError(f"source {key!r} must be finite, got {value!r}")
    return x


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
        """Build from a run-spec source mapping; every number must be finite and every key known."""
        if not isinstance(spec, dict):
            raise ValueError("source must be a mapping")
        kind = spec.get("kind")
        if kind not in ("explosive", "force"):
            raise ValueError(f"source 'kind' must be 'explosive' or 'force', got {kind!r}")
        known = {"kind", "position", "f0", "delay", *(("moment",) if kind == "explosive" else ("force", "direction"))}
        unknown = sorted(set(spec) - known)
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(map(str, unknown))} for the {kind} source "
                             f"(known: {', '.join(sorted(known))})")
        for key in ("position", "f0"):
            if key not in spec:
                raise ValueError(f"source: missing key {key!r}")
        pos = tuple(_finite(p, "position") for p in spec["position"])
        if len(pos) != 3:
            raise ValueError("source 'position' must have 3 coordinates")
        f0 = _finite(spec["f0"], "f0")
        if f0 <= 0:
            raise ValueError("source 'f0' must be positive")
        delay = _finite(spec.get("delay", 1.5 / f0), "delay")
        if kind == "explosive":
            if "moment" not in spec:
                raise ValueError("explosive source: missing key 'moment'")
            return cls(kind, pos, f0, _finite(spec["moment"], "moment"), delay=delay)
        if "force" not in spec or "direction" not in spec:
            raise ValueError("force source: needs keys 'force' and 'direction'")
        d = np.asarray([_finite(x, "direction") for x in spec["direction"]], dtype=float)
        if d.shape != (3,) or not np.linalg.norm(d) > 0:
            raise ValueError("force source 'direction' must be a nonzero 3-vector")
        d = d / np.linalg.norm(d)
        return cls(kind, pos, f0, _finite(spec["force"], "force"), tuple(d.tolist()), delay)

    def time_function(self, t) -> np.ndarray:
        """Moment rate (N m/s) or force (N) at times ``t``."""
        return self.amplitude * ricker(t, self.f0, self.delay)
