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

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.planning.config import uncertainty_settings
from analysis.registry import Case, Context, RegistryError, cases, models_for, validation_tables
from analysis.scoring import tasks
from analysis.scoring.cluster import (  # noqa: F401 - the cluster's names, as validate has always offered them
    THREADS_BELOW_RECORDS,
    ClusterStartError,
    DaskSettings,
    dask_client,
    probe_scheduler,
    scheduler_address,
    worker_hosts,
)
from analysis.scoring.measured import predicted
from analysis.scoring.reference import reference_rows
from analysis.scoring.replicates import attach_replicates
from analysis.scoring.runs import failed_runs, scoring_on
from analysis.scoring.scorecard import VERDICTS, scorecard
from analysis.scoring.tables import to_arrow
from analysis.scoring.tasks import gather_watched
from analysis.scoring.uncertainty import Settings
from analysis.storage.dataset import check_layout, partition_files, read_file
from analysis.storage.platforms import Platforms
from analysis.storage.schema import RUN_SCHEMA
from analysis.tracking import history
from analysis.tracking.pooled import pooled_scorecard
from analysis.tracking.pooled import summary_line as pooled_line
from sims.atomic import atomic_write_text, parquet_writer, staged_directory

#: Tables every validation writes besides the cases' own.
ENGINE_TABLES = ("failed", "published", "scorecard")


def output_files(out_dir: str | Path = "") -> list[str]:
    """Every file a validation writes (what the workflow's rule declares as outputs)."""
    names = [*validation_tables(), *ENGINE_TABLES]
    return [str(Path(out_dir) / f"{t}.parquet") for t in sorted(set(names))] + [str(Path(out_dir) / "summary.json")]


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
    out["models"] = {m.name: predicted(m, joined) for m in models if m.rowwise}
    out["frame"] = joined if any(not m.rowwise for m in models) else None
    # the same runs as each characterisation replicate alone predicts them (the intervals' platform level)
    out["replicates"] = []
    for replicate in (platforms.replicates if platforms is not None else ()):
        alone = case.join(reduced, replicate)
        out["replicates"].append({"models": {m.name: predicted(m, alone) for m in models if m.rowwise},
                                  "frame": alone if any(not m.rowwise for m in models) else None})
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


def _file_task(case_name: str, study: str, path: str, platforms: Platforms, handoff: str | None = None) -> Any:
    """:func:`case_frame` of one data file (every row of a run lives in one file, so the per-run reduction
    needs no shuffle and a case reads only its own files), handed over through ``handoff`` where this worker
    sees it (:func:`analysis.scoring.tasks.hand_over`)."""
    tasks.for_arrays()
    return tasks.hand_over(case_frame(case_name, _read_partition(study, case_name, path), platforms), handoff)


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
        "replicates": [{"frame": cat([p["replicates"][k]["frame"] for p in parts], e["frame"]),
                        "models": {m: cat([p["replicates"][k]["models"][m] for p in parts], f)
                                   for m, f in e["models"].items()}}
                       for k, e in enumerate(empty["replicates"])],
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
    final_dir = Path(out_dir)
    with staged_directory(final_dir) as out_dir:  # every table or none: a full disk leaves the last validation
        summary, tonight = _validate(runs_dir, platforms_dir, out_dir, final_dir, studies, address, log, dask_settings,
                                     published_dir, platform_files, connect_timeout, uncertainty, history_path,
                                     config_hash)
    if tonight is not None:  # appended last: a validation that fails appends nothing
        where = history.append(history_path, summary["provenance"]["study"], tonight)
        log(f"[hetval validate] history snapshot -> {where}")
    return summary


