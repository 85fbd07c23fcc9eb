"""Are two validations' tables identical? For a refactor: validate the same dataset with two checkouts, then

    python benchmarks/compare_tables.py OLD_VALIDATION_DIR NEW_VALIDATION_DIR

compares every ``*.parquet`` of the first directory with its namesake in the second, column by column
(Arrow equality: values, nulls and types; the files' metadata is ignored), and prints one line per table
and the columns that differ. Exit status 1 when any table differs or is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def compare(old: Path, new: Path) -> list[str]:
    """One line per table of ``old``: identical, or what differs in ``new``."""
    import pyarrow.parquet as pq

    lines = []
    for path in sorted(old.glob("*.parquet")):
        other = new / path.name
        if not other.exists():
            lines.append(f"MISSING    {path.name}")
            continue
        a, b = pq.read_table(path), pq.read_table(other)
        if a.schema.remove_metadata() != b.schema.remove_metadata():
            lines.append(f"SCHEMA     {path.name}: {set(a.column_names) ^ set(b.column_names) or 'types differ'}")
            continue
        differ = [c for c in a.column_names if not a[c].equals(b[c])]
        lines.append(f"{'DIFFERS' if differ else 'identical':10} {path.name} ({a.num_rows} rows)"
                     + (f": {', '.join(differ)}" if differ else ""))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    args = ap.parse_args()
    lines = compare(args.old, args.new)
    print("\n".join(lines))
    bad = [line for line in lines if not line.startswith("identical")]
    print(f"{len(lines) - len(bad)} of {len(lines)} table(s) identical")
    sys.exit(1 if bad or not lines else 0)


if __name__ == "__main__":
    main()
