"""The Dask validation job: runs joined with platform parameters and every applicable model, then scored.

It loops over the registered cases (:mod:`analysis.registry`). For each case
its own data files are read, one Dask partition per file (every row of a run
lives in one file, so no shuffle is needed), and reduced per run
(``case.reduce``, a pure pandas function lifted with ``map_partitions`` and an
explicit ``meta``), joined with the platform frame the case asks for, and
predicted by every model registered for the case (row-wise models on the Dask
collection, group-wise ones on the computed frame). The whole lazy graph is
computed once with ``dask.compute``; the case then scores its predictions into
its tables. Tables of the same name from several cases are concatenated; every
table is written atomically as ``<out>/<table>.parquet``, with
``failed.parquet``, ``published.parquet`` (the papers' own claims, recomputed)
and ``summary.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import history
from analysis.dataset import partition_files, read_file
from analysis.platforms import Platforms
from analysis.registry import Case, RegistryError, cases, models_for, validation_tables
from analysis.runs import failed_runs
from analysis.schema import RUN_SCHEMA
from analysis.uncertainty import Settings
from sims.atomic import atomic_write_parquet, atomic_write_text

#: Tables every validation writes besides the cases' own.
ENGINE_TABLES = ("failed", "published")


def output_files(out_dir: str | Path = "") -> list[str]:
    """Every file a validation writes (what the workflow's rule declares as outputs)."""
    names = [*validation_tables(), *ENGINE_TABLES]
    return [str(Path(out_dir) / f"{t}.parquet") for t in sorted(set(names))] + [str(Path(out_dir) / "summary.json")]


def scheduler_address(configured: str | None) -> str | None:
    """The scheduler to use: the configured address, else ``$DASK_SCHEDULER_ADDRESS``, else None (local)."""
    return configured or os.environ.get("DASK_SCHEDULER_ADDRESS") or None


@dataclass(frozen=True)
class DaskSettings:
    """Where the validation's Dask graph runs (config ``validate``), in this order of precedence:

    1. ``address`` (or ``$DASK_SCHEDULER_ADDRESS``): a running scheduler, e.g. one started with
       ``dask scheduler`` beside ``dask worker`` processes on the cluster's nodes;
    2. ``cluster = "slurm"``: a ``dask_jobqueue.SLURMCluster`` whose ``workers`` are SLURM jobs of one
       core each, on ``partition`` / ``account`` (the study platform's ``slurm`` entry);
    3. else a ``LocalCluster`` of ``workers`` processes with one thread each.

    ``connect_timeout`` bounds the wait for the scheduler and, for SLURM, for the first worker to start.
    """

    address: str | None = None
    cluster: str = "local"
    workers: int = 2
    worker_memory: str = "4GiB"
    worker_walltime: str = "00:30:00"
    partition: str | None = None
    account: str | None = None
    connect_timeout: float = 30.0

    def describe(self) -> str:
        addr = scheduler_address(self.address)
        if addr:
            return f"the Dask scheduler at {addr}"
        if self.cluster == "slurm":
            return f"a SLURMCluster of {self.workers} worker job(s)"
        return f"a local cluster of {self.workers} worker(s)"


class ClusterStartError(RuntimeError):
    """The Dask cluster the settings ask for cannot be started (one-line message)."""


class _SubmitFailures(logging.Filter):
    """Keeps the background tracebacks of failed worker-job submissions off the terminal, remembering
    the scheduler's own error line (``sbatch: error: ...``) for the one-line message."""

    def __init__(self, sink: list[str]):
        super().__init__()
        self.sink = sink

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        text = str(exc) if exc is not None else record.getMessage()
        if "Command exited with non-zero exit code" not in text and "Task exception was never retrieved" not in text:
            return True
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "error" in ln.lower()]
        if lines and lines[0] not in self.sink:
            self.sink.append(lines[0])
        return False


