"""The Dask validation job: runs joined with platform parameters and every applicable model, then scored.

It loops over the registered cases (:mod:`analysis.registry`). Every data file
of a case's partitions is one Dask task (:func:`case_frame`): read it, reduce
its runs (``case.reduce``; every row of a run lives in one file, so no
shuffle is needed), join the platform frame the case asks for (sent with the
task) and predict with every row-wise model. The tasks run on
whatever cluster :func:`dask_client` chooses, and a cluster of more workers
runs more files at once (16 per case and study). The client gathers the
results, applies the group-wise models (PEACH's curves) and lets each case
score its predictions into its tables, as arrays over all groups at once
(:func:`analysis.scoring.runs.score_batch`). Tables of the same name from several
cases are concatenated; every table is written atomically as
``<out>/<table>.parquet``, with ``failed.parquet``, ``published.parquet``
(the papers' own claims, recomputed) and ``summary.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.planning.config import uncertainty_settings
from analysis.registry import Case, Context, RegistryError, cases, models_for, validation_tables
from analysis.scoring import tasks
from analysis.scoring.runs import failed_runs, scoring_on
from analysis.scoring.scorecard import VERDICTS, scorecard
from analysis.scoring.tables import to_arrow
from analysis.scoring.tasks import gather_watched
from analysis.scoring.uncertainty import Settings
from analysis.storage.dataset import check_layout, partition_files, read_file
from analysis.storage.platforms import Platforms
from analysis.storage.schema import RUN_SCHEMA
from analysis.tracking import history
from sims.atomic import atomic_write_text, parquet_writer

#: Tables every validation writes besides the cases' own.
ENGINE_TABLES = ("failed", "published", "scorecard")


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

    def describe(self, records: int | None = None) -> str:
        addr = scheduler_address(self.address)
        if addr:
            return f"the Dask scheduler at {addr}"
        if self.cluster == "slurm":
            return f"a SLURMCluster of {self.workers} worker job(s)"
        if records is not None and records < THREADS_BELOW_RECORDS:
            return f"a local cluster of {self.workers} worker thread(s) in this process, the data being small"
        return f"a local cluster of {self.workers} worker process(es)"


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


#: Below this many records a local cluster's workers are threads of this process: starting worker processes (each
#: importing pandas, pyarrow and hetval) costs more CPU than the work, for no gain in time (on 2 cores: 78 records
#: validate in the same time either way with a third less CPU; at 377 processes are 0.7 s faster).
THREADS_BELOW_RECORDS = 200


@contextlib.contextmanager
def dask_client(settings: DaskSettings, records: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` on the cluster ``settings`` chooses; the cluster is closed afterwards. A local
    cluster for fewer ``records`` than :data:`THREADS_BELOW_RECORDS` runs its workers as threads of this process.

    An unreachable scheduler raises ``OSError`` / ``TimeoutError`` within ``connect_timeout``; a SLURM cluster
    whose first worker does not start in time, or without dask-jobqueue, raises :class:`ClusterStartError`.
    """
    from distributed import Client, LocalCluster

    addr = scheduler_address(settings.address)
    if addr:
        probe_scheduler(addr, settings.connect_timeout)
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
                print(f"validate: the SLURMCluster's workers ran on {', '.join(worker_hosts(client)) or 'no node'}",
                      flush=True)
        finally:
            try:
                cluster.close(timeout=settings.connect_timeout)
            except Exception:  # noqa: BLE001 - jobs that never started leave the cluster in a state it asserts on
                # marked closed, or distributed's exit hook retries for 10 s more; a worker job that did start
                # ends by itself once this process (its scheduler) is gone
                from distributed.core import Status

                cluster.status = Status.closed
            for lg in loggers:
                lg.removeFilter(quiet)
        return
    processes = records is None or records >= THREADS_BELOW_RECORDS
    with LocalCluster(n_workers=settings.workers, threads_per_worker=1, processes=processes,
                      dashboard_address=None) as cluster, Client(cluster, timeout=settings.connect_timeout) as client:
        yield client


