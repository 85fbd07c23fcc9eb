"""What every report section shares: its inputs, number and text formatting, and figure writing.

:class:`Inputs` reads only what the report rule declares: the study's validation
tables (by name, on first use), ``summary.json``, its platform files (through
:func:`sims.platform_file.read_platform`, with the energy overlay) and the gather
manifest (quarantined records). Nothing here raises on a missing or empty input;
the sections say so on the page.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sims.vocab import ROLES, variant_order

if TYPE_CHECKING:  # matplotlib and pandas are imported inside the functions that need them
    import pandas as pd
    from matplotlib.axes import Axes

#: Keys that identify one comparison group of the WP cases.
GROUP_KEYS: tuple[str, ...] = ("study", "case", "platform", "size")
#: Per-group figures drawn of each kind; past it a section adds a figure of every group at once, so a report
#: of 10^4 groups is still one page drawn in about a minute (every group stays in the Parquet tables).
FIGURE_CAP = 24
#: Rows a table shows on the page, and lines a listing adds to summary.txt (the rest: in the Parquet files).
TABLE_ROWS = 400
PROCESSORS: tuple[str, ...] = ROLES
GIGA = 1e9
NA = "n/a"
NA_FOOTNOTE = (
    "n/a: the metric is undefined for that group, not zero. Kendall tau-b needs at least two "
    "alternatives and is undefined when all measured (or all predicted) values are tied; the "
    "other metrics need at least one alternative with both a measured and a predicted value "
    "(a missing platform parameter leaves the model without a prediction)."
)


@dataclass(frozen=True)
class Loaded:
    """One input table and what happened when reading it.

    Attributes
    ----------
    name : str
        File name, e.g. ``"runs.parquet"``.
    frame : pandas.DataFrame or None
        The rows; None when the file is missing or unreadable.
    status : str
        ``"ok"``, ``"missing"``, ``"empty"`` or ``"unreadable: <reason>"``.
    """

    name: str
    frame: pd.DataFrame | None
    status: str

    @property
    def usable(self) -> bool:
        """True when there is at least one row to show."""
        return self.frame is not None and len(self.frame) > 0


@dataclass(frozen=True)
class PlatformFile:
    """A characterised platform file (``results/platforms/<name>.yaml``)."""

    name: str
    source: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Quarantined:
    """One quarantined raw record: its path relative to the quarantine dir and the reason."""

    file: str
    reason: str


@dataclass(frozen=True)
class FigureEntry:
    """A written figure: file name (relative to the report dir), title and a "what this shows" line."""

    file: str
    title: str
    caption: str
    wide: bool = False  # drawn across the page (many bars), not two to a row


@dataclass
class Inputs:
    """Everything the report reads: validation tables by name (read on first use), summary, platforms, quarantine."""

    validation_dir: Path
    summary: dict[str, Any] | None
    summary_status: str
    platforms: list[PlatformFile]
    platform_problems: list[str] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    quarantine_status: str = "ok"
    #: runs not retried any more (the manifest's ``given_up``: run_id, attempts, why)
    given_up: list[dict[str, Any]] = field(default_factory=list)
    _tables: dict[str, Loaded] = field(default_factory=dict)

    def table(self, name: str) -> Loaded:
        """``<validation>/<name>.parquet``, read once."""
        if name not in self._tables:
            self._tables[name] = read_parquet(self.validation_dir / f"{name}.parquet")
        return self._tables[name]

    def frame(self, name: str) -> pd.DataFrame | None:
        """The table's rows, or None when it is missing, unreadable or empty."""
        t = self.table(name)
        return t.frame if t.usable else None

    @property
    def runs(self) -> Loaded:
        return self.table("runs")

    @property
    def fidelity(self) -> Loaded:
        return self.table("fidelity")

    @property
    def failed(self) -> Loaded:
        return self.table("failed")


def finite(x: Any) -> bool:
    """True for a real finite number (bools and None excluded)."""
    if x is None or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fmt_fraction(x: Any) -> str:
    """Format a fraction with 3 decimals; bools as yes/no; missing or NaN as ``n/a``.

    Examples
    --------
    >>> fmt_fraction(0.33333), fmt_fraction(float("nan")), fmt_fraction(True)
    ('0.333', 'n/a', 'yes')
    """
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return "yes" if x else "no"
    return f"{float(x):.3f}" if finite(x) else NA


def fmt_interval(row: Any, metric: str, digits: int = 2) -> str:
    """A figure with its bootstrap interval, ``"0.80 [0.60, 0.93]"`` (the bare value when the row has none)."""
    from analysis.scoring.uncertainty import format_interval

    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    value = get(metric)
    if not finite(value):
        return NA
    return format_interval(float(value), get(f"{metric}_lo", float("nan")), get(f"{metric}_hi", float("nan")),
                           digits)


