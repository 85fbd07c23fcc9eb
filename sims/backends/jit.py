"""The one place kernels get Numba's ``njit`` from, so a kernel module stays importable without Numba.

Numba is a dependency, but modules such as ``sims.sa.kernels`` also carry the
static counts that the workflow reads while planning; those imports must not
fail (or pay for compilation) where only the counts are needed.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    from numba import njit as _njit
    from numba.core.compiler import CompilerBase, DefaultPassBuilder
except ImportError:  # pragma: no cover - numba is a declared dependency
    _njit = None
    CompilerBase = object


class _NoAliasCompiler(CompilerBase):  # type: ignore[misc, valid-type]
    """Numba's nopython pipeline with every pointer argument of the compiled function marked ``noalias``
    (Numba's own ``noalias`` flag, which ``njit`` does not expose): LLVM then knows the arrays passed in do
    not overlap, and vectorises a loop without the runtime overlap checks it otherwise emits per pair of
    arrays, which dominate short loops."""

    def define_pipelines(self):
        self.state.flags.noalias = True
        return [DefaultPassBuilder.define_nopython_pipeline(self.state)]


def jit(noalias: bool = False, **options: Any) -> Callable[[Any], Any]:
    """``numba.njit(**options)`` when Numba is importable, else the function unchanged.

    ``noalias=True`` promises that no array the function writes overlaps any other array argument (arrays only
    read may share memory); breaking that promise is undefined behaviour, so callers that pass it check it.
    Numba's on-disk cache is keyed on the compiled function's source file, not on this flag: change the flag
    where the kernel is compiled (which invalidates its cache), not here alone.
    """

    def decorate(fn: Any) -> Any:
        if _njit is None:
            return fn
        return _njit(pipeline_class=_NoAliasCompiler, **options)(fn) if noalias else _njit(**options)(fn)

    return decorate


#: the kernels this process has compiled or loaded from the cache (:func:`compile_once`)
_READY: set[str] = set()


def compile_once(name: str, call: Callable[[], Any], wait: float = 900.0) -> None:
    """Run ``call`` (a kernel's first call, which compiles it or loads it from Numba's on-disk cache) holding a
    lock named ``name`` that every process of this user on this machine shares; once per process.

    Jobs that start together on a machine with a cold cache (two Snakemake jobs, the ranks of one run, a test
    beside a study) would each compile the same kernel, minutes of a core each: with the lock one compiles and
    writes the cache while the others wait, then load it. The lock is the kernel's own, so different kernels still
    compile side by side; it is an advisory ``flock`` on a file under the temporary directory, released if its
    holder dies; after ``wait`` seconds of waiting (a holder stopped, not dead) ``call`` runs unlocked. ``call``
    must not communicate (a rank waiting here would hold up its peers)."""
    if name in _READY:
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: compile unlocked
        fcntl = None
    folder = Path(tempfile.gettempdir()) / f"hetval-numba-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    with open(folder / f"{name}.lock", "a") as lock:
        held = False
        deadline = time.monotonic() + wait
        while fcntl is not None and not held and time.monotonic() <= deadline:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
            except BlockingIOError:  # past the deadline a holder is stopped, not dead (its lock would be gone)
                time.sleep(0.1)
        try:
            call()
        finally:
            if held:
                fcntl.flock(lock, fcntl.LOCK_UN)
    _READY.add(name)