@contextlib.contextmanager
def dask_client(settings: DaskSettings) -> Iterator[Any]:
    """A ``distributed.Client`` on the cluster ``settings`` chooses; the cluster is closed afterwards.

    An unreachable scheduler raises ``OSError`` / ``TimeoutError`` within ``connect_timeout``; a SLURM cluster
    whose first worker does not start in time, or without dask-jobqueue, raises :class:`ClusterStartError`.
    """
    from distributed import Client, LocalCluster

    addr = scheduler_address(settings.address)
    if addr:
        with Client(addr, timeout=settings.connect_timeout) as client:
            yield client
        return
    if settings.cluster == "slurm":
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError:
            raise ClusterStartError("validate.cluster is 'slurm' but dask-jobqueue is not installed: "
                                    "pip install -e '.[slurm]'") from None
        import sys

        failures: list[str] = []
        quiet = _SubmitFailures(failures)
        loggers = [logging.getLogger(n) for n in ("tornado.application", "asyncio", "distributed.deploy.spec")]
        for lg in loggers:
            lg.addFilter(quiet)
        cluster = SLURMCluster(cores=1, processes=1, memory=settings.worker_memory, walltime=settings.worker_walltime,
                               queue=settings.partition, account=settings.account, python=sys.executable,
                               worker_extra_args=["--nthreads", "1"])
        try:
            cluster.scale(jobs=settings.workers)
            with Client(cluster, timeout=settings.connect_timeout) as client:
                try:
                    client.wait_for_workers(1, timeout=settings.connect_timeout)
                except TimeoutError:
                    why = f"; the worker job submission failed: {failures[0]}" if failures else (
                        f" (are its jobs pending? squeue -u $USER; partition {settings.partition or 'default'})")
                    raise ClusterStartError(f"no SLURMCluster worker started within "
                                            f"{settings.connect_timeout:g} s{why}") from None
                yield client
        finally:
            try:
                cluster.close(timeout=settings.connect_timeout)
            except Exception:  # noqa: BLE001 - jobs that never started leave the cluster in a state it asserts on
                pass
            for lg in loggers:
                lg.removeFilter(quiet)
        return
    with LocalCluster(n_workers=settings.workers, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster, timeout=settings.connect_timeout) as client:
        yield client


@dataclass
class Context:
    """What a case's scoring may look at besides its predictions."""

    platforms: Platforms
    joined: dict[str, pd.DataFrame] = field(default_factory=dict)
    uncertainty: Settings = field(default_factory=Settings)


def check_needs(case: Case, columns: Any) -> None:
    """Every model of ``case`` finds the platform columns it declares in the case's joined runs."""
    for m in models_for(case.name):
        missing = sorted(set(m.needs) - set(columns))
        if missing:
            raise RegistryError(f"model {m.name!r} needs {', '.join(missing)}, which case {case.name!r} does not "
                                "join to its runs")


def _as_pandas(table: Any) -> pd.DataFrame:
    import pyarrow as pa

    return table.to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow")}.get)


def _read_partition(study: str, case: str, path: str) -> pd.DataFrame:
    return _as_pandas(read_file(study, case, path))


def case_records(dd: Any, files: list[tuple[str, str, Path]], case: str) -> Any:
    """The records of ``case`` as a Dask frame with one partition per data file of its partitions.

    Every row of a run lives in one file (see :mod:`analysis.dataset`), so a run's repetitions are
    always in one partition: the per-run reduction needs no shuffle, and a case reads only its own files.
    """
    mine = [f for f in files if f[1] == case]
    meta = _as_pandas(RUN_SCHEMA.empty_table())
    if not mine:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_map(_read_partition, [f[0] for f in mine], [f[1] for f in mine], [str(f[2]) for f in mine],
                       meta=meta, enforce_metadata=False, label=f"read-{case}")


def _lazy_case(case: Case, ddf: Any, platforms: Platforms) -> tuple[Any, dict[str, Any], Any]:
    """The case's reduced runs joined with its platform frame, and each row-wise model's lazy predictions."""
    sel = case.select(ddf)
    reduced = sel.map_partitions(case.reduce, meta=case.reduce(sel._meta))
    frame, keys = case.platform_frame(platforms)
    joined = reduced.merge(frame, on=keys, how="inner") if frame is not None else reduced
    check_needs(case, joined._meta.columns)
    lazy = {m.name: joined.map_partitions(m.predict, meta=m.predict(joined._meta))
            for m in models_for(case.name) if m.rowwise}
    return reduced, lazy, joined


