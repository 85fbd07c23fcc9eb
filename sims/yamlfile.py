"""The one reader of YAML mappings (configs, run specs, platform files, published catalogs).

Every error is one line naming the file and what is wrong with it; callers wrap it into their own
error type (``ConfigError``, ``SpecError``, ...) so the user sees the error of the stage they ran.
"""

from __future__ import annotations

import os
from typing import Any


class YAMLFileError(ValueError):
    """A YAML file is missing, unreadable, not YAML, or not a mapping (one-line message)."""


def load_mapping(path: str | os.PathLike[str], what: str = "file") -> dict[str, Any]:
    """The mapping at ``path`` (an empty file is an empty mapping)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when present
    except FileNotFoundError:
        raise YAMLFileError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise YAMLFileError(f"{path}: cannot read the {what} ({getattr(exc, 'strerror', None) or exc})") from None
    except yaml.YAMLError as exc:
        raise YAMLFileError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise YAMLFileError(f"{path}: the {what} must be a mapping of keys (top level)")
    return doc