def not_distinguishable(row: Any) -> bool:
    """True when a fidelity row says its alternatives cannot be told apart beyond noise."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    v = get("distinguishable", None)
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and not bool(v)


#: The ranking metrics a degenerate ranking makes meaningless (a table shows :func:`degenerate`'s label instead).
RANKING_CELLS = ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "top1_noise_aware",
                 "selection_penalty_noise_aware")


def degenerate(row: Any) -> str | None:
    """Why a fidelity row's ranking scores are not scores: ``"not distinguishable"`` when no measured alternative
    is slower than another beyond noise, ``"model ties all"`` when the model predicts every alternative the
    same; None for a ranking worth scoring."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    if not_distinguishable(row):
        return "not distinguishable"
    n, picks = get("n_alternatives", None), get("best_predicted", None)
    if finite(n) and isinstance(picks, str) and int(n) > 1 and len(picks.split(", ")) >= int(n):
        return "model ties all"
    return None


def fmt_sig(x: Any, digits: int = 3) -> str:
    """Format a number with ``digits`` significant digits; missing or NaN as ``n/a``."""
    return f"{float(x):.{digits}g}" if finite(x) else NA


def cell_text(x: Any) -> str:
    """Plain text for a cell that may be missing."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return NA
    try:
        import pandas as pd

        if pd.isna(x):
            return NA
    except (TypeError, ValueError):
        pass
    return str(x)


def mpl_text(s: str) -> str:
    """Stop matplotlib from reading ``$...$`` in data strings as mathtext."""
    return s.replace("$", r"\$")


def slug(*parts: Any) -> str:
    """A file-name-safe, collision-resistant name for a group of values."""
    joined = "|".join(cell_text(p) for p in parts)
    readable = re.sub(r"[^A-Za-z0-9._]+", "-", joined).strip("-")[:60]
    digest = hashlib.sha1(joined.encode()).hexdigest()[:8]
    return f"{readable}-{digest}" if readable else digest


def group_label(keys: Sequence[Any], size_label: Any = None) -> str:
    """``study / case / platform / <size>`` for a group key tuple: the case's own words for the size
    (``size_label``, e.g. ``matmul 1024² + transpose 8192² float32``) when known, else ``size=N``."""
    study, case, platform, size = (list(keys) + [None] * 4)[:4]
    if isinstance(size_label, str) and size_label:
        size_text = size_label
    else:
        size_text = "size=" + (str(int(size)) if finite(size) else cell_text(size))
    return f"{cell_text(study)} / {cell_text(case)} / {cell_text(platform)} / {size_text}"


def size_label_of(frame: Any) -> str | None:
    """The ``size_label`` of a group's rows (None when the table has none)."""
    if frame is None or "size_label" not in frame or not len(frame):
        return None
    value = frame["size_label"].iloc[0]
    return value if isinstance(value, str) else None


def variant_sort_key(variant: Any, alpha: Any = None) -> tuple[int, float, str]:
    """Order WPs as the papers do (CO, GO, p-DP, CP, CP-reverse), then DP(alpha) by alpha, then the rest."""
    return variant_order(cell_text(variant), float(alpha) if finite(alpha) else None)


def missing_columns(frame: pd.DataFrame, columns: Iterable[str]) -> list[str]:
    return [c for c in columns if c not in frame.columns]


def truthy(series: pd.Series) -> pd.Series:
    """A boolean mask from a column that may hold bools, 0/1 or nulls."""
    return series.astype("boolean").fillna(False).astype(bool)


def groupby(frame: pd.DataFrame, keys: Sequence[str]) -> Iterable[tuple[tuple[Any, ...], pd.DataFrame]]:
    """Group on the keys present in ``frame`` (null keys kept), yielding full 4-tuples of keys."""
    present = [k for k in keys if k in frame.columns]
    if not present:
        yield tuple(None for _ in keys), frame
        return
    for values, sub in frame.groupby(present, dropna=False, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        by_name = dict(zip(present, values, strict=True))
        yield tuple(by_name.get(k) for k in keys), sub


def first_groups(frame: pd.DataFrame, keys: Sequence[str],
                 cap: int = FIGURE_CAP) -> tuple[Iterator[tuple[tuple[Any, ...], pd.DataFrame]], int]:
    """The first ``cap`` groups of :func:`groupby` and how many there are in all (counted, not built)."""
    present = [k for k in keys if k in frame.columns]
    total = int(frame.groupby(present, dropna=False, sort=True).ngroups) if present and len(frame) else int(
        bool(len(frame)))
    return itertools.islice(groupby(frame, keys), cap), total


def capped_note(what: str, total: int, cap: int = FIGURE_CAP, overview: bool = False) -> str | None:
    """The note a capped figure list carries (None when nothing was left out); ``overview`` when the section also
    draws one figure of every group."""
    if total <= cap:
        return None
    return (f"{what}: {total} groups; the first {cap} are drawn one by one"
            + (", and the figure of every group after them shows them all" if overview else "")
            + " (each group's numbers are in the tables and their Parquet files).")


def read_parquet(path: Path) -> Loaded:
    """Read one parquet file, reporting missing / empty / unreadable instead of raising."""
    import pandas as pd
    import pyarrow as pa

    if not path.exists():
        return Loaded(path.name, None, "missing")
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        return Loaded(path.name, None, f"unreadable: {exc}")
    return Loaded(path.name, frame, "ok" if len(frame) else "empty")


def read_summary(path: Path) -> tuple[dict[str, Any] | None, str]:
    if not path.exists():
        return None, "missing"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return None, f"unreadable: {exc}"
    if not isinstance(data, dict):
        return None, "unreadable: not a JSON object"
    return data, "ok" if data else "empty"


def read_platforms(platforms: Path | Sequence[Path]) -> tuple[list[PlatformFile], list[str]]:
    """Load the platform files (a directory's ``*.yaml`` / ``*.yml``, or the given files); problems are returned."""
    from sims.platform_file import PlatformFileError, read_platform

    if isinstance(platforms, Path):
        if not platforms.is_dir():
            return [], [f"platform directory {platforms} is missing"]
        paths = sorted([*platforms.glob("*.yaml"), *platforms.glob("*.yml")])
        where = str(platforms)
    else:
        paths, where = [Path(p) for p in platforms], "the given list"
    found: list[PlatformFile] = []
    problems: list[str] = []
    for path in paths:
        try:
            data = read_platform(path)  # with the energy a later trace measured for it, if any
        except PlatformFileError as exc:
            problems.append(f"{path.name}: unreadable ({exc})")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("processors"), dict):
            problems.append(f"{path.name}: no 'processors' mapping")
            continue
        found.append(PlatformFile(str(data.get("platform") or path.stem), path.name, data))
    if not paths:
        problems.append(f"no platform files in {where}")
    return found, problems


