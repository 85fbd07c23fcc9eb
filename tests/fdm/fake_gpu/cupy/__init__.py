"""A stand-in for CuPy on machines without a GPU: "device" arrays are NumPy arrays of a subclass.

Only what ``sims.fdm`` uses exists. Every host<->device copy (``get``, ``set``,
``asarray`` of a host array) is counted in :data:`TRANSFERS`, so tests can check
which marshaling design moves what. It runs the GPU code paths of the solver
(array logic written against ``xp``, device buffers handed to MPI) with NumPy.
"""

from __future__ import annotations

import numpy as np

float32 = np.float32
TRANSFERS = {"d2h_bytes": 0, "h2d_bytes": 0}


class ndarray(np.ndarray):  # noqa: N801 - the name CuPy uses
    """A "device" array."""

    def get(self, out=None):
        TRANSFERS["d2h_bytes"] += self.nbytes
        if out is None:
            return np.array(self, copy=True).view(np.ndarray)
        out[...] = self.view(np.ndarray)
        return out

    def set(self, host):
        TRANSFERS["h2d_bytes"] += np.asarray(host).nbytes
        self.view(np.ndarray)[...] = host


def asarray(a, dtype=None):
    if isinstance(a, ndarray):
        return a if dtype is None else a.astype(dtype)
    host = np.asarray(a, dtype=dtype)
    TRANSFERS["h2d_bytes"] += host.nbytes
    return np.array(host, copy=True).view(ndarray)


def empty(shape, dtype=np.float32):
    return np.empty(shape, dtype=dtype).view(ndarray)


def zeros(shape, dtype=np.float32):
    return np.zeros(shape, dtype=dtype).view(ndarray)


class _Stream:
    def synchronize(self) -> None:
        return None


class cuda:  # noqa: N801 - module-like namespace, as in CuPy
    """``cupy.cuda``: streams only."""

    @staticmethod
    def get_current_stream() -> _Stream:
        return _Stream()
