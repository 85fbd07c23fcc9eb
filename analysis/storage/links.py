"""Gather neither reads nor writes through a symbolic link below the directories it was given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from analysis.storage.schema import DatasetSchemaError


def refuse_links(raw_files: list[Path], runs_dir: Path, quarantine_dir: Path, retry_dir: Path,
                 matrix: Any) -> None:
    """Gather neither reads nor writes through a symbolic link below the directories it was given: a study's
    raw-record directory, its partitions, its quarantine or retry directory that is a link is refused (a
    record file that is one is quarantined: :func:`read_raw_file`)."""
    studies = {p.parent.name for p in raw_files} | ({matrix.study} if matrix else set())
    places = {p.parent for p in raw_files}
    for study in studies:
        places |= {quarantine_dir / study, retry_dir / study, runs_dir / f"study={study}"}
        places |= set((runs_dir / f"study={study}").glob("case=*")) if (runs_dir / f"study={study}").is_dir() else set()
    for place in sorted(places):
        if place.is_symlink():
            raise DatasetSchemaError(f"{place} is a symbolic link (to {os.readlink(place)}): gather neither reads nor "
                                     "writes through one; make it the directory it stands for")
