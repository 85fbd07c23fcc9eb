"""Device backends: one small object per processor kind (numpy, numba, cupy).

A backend bundles the array module ``xp`` used to allocate and move data, a
``synchronize()`` that waits for queued device work, and deterministic
initialisation helpers. Kernels (``sims.sa.kernels``, ``sims.bench.kernels``)
dispatch on ``backend.name`` and, for cupy, on ``backend.native`` (True when a
real CuPy module is behind ``xp``; False for the test-only numpy-as-xp backend).

CuPy is imported only when a cupy backend is constructed, never at import time.
"""

from __future__ import annotations

from .numpy_backend import Backend, NumpyBackend

BACKENDS: tuple[str, ...] = ("numpy", "numba", "cupy")

__all__ = ["BACKENDS", "Backend", "NumpyBackend", "get_backend"]


def get_backend(name: str, device: int | None = None) -> Backend:
    """Return the backend called ``name`` (one of :data:`BACKENDS`).

    ``device`` selects the GPU for ``cupy`` (default: the current device); CPU
    backends take no device and reject one, so a misplaced platform entry is
    reported instead of silently ignored.

    Raises ``ValueError`` for an unknown name or a device given to a CPU backend,
    ``RuntimeError`` when the backend's library cannot be imported.
    """
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; allowed: {', '.join(BACKENDS)}")
    if name == "cupy":
        from .cupy_backend import CupyBackend

        return CupyBackend(device=device)
    if device is not None:
        raise ValueError(f"backend {name!r} runs on the host CPU and takes no device (got device={device!r})")
    if name == "numba":
        from .numba_backend import NumbaBackend

        return NumbaBackend()
    return NumpyBackend()
