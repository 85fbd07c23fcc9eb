"""The between-study spreads shipped with hetval (``between_studies.json``), measured on real nights.

Two fresh studies of the same code on one machine differ by more than either study's own repetitions and
characterisation replicates show: each has its own characterisation and its own moments, shared by all its runs.
``benchmarks/bench_nights.py`` measures that spread over real nights and writes it here; ``hetval track`` judges a
short history against it and the scorecard widens its intervals by the part of it no within-study level shows.
"""

from __future__ import annotations

import json
import math
import os
from functools import cache
from importlib import resources
from pathlib import Path

#: the file, beside this module
SPREADS_FILE = "between_studies.json"
#: an environment variable naming another file of the same form (spreads measured on another kind of machine)
SPREADS_ENV = "HETVAL_BETWEEN_STUDIES"


@cache
def shipped_spreads(path: str | None = None) -> dict[str, float]:
    """Key ``<kind>/<case or processor role>/<metric>`` (``<kind>/*/<metric>``: the fallback) to a standard
    deviation between two studies on the scale the figure is judged on (log units for relative figures): from
    ``path``, else the file shipped beside this module."""
    if path:
        text = Path(path).read_text(encoding="utf-8")
    else:
        text = resources.files("analysis.resources").joinpath(SPREADS_FILE).read_text(encoding="utf-8")
    return {str(k): float(v) for k, v in json.loads(text)["spread"].items()}


def shipped_spread(kind: str, where: str, metric: str, spreads: dict[str, float] | None = None) -> float:
    """The shipped spread of one figure (NaN when none is shipped for it); ``spreads`` replaces the file's, and
    the file named by ``$HETVAL_BETWEEN_STUDIES`` the shipped one."""
    spreads = shipped_spreads(os.environ.get(SPREADS_ENV) or None) if spreads is None else spreads
    for key in (f"{kind}/{where}/{metric}", f"{kind}/*/{metric}"):
        if key in spreads:
            return spreads[key]
    return math.nan
