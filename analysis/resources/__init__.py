"""Files hetval itself needs, shipped inside the package (so a non-editable ``pip install .`` has them):
the study schema and the papers' published tables. A study's own config lives with the study
(``config/config.yaml`` and ``config/studies/`` in a checkout), not here."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
#: JSON schema (YAML) of a study config's top-level keys; each case adds its section's schema.
CONFIG_SCHEMA = HERE / "config.schema.yaml"
#: The papers' machine tables (platform catalogs with provenance): published claims are recomputed from them.
PUBLISHED_MACHINES = HERE / "published" / "machines"
#: The papers' measured tables the ``published`` case ingests as runs.
PUBLISHED_MEASUREMENTS = HERE / "published" / "measurements"
