"""Drawing the report's figures: a figure bound to the Agg canvas, and writing it as a PNG - in this process, or
(inside :func:`drawing`) in forked children, a few at a time, while the sections go on building."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sims.atomic import atomic_write_bytes

if TYPE_CHECKING:  # matplotlib is imported inside the functions that need it
    from matplotlib.figure import Figure


def new_figure(width: float = 7.5, height: float = 4.6) -> Figure:
    """A figure bound to the Agg canvas: no pyplot, no global backend state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _write_figure(fig: Figure, out_dir: Path, name: str) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    atomic_write_bytes(out_dir / name, buffer.getvalue())


class FigureError(RuntimeError):
    """A figure drawn in a child process (:func:`drawing`) could not be written."""


@dataclass
class _Drawing:
    slots: int
    running: list[tuple[Any, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def reap(self, block: bool) -> None:
        """Join the children that ended (all of them with ``block``), noting any that failed."""
        left = []
        for proc, name in self.running:
            if block or not proc.is_alive():
                proc.join()
                if proc.exitcode != 0:
                    self.failed.append(f"{name} (exit status {proc.exitcode})")
            else:
                left.append((proc, name))
        self.running = left


#: the children drawing figures, inside :func:`drawing`
_DRAWING: list[_Drawing] = []


@contextmanager
def drawing(processes: int) -> Iterator[None]:
    """Inside it, :func:`save_figure` draws each figure in a forked child, ``processes`` at a time, while the
    sections go on building the next; the block ends once every figure is written. Drawing is most of a
    report's time and each figure is independent of the others. A child that fails raises
    :class:`FigureError` naming its figures. Without ``fork`` (or with one process) figures are drawn here."""
    import multiprocessing
    import sys

    if processes <= 1 or sys.platform == "darwin" or "fork" not in multiprocessing.get_all_start_methods():
        yield
        return
    state = _Drawing(processes)
    _DRAWING.append(state)
    try:
        yield
    finally:
        _DRAWING.remove(state)
        state.reap(block=True)
    if state.failed:
        raise FigureError(f"figure(s) not written: {', '.join(state.failed)} (its traceback is above)")


def save_figure(fig: Figure, out_dir: Path, name: str) -> None:
    """Write ``fig`` as ``out_dir/name`` (PNG), atomically; inside :func:`drawing`, in a child process."""
    if not _DRAWING:
        _write_figure(fig, out_dir, name)
        return
    import multiprocessing
    from multiprocessing.connection import wait

    state = _DRAWING[-1]
    while len(state.running) >= state.slots:
        wait([proc.sentinel for proc, _ in state.running])  # until a child ends
        state.reap(block=False)
    proc = multiprocessing.get_context("fork").Process(target=_write_figure, args=(fig, out_dir, name),
                                                       name=f"hetval-figure-{name}")
    proc.start()
    state.running.append((proc, name))
