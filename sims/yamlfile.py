"""The one reader of YAML mappings (configs, run specs, platform files, published catalogs).

Every error is one line naming the file and what is wrong with it; callers wrap it into their own
error type (``ConfigError``, ``SpecError``, ...) so the user sees the error of the stage they ran.
"""

from __future__ import annotations

import os
from typing import Any


class YAMLFileError(ValueError):
    """A YAML file is missing, unreadable, not YAML, or not a mapping (one-line message)."""


def _loader() -> Any:
    """YAML's safe loader (libyaml's where present) that refuses a key given twice in one mapping: YAML says
    keys are unique, and PyYAML would keep the last one silently."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class UniqueKeys(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str | int | float | bool):
                    continue
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key!r} is given twice (line {key_node.start_mark.line + 1})",
                        key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep)

    return UniqueKeys


def load_mapping(path: str | os.PathLike[str], what: str = "file") -> dict[str, Any]:
    """The mapping at ``path`` (an empty file is an empty mapping; a key given twice is an error)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.load(fh, Loader=_loader())
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
