"""The case and model registries: what a case study is, what a model is, and where they are found.

A **case** (:class:`Case`) is everything one case study is, in one module: its
config section (a JSON-schema fragment under ``cases.<name>``), the expansion
of that section into run specs (rank count, job, launch command), how its
records are reduced and grouped, the validation tables it writes and its
report section. A **model** (:class:`Model`) declares which cases it predicts,
which platform parameters it needs and what it returns (a time or an energy
per run) in which validation table.

Both are found through Python entry points: ``hetval.cases`` and
``hetval.models``. hetval's own cases and models are declared there too (in
``pyproject.toml``), so a plugin package that declares its own entry points is
indistinguishable from a built-in: the workflow, the study matrix, validation
and the report loop over :func:`cases` and :func:`models` and never branch on a
case's name. This module imports no case or model itself (no import cycles);
it loads the entry points on first use.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

from analysis.planning.jobs import Layout

if TYPE_CHECKING:  # pandas and dask are imported by the cases and models that use them
    import pandas as pd

CASE_GROUP = "hetval.cases"
MODEL_GROUP = "hetval.models"


class RegistryError(RuntimeError):
    """A case or model entry point is missing, broken or clashes with another (one-line message)."""


class Case(abc.ABC):
    """One case study. Subclasses set the attributes, implement the abstract methods and override what differs.

    Attributes
    ----------
    name : str
        The records' ``case`` value and the config key ``cases.<name>``.
    title : str
        One line for the report and ``hetval matrix``.
    order : int
        Position in listings (built-ins 10..50; plugins default to 100).
    schema : dict
        JSON-schema fragment of ``cases.<name>`` (with defaults); ``enabled``
        is added by the registry.
    tables : tuple of str
        The validation tables this case writes (``<table>.parquet``); tables
        of the same name from several cases are concatenated.
    sections : tuple of str
        ``"module:Class"`` of its report sections (shared by cases of one kind, shown once).
    models : tuple of str
        Names of registered models that also score this case although they do not name it
        themselves (a plugin case asking for a built-in model).
    light : bool
        True when its runs measure nothing (e.g. published tables ingested): the workflow makes them
        where Snakemake runs, never as batch jobs.
    """

    name: str = ""
    title: str = ""
    order: int = 100
    schema: Mapping[str, Any] = {"type": "object"}
    tables: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    light: bool = False

    # ----------------------------------------------------------------- planning a study
    @abc.abstractmethod
    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every run of this case in the (validated) study config, as run specs with ``run_id``.

        A spec holds what defines the run (hashed into ``run_id`` by
        :func:`sims.record.run_id_of`) plus ``ranks`` (MPI ranks), ``size``
        (the problem size recorded) and, for runs ``sims.run`` drives, ``job``.
        """

    @abc.abstractmethod
    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        """The shell command that produces the run's raw record at ``record``."""

    def needs_platform(self, spec: Mapping[str, Any]) -> bool:
        """True when the run reads the characterised platform file (e.g. a p-DP split)."""
        return False

    def threads(self, spec: Mapping[str, Any]) -> int:
        """Cores the run occupies on a local machine (ranks x threads per rank; never fewer than 2 for an
        MPI job, so two multi-rank jobs never share the cores)."""
        layout = self.layout(spec)
        return max(2, layout.ranks_per_node * layout.threads_per_rank)

    def layout(self, spec: Mapping[str, Any]) -> Layout:
        """Where the run's ranks sit - nodes, ranks, threads per rank, GPUs per node, data per rank - which
        is what its batch job asks for (:func:`analysis.planning.jobs.job_resources`). The default: the spec's
        ``ranks`` on one node, one thread each, one GPU per processor with the ``cupy`` backend."""
        procs = (spec.get("layout") or {}).values()
        gpus = sum(1 for p in procs if isinstance(p, Mapping) and p.get("backend") == "cupy")
        return Layout(ranks=int(spec.get("ranks") or 1), gpus_per_node=gpus,
                      data_bytes_per_rank=self.data_bytes(spec))

    def data_bytes(self, spec: Mapping[str, Any]) -> float:
        """The largest data one rank of the run holds, in bytes (for the job's memory request)."""
        return 0.0

    # ----------------------------------------------------------------- validation
    def select(self, frame: Any) -> Any:
        """This case's records in a (pandas or Dask) frame of the whole dataset."""
        return frame[frame["case"] == self.name]

    @abc.abstractmethod
    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        """One row per ok run from its repetitions (pure pandas; lifted onto Dask with ``meta``)."""

    def platform_frame(self, platforms: Any) -> tuple[pd.DataFrame, list[str]]:
        """The platform parameters joined to the reduced runs, and the join keys."""
        return platforms.processors, ["platform"]

    def bound_inputs(self, joined: pd.DataFrame) -> pd.DataFrame:
        """The joined runs as the bounds count them: for a case whose phases run against different compute
        ceilings, each processor's ``t_f_<role>`` becomes the ceiling of the kernels it ran and its
        ``traffic_<role>`` the memory traffic they must move (:mod:`analysis.scoring.ceilings`). Default: unchanged."""
        return joined

    @abc.abstractmethod
    def score(self, predictions: dict[str, pd.DataFrame], context: Any) -> dict[str, pd.DataFrame]:
        """The case's validation tables from each applicable model's predictions (pandas).

        ``predictions`` maps a model name to its rows; ``context`` carries the
        platform frames and, for a case with a group-wise model, its joined runs
        (``context.joined[self.name]``).
        """

    def __repr__(self) -> str:
        return f"<case {self.name}>"


