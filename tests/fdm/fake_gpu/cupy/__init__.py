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


class ElementwiseKernel:
    """CuPy's ``ElementwiseKernel`` for the fused FDM kernels: the same parameter lists and kernel text, the body
    run by :func:`sims.fdm.kernels_fused.evaluate` with NumPy (what a GPU would compile is what runs here)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str, options=()):
        self.ins = [p.split()[-1] for p in in_params.split(",")]
        self.outs = [p.split()[-1] for p in out_params.split(",")]
        self.operation, self.name, self.options = operation, name, tuple(options)
        CALLS[name] = CALLS.get(name, 0)

    def __call__(self, *args):
        from sims.fdm.kernels_fused import evaluate

        if len(args) != len(self.ins) + len(self.outs):
            raise TypeError(f"{self.name}: {len(self.ins)} inputs and {len(self.outs)} outputs, got {len(args)} arguments")
        CALLS[self.name] += 1
        evaluate(self.operation, dict(zip(self.ins + self.outs, args, strict=True)))


#: launches of each fused kernel
CALLS: dict = {}

