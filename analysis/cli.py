"""The ``hetval`` command: every workflow stage runnable alone, plus config checks and the study matrix.

Subcommands: ``check-config``, ``matrix``, ``gather``, ``ingest-published``, ``validate``, ``track``,
``compare``, ``report``, ``attach-trace``. ``hetval --version`` prints the version; ``hetval <command> --help`` every option
with its default.

Exit codes: 0 done; 1 a finding (``track``: a regression or machine drift) or an unexpected error inside hetval
(with its traceback, to report); 2 a usage, config or input error - a missing or malformed file, a bad option,
an unreachable scheduler - said in one line on standard error, with no traceback.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

from analysis.cli_paths import (
    InputError,
    OneLineParser,
    check_worker_flags,
    existing,
    history_of,
    output_path,
    published_dir,
    scorecard_of,
    scorecard_table,
)
from analysis.planning.checks import check_machine
from analysis.planning.config import ConfigError, load_config, study_matrix, uncertainty_settings
from analysis.planning.config import section as section_of
from analysis.registry import RegistryError


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("hetval")
    except metadata.PackageNotFoundError:
        from sims import __version__

        return __version__


def _config(args: argparse.Namespace) -> dict:
    return load_config(*(args.configfile or []))


def cmd_check_config(args: argparse.Namespace) -> int:
    config = _config(args)
    check_machine(config)
    runs = study_matrix(config)
    print(f"config ok: study {config['study']!r}, {len(config['platforms'])} platform(s), {len(runs)} run(s)")
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    runs = study_matrix(_config(args))
    if args.run_id:
        found = [s for s in runs if s["run_id"] == args.run_id]
        if not found:
            raise InputError(f"run {args.run_id} is not in this study (see `hetval matrix`)")
        # The JSON that `python -m mpi4py -m sims.run --spec` takes.
        print(json.dumps({k: v for k, v in found[0].items() if k != "run_id"}, sort_keys=True))
        return 0
    if args.json:
        print(json.dumps(runs, sort_keys=True, indent=1))
        return 0
    print("run_id", "study", "case", "variant", "platform", "ranks", "params", sep="\t")
    for spec in runs:
        what = spec.get("params", {"table": spec.get("table")})
        print(spec["run_id"], spec["study"], spec["case"], spec["variant"], spec["platform"], spec.get("ranks", ""),
              json.dumps(what, sort_keys=True), sep="\t")
    return 0


def cmd_gather(args: argparse.Namespace) -> int:
    from analysis.storage.dataset import Matrix, clear_tmp, gather
    from sims.atomic import atomic_write_text

    files = [existing(f, "raw record") for f in args.records]
    if args.raw_dir:
        files += sorted(existing(args.raw_dir, "--raw-dir", directory=True).glob("*.json"))
    matrix = None
    if args.matrix:
        try:
            matrix = Matrix.read(existing(args.matrix, "--matrix"))
        except ValueError as exc:
            raise InputError(str(exc)) from None
    if not files and matrix is None:
        raise InputError("nothing to gather: give raw record files or --raw-dir")
    if matrix is not None and not matrix.runs:
        raise InputError(f"--matrix {args.matrix} lists no run: gathering against it would remove every row of study "
                         f"{matrix.study!r}")
    try:
        section_of("runs", {"max_attempts": args.max_attempts})
    except ConfigError as exc:
        raise InputError(f"{exc} (--max-attempts)") from None
    for folder, what in ((args.runs, "--runs"), (args.quarantine, "--quarantine"), (args.retry, "--retry")):
        output_path(folder, what)
    output_path(args.manifest, "--manifest", directory=False)
    previous = None
    if args.manifest and Path(args.manifest).exists():
        try:
            previous = json.loads(Path(args.manifest).read_text(encoding="utf-8")).get("files")
        except (OSError, ValueError, AttributeError):
            previous = None  # an unreadable manifest is rewritten; its checksums are recomputed
    clear_tmp(args.runs)
    result = gather(files, args.runs, args.quarantine, args.retry, matrix=matrix, max_attempts=args.max_attempts,
                    previous_files=previous if isinstance(previous, dict) else None)
    extra = "".join(f", {n} {what}" for n, what in ((len(result.rebuilt), "data file(s) rebuilt"),
                                                    (len(result.removed_runs), "run(s) removed"),
                                                    (len(result.given_up), "run(s) not retried any more")) if n)
    print(
        f"[hetval gather] {result.runs} run(s), {result.records} record(s) -> {args.runs}; "
        f"{len(result.failed_runs)} failed, {len(result.quarantined)} quarantined{extra}"
    )
    if args.manifest:
        atomic_write_text(args.manifest, json.dumps(result.as_dict(), indent=1))
    return 0


def cmd_ingest_published(args: argparse.Namespace) -> int:
    from analysis.cases.published import write_raw_record

    try:
        path = write_raw_record(args.table, args.study, args.run_id, Path(args.out),
                                os.environ.get("HETVAL_CONFIG_HASH", "unknown"))
    except (OSError, ValueError) as exc:
        raise InputError(str(exc)) from None
    print(f"[hetval ingest-published] {args.table}: run {args.run_id} -> {path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from analysis.scoring.tasks import WorkersLost
    from analysis.scoring.validate import ClusterStartError, DaskSettings, validate

    runs = existing(args.runs, "--runs", directory=True)
    if not any(runs.glob("study=*/case=*/*.parquet")):
        raise InputError(f"--runs {runs} holds no dataset (study=*/case=*/*.parquet): gather first")
    files = [existing(f, "--platform-file") for f in args.platform_file or []]
    if not files and not any(existing(args.platforms, "--platform-dir", directory=True).glob("*.yaml")):
        raise InputError(f"--platform-dir {args.platforms} holds no platform file (*.yaml): characterise first")
    from analysis.storage.dataset import partition_files

    for study in args.study or []:
        if not partition_files(runs, [study]):
            known = sorted({f[0] for f in partition_files(runs)})
            raise InputError(f"--study {study}: the dataset {runs} holds no run of it (it holds {', '.join(known)})")
    output_path(args.out, "--out")
    given = {k: getattr(args, k) for k in ("resamples", "seed", "level", "noise_alpha") if getattr(args, k) is not None}
    try:  # the defaults and bounds of the config's uncertainty section (the schema)
        settings = uncertainty_settings(**given)
    except ConfigError as exc:
        raise InputError(f"{exc} (--{str(exc).split(':')[0].split('.')[-1].replace('_', '-')})") from None
    if args.workers < 1 or args.connect_timeout <= 0:
        raise InputError("--workers must be >= 1 and --connect-timeout > 0")
    check_worker_flags(args)
    dask_settings = DaskSettings(address=args.scheduler or None, cluster=args.cluster, workers=args.workers,
                                 worker_memory=args.worker_memory, worker_walltime=args.worker_walltime,
                                 partition=args.worker_partition or None, account=args.worker_account or None,
                                 connect_timeout=args.connect_timeout)
    try:
        validate(runs, args.platforms, args.out, studies=args.study or None,
                 published_dir=published_dir(args.published), platform_files=files or None,
                 uncertainty=settings, history_path=args.history or None, config_hash=args.config_hash,
                 dask_settings=dask_settings)
    except (ClusterStartError, WorkersLost) as exc:
        raise InputError(str(exc)) from None
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from analysis.report import build_report

    validation = existing(args.validation, "--validation", directory=True)
    if not any(validation.glob("*.parquet")):
        raise InputError(f"--validation {validation} holds no validation tables: validate first")
    platforms = [existing(f, "--platform-file") for f in args.platform_file] if args.platform_file else \
        existing(args.platforms, "--platform-dir", directory=True)
    quarantine = existing(args.manifest, "--manifest") if args.manifest else Path(args.quarantine)
    if args.manifest:
        try:
            doc = json.loads(quarantine.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"--manifest {quarantine} is not a gather manifest ({exc})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("quarantined", []), list):
            raise InputError(f"--manifest {quarantine} is not a gather manifest (no 'quarantined' list)")
    if args.processes is not None and args.processes < 1:
        raise InputError(f"--processes must be >= 1, got {args.processes}")
    if args.case:
        from analysis.registry import cases
        unknown = [c for c in args.case if c not in cases()]
        if unknown:
            raise InputError(f"--case {unknown[0]}: not a registered case (registered: {', '.join(sorted(cases()))})")
    output_path(args.out, "--out")
    from sims.placement import cpuset

    processes = args.processes or min(4, len(cpuset()))
    summary = build_report(validation, platforms, quarantine, args.out, title=args.title, cases=args.case,
                           processes=processes)
    print(summary)
    return 0


def cmd_attach_trace(args: argparse.Namespace) -> int:
    from sims.meters import MeterUnavailable
    from sims.meters.posthoc import attach_trace, attach_trace_to_platform

    channels = {}
    for item in args.channel or []:
        name, sep, target = item.rpartition("=")
        if not sep:
            raise InputError(f"--channel {item!r} is not NAME=host|accel|node")
        channels[name] = target
    if not args.raw_dir and not args.platform_file:
        raise InputError("give --raw-dir, --platform-file or both")
    existing(args.trace, "--trace")
    try:  # held to the energy section's bounds, as the config's keys are: no NaN, no count below 1
        section_of("energy", {"min_periods": args.min_periods,
                              "trace": {"path": str(args.trace), "clock_offset_s": args.clock_offset}})
    except ConfigError as exc:
        raise InputError(f"{exc} (--clock-offset, --min-periods)") from None
    raw_dir = existing(args.raw_dir, "--raw-dir", directory=True) if args.raw_dir else None
    if raw_dir is not None:
        if not any(p.is_file() and not p.is_symlink() for p in raw_dir.glob("*.json")):
            raise InputError(f"--raw-dir {raw_dir} holds no raw record (*.json)")
        output_path(raw_dir, "--raw-dir")
    platform_files = [existing(f, "--platform-file") for f in args.platform_file or []]
    try:
        # the platform's overlay first, the records second: the re-gathered records then meet the new parameters
        for platform_file in platform_files:
            attach_trace_to_platform(platform_file, args.trace, channels or None, args.clock_offset, args.min_periods,
                                     args.replace)
        if raw_dir:
            attach_trace(raw_dir, args.trace, channels or None, args.clock_offset, args.min_periods, args.replace)
    except MeterUnavailable as exc:
        raise InputError(str(exc)) from None
    return 0


def cmd_track(args: argparse.Namespace) -> int:
    from analysis.tracking.track import Rule, judged_line, track

    given = {opt: getattr(args, opt) for opt in Rule.__dataclass_fields__ if getattr(args, opt, None) is not None}
    section = dict(_config(args).get("history") or {})
    try:  # the flags are held to the schema's bounds like the config's keys, before the history is read
        rule = Rule.from_config(section_of("history", {**section, **given}))
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    frame, path, section = history_of(_config(args), args.history, args.study)
    findings, stats = track(frame, rule)
    from analysis.tracking import history

    latest = frame.iloc[-1]
    meta = history.snapshot_row(path, str(latest["study"]), str(latest["snapshot"]))
    machine = json.loads(meta["machine"]) if isinstance(meta.get("machine"), str) else {}
    # with --json, stdout holds only the findings, one JSON object per line; what a reader wants goes to stderr
    say = functools.partial(print, file=sys.stderr) if args.json else print
    say(f"[hetval track] study {latest['study']}, machine {latest['fingerprint']} ({machine.get('cpu_model')}, "
          f"{machine.get('cores')} cores): latest snapshot {latest['snapshot']} (git {str(latest['git_sha'])[:10]}"
          f"{'-dirty' if latest['git_dirty'] else ''}) against {stats['snapshots'] - 1} earlier; "
          f"{judged_line(stats, rule)}")
    for f in findings:
        print(json.dumps(f.as_dict(), sort_keys=True, default=str) if args.json else f.line())
    for line in [n.line() for n in stats["noisy"]] + stats["changed"]:
        say(line)
    regressions = sum(f.kind == "regression" for f in findings)
    drifts = sum(f.kind == "drift" for f in findings)
    follows = sum(f.kind == "follows" for f in findings)
    say(f"[hetval track] {regressions} regression(s), {drifts} machine drift(s)" + (f" ({follows} model "
        f"figure(s) moved with it)" if follows else ""))
    return 1 if regressions or (drifts and not args.ignore_drift) else 0


def cmd_compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from analysis.tracking.track import compare, resolve

    cards = [scorecard_of(args.a), scorecard_of(args.b)]
    if any(cards):
        if not all(cards):
            bad = args.a if not cards[0] else args.b
            raise InputError(f"{bad}: neither a scorecard.parquet nor a validation directory holding one "
                             "(compare two machines' scorecards, or two history snapshots)")
        from analysis.scoring.compare import compare_machines, describe

        a, b = (scorecard_table(c) for c in cards)
        table = compare_machines(a, b)
        if args.json:
            print(table.to_json(orient="records"))
            return 0
        for line in describe(table, a, b, cards):
            print(line)
        with pd.option_context("display.max_rows", None, "display.width", 250, "display.max_colwidth", 40):
            print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        return 0
    frame, _, _ = history_of(_config(args), args.history, args.study)
    try:
        a, b = resolve(frame, args.a), resolve(frame, args.b)
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None
    table = compare(frame, a, b)
    if args.json:
        print(table.to_json(orient="records"))
        return 0
    print(f"[hetval compare] A = {a}, B = {b}: {len(table)} figures")
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _default(section_name: str, key: str) -> Any:
    """A flag's default: the config schema's for the key it stands for (defaults are written only there)."""
    return section_of(section_name)[key]


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    parser = OneLineParser(prog="hetval", description="hetval: measure, predict, score.",
                                     epilog="Exit codes: 0 done; 1 a finding (track: a regression or drift) or an "
                                            "unexpected error; 2 a usage, config or input error (one line on "
                                            "standard error).")
    parser.add_argument("--version", action="version", version=f"hetval {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_config(p: argparse.ArgumentParser) -> None:
        p.add_argument("--configfile", "--config-file", action="append", metavar="FILE",
                       help="study config YAML, layered as Snakemake layers --configfile (repeatable; later files "
                            "override; none: config/config.yaml)")

    p = sub.add_parser("check-config", help="validate the config and count the study's runs", formatter_class=fmt)
    with_config(p)
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("matrix", help="list the study's runs", formatter_class=fmt)
    with_config(p)
    p.add_argument("--run-id", "--spec", dest="run_id", metavar="RUN_ID",
                   help="print that run's full spec as JSON (what sims.run --spec takes)")
    p.add_argument("--json", action="store_true", help="print every run's spec as a JSON list")
    p.set_defaults(func=cmd_matrix)

    p = sub.add_parser("gather", help="raw records -> hive-partitioned Parquet dataset", formatter_class=fmt)
    p.add_argument("records", nargs="*", help="raw record files")
    p.add_argument("--raw-dir", help="also gather every *.json in this directory")
    p.add_argument("--runs", default="results/runs", help="dataset directory")
    p.add_argument("--quarantine", default="results/quarantine", help="where records failing the schema go")
    p.add_argument("--retry", default="results/retry", help="where retry requests for failed / quarantined runs go")
    p.add_argument("--manifest", help="write a JSON summary of this gather here (with every data file's checksum)")
    p.add_argument("--matrix", help="the study's matrix (JSON: study and run id -> case): records outside it are "
                   "quarantined and rows of runs no longer in it are removed")
    p.add_argument("--max-attempts", type=int, default=_default("runs", "max_attempts"),
                   help="a run that failed the same way this many times in a row is not retried")
    p.set_defaults(func=cmd_gather)

    p = sub.add_parser("validate", help="Dask job: runs x platforms x models -> tightness and fidelity",
                       formatter_class=fmt)
    p.add_argument("--runs", default="results/runs", help="the dataset directory (hive-partitioned Parquet)")
    p.add_argument("--platform-dir", "--platforms", dest="platforms", default="results/default/platforms",
                   help="directory of characterised platform files (*.yaml)")
    p.add_argument("--platform-file", nargs="+", action="extend", metavar="FILE",
                   help="the study's platform files, instead of --platform-dir (several, or the option repeated)")
    p.add_argument("--out", default="results/default/validation", help="where the validation tables go")
    p.add_argument("--study", action="append", help="restrict to this study (repeatable; default: every study)")
    p.add_argument("--scheduler", default=None,
                   help="Dask scheduler address (default: $DASK_SCHEDULER_ADDRESS, else a local cluster)")
    p.add_argument("--connect-timeout", type=float, default=_default("validate", "connect_timeout"),
                   help="seconds to wait for the scheduler (and for the first SLURMCluster worker)")
    p.add_argument("--cluster", choices=("local", "slurm"), default=_default("validate", "cluster"),
                   help="with no scheduler address: a LocalCluster, or a dask-jobqueue SLURMCluster")
    p.add_argument("--workers", type=int, default=_default("validate", "workers"), help="Dask workers (local processes or SLURM jobs)")
    p.add_argument("--worker-memory", default=_default("validate", "worker_memory"), help="memory of each SLURMCluster worker job")
    p.add_argument("--worker-walltime", default=_default("validate", "worker_walltime"), help="walltime of each SLURMCluster worker job")
    p.add_argument("--worker-partition", default=None, help="SLURM partition of the worker jobs (default: the cluster's)")
    p.add_argument("--worker-account", default=None, help="SLURM account of the worker jobs (default: none)")
    p.add_argument("--published", default=None,
                   help="directory of the published platform catalogs whose papers' claims are recomputed "
                        "(default: the papers' tables shipped with hetval, analysis/resources/published/machines; '' to skip)")
    # defaults: the config schema's uncertainty section
    p.add_argument("--resamples", type=int, default=None, help="bootstrap resamples per group (0 = no intervals)")
    p.add_argument("--seed", type=int, default=None, help="seed of the bootstrap (recorded with the snapshot)")
    p.add_argument("--level", type=float, default=None, help="coverage of the intervals")
    p.add_argument("--noise-alpha", type=float, default=None,
                   help="significance of the Mann-Whitney test behind the noise-aware best")
    p.add_argument("--history", default=None,
                   help="append this validation's snapshot to the history at this directory or URL "
                        "(the workflow passes history.path; default: no snapshot)")
    p.add_argument("--config-hash", default=None, help="the study config's hash, recorded with the snapshot")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("ingest-published", help="one published measurement (analysis/resources/published/measurements/<table>.yaml) -> "
                       "a raw record", formatter_class=fmt)
    p.add_argument("--table", required=True, help="table name, e.g. peach-2014-table-viii")
    p.add_argument("--study", required=True, help="the study the record belongs to")
    p.add_argument("--run-id", required=True, help="the run (see `hetval matrix`)")
    p.add_argument("--out", required=True, help="the raw record to write (results/raw/<study>/<run_id>.json)")
    p.set_defaults(func=cmd_ingest_published)

    p = sub.add_parser("attach-trace", help="fill the energy of recorded runs from an external power-meter CSV",
                       formatter_class=fmt)
    p.add_argument("--raw-dir", help="raw records of one study (results/raw/<study>)")
    p.add_argument("--platform-file", nargs="+", action="extend", metavar="FILE",
                   help="a platform characterised while the meter logged (results/<study>/platforms/<p>.yaml; "
                        "repeatable): idle power and e_f, e_b, p_s from its kept windows, into <p>.energy.json")
    p.add_argument("--trace", required=True, help="CSV with timestamp, channel, watts")
    p.add_argument("--channel", action="append", metavar="NAME=host|accel|node",
                   help="what a trace channel measures (repeat; default: every channel is node)")
    p.add_argument("--clock-offset", type=float, default=0.0, help="the meter's clock minus this host's, seconds")
    p.add_argument("--min-periods", type=float, default=_default("energy", "min_periods"), help="a window must span this many samples")
    p.add_argument("--replace", action="store_true", help="also replace energy some other meter measured")
    p.set_defaults(func=cmd_attach_trace)

    p = sub.add_parser("track", help="flag model regressions and machine drift in the history (exit 1 on "
                       "either)", formatter_class=fmt)
    with_config(p)
    p.add_argument("--history", help="history directory or URL (default: the config's history.path)")
    p.add_argument("--study", help="study to judge (default: the config's study)")
    p.add_argument("--window", type=int, help="snapshots to look back over (default: history.window)")
    p.add_argument("--min-history", type=int, help="earlier snapshots a series needs (default: history.min_history)")
    p.add_argument("--z", type=float, help="noise units a step must exceed (default: history.z)")
    p.add_argument("--min-change", type=float, help="smallest step ever flagged (default: history.min_change)")
    p.add_argument("--large-change", type=float, help="relative change flagged in one night (default: history.large_change)")
    p.add_argument("--after", type=int, help="nights a change must hold (default: history.after)")
    p.add_argument("--noisy", type=float, help="between-study spread above which a figure is noisy (default: history.noisy)")
    p.add_argument("--json", action="store_true",
                   help="print each finding as one JSON object per line on stdout (the rest goes to stderr)")
    p.add_argument("--ignore-drift", action="store_true",
                   help="exit 0 on machine drift alone (by default a drifted parameter - a changed machine or a "
                        "broken characterisation - exits 1 like a regression)")
    p.set_defaults(func=cmd_track)

    p = sub.add_parser("compare", help="two history snapshots, or two machines' scorecards, side by side",
                       formatter_class=fmt)
    with_config(p)
    p.add_argument("a", help="snapshot id (or unique prefix), 'latest', 'previous' or an index (-1 = latest); or a "
                             "scorecard.parquet or validation directory (one machine's scorecard)")
    p.add_argument("b", help="the other snapshot or scorecard, same forms")
    p.add_argument("--history", help="history directory or URL (default: the config's history.path)")
    p.add_argument("--study", help="study (default: the config's study)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON records")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", help="HTML report with figures, and a plain-text summary", formatter_class=fmt)
    p.add_argument("--validation", default="results/default/validation", help="the study's validation tables")
    p.add_argument("--platform-dir", "--platforms", dest="platforms", default="results/default/platforms",
                   help="directory of characterised platform files (*.yaml)")
    p.add_argument("--platform-file", nargs="+", action="extend", metavar="FILE",
                   help="the study's platform files, instead of --platform-dir (several, or the option repeated)")
    p.add_argument("--manifest", help="the study's gather manifest (its quarantined records are listed)")
    p.add_argument("--quarantine", default="results/quarantine", help="quarantine directory (without --manifest)")
    p.add_argument("--out", default="results/default/report", help="where index.html, figures and summary.txt go")
    p.add_argument("--title", default="hetval validation report", help="page title")
    p.add_argument("--case", nargs="+", default=None,
                   help="the cases the study runs, whose sections are shown (default: every registered case)")
    p.add_argument("--processes", type=int, default=None,
                   help="figures drawn at once, each in a process of its own (default: the cores this process "
                        "may use, at most 4)")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["validate"]:  # its own process: set before any import starts a thread
        from analysis.scoring.tasks import keep_memory
        keep_memory()  # it frees and reuses gigabytes while it scores
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, RegistryError) as exc:
        print(f"hetval: config error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        sys.stderr.close()
        return 0
    except OSError as exc:  # a path that cannot be read or written: a full disk, a read-only one, /proc
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        why = exc.strerror or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        print(f"hetval {args.command}: {where}{why}", file=sys.stderr)
        return 2
    except RecursionError:
        print(f"hetval {args.command}: an input is nested too deeply to read", file=sys.stderr)
        return 2
    except Exception as exc:  # an input error (pandas and pyarrow are loaded only by the commands that raise theirs)
        kinds = {"analysis.storage.schema": "DatasetSchemaError", "analysis.tracking.history": "HistoryError",
                 "sims.platform_file": "PlatformFileError", "sims.yamlfile": "YAMLFileError"}
        if not isinstance(exc, (InputError, *(getattr(sys.modules[m], k) for m, k in kinds.items() if m in sys.modules))):
            raise
        print(f"hetval {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