def validate(
    runs_dir: str | Path,
    platforms_dir: str | Path,
    out_dir: str | Path,
    studies: Sequence[str] | None = None,
    address: str | None = None,
    log: Any = print,
    dask_settings: DaskSettings | None = None,
    published_dir: str | Path | None = None,
    platform_files: Sequence[str | Path] | None = None,
    connect_timeout: float = 30.0,
    uncertainty: Settings | None = None,
    history_path: str | Path | None = None,
    config_hash: str | None = None,
) -> dict[str, Any]:
    """Run the validation job on a Dask cluster and write every table, ``failed``, ``published`` and a summary.

    ``platform_files`` (the study's characterised platforms) overrides ``platforms_dir``'s ``*.yaml``.
    A scheduler that does not answer within ``connect_timeout`` seconds raises ``OSError`` /
    ``TimeoutError`` (the CLI says so in one line). ``uncertainty`` sets the bootstrap and the noise
    test (:mod:`analysis.uncertainty`); with ``history_path`` the validation appends one snapshot to the
    history (:mod:`analysis.history`).
    """
    import dask
    import dask.dataframe as dd

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    platforms = Platforms.from_files(list(platform_files)) if platform_files else Platforms.read(platforms_dir)
    registered = cases()
    where = dask_settings or DaskSettings(address=address, connect_timeout=connect_timeout)
    if address and not where.address:
        where = dataclasses.replace(where, address=address)
    with dask_client(where) as client:
        log(f"[hetval validate] Dask scheduler {client.scheduler.address} ({len(client.nthreads())} workers; "
            f"{where.describe()})")
        files = partition_files(runs_dir, studies)
        graph: dict[str, Any] = {}
        for name, case in registered.items():
            ddf = case_records(dd, files, name)
            graph[f"{name}/failed"] = ddf.map_partitions(failed_runs, meta=failed_runs(ddf._meta))
            graph[f"{name}/records"] = ddf.shape[0]
            reduced, lazy, joined = _lazy_case(case, ddf, platforms)
            graph[f"{name}/reduced"] = reduced.shape[0]
            graph[f"{name}/joined"] = joined.shape[0]  # one row per run (the platform frame is keyed uniquely)
            if any(not m.rowwise for m in models_for(name)):  # a model that needs whole groups: bring the runs
                graph[f"{name}/frame"] = joined
            for model, frame in lazy.items():
                graph[f"{name}/model/{model}"] = frame
        done = dict(zip(graph, dask.compute(*graph.values()), strict=True))
    settings = uncertainty or Settings()
    context = Context(platforms, uncertainty=settings)
    tables: dict[str, list[pd.DataFrame]] = {}
    counts: dict[str, int] = {}
    for name, case in registered.items():
        joined = done.get(f"{name}/frame")
        if joined is not None:
            context.joined[name] = joined
        predictions = {m.name: (done[f"{name}/model/{m.name}"] if m.rowwise else m.predict(joined))
                       for m in models_for(name)}
        n_joined = int(done[f"{name}/joined"])
        counts[name] = n_joined
        if done[f"{name}/reduced"] != n_joined:
            log(f"[hetval validate] warning: {done[f'{name}/reduced'] - n_joined} ok {name} runs have no "
                "characterised platform to predict them with")
        for table, frame in case.score(predictions, context).items():
            tables.setdefault(table, []).append(frame)
    for table in validation_tables():
        parts = [f for f in tables.get(table, []) if len(f.columns)]
        frame = pd.concat([f for f in parts if len(f)], ignore_index=True) if any(len(f) for f in parts) else (
            parts[0].iloc[:0] if parts else pd.DataFrame())
        atomic_write_parquet(frame.reset_index(drop=True), out_dir / f"{table}.parquet")
        tables[table] = [frame]
    published = pd.DataFrame(columns=["paper", "where", "platform", "quantity", "unit", "published", "ours",
                                      "reproduced", "inputs", "note"])
    if published_dir:
        from analysis import published as pub

        published = pd.DataFrame(pub.evaluate(Path(published_dir)), columns=published.columns)
        log(f"[hetval validate] published claims: {int(published['reproduced'].sum())} of {len(published)} "
            f"reproduced from the papers' own inputs")
    atomic_write_parquet(published.astype({c: "string" for c in published.columns if c != "reproduced"})
                         .astype({"reproduced": "bool"}), out_dir / "published.parquet")
    failed_pdf = (pd.concat([done[f"{n}/failed"] for n in registered], ignore_index=True)
                  .sort_values("run_id").reset_index(drop=True))
    n_records = int(sum(done[f"{n}/records"] for n in registered))
    atomic_write_parquet(failed_pdf, out_dir / "failed.parquet")
    summary = _summary(n_records, counts, tables, failed_pdf, published, platforms)
    files = [Path(f) for f in platform_files] if platform_files else sorted(Path(platforms_dir).glob("*.yaml"))
    study = "+".join(sorted(set(studies))) if studies else "all"
    where = history.record(history_path, study, {t: f[0] for t, f in tables.items()}, files, config_hash,
                           settings.as_dict(), {t: c.name for c in registered.values() for t in c.tables})
    summary["provenance"] = _provenance(config_hash, settings, where)
    summary["provenance"].update(study=study, history=str(history_path) if history_path else None)
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=1))
    if where:
        log(f"[hetval validate] history snapshot -> {where}")
    log("[hetval validate] " + ", ".join(f"{n} ok {c} runs" for c, n in counts.items())
        + f"; {summary['runs_metered']} with measured energy, {summary['runs_failed']} failed, "
        f"{summary['runs_skipped']} skipped, {summary['groups']} fidelity groups -> {out_dir}")
    return summary