def worker_hosts(client: Any) -> list[str]:
    """The host names the cluster's workers run on (each worker asked; one that does not answer is left out)."""
    import socket

    try:
        return sorted(set(client.run(socket.gethostname, on_error="ignore").values()))
    except Exception:  # noqa: BLE001 - a worker lost at the end must not fail a finished validation
        return []


def probe_scheduler(address: str, timeout: float) -> None:
    """Ask the scheduler at ``address`` who it is, within ``timeout`` seconds in all: a host that refuses, does
    not exist, or accepts the connection and then says nothing (where ``Client`` alone waits forever) raises
    ``TimeoutError`` / ``OSError`` naming what did not happen."""
    import asyncio

    from distributed.comm import connect

    async def ask() -> None:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            await comm.read()
        finally:
            comm.abort()

    try:
        asyncio.run(asyncio.wait_for(ask(), timeout))
    except TimeoutError:
        raise TimeoutError(f"the scheduler at {address} did not answer within {timeout:g} s") from None


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


#: Record fields no case's reduction reads (provenance and per-rank detail): validation leaves them in the files
#: (a map of package versions per record is most of a file's decoding time).
NOT_READ = ("versions", "phase_times", "energy_detail", "placement", "job_id", "git_sha", "config_hash",
            "executed_flops_host", "executed_flops_accel", "timer_resolution_s")
READ_COLUMNS = [c for c in RUN_SCHEMA.names if c not in NOT_READ]


def _read_partition(study: str, case: str, path: str) -> pd.DataFrame:
    return _as_pandas(read_file(study, case, path, columns=READ_COLUMNS))


def case_frame(case_name: str, records: pd.DataFrame, platforms: Platforms | None) -> dict[str, Any]:
    """Everything validation needs from one batch of a case's records: the record count, the failed runs,
    the reduced runs joined with the ``platforms`` (:meth:`~analysis.registry.Case.join`) and every
    row-wise model's predictions.

    Pure pandas: a Dask task runs it on one data file (:func:`_file_task`); run on the empty schema it gives
    the empty result of the right types and checks every model's ``needs`` before anything is computed.
    """
    case = cases()[case_name]
    out: dict[str, Any] = {"records": len(records), "failed": failed_runs(records), "window": _window(records)}
    mine = (records["case"] == case_name).to_numpy(dtype=bool, na_value=False)
    reduced = case.reduce(records if mine.all() else records[mine])
    joined = case.join(reduced, platforms) if platforms is not None else reduced
    check_needs(case, joined.columns)
    out.update(reduced=len(reduced), joined=len(joined))
    models = models_for(case_name)
    out["models"] = {m.name: m.predict(joined) for m in models if m.rowwise}
    out["frame"] = joined if any(not m.rowwise for m in models) else None
    return out


def _window(records: pd.DataFrame) -> dict[str, Any]:
    """When and where these records were measured: the first and last start time, the hosts."""
    if not len(records):
        return {"first": None, "last": None, "hosts": []}
    started = pd.to_datetime(records["started_at"], utc=True)
    return {"first": started.min(), "last": started.max(), "hosts": sorted({str(h) for h in records["hostname"].dropna().unique()})}


def _merge_windows(windows: list[dict[str, Any]]) -> dict[str, Any]:
    firsts = [w["first"] for w in windows if w["first"] is not None]
    lasts = [w["last"] for w in windows if w["last"] is not None]
    return {"first": min(firsts).isoformat() if firsts else None, "last": max(lasts).isoformat() if lasts else None,
            "hosts": sorted({h for w in windows for h in w["hosts"]})}


def _file_task(case_name: str, study: str, path: str, platforms: Platforms) -> dict[str, Any]:
    """:func:`case_frame` of one data file (every row of a run lives in one file, so the per-run reduction
    needs no shuffle and a case reads only its own files)."""
    tasks.for_arrays()
    return case_frame(case_name, _read_partition(study, case_name, path), platforms)


