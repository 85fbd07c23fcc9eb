"""How the validation's Dask tasks run: an allocator fit for whole-array NumPy, and a gather that notices
a cluster left without workers.

**Allocation.**
Distributed's nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_`` set (65536 by default, from the
config ``distributed.nanny.pre-spawn-environ``) so that freed memory goes back to the system. Setting
any of glibc's thresholds switches off its *dynamic* mmap threshold: from then on every allocation above
128 KiB is a fresh ``mmap``, zero-filled page by page, and every free an ``munmap``. Validation's tasks
are NumPy over temporaries of megabytes each (bootstrap planes, partitions), so in such a worker they
run at a fraction of their speed (``benchmarks/bench_validate.py`` measures it).

:func:`for_arrays` sets the thresholds a plain process reaches by itself after its first large free
(glibc's dynamic maximum: mmap above 32 MiB, trim above twice that). Every task function of the
validation calls it first; it is idempotent, per process, and does nothing off glibc. It changes how
the worker's memory is recycled, not how much the task uses.

**The validating process.** The client of a large validation allocates and frees gigabytes of columns
and arrays while it scores. Where freed memory goes back to the system, every reuse is a fresh mapping
faulted in page by page, which costs most where the machine is a virtual one (at a million runs: 39 s of
system time in the client). :func:`keep_memory` keeps it instead: glibc serves every allocation, of every
thread, from its one heap and trims it only above a gigabyte free, and Arrow allocates through glibc, not
its own allocator.
The CLI calls it for ``hetval validate``; a library caller chooses for its own process. (The same
allocator for the workers, set in their environment before they start, made no measurable difference.)

**Gathering.** A worker that dies is replaced (or its tasks rerun on the others), which a plain
``client.gather`` waits for; a cluster that has lost *every* worker would make it wait forever.
:func:`gather_watched` gathers while watching the worker count and fails in one line
(:class:`WorkersLost`) once the cluster has been empty for the patience given (the validation's connect
timeout).

**Handing results over.** A file task's result is tens of megabytes of frames (a million-run SA file: 75 MB),
which the cluster's TCP comm carried at about 100 MB/s on a two-core machine: seconds per case in which the
workers had finished. Where a worker sees the client's file system, it pickles its result into a directory the
client made (:class:`HandOff`) and returns only the file's path; the client loads and removes it
(:func:`received`). A worker on another node does not see that directory and returns its result through the
comm as before. The scoring tasks' inputs go the other way alike (:func:`opened`, removed once
their task is done: :func:`discard`) where every worker is this host's (a local cluster of processes). Where the
temporary directory is a tmpfs, these files are memory, as the results held by the workers were.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import pickle
import re
import shutil
import socket
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
#: Free memory at the heap's top that :func:`keep_memory` lets a process keep.
KEPT_FREE = 1 << 30


@functools.cache
def _mallopt() -> Any:
    """glibc's ``mallopt``, or None off glibc (musl, macOS: nothing to change)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


