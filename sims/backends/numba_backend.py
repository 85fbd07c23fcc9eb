"""The Numba backend: NumPy arrays on the host, kernels compiled with ``@njit``."""

from __future__ import annotations

import numpy as np

from .numpy_backend import Backend


class NumbaBackend(Backend):
    """Host arrays are NumPy arrays; the kernels are ``numba.njit`` functions.

    Construction checks that numba is importable so a platform asking for it
    fails at start-up, not inside the measured region.
    """

    name = "numba"

    def __init__(self) -> None:
        try:
            import numba  # noqa: F401
        except ImportError as exc:  # pragma: no cover - numba is a dependency
            raise RuntimeError(f"numba backend requested but numba is not importable: {exc}") from exc
        super().__init__(xp=np, device=None)