def _combine(parts: list[dict[str, Any]], empty: dict[str, Any]) -> dict[str, Any]:
    """The per-file results of one case as one result (frames concatenated in file order)."""

    def cat(frames: list[pd.DataFrame | None], fallback: pd.DataFrame | None) -> pd.DataFrame | None:
        have = [f for f in frames if f is not None and len(f)]
        if not have:
            return fallback
        out = pd.concat(have, ignore_index=True) if len(have) > 1 else have[0].reset_index(drop=True)
        out.attrs = have[0].attrs
        return out

    return {
        "records": sum(p["records"] for p in parts), "reduced": sum(p["reduced"] for p in parts),
        "window": [p["window"] for p in parts],
        "joined": sum(p["joined"] for p in parts),
        "failed": cat([p["failed"] for p in parts], empty["failed"]),
        "frame": cat([p["frame"] for p in parts], empty["frame"]),
        "models": {m: cat([p["models"][m] for p in parts], f) for m, f in empty["models"].items()},
    }


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
    test (:mod:`analysis.scoring.uncertainty`); with ``history_path`` the validation appends one snapshot to the
    history (:mod:`analysis.tracking.history`).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    platforms = Platforms.from_files(list(platform_files)) if platform_files else Platforms.read(platforms_dir)
    registered = cases()
    where = dask_settings or DaskSettings(address=address, connect_timeout=connect_timeout)
    if address and not where.address:
        where = dataclasses.replace(where, address=address)
    meta = _as_pandas(RUN_SCHEMA.empty_table().select(READ_COLUMNS))
    # every case on the empty schema first: the result types, and a missing platform column fails here
    empty = {name: case_frame(name, meta, platforms) for name in registered}
    files = partition_files(runs_dir, studies)
    import pyarrow.parquet as pq

    records = 0
    for f in files:  # before any task: a file of another layout is one line, not a worker's traceback
        footer = pq.ParquetFile(f[2])  # each footer read once: its layout and its record count
        check_layout(f[2], footer.schema_arrow)
        records += footer.metadata.num_rows
    with dask_client(where, records) as client:
        log(f"[hetval validate] Dask scheduler {client.scheduler.address} ({len(client.nthreads())} workers; "
            f"{where.describe(records)}); {len(files)} data file(s), {records} record(s)")
        futures: dict[str, list[Any]] = {}

        def submit(names: Sequence[str]) -> None:
            # the platform frames (a few rows) travel with each task: nothing to lose when a worker dies
            for i, name in enumerate(names):
                futures[name] = [client.submit(_file_task, name, f[0], str(f[2]), platforms, pure=False,
                                               priority=-i, key=f"validate-{name}-{f[0]}-{Path(f[2]).stem}")
                                 for f in files if f[1] == name]

        # the first case's files alone, then every other case's while the first is scored: the scheduler does
        # not keep to the priorities of tasks submitted at once (one case's files were seen read after the
        # next cases', holding up the first scoring)
        submit(list(registered)[:1])
        started = time.perf_counter()

        def progress(name: str) -> Any:
            def say(finished: int, total: int) -> None:
                log(f"[hetval validate] {name}: {finished} of {total} data file(s) read, reduced and predicted, "
                    f"{time.perf_counter() - started:.0f} s elapsed; its scoring comes next")
            return say

        settings = uncertainty if uncertainty is not None else uncertainty_settings()
        context = Context(platforms, settings)
        tables: dict[str, list[pd.DataFrame]] = {}
        counts: dict[str, int] = {}
        done: dict[str, dict[str, Any]] = {}
        # each case is scored as soon as its own files are in, while the workers read the next cases' files
        # (the client's scoring and the workers' reading overlap); its scoring tasks go ahead of those reads
        for i, (name, case) in enumerate(registered.items()):
            result = _combine(gather_watched(client, futures.pop(name), where.connect_timeout,
                                             progress=progress(name)), empty[name])
            if i == 0:
                submit(list(registered)[1:])
            log(f"[hetval validate] scoring case {i + 1} of {len(registered)} ({name}: {result['records']} "
                f"records read, reduced and predicted), {time.perf_counter() - started:.1f} s in")
            joined = result.pop("frame")
            if joined is not None:
                context.joined[name] = joined
            models = result.pop("models")
            predictions = {m.name: (models[m.name] if m.rowwise else m.predict(joined)) for m in models_for(name)}
            counts[name] = int(result["joined"])
            if result["reduced"] != result["joined"]:
                log(f"[hetval validate] warning: {result['reduced'] - result['joined']} ok {name} runs have no "
                    "characterised platform to predict them with")
            with scoring_on(client, patience=where.connect_timeout):  # a large case scores as tasks on the cluster too
                scored = case.score(predictions, context)
            del joined, models, predictions
            context.joined.pop(name, None)  # a case's runs are its own: the client holds no case's frame longer
            for table, frame in scored.items():
                tables.setdefault(table, []).append(frame)
            done[name] = result
        log(f"[hetval validate] read and scored {', '.join(f'{n} {c}' for n, c in counts.items() if c)} runs "
            f"in {time.perf_counter() - started:.1f} s")
    with parquet_writer() as write:  # each file written while the next is converted
        for table in validation_tables():
            parts = [f for f in tables.get(table, []) if len(f.columns)]
            frame = pd.concat([f for f in parts if len(f)], ignore_index=True) if any(len(f) for f in parts) else (
                parts[0].iloc[:0] if parts else pd.DataFrame())
            write(to_arrow(frame, table), out_dir / f"{table}.parquet")
            tables[table] = [frame]
        published = pd.DataFrame(columns=["paper", "where", "platform", "quantity", "unit", "published", "ours",
                                          "published_value", "ours_value", "tolerance", "difference", "reproduced",
                                          "reason", "inputs", "note"])
        if published_dir:
            from analysis.scoring import claims as pub

            published = pd.DataFrame(pub.evaluate(Path(published_dir)), columns=published.columns)
            log(f"[hetval validate] published claims: {int(published['reproduced'].sum())} of {len(published)} "
                f"reproduced from the papers' own inputs")
        numbers = ("published_value", "ours_value", "difference")
        published = published.astype({c: "string" for c in published.columns if c not in ("reproduced", *numbers)})
        write(to_arrow(published.astype({"reproduced": "bool", **{c: "float64" for c in numbers}}), "published"),
              out_dir / "published.parquet")
        failed_pdf = (pd.concat([done[n]["failed"] for n in registered], ignore_index=True)
                      .sort_values("run_id").reset_index(drop=True))
        n_records = int(sum(done[n]["records"] for n in registered))
        write(to_arrow(failed_pdf, "failed"), out_dir / "failed.parquet")
        files = [Path(f) for f in platform_files] if platform_files else sorted(Path(platforms_dir).glob("*.yaml"))
        card = scorecard({t: f[0] for t, f in tables.items()}, platforms.processors, settings, machine_fingerprints(files))
        write(to_arrow(card, "scorecard"), out_dir / "scorecard.parquet")
    log(f"[hetval validate] scorecard: {len(card)} row(s); "
        + ", ".join(f"{v} {int((card['verdict'] == v).sum())}" for v in VERDICTS if (card["verdict"] == v).any()))
    summary = _summary(n_records, counts, tables, failed_pdf, published, platforms)
    summary["runs_measured"] = _merge_windows([w for n in registered for w in done[n]["window"]])
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


def machine_fingerprints(files: list[Path]) -> dict[str, str]:
    """Each platform file's platform -> the fingerprint of the machine it was characterised on."""
    from sims.fingerprint import fingerprint
    from sims.platform_file import read_platform

    out = {}
    for f in files:
        doc = read_platform(f)
        out[str(doc.get("platform") or f.stem)] = fingerprint(doc.get("machine") or {})
    return out


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
