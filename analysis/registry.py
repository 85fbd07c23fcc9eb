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
import copy
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported by the cases and models that use it
    import pandas as pd

    from analysis.scoring.uncertainty import Settings
    from analysis.storage.platforms import Platforms

CASE_GROUP = "hetval.cases"
MODEL_GROUP = "hetval.models"
#: The scale bands a multi-rank case's workload classes name, and a model's ``not_for`` may key on: (upper rank
#: count, label).
SCALE_BANDS = ((1, "1 rank"), (4, "2-4 ranks"), (16, "5-16 ranks"), (64, "17-64 ranks"), (math.inf, "over 64 ranks"))


class RegistryError(RuntimeError):
    """A case or model entry point is missing, broken or clashes with another (one-line message)."""


#: The columns every case's scored frame has (:meth:`Case.scored`): one row per (run, model) judged.
SCORED_COLUMNS = ("study", "platform", "case", "model", "workload_class", "precision", "tightness")
#: The columns every case's groups of alternatives have: one row per (group, model) ranked.
GROUP_COLUMNS = ("study", "platform", "case", "model", "workload_class", "distinguishable", "kendall_tau",
                 "top1_noise_aware")


@dataclass
class Scored:
    """What the scorecard reads of one case (:meth:`Case.scored`).

    ``runs``: one row per (run, model) with :data:`SCORED_COLUMNS` (``tightness`` predicted over measured, the
    ``workload_class`` the row is judged in, the ``precision`` its work ran at), and where known
    ``time_reps_s`` and ``rounds_reps`` (the run's repetitions and their rounds) and ``tightness_replicates``
    (the tightness each characterisation replicate predicts). ``groups``: one row per group of alternatives and
    model with :data:`GROUP_COLUMNS` (and ``kendall_tau_lo``/``_hi``, ``<figure>_replicates`` where known).
    ``evidence``: the anchor of the report section that shows these runs."""

    runs: pd.DataFrame
    groups: pd.DataFrame
    evidence: str


@dataclass
class Context:
    """What a case's :meth:`Case.score` may look at besides its predictions: the study's platforms, the
    uncertainty settings (the config's ``uncertainty``) and, for a case with a group-wise model, its
    joined runs (``joined[case.name]``)."""

    platforms: Platforms
    uncertainty: Settings
    joined: dict[str, pd.DataFrame] = field(default_factory=dict)


