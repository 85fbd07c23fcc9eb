"""The report section on the papers' own numbers: recomputed from their own inputs, reproduced or not."""

from __future__ import annotations

import html
from pathlib import Path


def section(validation_dir: Path) -> tuple[str, list[str]]:
    """HTML and summary lines for ``published.parquet``."""
    import pandas as pd

    path = Path(validation_dir) / "published.parquet"
    if not path.exists():
        note = "published.parquet is missing: the papers' claims were not recomputed."
        return f'<h2>Published studies</h2><p class="missing">{html.escape(note)}</p>', [note]
    df = pd.read_parquet(path)
    if df.empty:
        note = "published.parquet is empty: no published catalogs were given to the validation job."
        return f'<h2>Published studies</h2><p class="missing">{html.escape(note)}</p>', [note]
    lines = ["published claims recomputed from the papers' own inputs (reproduced / total):"]
    parts = ["<h2>Published studies: the papers' numbers from their own inputs</h2>",
             '<p class="what">What this shows: each number, ordering or category a paper prints, recomputed with '
             "hetval's models from that paper's machine table (config/platforms/published/) and workload "
             "parameters; nothing is fitted or adjusted. A claim that does not reproduce is shown with both "
             "numbers.</p>"]
    for paper, g in df.groupby("paper", sort=True):
        ok = int(g["reproduced"].sum())
        lines.append(f"  {paper}: {ok} / {len(g)}")
        head = "".join(f"<th>{h}</th>" for h in ("where", "platform", "quantity", "unit", "published", "ours",
                                                  "reproduced", "computed from", "note"))
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
                r.where, r.platform, r.quantity, r.unit, r.published, r.ours,
                "yes" if r.reproduced else "NO", r.inputs, r.note)) + "</tr>"
            for r in g.itertuples())
        parts.append(f"<h3>{html.escape(paper)}: {ok} of {len(g)} reproduced</h3>"
                     f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    return "\n".join(parts), lines
