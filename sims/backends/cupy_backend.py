"""The CuPy backend (one GPU). CuPy is imported when the backend is constructed.

For tests, ``CupyBackend(xp=numpy)`` builds the same object around NumPy: the
backend is then ``native=False`` and the kernels take their xp-generic path, so
the array logic of the GPU code runs on a machine without a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .numpy_backend import Backend


class CupyBackend(Backend):
    name = "cupy"
    is_gpu = True

    def __init__(self, device: int | None = None, xp: Any = None) -> None:
        native = xp is None
        if native:
            try:
                import cupy as xp  # lazy: only when a cupy backend is requested
            except ImportError as exc:
                raise RuntimeError(
                    "cupy backend requested but CuPy is not importable "
                    f"({exc}); install cupy-cudaXXx matching the CUDA driver, "
                    "or use a CPU backend (numpy, numba)"
                ) from exc
            if device is not None:
                ndev = xp.cuda.runtime.getDeviceCount()
                if not 0 <= int(device) < ndev:
                    raise ValueError(f"cupy device {device} does not exist ({ndev} device(s) visible)")
                xp.cuda.Device(int(device)).use()
            else:
                device = xp.cuda.Device().id
        super().__init__(xp=xp, device=device)
        self.native = native

    def synchronize(self) -> None:
        """Wait for the device to finish all queued work."""
        if self.native:
            self.xp.cuda.Device(self.device).synchronize()

    def asnumpy(self, a: Any) -> np.ndarray:
        if self.native:
            return self.xp.asnumpy(a)
        return np.asarray(a)