class Model(abc.ABC):
    """One model as validation applies it to runs.

    Attributes
    ----------
    name : str
        Shown in every table and figure (e.g. ``"PerDome/PeaPaw"``).
    cases : tuple of str
        The cases whose runs it predicts.
    needs : tuple of str
        Platform columns it reads; rows lacking any of them get no prediction.
    quantity : str
        ``"time"`` or ``"energy"``: what it predicts and what alternatives are ranked by.
    table : str
        The validation table its rows belong to.
    rowwise : bool
        True when each run is predicted from its own row (run in the Dask task of
        each data file); False when it needs a whole group (PEACH's curves),
        applied to the computed frame.
    """

    name: str = ""
    cases: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    quantity: str = "time"
    table: str = "runs"
    rowwise: bool = True

    @abc.abstractmethod
    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        """Rows with this model's prediction for each run of ``runs`` it can predict (pure pandas)."""

    def __repr__(self) -> str:
        return f"<model {self.name}>"


def _load(group: str, kind: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is named, never half-loaded
            raise RegistryError(f"entry point {group}:{ep.name} ({ep.value}) cannot be loaded: "
                                f"{type(exc).__name__}: {exc}") from exc
        obj = obj() if isinstance(obj, type) else obj
        if not isinstance(obj, kind):
            raise RegistryError(f"entry point {group}:{ep.name} ({ep.value}) is not a {kind.__name__}")
        key = obj.name
        if not key:
            raise RegistryError(f"entry point {group}:{ep.name} ({ep.value}) has no name")
        if key in found:
            raise RegistryError(f"{kind.__name__.lower()} {key!r} is registered twice "
                                f"({ep.value} and {type(found[key]).__module__})")
        found[key] = obj
    if not found:
        raise RegistryError(f"no {group} entry points: hetval is not installed in this environment "
                            "(pip install -e . from the repository)")
    return found


@functools.cache
def cases() -> dict[str, Case]:
    """Every registered case, by name, in listing order."""
    found = _load(CASE_GROUP, Case)
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


@functools.cache
def models() -> dict[str, Model]:
    """Every registered model, by name."""
    found = _load(MODEL_GROUP, Model)
    unknown = sorted({c for m in found.values() for c in m.cases} - set(cases()))
    if unknown:
        raise RegistryError(f"model(s) predict unregistered case(s): {', '.join(unknown)}")
    return found


def case(name: str) -> Case:
    """The registered case ``name``; a one-line error naming the known ones otherwise."""
    try:
        return cases()[name]
    except KeyError:
        raise RegistryError(f"unknown case {name!r} (registered: {', '.join(cases())})") from None


def models_for(case_name: str) -> list[Model]:
    """The models that score ``case_name``: those that name it, and those it names; in name order."""
    wanted = set(case(case_name).models)
    unknown = sorted(wanted - set(models()))
    if unknown:
        raise RegistryError(f"case {case_name!r} asks for unregistered model(s): {', '.join(unknown)}")
    return [m for _, m in sorted(models().items()) if case_name in m.cases or m.name in wanted]


def enabled_cases(config: Mapping[str, Any]) -> list[Case]:
    """The cases the study runs: those whose section is present in ``cases`` and not disabled."""
    sections = config.get("cases") or {}
    return [c for name, c in cases().items() if isinstance(sections.get(name), dict)
            and sections[name].get("enabled", True)]


def validation_tables() -> list[str]:
    """Every table some registered case writes, in a stable order."""
    return sorted({t for c in cases().values() for t in c.tables})
