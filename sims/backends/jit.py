"""The one place kernels get Numba's ``njit`` from, so a kernel module stays importable without Numba.

Numba is a dependency, but modules such as ``sims.sa.kernels`` also carry the
static counts that the workflow reads while planning; those imports must not
fail (or pay for compilation) where only the counts are needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from numba import njit as _njit
except ImportError:  # pragma: no cover - numba is a declared dependency
    _njit = None


def jit(**options: Any) -> Callable[[Any], Any]:
    """``numba.njit(**options)`` when Numba is importable, else the function unchanged."""

    def decorate(fn: Any) -> Any:
        return _njit(**options)(fn) if _njit is not None else fn

    return decorate