class Case(abc.ABC):
    """One case study: seven attributes and five methods (three more optional), by the stage that uses them.

    Planning a study (:func:`analysis.planning.config.study_matrix`, the workflow's rules):

    - ``name`` (str): the records' ``case`` value and the config key ``cases.<name>``;
      ``title`` (str): one line for the report and ``hetval matrix``; ``order`` (int): position in
      listings (built-ins 10..50, plugins 100); ``schema`` (dict): JSON-schema fragment of
      ``cases.<name>`` with its defaults (``enabled`` is added by the registry).
    - :meth:`expand`: the run specs, each with everything its jobs need already in it;
      :meth:`command`: the shell command that runs one; :meth:`runner`: the same without its launcher, so
      that one launch can measure several runs.

    Scoring (:mod:`analysis.scoring.validate`):

    - :meth:`reduce`: one row per run; :meth:`join`: the platform parameters its models read;
      :meth:`score`: the validation tables, whose names ``tables`` (tuple of str) declares;
      ``models`` (tuple of str): registered models that also score this case although they do not
      name it themselves (a plugin case asking for a built-in model).

    Reporting (:mod:`analysis.report`): ``sections`` (tuple of str), ``"module:Class"`` of its
    report sections (shared by cases of one kind, shown once).
    """

    name: str = ""
    title: str = ""
    order: int = 100
    schema: Mapping[str, Any] = {"type": "object"}
    tables: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    models: tuple[str, ...] = ()

    # ----------------------------------------------------------------- planning a study
    @abc.abstractmethod
    def expand(self, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every run of this case in the (validated) study config, as run specs with ``run_id``.

        A spec holds what defines the run (hashed into ``run_id`` by :func:`sims.record.run_id_of`) plus
        ``ranks`` (MPI ranks), ``size`` (the problem size recorded), for runs ``sims.run`` drives ``job``,
        and what its jobs need, computed here once: ``resources`` (:meth:`analysis.planning.jobs.Layout.spec`:
        nodes, ranks, threads, GPUs, data per rank, and ``local`` for a run that measures nothing and is made
        where Snakemake runs; the spec's ``ranks`` on one node when absent) and ``needs_platform`` (true
        when the run reads the characterised platform file, e.g. a p-DP split).
        """

    @abc.abstractmethod
    def command(self, spec: Mapping[str, Any], record: str, platform_file: str, launch: str) -> str:
        """The shell command that produces the run's raw record at ``record``."""

    def runner(self, spec: Mapping[str, Any], record: str, platform_file: str) -> list[str] | None:
        """The words of the MPI program that produces the run's record (a module run by ``python -m``, then its
        arguments), without the launcher: with them :mod:`sims.launch` measures several runs in one launch (a
        study measured in rounds launches each job shape once per round). None (the default): the case has
        only its :meth:`command`, and each of its runs is launched on its own."""
        return None

    def with_repetitions(self, spec: Mapping[str, Any], repetitions: int) -> dict[str, Any]:
        """A copy of ``spec`` whose command measures ``repetitions`` timed repetitions: one launch's share of a
        run measured in rounds (``runs.rounds``). Its ``run_id`` is the run's own."""
        return {**copy.deepcopy(dict(spec)), "repetitions": int(repetitions)}

    # ----------------------------------------------------------------- scoring
    @abc.abstractmethod
    def reduce(self, records: pd.DataFrame) -> pd.DataFrame:
        """One row per ok run of this case's records (its repetitions reduced; pure pandas)."""

    def join(self, runs: pd.DataFrame, platforms: Any) -> pd.DataFrame:
        """The reduced runs with the platform parameters their models read (pure pandas; runs without a
        characterised platform drop out). Default: each run's processors (``platforms.processors``) on
        ``platform``. A case whose phases run against different ceilings also counts each processor's
        ``t_f_<role>`` and ``traffic_<role>`` here (:mod:`analysis.scoring.ceilings`)."""
        return join_on(runs, platforms.processors, ["platform"])

    @abc.abstractmethod
    def score(self, predictions: dict[str, pd.DataFrame], context: Context) -> dict[str, pd.DataFrame]:
        """The case's validation tables from each applicable model's predictions (pandas): ``predictions``
        maps a model name to its rows."""

    def scored(self, tables: Mapping[str, pd.DataFrame], balance: Mapping[str, float]) -> Scored | None:
        """The rows of this case's validation ``tables`` (name -> frame, every case's) the scorecard judges, each
        in its workload class (:mod:`analysis.scoring.classes`; ``balance``: each platform's host balance), and
        its groups of alternatives. None (the default): the case has no scorecard rows."""
        return None

    def __repr__(self) -> str:
        return f"<case {self.name}>"


def join_on(runs: pd.DataFrame, frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``runs`` inner-joined with a platform ``frame`` on ``keys``, the keys typed as the runs' own (the
    platform files give plain ``str``)."""
    frame = frame.astype({k: runs[k].dtype for k in keys if k in runs and k in frame})
    return runs.merge(frame, on=keys, how="inner")


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
    kind : str
        ``"bound"`` (a best case the runs should not beat: tightness at most 1 expected) or ``"predictor"`` (an
        estimate of the run itself: tightness near 1 expected); the scorecard judges each against its own band
        (``docs/scorecard.md``).
    not_for : mapping of str to str
        Cases it cannot judge, each with the one-line reason the report's matrix shows (keyed by case, or by
        ``"case/part of a workload class"`` where only some classes of a case lack its inputs, e.g.
        ``"fdm/(numpy)"``); a case neither named here nor in ``cases`` is shown as not named by the model.
    """

    name: str = ""
    cases: tuple[str, ...] = ()
    not_for: Mapping[str, str] = {}
    needs: tuple[str, ...] = ()
    quantity: str = "time"
    table: str = "runs"
    rowwise: bool = True
    kind: str = "bound"

    @abc.abstractmethod
    def predict(self, runs: pd.DataFrame) -> pd.DataFrame:
        """The runs of ``runs`` (the case's joined runs) this model can predict, with its prediction: its ``model``
        name, ``quantity`` and ``time_predicted_s`` (for ``quantity == "time"``) or ``energy_predicted_j``, and any
        parts or notes of its own (pure pandas). A model only predicts: validation attaches what was measured and
        the tightness, predicted over measured, for every model alike (:func:`analysis.scoring.measured.attach`)."""

    def why_not(self, case_name: str, workload_class: str | None = None) -> str:
        """Why this model has no verdict on ``case_name`` (and ``workload_class``): its own reason, else that it
        does not name the case, else that no run of the study had its inputs."""
        for key, why in self.not_for.items():  # a class key names the class or a part of it ("fdm/2-4 ranks")
            where, _, which = key.partition("/")
            if where == case_name and which and workload_class and which in str(workload_class):
                return why
        if case_name in self.not_for:
            return self.not_for[case_name]
        if case_name not in self.cases:
            return f"{self.name} does not name the {case_name} case"
        return f"no {case_name} run of this class had its inputs ({', '.join(self.needs) or 'its own columns'})"

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
