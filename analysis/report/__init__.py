"""The validation report: one HTML page (Jinja2 template) with PNG figures and a plain-text summary.

The page is a loop over sections (:class:`analysis.report.section.Section`):
the scorecard, the overview, the platforms and the energy statement, then the sections of
every registered case (in registry order; a section shared by several cases
appears once), the published studies and the failures. Each section reads
only the study's declared inputs - its validation tables, platform files and
gather manifest - and returns content blocks that ``templates/page.html.j2``
renders with autoescaping.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from analysis.report.common import Inputs, fmt_fraction, load_inputs, variant_sort_key
from analysis.report.drawing import drawing
from analysis.report.section import Section, SectionOutput
from sims.atomic import atomic_write_bytes, staged_directory

__all__ = ["Section", "SectionOutput", "build_report", "fmt_fraction", "main", "page_sections", "variant_sort_key"]

LEADING = ("analysis.report.sections.scorecard:ScorecardSection",
           "analysis.report.sections.overview:OverviewSection",
           "analysis.report.sections.platforms:PlatformsSection",
           "analysis.report.sections.energy:EnergySection")
TRAILING = ("analysis.report.sections.scaling:ScalingSection",
            "analysis.report.sections.papers:PapersSection",
            "analysis.report.sections.history:HistorySection",
            "analysis.report.sections.failures:FailuresSection")


def _load(path: str) -> Section:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)()


def page_sections(case_names: Sequence[str] | None = None) -> list[Section]:
    """The page's sections, in order: leading, the study's cases' own (registry order), trailing (each once).

    ``case_names``: the cases the study runs (default: every registered case).
    """
    from analysis.registry import cases

    chosen = [c for name, c in cases().items() if case_names is None or name in case_names]
    paths = [*LEADING, *(p for c in chosen for p in c.sections), *TRAILING]
    return [_load(p) for p in dict.fromkeys(paths)]


def _render(title: str, outputs: list[SectionOutput], notes: list[str]) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("analysis.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return env.get_template("page.html.j2").render(title=title, generated=when, sections=outputs, notes=notes)


#: The report's figures live in this subdirectory of its output directory (registered with
#: ``snakemake --report`` as one directory of PNGs).
FIGURES = "figures"


def _prune_stale_figures(out_dir: Path, keep: set[str]) -> None:
    """Remove figures of an earlier build that this build did not produce (so the page lists all PNGs); never
    through a link."""
    if out_dir.is_symlink():
        return
    for path in out_dir.glob("*.png"):
        if path.name not in keep:
            path.unlink(missing_ok=True)


def build_report(
    validation_dir: str | os.PathLike[str],
    platforms_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    quarantine_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    title: str = "hetval validation report",
    cases: Sequence[str] | None = None,
    processes: int = 1,
) -> str:
    """Build the HTML validation report with its PNG figures and a plain-text summary.

    Parameters
    ----------
    validation_dir : path
        ``results/<study>/validation``: the tables the registered cases write, ``failed``,
        ``published`` and ``summary.json``. Any of them may be missing or empty; the page says so.
    platforms_dir : path or list of paths
        ``results/<study>/platforms`` with the characterised ``*.yaml`` platform files, or the files.
    quarantine_dir : path
        The study's gather manifest (``results/<study>/gathered.json``), whose quarantined records are
        listed, or a quarantine directory (every ``**/<name>.reason.txt`` is listed).
    out_dir : path
        Where ``index.html``, ``summary.txt`` and the figures (in ``figures/``) are written (created if needed).
    title : str
        Page title.
    cases : list of str, optional
        The cases the study runs, whose sections the page shows (default: every registered case).
    processes : int
        Figures drawn at once, each in a forked child while the sections go on (1: all in this process).

    Returns
    -------
    str
        The plain-text summary, identical to ``out_dir/summary.txt``.
    """
    final = Path(out_dir)
    with staged_directory(final) as out:  # the whole page or none: a full disk leaves the last report
        text, drawn = _build(validation_dir, platforms_dir, quarantine_dir, out, final, title, cases, processes)
    _prune_stale_figures(final / FIGURES, drawn)
    _prune_stale_figures(final, set())  # figures of the layout before figures/ existed
    return text


def _build(validation_dir: str | os.PathLike[str],
           platforms_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
           quarantine_dir: str | os.PathLike[str], out: Path, final: Path, title: str, cases: Sequence[str] | None,
           processes: int) -> tuple[str, set[str]]:
    """:func:`build_report` into the staging directory ``out``; returns the summary and the figures drawn."""
    figures = out / FIGURES
    figures.mkdir(parents=True, exist_ok=True)
    plats = Path(platforms_dir) if isinstance(platforms_dir, str | os.PathLike) else [Path(p) for p in platforms_dir]
    inputs: Inputs = load_inputs(Path(validation_dir), plats, Path(quarantine_dir))
    sections = page_sections(cases)
    started = time.perf_counter()
    outputs = []
    with drawing(processes):
        for i, s in enumerate(sections):
            print(f"[hetval report] section {i + 1} of {len(sections)} ({s.title or type(s).__name__}), "
                  f"{time.perf_counter() - started:.1f} s elapsed", file=sys.stderr, flush=True)
            outputs.append(s.build(inputs, figures))
    notes = [n for o in outputs for n in o.notes]
    index = out / "index.html"
    lines = [title, "=" * len(title)]
    for o in outputs:
        lines += o.lines
    if notes:
        lines += ["", "notes:", *(f"  {n}" for n in notes)]
    lines += ["", f"report: {final / 'index.html'}"]
    text = "\n".join(lines) + "\n"
    atomic_write_bytes(out / "summary.txt", text.encode())
    atomic_write_bytes(index, _render(title, outputs, notes).encode())
    return text, {f.file for o in outputs for f in o.figures}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: build the report and print its summary (``python -m analysis.report``)."""
    parser = argparse.ArgumentParser(prog="python -m analysis.report", description=__doc__.splitlines()[0])
    parser.add_argument("--validation", default="results/default/validation", help="validation output directory")
    parser.add_argument("--platforms", default="results/default/platforms", help="characterised platform files")
    parser.add_argument("--quarantine", default="results/quarantine",
                        help="gather manifest (JSON) or quarantine directory")
    parser.add_argument("--out", default="results/default/report", help="report output directory")
    parser.add_argument("--title", default="hetval validation report", help="page title")
    args = parser.parse_args(argv)
    print(build_report(args.validation, args.platforms, args.quarantine, args.out, args.title), end="")
    return 0
