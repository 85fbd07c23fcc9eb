"""Each characterisation replicate's figures beside the pooled ones: the platform level of every interval.

A study characterises each platform in several replicates (:mod:`sims.bench.replicates`); validation predicts
every run with the pooled platform file and, once more, with each replicate's own (scored with no intervals of
their own). :func:`attach_replicates` puts each replicate's figure of a row beside the pooled one, as a list
column ``<figure>_replicates`` (replicate order) in every validation table that has the figure:

- ``tightness`` (every run table) and ``rate_predicted`` (``peach_runs``), from which the scorecard resamples
  the replicates (:mod:`analysis.scoring.scorecard`);
- ``kendall_tau`` and ``top1_noise_aware`` (the fidelity tables), whose scorecard intervals then span what the
  replicates give.

Rows are matched on their identity columns (:data:`KEYS` present in the table); a table whose rows those do not
identify gets no replicate columns rather than misattributed ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

#: The figures that depend on the platform parameters and are carried per replicate.
FIGURES = ("tightness", "rate_predicted", "kendall_tau", "top1_noise_aware")
#: Columns that identify a row of a validation table (those present in the table are used).
KEYS = ("run_id", "study", "case", "platform", "size", "axis", "quantity", "model", "workload", "frequency",
        "grid", "order", "boundary", "ranks", "fixed", "variant")


def replicate_column(figure: str) -> str:
    """The list column holding ``figure`` per replicate."""
    return f"{figure}_replicates"


def _key(frame: pd.DataFrame, keys: list[str]) -> pd.Series:
    return frame[keys].astype("string").fillna("<NA>").agg("\x1f".join, axis=1) if len(frame) else pd.Series(
        [], dtype="string")


def attach(pooled: pd.DataFrame, alone: Sequence[pd.DataFrame | None]) -> pd.DataFrame:
    """``pooled`` with a ``<figure>_replicates`` list column for each of its :data:`FIGURES` (module notes)."""
    figures = [f for f in FIGURES if f in pooled.columns]
    keys = [k for k in KEYS if k in pooled.columns]
    if not figures or not keys or not len(pooled):
        return pooled
    own = _key(pooled, keys)
    if own.duplicated().any():
        return pooled
    out = pooled.copy()
    for figure in figures:
        columns = []
        for frame in alone:
            if frame is None or figure not in frame.columns or not set(keys) <= set(frame.columns) or not len(frame):
                columns.append(np.full(len(pooled), np.nan))
                continue
            theirs = pd.Series(pd.to_numeric(frame[figure], errors="coerce").to_numpy(dtype=float),
                               index=_key(frame, keys))
            theirs = theirs[~theirs.index.duplicated()]
            columns.append(theirs.reindex(own.to_numpy()).to_numpy(dtype=float))
        stacked = np.column_stack(columns) if columns else np.empty((len(pooled), 0))
        out[replicate_column(figure)] = pd.Series([row.tolist() for row in stacked], index=pooled.index, dtype=object)
    return out


def attach_replicates(scored: Mapping[str, pd.DataFrame],
                      alone: Sequence[Mapping[str, pd.DataFrame]]) -> dict[str, pd.DataFrame]:
    """Every table of one case's ``scored`` tables with its replicates' figures (``alone``: each replicate's tables
    of the same names)."""
    return {name: attach(frame, [a.get(name) for a in alone]) if isinstance(frame, pd.DataFrame) else frame
            for name, frame in scored.items()}