def _provenance(config_hash: str | None, settings: Settings, snapshot: str | None) -> dict[str, Any]:
    from sims import record as rec

    sha, dirty = rec.git_state()
    return {"validated_at": rec.utc_now(), "git_sha": sha, "git_dirty": dirty,
            "version": rec.package_version("hetval"), "config_hash": config_hash, "bootstrap": settings.as_dict(),
            "history_snapshot": snapshot}


def _one(tables: dict[str, list[pd.DataFrame]], name: str) -> pd.DataFrame:
    return tables.get(name, [pd.DataFrame()])[0]


def _summary(records: int, counts: dict[str, int], tables: dict[str, list[pd.DataFrame]], failed: pd.DataFrame,
             published: pd.DataFrame, platforms: Platforms) -> dict[str, Any]:
    runs, peach_runs = _one(tables, "runs"), _one(tables, "peach_runs")
    metered = 0
    for t in ("runs", "peach_runs"):
        f = _one(tables, t)
        if "energy_median_j" in f.columns and len(f):
            metered += int(f.drop_duplicates("run_id")["energy_median_j"].notna().sum())
    fidelity_tables = [t for t in tables if t.endswith("fidelity")]
    return {
        "records": int(records),
        "runs_ok": {c: int(n) for c, n in counts.items()},
        "runs_metered": metered,
        "energy_roofline_rows": int(len(_one(tables, "energy_roofline"))),
        "peach_curves": int(len(_one(tables, "peach_fidelity"))),
        "models": sorted(runs["model"].astype(str).unique().tolist()) if "model" in runs else [],
        "runs_failed": int((failed["status"] == "failed").sum()),
        "runs_skipped": int((failed["status"] == "skipped").sum()),
        "groups": int(sum(len(_one(tables, t)) for t in fidelity_tables)),
        "published_claims": int(len(published)),
        "published_reproduced": int(published["reproduced"].sum()) if len(published) else 0,
        "platforms": sorted(platforms.processors["platform"].tolist()),
        "peach_runs_ok": int(peach_runs["run_id"].nunique()) if "run_id" in peach_runs else 0,
    }
