"""The one interface of a report section, and the blocks its content is made of.

A section reads the :class:`~analysis.report.common.Inputs`, writes its figures
and returns a :class:`SectionOutput`: content *blocks* (headings, paragraphs,
tables, figures, lists - data, never HTML), the lines it adds to
``summary.txt``, and notes. The page template (``templates/page.html.j2``)
renders the blocks with autoescaping, so no section builds HTML by hand.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.report.common import NA, TABLE_ROWS, FigureEntry, Inputs

#: Long tables collapse into a <details> element past this many rows.
COLLAPSE_ROWS = 25


@dataclass
class SectionOutput:
    """What one section contributes to the page and the summary."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    figures: list[FigureEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def heading(self, text: str, level: int = 2, anchor: str | None = None) -> None:
        self.blocks.append({"kind": "heading", "text": text, "level": level, "anchor": anchor})

    def para(self, text: str, css: str = "", bold: str = "", links: list[tuple[str, str]] | None = None,
             small: bool = False) -> None:
        """A paragraph; ``css``: ``what`` (what this shows), ``missing``, ``alert``, ``good`` or plain."""
        self.blocks.append({"kind": "para", "text": text, "css": css, "bold": bold, "links": links or [],
                            "small": small})

    def table(self, header: list[str], rows: list[list[str]], caption: str = "", total: int | None = None,
              source: str = "") -> None:
        """A table (cells are text; ``n/a`` cells are greyed); long ones collapse past :data:`COLLAPSE_ROWS`.
        At most :data:`~analysis.report.common.TABLE_ROWS` rows are shown; ``total`` (the rows there are, when
        the caller formatted only the first ones) and ``source`` (the file holding them all) say so."""
        total = max(total or 0, len(rows))
        rows = rows[:TABLE_ROWS]
        if total > len(rows):
            caption = f"{caption} - the first {len(rows)} of {total} rows" + (f"; all in {source}" if source else "")
        self.blocks.append({"kind": "table", "header": [str(h) for h in header],
                            "rows": [[str(c) for c in r] for r in rows], "caption": caption,
                            "collapse": len(rows) > COLLAPSE_ROWS, "na": NA})

    def cell_table(self, header: list[str], rows: list[list[dict[str, str]]], caption: str = "") -> None:
        """A table whose cells each have ``text`` and optionally ``href`` (a link) and ``css`` (a class)."""
        self.blocks.append({"kind": "cells", "header": [str(h) for h in header], "caption": caption,
                            "rows": [[{"text": str(c.get("text", "")), "href": c.get("href") or "",
                                       "css": c.get("css") or ""} for c in r] for r in rows]})

    def figures_block(self, entries: list[FigureEntry], empty: str) -> None:
        self.figures.extend(entries)
        self.blocks.append({"kind": "figures", "entries": entries, "empty": empty})

    def items(self, items: list[str]) -> None:
        self.blocks.append({"kind": "items", "items": [str(i) for i in items]})


class Section(abc.ABC):
    """A part of the report. Subclasses set ``title`` and implement :meth:`build`."""

    title: str = ""

    @abc.abstractmethod
    def build(self, inputs: Inputs, out_dir: Path) -> SectionOutput:
        """Read the inputs, write the figures into ``out_dir``, return the content."""

    def __repr__(self) -> str:
        return f"<section {type(self).__name__}>"
