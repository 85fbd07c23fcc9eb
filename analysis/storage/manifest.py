"""The gather manifest's account of the dataset: every data file of a study with its size, mtime and
SHA-256, and what differs from it now (a file missing, added, or changed; the dataset's layout)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from analysis.planning.retry import read_json
from analysis.storage.schema import DATASET_SCHEMA


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def study_files(runs_dir: str | Path, study: str,
                previous: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Every data file of ``study`` (path relative to ``runs_dir``) with its size, mtime and SHA-256; a file
    whose size and mtime match ``previous`` keeps its recorded checksum (it was not rewritten)."""
    runs_dir = Path(runs_dir)
    out = {}
    for path in sorted(runs_dir.glob(f"study={study}/case=*/*.parquet")):
        st = path.stat()
        rel = path.relative_to(runs_dir).as_posix()
        old = (previous or {}).get(rel) or {}
        same = old.get("bytes") == st.st_size and old.get("mtime_ns") == st.st_mtime_ns and old.get("sha256")
        out[rel] = {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns,
                    "sha256": old["sha256"] if same else sha256_of(path)}
    return out


def check_manifest(manifest: str | Path, runs_dir: str | Path, study: str) -> list[str]:
    """What differs between ``study``'s data files and what the gather that wrote ``manifest`` left: a file
    missing, added, or whose content changed (its SHA-256 is computed only when size or mtime moved). An
    empty list when they agree (or there is no manifest yet: nothing to compare)."""
    manifest = Path(manifest)
    if not manifest.exists():
        return []
    doc = read_json(manifest)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        return [f"{manifest} does not read as a gather manifest"]
    recorded: dict[str, dict[str, Any]] = doc["files"]
    runs_dir = Path(runs_dir)
    problems = []
    if doc.get("dataset_schema", 1) != DATASET_SCHEMA:
        problems.append(f"the dataset was gathered in layout {doc.get('dataset_schema', 1)}; this hetval writes "
                        f"layout {DATASET_SCHEMA}")
    present = {p.relative_to(runs_dir).as_posix(): p for p in runs_dir.glob(f"study={study}/case=*/*.parquet")}
    for rel in sorted(set(recorded) - set(present)):
        problems.append(f"{runs_dir / rel} is missing")
    for rel in sorted(set(present) - set(recorded)):
        problems.append(f"{runs_dir / rel} was not written by gather")
    for rel in sorted(set(present) & set(recorded)):
        st, old = present[rel].stat(), recorded[rel]
        if st.st_size == old.get("bytes") and st.st_mtime_ns == old.get("mtime_ns"):
            continue
        if st.st_size != old.get("bytes") or sha256_of(present[rel]) != old.get("sha256"):
            problems.append(f"{runs_dir / rel} changed since gather wrote it")
    return problems


