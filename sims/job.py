"""What a rank runs in a two-processor case: the :class:`Job` interface ``sims.run`` drives.

A job is built as ``Job(spec, role, platform_file)`` on every rank. ``parts``
maps each role to its share (with ``flops``, ``bytes``, ``idle``), ``alpha``
is the accelerator's data fraction (None for code partitions), ``executed``
the flops each role's kernels really execute; ``work`` is the timed region,
``sync`` waits for the device, ``describe`` goes into the record's ``params``; an optional ``rehearse``
is called once in setup, untimed (:meth:`PhaseJob.rehearse`).
:class:`PhaseJob` is the common case: a list of phase kernels run in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Job(Protocol):
    parts: dict[str, Any]
    alpha: float | None
    executed: dict[str, int]

    def work(self) -> None: ...

    def sync(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class PhaseJob:
    """A job whose timed region runs ``steps`` (one callable per phase) on ``backend``; ``rehearsal`` holds
    the same phases' kernels on arrays of a few elements."""

    backend: Any
    steps: list[Callable[[], None]]
    rehearsal: Sequence[Callable[[], None]] = ()
    outputs: Sequence[Any] = ()  # the run's zero-filled outputs whose pages the rehearsal writes

    def work(self) -> None:
        for step in self.steps:
            step()

    def rehearse(self) -> None:
        """Call each phase's kernel once on tiny arrays of the run's dtypes, dimensions and layouts (so the same
        compiled code): a kernel's first call in a process loads its code, which cost a short run's first timed
        execution up to 7x its second when no warm-up took it. This is what a whole untimed execution did for
        the first timed one, at the cost of a few elements, where the outputs are small enough that mapping their
        pages at the first write costs nothing a repetition shows. ``outputs`` are written with zeros, as they
        were made, so their pages are mapped now and not in the first timed execution (an SA run's two outputs of
        6.4 million elements cost it 2-3 % at the median when not); a subclass rehearses a phase whole where its
        output's pages should be mapped in the kernel's own order. Untimed, in setup."""
        for step in self.rehearsal:
            step()
        for out in self.outputs:
            out.fill(0)
        self.sync()

    def sync(self) -> None:
        self.backend.synchronize()
