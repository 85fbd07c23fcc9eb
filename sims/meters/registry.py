"""The meter registry: every energy meter is an entry point of group ``hetval.meters``.

hetval's own meters (``rapl``, ``nvml``, ``trace``) are declared in ``pyproject.toml`` exactly as a plugin
package declares its own: a :class:`~sims.meters.base.Meter` subclass whose ``source`` is the entry
point's name. It says on which ranks it is read (:meth:`~sims.meters.base.Meter.reads_on`), how it opens
(:meth:`~sims.meters.base.Meter.open`), whether ``energy.meter: auto`` opens it (``auto``) and whom a
channel's joules belong to (:meth:`~sims.meters.base.Meter.owner`); :mod:`sims.meters.node` loops over
the registry and never branches on a meter's name. The names alone (:func:`names`) are read without
importing any meter, so the record contract can check an ``energy_source`` cheaply.
"""

from __future__ import annotations

import functools
from importlib import metadata

from sims.meters.base import Meter
from sims.record import METER_GROUP as GROUP
from sims.record import meter_names

#: ``energy.meter`` values that are not a meter: every applicable automatic meter, or none at all.
SPECIAL = ("auto", "none")


class MeterRegistryError(RuntimeError):
    """A meter entry point is missing, broken or misnamed (one-line message)."""


def names() -> tuple[str, ...]:
    """The registered meters' names (their records' ``energy_source``), sorted; nothing is imported."""
    found = meter_names()
    if not found:
        raise MeterRegistryError(f"no {GROUP} entry points: hetval is not installed in this environment "
                                 "(pip install -e . from the repository)")
    return found


@functools.cache
def meters() -> dict[str, type[Meter]]:
    """Every registered meter class, by name, in name order."""
    out: dict[str, type[Meter]] = {}
    for ep in sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name):
        try:
            cls = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is named, never half-loaded
            raise MeterRegistryError(f"entry point {GROUP}:{ep.name} ({ep.value}) cannot be loaded: "
                                     f"{type(exc).__name__}: {exc}") from exc
        if not (isinstance(cls, type) and issubclass(cls, Meter)):
            raise MeterRegistryError(f"entry point {GROUP}:{ep.name} ({ep.value}) is not a Meter class")
        if cls.source != ep.name or ep.name in SPECIAL:
            raise MeterRegistryError(f"entry point {GROUP}:{ep.name} ({ep.value}) has source {cls.source!r}: "
                                     f"a meter's source is its entry point's name, not one of {', '.join(SPECIAL)}")
        out[ep.name] = cls
    return out


def kinds() -> tuple[str, ...]:
    """Every value ``energy.meter`` may take: ``auto``, each registered meter, ``none``."""
    return ("auto", *names(), "none")