def _validate(runs_dir: str | Path, platforms_dir: str | Path, out_dir: Path, final_dir: Path,
              studies: Sequence[str] | None, address: str | None, log: Any, dask_settings: DaskSettings | None,
              published_dir: str | Path | None, platform_files: Sequence[str | Path] | None, connect_timeout: float,
              uncertainty: Settings | None, history_path: str | Path | None,
              config_hash: str | None) -> tuple[dict[str, Any], Any]:
    """:func:`validate` writing into the staging directory ``out_dir``; returns the summary and tonight's
    snapshot (not yet appended)."""
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
    import pyarrow as pa

    from analysis.storage.schema import DatasetSchemaError

    for f in files:  # before any task: a file of another layout is one line, not a worker's traceback
        try:
            footer = pq.ParquetFile(f[2])  # each footer read once: its layout and its record count
        except (OSError, pa.ArrowException) as exc:
            raise DatasetSchemaError(f"{f[2]} does not read ({str(exc).splitlines()[0] if str(exc) else 'truncated?'}):"
                                     " gather again, which sets it aside and rebuilds it from the raw records") from None
        check_layout(f[2], footer.schema_arrow)
        records += footer.metadata.num_rows
    with dask_client(where, records) as client, tasks.HandOff() as handoff:
        log(f"[hetval validate] Dask scheduler {client.scheduler.address} ({len(client.nthreads())} workers; "
            f"{where.describe(records)}); {len(files)} data file(s), {records} record(s)")
        futures: dict[str, list[Any]] = {}

        def submit(names: Sequence[str]) -> None:
            # the platform frames (a few rows) travel with each task: nothing to lose when a worker dies
            for i, name in enumerate(names):
                futures[name] = [client.submit(_file_task, name, f[0], str(f[2]), platforms, str(handoff.path),
                                               pure=False,
                                               priority=-i, key=f"validate-{name}-{f[0]}-{Path(f[2]).stem}")
                                 for f in files if f[1] == name]

        # the first case's files alone, then every other case's while the first is scored: the scheduler does
        # not keep to the priorities of tasks submitted at once (one case's files were seen read after the
        # next cases', holding up the first scoring)
        submit(list(registered)[:1])
        started = time.perf_counter()
        # the scoring tasks' inputs through the directory only where every worker, a replacement too, sees it
        shared = str(handoff.path) if where.local_processes(records) else None
        if handoff.removed_stale:
            log(f"[hetval validate] removed {len(handoff.removed_stale)} hand-off director(ies) of killed validations: "
                + ", ".join(handoff.removed_stale))

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
            result = _combine([tasks.received(r) for r in gather_watched(
                client, futures.pop(name), where.connect_timeout, progress=progress(name))], empty[name])
            if i == 0:
                submit(list(registered)[1:])
            log(f"[hetval validate] scoring case {i + 1} of {len(registered)} ({name}: {result['records']} "
                f"records read, reduced and predicted), {time.perf_counter() - started:.1f} s in")
            joined = result.pop("frame")
            if joined is not None:
                context.joined[name] = joined
            models = result.pop("models")
            predictions = {m.name: (models[m.name] if m.rowwise else predicted(m, joined)) for m in models_for(name)}
            counts[name] = int(result["joined"])
            if result["reduced"] != result["joined"]:
                log(f"[hetval validate] warning: {result['reduced'] - result['joined']} ok {name} runs have no "
                    "characterised platform to predict them with")
            # a large case scores as tasks on the cluster too
            with scoring_on(client, patience=where.connect_timeout, handoff=shared):
                scored = case.score(predictions, context)
            # each characterisation replicate's predictions scored alike (no intervals of their own), their
            # figures attached to the pooled tables' rows (analysis.scoring.replicates)
            alone = []
            for k, rep in enumerate(result.pop("replicates")):
                rep_context = Context(platforms.replicates[k], dataclasses.replace(settings, resamples=0))
                if rep["frame"] is not None:
                    rep_context.joined[name] = rep["frame"]
                alone.append(case.score({m.name: (rep["models"][m.name] if m.rowwise else predicted(m, rep["frame"]))
                                         for m in models_for(name)}, rep_context))
            if alone:
                scored = attach_replicates(scored, alone)
            del joined, models, predictions, alone
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
        study = "+".join(sorted(set(studies))) if studies else "all"
        # tonight's snapshot (the scorecard's rows in it), then the scorecard with the verdict of every night of
        # this code, configuration and machine pooled (analysis.tracking.pooled); the snapshot is appended last,
        # once every other output is written, so that a validation that fails appends nothing
        tonight = history.snapshot(study, {**{t: f[0] for t, f in tables.items()}, "scorecard": card}, files,
                                   config_hash, settings.as_dict(),
                                   {t: c.name for c in registered.values() for t in c.tables},
                                   reference_rows(registered, log)) if history_path else None
        where = history.snapshot_path(history_path, study, tonight) if tonight is not None else None
        card = pooled_scorecard(card, history_path, study, Path(where).stem if where else None, settings.level,
                                tonight)
        write(to_arrow(card, "scorecard"), out_dir / "scorecard.parquet")
    log(f"[hetval validate] scorecard: {len(card)} row(s); "
        + ", ".join(f"{v} {int((card['verdict'] == v).sum())}" for v in VERDICTS if (card["verdict"] == v).any())
        + f"; {pooled_line(card)}")
    summary = _summary(n_records, counts, tables, failed_pdf, published, platforms)
    summary["runs_measured"] = _merge_windows([w for n in registered for w in done[n]["window"]])
    summary["provenance"] = _provenance(config_hash, settings, where)
    summary["provenance"].update(study=study, history=str(history_path) if history_path else None)
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=1))
    log("[hetval validate] " + ", ".join(f"{n} ok {c} runs" for c, n in counts.items())
        + f"; {summary['runs_metered']} with measured energy, {summary['runs_failed']} failed, "
        f"{summary['runs_skipped']} skipped, {summary['groups']} fidelity groups -> {final_dir}")
    return summary, tonight


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
