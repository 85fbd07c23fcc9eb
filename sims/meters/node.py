"""Which rank reads which meter, and how measured energy is attributed to processors without double counting.

* Node-wide counters (RAPL packages and DRAM) are read by one leader rank per
  host (rank 0 of the host's shared-memory communicator), never by every rank.
* A GPU's NVML counter is read by the rank that drives that GPU and belongs to
  that rank's processor.
* An external trace is read once, by world rank 0; its channels say what they
  measure (``host``, ``accel`` or ``node``).

:func:`attribute` turns the gathered readings into the record's energy columns:
``energy_j`` is every channel counted once; ``energy_host_j`` /
``energy_accel_j`` hold only channels that belong to one processor, and
``energy_detail.nodes`` the joules of each node (summed over its channels,
split into host, accel and node-level). A RAPL
package belongs to a processor only when every rank on that host is pinned and
all ranks pinned to that package play that processor (a GPU-driving rank's CPU
work is hosting, counted on the host side as PEACH's ``P_OH`` is); a package
shared by both processors, an unpinned rank, or an unused socket makes it
``node`` energy, which is in the total only. The record's ``energy_detail``
says, per channel, where its joules went and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sims.meters import registry
from sims.meters.base import Meter, MeterUnavailable, whole_channels
from sims.meters.rapl import package_of_cpu

SHORT_REGION_POLICIES = ("lengthen", "refuse")


@dataclass(frozen=True)
class EnergySettings:
    """The ``energy`` section of a run spec (validated by the workflow's config schema)."""

    meter: str = "auto"
    rapl_root: str = "/sys/class/powercap"
    trace: dict[str, Any] | None = None
    update_period_s: float | None = None
    min_periods: float = 10.0
    short_region: str = "lengthen"

    @classmethod
    def from_spec(cls, doc: dict[str, Any] | None) -> EnergySettings:
        doc = dict(doc or {})
        unknown = sorted(set(doc) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"energy: unknown key(s) {', '.join(unknown)}")
        s = cls(**doc)
        if s.short_region not in SHORT_REGION_POLICIES:
            raise ValueError(f"energy.short_region must be one of {', '.join(SHORT_REGION_POLICIES)}, got {s.short_region!r}")
        if s.meter not in registry.kinds():
            raise ValueError(f"energy.meter must be one of {', '.join(registry.kinds())}, got {s.meter!r}")
        return s


@dataclass
class RankMeters:
    """The meters one rank reads, opened from :class:`EnergySettings` and this rank's place."""

    settings: EnergySettings
    role: str
    hostname: str
    world_rank: int
    node_rank: int
    backend: str = "numpy"
    device: int | None = None
    packages: list[int] | None = None  # sockets of the cores this rank is pinned to; None = unpinned
    meters: dict[str, Meter] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def open(self) -> RankMeters:
        """Open this rank's meters from the registry (:mod:`sims.meters.registry`): the one asked for, or
        with ``auto`` every automatic meter this rank reads. An explicitly requested meter that cannot be
        read raises; an automatic one that cannot is a note."""
        kind = self.settings.meter
        for name, cls in registry.meters().items():
            if not (kind == name or (kind == "auto" and cls.auto)) or not cls.reads_on(self):
                continue
            try:
                self.meters[name] = cls.open(self.settings, self)
            except MeterUnavailable as exc:
                if kind == name:
                    raise
                self.notes.append(f"{self.hostname}: {exc}")
        return self

    @property
    def update_period_s(self) -> float:
        """The longest update period of this rank's meters (0 with none).

        ``energy.update_period_s`` overrides it - also with no meter at run time,
        so that regions are long enough for a trace attached afterwards.
        """
        if self.settings.update_period_s is not None:
            return float(self.settings.update_period_s)
        if not self.meters:
            return 0.0
        return max(m.update_period_s for m in self.meters.values())

    def read(self) -> dict[str, Any]:
        return {name: m.read() for name, m in self.meters.items()}

    def deltas(self, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """Per meter: ``{channel: J}`` of the whole channels, or ``{"refused": reason}``."""
        out: dict[str, Any] = {}
        for name, m in self.meters.items():
            try:
                d = m.energy_between(before.get(name), after.get(name))
            except ValueError as exc:  # a counter going backwards, a window the trace does not cover
                out[name] = {"refused": f"{name}: {exc}"}
                continue
            out[name] = {ch: d[ch] for ch in whole_channels(d)} if d is not None else {"refused": f"{name}: no reading"}
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "rank": self.world_rank, "role": self.role, "host": self.hostname, "node_rank": self.node_rank,
            "backend": self.backend, "packages": self.packages,
            "meters": {n: {"source": m.source, "scope": m.scope, "channels": list(m.channels),
                           "update_period_s": m.update_period_s,
                           **({"mapping": m.mapping} if hasattr(m, "mapping") else {})}
                       for n, m in self.meters.items()},
            "notes": list(self.notes),
        }

    def close(self) -> None:
        for m in self.meters.values():
            m.close()


def share_or_total(row: dict[str, Any], target: str | None) -> float | None:
    """A window's joules for ``target``: its attributed share where the meter could split it, else the total."""
    part = row.get(f"energy_{target}_j") if target else None
    return part if part is not None else row["energy_j"]


def attribute(ranks: list[dict[str, Any]], deltas: list[dict[str, Any]], *, inner: int = 1,
              lengthened_why: str | None = None) -> dict[str, Any]:
    """One repetition's energy columns from every rank's :meth:`RankMeters.describe` and deltas.

    Energies are per execution: a region lengthened to ``inner`` executions is
    divided by ``inner``. Returns ``energy_j``, ``energy_host_j``,
    ``energy_accel_j``, ``energy_source`` and ``energy_detail`` (a dict).
    """
    channels: dict[str, dict[str, Any]] = {}
    refused: list[str] = []
    sources: set[str] = set()
    for desc, d in zip(ranks, deltas, strict=True):
        for name, joules in d.items():
            meter = desc["meters"][name]
            if "refused" in joules:
                refused.append(joules["refused"])
                continue
            for ch, j in joules.items():
                target, why, node = registry.meters()[name].owner(ch, desc, meter, ranks)
                key = f"{node if node is not None else name}/{ch}"
                channels[key] = {"joules": j / inner, "to": target, "why": why, "source": meter["source"],
                                 "node": node}
                sources.add(meter["source"])
    detail: dict[str, Any] = {"channels": channels, "executions_per_region": inner}
    # per node (the leader rank of each node read its node-wide counters): where its joules went
    per_node: dict[str, dict[str, float]] = {}
    for c in channels.values():
        if c["node"] is not None:
            entry = per_node.setdefault(c["node"], {"joules": 0.0, "host": 0.0, "accel": 0.0, "node": 0.0})
            entry["joules"] += c["joules"]
            entry[c["to"] if c["to"] in ("host", "accel") else "node"] += c["joules"]
    if per_node:
        detail["nodes"] = per_node
    if lengthened_why:
        detail["region"] = lengthened_why
    notes = [n for desc in ranks for n in desc.get("notes", [])]
    if notes:
        detail["notes"] = notes
    if refused or not channels:
        detail["refused"] = refused or ["no meter on any rank"]
        return {"energy_j": None, "energy_host_j": None, "energy_accel_j": None, "energy_source": "none",
                "energy_detail": detail}

    def part(target: str) -> float | None:
        vals = [c["joules"] for c in channels.values() if c["to"] == target]
        return float(sum(vals)) if vals else None

    return {
        "energy_j": float(sum(c["joules"] for c in channels.values())),
        "energy_host_j": part("host"),
        "energy_accel_j": part("accel"),
        "energy_source": "+".join(sorted(sources)),
        "energy_detail": detail,
    }


def node_rank(comm: Any) -> int:
    """This rank's rank among the ranks on its host (collective: every rank of ``comm`` calls it)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        return node.Get_rank()
    finally:
        node.Free()


def open_meters(spec: dict[str, Any], role: str, proc: dict[str, Any], world_rank: int, on_node: int) -> Any:
    """This rank's meters (:class:`RankMeters`): node counters only on a host's leader (``on_node == 0``)."""
    import socket

    settings = EnergySettings.from_spec(spec.get("energy"))
    cores = proc.get("cores")
    packages = None
    if cores:
        found = {package_of_cpu(c) for c in cores}
        packages = sorted(found) if None not in found else None
    return RankMeters(settings, role, socket.gethostname(), world_rank, on_node, proc["backend"],
                      proc.get("device"), packages).open()
