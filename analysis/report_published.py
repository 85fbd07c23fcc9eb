"""The report section on the papers' own numbers: recomputed from their own inputs, reproduced or not."""

from __future__ import annotations

import html
from pathlib import Path

from analysis.report import fmt_fraction, html_table


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
        rows = [[str(v) for v in (r.where, r.platform, r.quantity, r.unit, r.published, r.ours,
                                  "yes" if r.reproduced else "NO", r.inputs, r.note)] for r in g.itertuples()]
        parts.append(f"<h3>{html.escape(paper)}: {ok} of {len(g)} reproduced</h3>" + html_table(
            ["where", "platform", "quantity", "unit", "published", "ours", "reproduced", "computed from", "note"], rows))
    runs_path = Path(validation_dir) / "published_runs.parquet"
    if runs_path.exists():
        from analysis import published_runs

        pr = pd.read_parquet(runs_path)
        pf_path = Path(validation_dir) / "published_fidelity.parquet"
        pf = pd.read_parquet(pf_path) if pf_path.exists() else pd.DataFrame()
        lines += ["", *published_runs.summary_lines(pr, pf)]
        if len(pr):
            rows = [[r.application, r.variant, f"{r.time_s:.4g}", f"{r.time_predicted_s:.4g}", f"{r.energy_j:.4g}",
                     f"{r.energy_predicted_j:.4g}", f"{r.rate_error:+.3f}", f"{r.efficiency_error:+.3f}",
                     "yes" if r.same_configuration else "no"] for r in pr.itertuples()]
            parts.append("<h3>Published measurements as runs (energy_source: published)</h3>" + html_table(
                ["application", "strategy/objective", "time per unit (measured)", "predicted",
                 "energy per unit (measured)", "predicted", "rate error", "efficiency error", "same configuration"],
                rows) + '<p class="what">What this shows: the measurements a paper prints, ingested as run records '
                "and scored like any run against the prediction the paper prints next to them (the paper "
                "does not publish these applications' model inputs, so hetval cannot recompute the "
                "predictions). Time and energy are per unit of work.</p>")
            if len(pf):
                parts.append(html_table(
                    ["application", "axis", "n", "kendall tau", "top-1", "selection penalty", "best measured",
                     "best predicted"],
                    [[r.application, r.axis, str(r.n_alternatives), fmt_fraction(r.kendall_tau),
                      fmt_fraction(r.top1_agreement), fmt_fraction(r.selection_penalty), r.best_measured,
                      r.best_predicted] for r in pf.itertuples()]))
    return "\n".join(parts), lines
