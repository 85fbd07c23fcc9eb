"""What a rank runs in a two-processor case: the :class:`Job` interface ``sims.run`` drives.

A job is built as ``Job(spec, role, platform_file)`` on every rank. ``parts``
maps each role to its share (with ``flops``, ``bytes``, ``idle``), ``alpha``
is the accelerator's data fraction (None for code partitions), ``executed``
the flops each role's kernels really execute; ``work`` is the timed region,
``sync`` waits for the device, ``describe`` goes into the record's ``params``.
:class:`PhaseJob` is the common case: a list of phase kernels run in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Job(Protocol):
    parts: dict[str, Any]
    alpha: float | None
    executed: dict[str, int]

    def work(self) -> None: ...

    def sync(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class PhaseJob:
    """A job whose timed region runs ``steps`` (one callable per phase) on ``backend``."""

    backend: Any
    steps: list[Callable[[], None]]

    def work(self) -> None:
        for step in self.steps:
            step()

    def sync(self) -> None:
        self.backend.synchronize()
