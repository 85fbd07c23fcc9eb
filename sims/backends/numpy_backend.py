"""The NumPy backend, and the base class every backend shares."""

from __future__ import annotations

from typing import Any

import numpy as np

#: an input of more elements than this repeats a block of this many drawn values (:func:`host_uniform`)
DRAWN = 1 << 20


def host_uniform(shape: Any, low: float, high: float, seed: int, dtype: Any = np.float32) -> np.ndarray:
    """Deterministic samples in ``[low, high]`` generated on the host: float32 draws, as ``dtype``.

    Every backend draws its initial data through this function (and copies it to
    its device if it has one), so the same ``(shape, low, high, seed)`` gives
    bit-identical inputs on every backend. Beyond :data:`DRAWN` elements the drawn block repeats: a kernel's
    speed depends on its values' range (no subnormals, no special values), not on which values it reads, and
    drawing each of a few hundred million values cost a run's setup more than its measurement (a study
    measured in rounds sets every run up once per round).
    """
    if not high >= low:
        raise ValueError(f"uniform: need high >= low, got low={low!r} high={high!r}")
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    count = int(np.prod(shape, dtype=np.int64))
    block = rng.random(min(count, DRAWN), dtype=np.float32)  # [0, 1)
    block *= np.float32(high - low)
    block += np.float32(low)
    np.clip(block, np.float32(low), np.float32(high), out=block)
    block = block if np.dtype(dtype) == np.float32 else block.astype(dtype)
    if count <= DRAWN:
        return block.reshape(shape)
    out = np.empty(count, dtype=block.dtype)
    out[:DRAWN] = block
    filled = DRAWN
    while filled < count:  # doubling copies: each a memcpy of what is already there
        step = min(filled, count - filled)
        out[filled:filled + step] = out[:step]
        filled += step
    return out.reshape(shape)


#: bytes of a page; :func:`placed_empty` places arrays relative to its boundaries
PAGE = 4096


def placed_empty(shape: Any, dtype: Any, offset: int = 0) -> np.ndarray:
    """An uninitialised C-contiguous array starting ``offset`` bytes (a multiple of 64) past a page boundary.

    NumPy leaves an array's start to ``malloc``, which aligns to 16 bytes: a block not on a 64-byte cache
    line makes every 64-byte vector access of a ufunc straddle two lines, and whether it does depends on
    the heap's history: the same in-cache loop then costs a third more in one process than in the next.
    Callers give buffers streamed together different ``offset``, so that no two share their low 12 address
    bits either (a guard against 4K aliasing; not seen to matter where it was measured, and free)."""
    if offset % 64:
        raise ValueError(f"offset must be a multiple of 64 bytes, got {offset}")
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dt.itemsize + 2 * PAGE + offset, dtype=np.uint8)
    start = (-raw.ctypes.data) % PAGE + offset
    return raw[start:start + count * dt.itemsize].view(dt).reshape(shape)


class Backend:
    """Common interface of all backends.

    Attributes: ``name`` (``numpy|numba|cupy``), ``xp`` (array module),
    ``device`` (GPU index or ``None``), ``is_gpu`` and ``native`` (False only for
    a cupy backend constructed with an injected non-CuPy ``xp`` for testing).
    """

    name: str = "base"
    is_gpu: bool = False

    def __init__(self, xp: Any = np, device: int | None = None) -> None:
        self.xp = xp
        self.device = device
        self.native = True

    def synchronize(self) -> None:
        """Wait for all queued work of this backend (no-op on the CPU)."""

    def asnumpy(self, a: Any) -> np.ndarray:
        """Return ``a`` as a host NumPy array (a copy only if it lives elsewhere)."""
        return np.asarray(a)

    def asarray(self, a: Any) -> Any:
        """Move a host array to this backend's memory."""
        return self.xp.asarray(a)

    def zeros(self, shape: Any, dtype: Any = np.float32) -> Any:
        return self.xp.zeros(shape, dtype=dtype)

    def uniform(self, shape: Any, low: float, high: float, seed: int, dtype: Any = np.float32) -> Any:
        """Deterministic array in ``[low, high]`` (float32 draws, as ``dtype``); identical on every backend."""
        return self.asarray(host_uniform(shape, low, high, seed, dtype))

    def __repr__(self) -> str:
        dev = "" if self.device is None else f", device={self.device}"
        return f"<{type(self).__name__} name={self.name!r}{dev}>"


class NumpyBackend(Backend):
    """Plain NumPy on the host; kernels use in-place ufuncs."""

    name = "numpy"