def read_quarantine(quarantine_dir: Path) -> tuple[list[Quarantined], str, list[dict[str, Any]]]:
    """The quarantined records, as (record path, reason), and the runs given up after repeated failures: from a
    gather manifest (JSON), or every ``<name>.reason.txt`` under a quarantine directory (no given-up list)."""
    if quarantine_dir.suffix == ".json":
        try:
            doc = json.loads(quarantine_dir.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return [], f"manifest unreadable: {exc}", []
        given_up = [g for g in doc.get("given_up", []) if isinstance(g, dict)]
        return [Quarantined(Path(q["file"]).name, q["reason"]) for q in doc.get("quarantined", [])], "ok", given_up
    if not quarantine_dir.is_dir():
        return [], "missing", []
    records = []
    for path in sorted(quarantine_dir.rglob("*.reason.txt")):
        rel = path.relative_to(quarantine_dir).as_posix()
        try:
            reason = path.read_text(errors="replace").strip()
        except OSError as exc:
            reason = f"(reason file unreadable: {exc})"
        records.append(Quarantined(rel[: -len(".reason.txt")], reason or "(empty reason file)"))
    return records, "ok", []


def load_inputs(validation_dir: Path, platforms_dir: Path | Sequence[Path], quarantine_dir: Path) -> Inputs:
    """Read every input of the report; nothing here raises on a missing or empty input."""
    summary, summary_status = read_summary(validation_dir / "summary.json")
    platforms, platform_problems = read_platforms(platforms_dir)
    quarantined, quarantine_status, given_up = read_quarantine(quarantine_dir)
    return Inputs(
        validation_dir=validation_dir,
        summary=summary,
        summary_status=summary_status,
        platforms=platforms,
        platform_problems=platform_problems,
        quarantined=quarantined,
        quarantine_status=quarantine_status,
        given_up=given_up,
    )


def param_value(param: Any) -> float | None:
    """The SI value of a platform parameter given as ``{value: ...}`` or a bare number; None if absent."""
    value = param.get("value") if isinstance(param, dict) else param
    return float(value) if finite(value) else None


def rate_range(param: Any) -> tuple[float, float] | None:
    """(min, max) rate from ``rate_spread`` in per-second units, if given."""
    spread = param.get("rate_spread") if isinstance(param, dict) else None
    if not isinstance(spread, dict):
        return None
    low, high = spread.get("min"), spread.get("max")
    return (float(low), float(high)) if finite(low) and finite(high) else None


def variant_colors(variants: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(variants) <= 10 else "tab20"]
    return {v: cmap(i % cmap.N) for i, v in enumerate(variants)}


def plain_log_ticks(ax: Axes) -> None:
    """Label a log y axis as 0.5, 2, 40 rather than 5×10⁻¹ (easier to read off GFLOP/s)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def ordered(sub: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by variant in the papers' order (DP by alpha)."""
    alphas = sub["alpha"] if "alpha" in sub.columns else [None] * len(sub)
    keys = [variant_sort_key(v, a) for v, a in zip(sub["variant"], alphas, strict=True)]
    order = sorted(range(len(sub)), key=lambda i: keys[i])
    return sub.iloc[order]


def models_in(sub: pd.DataFrame) -> list[str]:
    return sorted(str(m) for m in sub["model"].dropna().unique()) if "model" in sub.columns else []


