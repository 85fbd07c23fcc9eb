"""The ``hetval`` command: every workflow stage runnable alone, plus config checks and the study matrix.

Subcommands: ``check-config``, ``matrix``, ``gather``, ``ingest-published``, ``validate``, ``report``,
``attach-trace``.
A bad config prints one line naming the key and exits 2 (no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.config import ConfigError, load_config, study_matrix
from analysis.registry import RegistryError


def _config(args: argparse.Namespace) -> dict:
    paths = args.configfile or []
    return load_config(*paths) if paths else load_config()


def cmd_check_config(args: argparse.Namespace) -> int:
    config = _config(args)
    runs = study_matrix(config)
    print(f"config ok: study {config['study']!r}, {len(config['platforms'])} platform(s), {len(runs)} run(s)")
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    runs = study_matrix(_config(args))
    if args.spec:
        found = [s for s in runs if s["run_id"] == args.spec]
        if not found:
            print(f"hetval: run {args.spec} is not in this study (see `hetval matrix`)", file=sys.stderr)
            return 2
        # The JSON that `python -m mpi4py -m sims.run --spec` takes.
        print(json.dumps({k: v for k, v in found[0].items() if k != "run_id"}, sort_keys=True))
        return 0
    for spec in runs:
        what = spec.get("params", {"table": spec.get("table")})
        print(spec["run_id"], spec["study"], spec["case"], spec["variant"], spec["platform"], json.dumps(what))
    return 0


def cmd_gather(args: argparse.Namespace) -> int:
    from analysis.dataset import clear_tmp, gather
    from sims.atomic import atomic_write_text

    files = list(args.records)
    if args.raw_dir:
        files += sorted(str(p) for p in Path(args.raw_dir).glob("*.json"))
    clear_tmp(args.runs)
    result = gather(files, args.runs, args.quarantine, args.retry)
    print(
        f"[hetval gather] {result.runs} run(s), {result.records} record(s) -> {args.runs}; "
        f"{len(result.failed_runs)} failed, {len(result.quarantined)} quarantined"
    )
    if args.manifest:
        atomic_write_text(args.manifest, json.dumps(result.as_dict(), indent=1))
    return 0


def _published_dir(arg: str | None):
    if arg is None:
        from analysis.published import PUBLISHED_DIR

        return PUBLISHED_DIR
    return arg or None


def cmd_ingest_published(args: argparse.Namespace) -> int:
    import os

    from analysis.cases.published import write_raw_record

    try:
        path = write_raw_record(args.table, args.study, args.run_id, Path(args.out),
                                os.environ.get("HETVAL_CONFIG_HASH", "unknown"))
    except (OSError, ValueError) as exc:
        print(f"hetval ingest-published: {exc}", file=sys.stderr)
        return 2
    print(f"[hetval ingest-published] {args.table}: run {args.run_id} -> {path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from analysis.validate import validate

    validate(args.runs, args.platforms, args.out, studies=args.study or None, address=args.scheduler or None,
             published_dir=_published_dir(args.published), platform_files=args.platform_file)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from analysis.report import build_report

    summary = build_report(args.validation, args.platform_file or args.platforms, args.manifest or args.quarantine,
                           args.out, title=args.title, cases=args.case)
    print(summary)
    return 0


def cmd_attach_trace(args: argparse.Namespace) -> int:
    from sims.meters import MeterUnavailable
    from sims.meters.posthoc import attach_trace, attach_trace_to_platform

    channels = {}
    for item in args.channel or []:
        name, sep, target = item.rpartition("=")
        if not sep:
            print(f"hetval attach-trace: --channel {item!r} is not NAME=host|accel|node", file=sys.stderr)
            return 2
        channels[name] = target
    if not args.raw_dir and not args.platform_file:
        print("hetval attach-trace: give --raw-dir, --platform-file or both", file=sys.stderr)
        return 2
    try:
        # the platform's overlay first, the records second: the re-gathered records then meet the new parameters
        for platform_file in args.platform_file or []:
            attach_trace_to_platform(platform_file, args.trace, channels or None, args.clock_offset, args.min_periods,
                                     args.replace)
        if args.raw_dir:
            attach_trace(args.raw_dir, args.trace, channels or None, args.clock_offset, args.min_periods, args.replace)
    except MeterUnavailable as exc:
        print(f"hetval attach-trace: {exc}", file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hetval", description="hetval: measure, predict, score.")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_config(p: argparse.ArgumentParser) -> None:
        p.add_argument("--configfile", action="append", help="config YAML (repeatable; later files override)")

    p = sub.add_parser("check-config", help="validate the config and count the study's runs")
    with_config(p)
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("matrix", help="list the study's runs (run_id, case, variant, platform, params)")
    with_config(p)
    p.add_argument("--spec", metavar="RUN_ID", help="print that run's full spec as JSON (for sims.run --spec)")
    p.set_defaults(func=cmd_matrix)

    p = sub.add_parser("gather", help="raw records -> hive-partitioned Parquet dataset")
    p.add_argument("records", nargs="*", help="raw record files")
    p.add_argument("--raw-dir", help="also gather every *.json in this directory")
    p.add_argument("--runs", default="results/runs", help="dataset directory")
    p.add_argument("--quarantine", default="results/quarantine", help="where records failing the schema go")
    p.add_argument("--retry", default="results/retry", help="where retry requests for failed / quarantined runs go")
    p.add_argument("--manifest", help="write a JSON summary of this gather here")
    p.set_defaults(func=cmd_gather)

    p = sub.add_parser("validate", help="Dask job: runs x platforms x models -> tightness and fidelity")
    p.add_argument("--runs", default="results/runs")
    p.add_argument("--platforms", default="results/default/platforms", help="directory of characterised platforms")
    p.add_argument("--platform-file", nargs="+", help="the study's platform files (instead of --platforms)")
    p.add_argument("--out", default="results/default/validation")
    p.add_argument("--study", action="append", help="restrict to this study (repeatable); default all")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address (default: $DASK_SCHEDULER_ADDRESS or local)")
    p.add_argument("--published", default=None,
                   help="directory of the published platform catalogs whose papers' claims are recomputed "
                        "(default: the repository's config/platforms/published; '' to skip)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("ingest-published", help="one published measurement (config/published/<table>.yaml) -> a raw record")
    p.add_argument("--table", required=True, help="table name, e.g. peach-2014-table-viii")
    p.add_argument("--study", required=True)
    p.add_argument("--run-id", required=True, help="the run (see `hetval matrix`)")
    p.add_argument("--out", required=True, help="the raw record to write (results/raw/<study>/<run_id>.json)")
    p.set_defaults(func=cmd_ingest_published)

    p = sub.add_parser("attach-trace", help="fill the energy of recorded runs from an external power-meter CSV")
    p.add_argument("--raw-dir", help="raw records of one study (results/raw/<study>)")
    p.add_argument("--platform-file", action="append",
                   help="a platform characterised while the meter logged (results/platforms/<p>.yaml; repeatable): "
                        "idle power and e_f, e_b, p_s from its kept windows, into <p>.energy.json beside it")
    p.add_argument("--trace", required=True, help="CSV with timestamp, channel, watts")
    p.add_argument("--channel", action="append", metavar="NAME=host|accel|node",
                   help="what a trace channel measures (repeat; default: every channel is node)")
    p.add_argument("--clock-offset", type=float, default=0.0, help="the meter's clock minus this host's, seconds")
    p.add_argument("--min-periods", type=float, default=10.0, help="a window must span this many samples")
    p.add_argument("--replace", action="store_true", help="also replace energy some other meter measured")
    p.set_defaults(func=cmd_attach_trace)

    p = sub.add_parser("report", help="HTML report with figures, and a plain-text summary")
    p.add_argument("--validation", default="results/default/validation")
    p.add_argument("--platforms", default="results/default/platforms", help="directory of characterised platforms")
    p.add_argument("--platform-file", nargs="+", help="the study's platform files (instead of --platforms)")
    p.add_argument("--manifest", help="the study's gather manifest (its quarantined records are listed)")
    p.add_argument("--quarantine", default="results/quarantine", help="quarantine directory (without --manifest)")
    p.add_argument("--out", default="results/default/report")
    p.add_argument("--title", default="hetval validation report")
    p.add_argument("--case", nargs="*", help="the cases the study runs, whose sections are shown (default: all)")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, RegistryError) as exc:
        print(f"hetval: config error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
