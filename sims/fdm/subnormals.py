"""Subnormal floats flushed to zero while the FDM solver runs (x86's FTZ and DAZ bits, Arm's FZ bit).

A wave started from a point source reaches, through the stencil's wider taps, cells the physical wave has
not reached yet with values that shrink by orders of magnitude per step; in float32 they soon fall below
1.2e-38, into the subnormal range. Some cores (Intel's among them) run an arithmetic instruction with a
subnormal operand or result through a microcode assist, a hundred cycles or more: an order-4 run can then
take nearly twice as long as with them flushed, while cores that handle subnormals in hardware show no
difference. The time of a half-step would then depend on the wavefield's history and on the core, and no
calibration on quiet fields could predict it. Production stencil codes flush them (compilers' optimisation
levels set these bits at program start); the solver does the same for the length of a run, and the
calibration of its kernels runs under the same flags.

The flags live in each thread's floating-point control register; threads started while they are set
inherit them. Numba's parallel workers start at a process's first parallel kernel: a run's process (one per
rank) starts them inside the run, so they flush; in a process that ran parallel kernels before (a test
session, say), they keep the flags of that moment. They are set and restored through the C library's
``fegetenv``/``fesetenv`` on Linux (glibc and musl share the ``fenv_t`` layouts used here); elsewhere
:func:`flushed` changes nothing and says so by yielding False.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import platform
import sys
from collections.abc import Iterator
from functools import lru_cache

#: per machine: (size of ``fenv_t``, byte offset of the control word holding the bits, the bits)
_LAYOUTS = {
    "x86_64": (32, 28, 0x8040),   # MXCSR: FTZ (bit 15) and DAZ (bit 6)
    "aarch64": (8, 0, 1 << 24),    # FPCR: FZ (bit 24)
}


@lru_cache(maxsize=1)
def _libm():
    if not sys.platform.startswith("linux") or platform.machine() not in _LAYOUTS:
        return None
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        return lib if hasattr(lib, "fegetenv") and hasattr(lib, "fesetenv") else None
    except OSError:
        return None


def _control() -> tuple[ctypes.Array, int, int] | None:
    """This thread's floating-point environment, the offset of its control word, and the flush bits."""
    lib = _libm()
    if lib is None:
        return None
    size, offset, bits = _LAYOUTS[platform.machine()]
    env = ctypes.create_string_buffer(size)
    return (env, offset, bits) if lib.fegetenv(env) == 0 else None


def _word(env: ctypes.Array, offset: int) -> ctypes.c_uint32:
    return ctypes.c_uint32.from_buffer(env, offset)


def flushing() -> bool:
    """Whether this thread flushes subnormals to zero now."""
    got = _control()
    return got is not None and (_word(got[0], got[1]).value & got[2]) == got[2]


@contextlib.contextmanager
def flushed() -> Iterator[bool]:
    """Within it, this thread flushes subnormal inputs and results to zero; the previous flags come back after.
    Yields whether the flags are set (False where this platform's are not known here)."""
    got = _control()
    if got is None:
        yield False
        return
    lib, (env, offset, bits) = _libm(), got
    before = _word(env, offset).value
    _word(env, offset).value = before | bits
    ok = lib.fesetenv(env) == 0 and flushing()
    try:
        yield ok
    finally:
        _word(env, offset).value = before
        lib.fesetenv(env)
