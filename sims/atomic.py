"""The one way hetval writes a file: to a temporary file beside it, fsynced, then renamed over it.

A reader (another process, a later stage, a user's notebook) sees either the
old file or the complete new one, never a partial write. New files get the
permissions the process's umask gives an ordinary file (e.g. 0644), not the
0600 of :func:`tempfile.mkstemp`, so a shared project directory stays readable
by the group.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_UMASK = threading.Lock()  # without /proc the umask is read by setting it: two threads at once would leave it 0
_STATUS = "/proc/self/status"


def _umask_mode() -> int:
    """The mode the umask gives a new file: read from ``/proc`` where it is there (no moment with the umask at 0,
    in which another thread's new file would be world-writable), else by setting it and back, under a lock."""
    try:
        with open(_STATUS, encoding="ascii") as fh:
            mask = next((int(line.split()[1], 8) for line in fh if line.startswith("Umask:")), None)
    except (OSError, ValueError, IndexError):
        mask = None
    if mask is None:
        with _UMASK:
            mask = os.umask(0)
            os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on a clean exit it is fsynced and renamed onto ``path``.

    For writers that insist on opening the file themselves (``pyarrow.parquet.write_table``,
    ``DataFrame.to_parquet``, ``Figure.savefig``). On an exception the temporary file is removed
    and ``path`` is untouched.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # named as the file meant, not its temporary name
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError | FileExistsError | PermissionError):
            # a full disk, a read-only file system: named as the file meant (the writer saw only the temporary)
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_parquet(frame, path: str | os.PathLike[str]) -> None:
    """Write a pandas DataFrame (or a pyarrow Table) as Parquet to ``path`` atomically, without its index."""
    with atomic_path(path) as tmp:
        if hasattr(frame, "to_parquet"):
            if getattr(frame, "attrs", None):  # in-memory annotations are not part of the file
                frame = frame.copy(deep=False)
                frame.attrs = {}
            frame.to_parquet(tmp, index=False)
        else:
            import pyarrow.parquet as pq

            pq.write_table(frame, tmp)


@contextlib.contextmanager
def parquet_writer(threads: int = 2) -> Iterator[Callable[[Any, str | os.PathLike[str]], None]]:
    """``write(frame_or_table, path)``: :func:`atomic_write_parquet` on one of ``threads`` threads while the
    caller prepares the next file (Parquet's encoding and compression release the GIL); on leaving, every
    write has finished and the first error is raised."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        pending: list[Any] = []
        yield lambda frame, path: pending.append(pool.submit(atomic_write_parquet, frame, path))
        for done in pending:
            done.result()


@contextlib.contextmanager
def staged_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a staging directory beside ``path``; on a clean exit each file in it is renamed into ``path`` (its
    subdirectories made; a symbolic link where one of them or a file goes is replaced, never written through),
    on an exception the staging directory is removed and ``path`` is untouched: a full disk or a kill mid-way
    never leaves an output directory half new and half old."""
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{path.name}.staging-", dir=path.parent))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    try:
        yield stage
        path.mkdir(exist_ok=True)
        for src in sorted(p for p in stage.rglob("*") if p.is_file()):
            dst = path / src.relative_to(stage)
            folder = path
            for part in src.relative_to(stage).parts[:-1]:  # a link below the output is replaced, never followed
                folder = folder / part
                if folder.is_symlink():
                    folder.unlink()
                folder.mkdir(exist_ok=True)
            if dst.is_symlink():
                dst.unlink()
            os.replace(src, dst)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
