"""What the ``hetval`` command accepts: usage errors in one line, the Dask workers' SLURM flags, and its paths: inputs that must exist (the published tables, the history), outputs it may write (never under
the kernel's pseudo-file systems, never on a closed file system, a file never where a directory goes), and the
scorecards ``compare`` reads - each refusal one line (:class:`InputError`, exit 2)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any


class InputError(Exception):
    """A missing or malformed input named on the command line (one-line message, exit 2)."""


def existing(path: str | os.PathLike[str], what: str, directory: bool = False) -> Path:
    p = Path(path)
    if not p.exists():
        raise InputError(f"{what} {p} does not exist")
    if directory and not p.is_dir():
        raise InputError(f"{what} {p} is not a directory")
    if not directory and p.is_dir():
        raise InputError(f"{what} {p} is a directory, not a file")
    return p


#: where no command writes: the file system's root and the kernel's pseudo-file systems
NO_OUTPUT = ("/proc", "/sys", "/dev", "/run")


def output_path(path: str | os.PathLike[str] | None, what: str, directory: bool = True) -> Path | None:
    """An output path a command may write: not under the kernel's pseudo-file systems or the root itself, not a
    file where a directory goes (or the other way round), and the nearest folder that exists is writable (a
    read-only or otherwise closed file system costs seconds, not a whole validation)."""
    if path is None:
        return None
    p = Path(path)
    where = os.path.realpath(p)
    if where == "/" or any(where == d or where.startswith(d + "/") for d in NO_OUTPUT):
        raise InputError(f"{what} {p}: no output goes there (the root or a kernel pseudo-file system)")
    if p.exists() and directory and not p.is_dir():
        raise InputError(f"{what} {p} is a file, not a directory")
    if p.exists() and not directory and p.is_dir():
        raise InputError(f"{what} {p} is a directory, not a file")
    parent = Path(where) if directory else Path(where).parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK) or read_only(parent):
        raise InputError(f"{what} {p}: {parent} cannot be written (read-only or not permitted)")
    return p


def read_only(folder: Path) -> bool:
    """Whether ``folder`` lies on a file system mounted read-only (root may write anywhere else)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def scorecard_of(arg: str) -> Path | None:
    """The scorecard ``arg`` names: a scorecard.parquet, or a validation directory holding one; None otherwise."""
    path = Path(arg)
    if path.is_dir():
        path = path / "scorecard.parquet"
    return path if path.is_file() and path.suffix == ".parquet" else None


def scorecard_table(path: Path) -> Any:
    """The scorecard at ``path`` as a frame; one that does not read, or another table, is an input error."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0] if str(exc) else 'no detail'})"
                         ) from None
    name = (table.schema.metadata or {}).get(b"hetval.table", b"").decode()
    if name != "scorecard" or "workload_class" not in table.column_names:
        raise InputError(f"{path}: a {name or 'foreign'!r} table, not a scorecard (compare two scorecards)")
    return table.to_pandas()


def published_dir(arg: str | None):
    if arg is None:
        from analysis.resources import PUBLISHED_MACHINES

        return PUBLISHED_MACHINES
    return existing(arg, "--published", directory=True) if arg else None


def history_of(config: dict, history: str | None, study: str | None) -> tuple[Any, str, dict]:
    """The history frame of the chosen study (``study``, else the config's), its path (``history``, else the
    config's ``history.path``) and the config's ``history`` section."""
    from analysis.tracking import history as store

    section = dict(config.get("history") or {})
    path = history or section.get("path")
    if not path:
        raise InputError("no history: history.path is null in the config and --history was not given")
    study = study or config["study"]
    frame = store.read(path, study, columns=store.TRACK_COLUMNS)
    if not len(frame):
        raise InputError(f"the history at {path} holds no snapshot of study {study!r}: run a validation first")
    return frame, str(path), section


class OneLineParser(argparse.ArgumentParser):
    """argparse, its usage errors in one line (exit 2) that names ``--help`` instead of printing the usage."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def check_worker_flags(args: argparse.Namespace) -> None:
    """``validate``'s ``--worker-*`` flags: the SLURM words a worker job script carries, held to what the config's
    keys may hold (:func:`analysis.planning.checks.check_slurm_text`)."""
    from analysis.planning.checks import ConfigError, check_slurm_text

    try:
        check_slurm_text({"validate": {"worker_memory": args.worker_memory, "worker_walltime": args.worker_walltime},
                          "platforms": [{"slurm": {"partition": args.worker_partition or None,
                                                   "account": args.worker_account or None}}]})
    except ConfigError as exc:
        raise InputError(f"{exc} (the --worker-* flags)") from None