@functools.cache
def for_arrays() -> bool:
    """Large temporaries reuse freed heap memory in this process; True when glibc took the settings."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


@functools.cache
def keep_memory() -> bool:
    """This process keeps the memory it frees for its next allocations (see the module's docstring): every
    allocation from glibc's one heap, trimmed above :data:`KEPT_FREE` free, and Arrow's through glibc. Call it
    before the process starts a thread (one arena for every thread binds only threads started after it).
    True when glibc took the settings."""
    mallopt = _mallopt()
    took = mallopt is not None and all(bool(mallopt(option, value)) for option, value in (
        (_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, KEPT_FREE)))
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    return took


class WorkersLost(RuntimeError):
    """The validation's Dask cluster has had no worker for longer than the connect timeout (one line)."""


def gather_watched(client: Any, futures: list[Any], patience: float, poll: float = 2.0,
                   progress: Any = None, every: float = 10.0) -> list[Any]:
    """``client.gather(futures)``, failing with :class:`WorkersLost` when the cluster has had no worker for
    ``patience`` seconds (the results would never come) - a worker that dies is otherwise replaced or its
    tasks rerun elsewhere, which a plain gather waits for. ``progress(done, total)`` is called every
    ``every`` seconds while tasks remain."""
    from distributed import wait

    alone_since = None
    said = time.monotonic()
    while True:
        try:
            wait(futures, timeout=poll)
            return client.gather(futures)
        except TimeoutError:
            pass
        if progress is not None and time.monotonic() - said >= every:
            said = time.monotonic()
            progress(sum(1 for f in futures if f.done()), len(futures))
        if client.scheduler_info().get("workers"):
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > patience:
            left = sum(1 for f in futures if not f.done())
            raise WorkersLost(f"the Dask cluster has had no worker for {patience:g} s with {left} validation "
                              "task(s) unfinished (workers killed or out of memory?)")


@dataclass(frozen=True)
class Handed:
    """A task's result left in a file of a :class:`HandOff` directory (what the task returns instead)."""

    path: str


class HandOff:
    """A directory made by the client under the system's temporary directory, removed with everything in it
    when the block ends, through which tasks on workers that see it hand their results over (:func:`hand_over`).
    Its name carries this host's name and this process's id, and is otherwise unique, so a worker on another host
    cannot mistake a directory of its own for it, and a later validation on this host knows a killed one's."""

    PREFIX = "hetval-handoff-"

    def __init__(self) -> None:
        self.mine = f"{self.PREFIX}{socket.gethostname()}-"
        self.removed_stale = self._remove_stale()
        self.path = Path(tempfile.mkdtemp(prefix=f"{self.mine}{os.getpid()}-"))

    def _remove_stale(self) -> list[str]:
        """Remove the directories this host's validations left when killed (their process is gone); where this
        host has no ``/proc`` to ask, none."""
        if not Path("/proc/self").exists():
            return []
        gone = []
        for d in Path(tempfile.gettempdir()).glob(f"{self.mine}*-*"):
            named = re.fullmatch(r"(\d+)-[a-z0-9_]+", d.name[len(self.mine):])  # mkdtemp's suffix has no "-"
            if named and not Path(f"/proc/{named[1]}").exists() and d.is_dir() and not d.is_symlink():
                shutil.rmtree(d, ignore_errors=True)
                if not d.exists():
                    gone.append(str(d))
        return gone

    def __enter__(self) -> HandOff:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def hand_over(result: Any, directory: str | None) -> Any:
    """``result`` pickled into ``directory`` (atomically, under a name of its own: a task run again writes
    another file), returning its :class:`Handed`; ``result`` itself where this host has no such directory."""
    if not directory or not os.path.isdir(directory):
        return result
    final = os.path.join(directory, f"{uuid.uuid4().hex}.pickle")
    try:
        with open(final + ".part", "wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(final + ".part", final)
    except OSError:  # not writable here, or the disk full: through the comm
        with contextlib.suppress(OSError):
            os.unlink(final + ".part")
        return result
    return Handed(final)


def opened(value: Any) -> Any:
    """A task's input: what a :class:`Handed` points to (its file kept: a task run again reads it again, and
    the :class:`HandOff` removes it), else ``value``."""
    if not isinstance(value, Handed):
        return value
    with open(value.path, "rb") as fh:
        return pickle.load(fh)  # noqa: S301 - this validation's own processes wrote it, into its own directory


def discard(value: Any) -> None:
    """Remove the file of a task input handed over (:func:`hand_over`) once its task's result is in."""
    if isinstance(value, Handed):
        with contextlib.suppress(OSError):
            os.unlink(value.path)


def received(value: Any) -> Any:
    """A gathered task result: the result a :class:`Handed` points to (loaded, its file removed), else
    ``value``."""
    out = opened(value)
    discard(value)
    return out
