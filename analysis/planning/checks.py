"""What a study's config must be beyond its schema, checked before anything runs: every job's memory against its
node, the launcher, the history's path, and the values Snakemake's ``--config`` passes as text.

:func:`analysis.planning.config.validate_config` calls the text checks; :func:`check_machine` (the launcher's
program on PATH) runs where runs are about to start and in ``hetval check-config`` - a dry run may plan for a
cluster it is not on.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from typing import Any

import yaml


class ConfigError(ValueError):
    """A configuration value or key is not allowed; the message is one line."""


def platform_layouts(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Platform name -> {description, host, accel}."""
    return {p["name"]: {k: v for k, v in p.items() if k != "name"} for p in config["platforms"]}


def command_line_values(overrides: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Snakemake's ``--config`` values as the study file would give them: a nested override
    (``--config 'runs={rounds: 2}'``) reaches the workflow with its scalars as text, which each takes back the
    type its key's schema asks for (``"2"`` for an integer key is 2; text that is not one stays text, and the
    check names the key); ``schema`` is the study's (:func:`analysis.planning.config.load_schema`)."""

    def types(sub: Mapping[str, Any]) -> list[str]:
        t = sub.get("type", [])
        return [t] if isinstance(t, str) else list(t)

    def convert(value: Any, sub: Mapping[str, Any]) -> Any:
        if isinstance(value, Mapping):
            props = sub.get("properties") or {}
            return {k: convert(v, props.get(k) or {}) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v, sub.get("items") or {}) for v in value]
        if isinstance(value, str) and "string" not in types(sub):
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError:
                return value
            wanted = {"integer": int, "number": (int, float), "boolean": bool, "null": type(None), "array": list,
                      "object": dict}
            if any(isinstance(parsed, wanted[t]) for t in types(sub) if t in wanted) and not (
                    isinstance(parsed, bool) and "boolean" not in types(sub)):
                return convert(parsed, sub) if isinstance(parsed, (dict, list)) else parsed
        return value

    props = schema.get("properties") or {}
    return {k: convert(v, props.get(k) or {}) for k, v in overrides.items()}


def merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive dict update, as Snakemake merges ``--configfile`` files and ``--config`` (lists are replaced)."""
    for k, v in update.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def shell_words(key: str, text: str, example: str) -> list[str]:
    """``text`` as the words a command line gets, each of characters no POSIX shell gives a meaning to (letters,
    digits and ``@%+=:,./-_``): a value that reaches a command is never shell code, quoted or not."""
    import shlex

    try:
        words = shlex.split(text) if text.strip() and not any(ord(c) < 32 for c in text) else []
    except ValueError:
        words = []
    if not words or any(not w or shlex.quote(w) != w for w in words):
        raise ConfigError(f"{key}: {text!r} is not allowed (allowed: one line of words made of letters, digits and "
                          f"@%+=:,./-_, e.g. {example}; no shell syntax)")
    return words


def check_launcher_text(launcher: str) -> None:
    """``launcher`` is a list of plain words, the first a program name (past ``VAR=value``): the command that
    starts a job's ranks, never shell code."""
    words = shell_words("launcher", launcher, "mpiexec or srun --mpi=pmi2")
    if all(re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w) for w in words):
        raise ConfigError(f"launcher: {launcher!r} is not allowed (allowed: one line naming the program that starts "
                          "a job's ranks, e.g. mpiexec or srun --mpi=pmi2)")


#: the SLURM values a job request carries (sbatch options, a Dask job script's #SBATCH lines): what each may hold
_SLURM_TEXT = {"partition": r"[A-Za-z0-9_.,:+-]+", "account": r"[A-Za-z0-9_.,:+-]+", "qos": r"[A-Za-z0-9_.,:+-]+",
               "constraint": r"[A-Za-z0-9_.,:+&|!*\[\]()-]+"}


def check_slurm_text(config: Mapping[str, Any]) -> None:
    """Each platform's ``slurm`` values and the Dask workers' SLURM requests are plain scheduler words: they reach
    sbatch's command line and job scripts, so no shell syntax, no option (a leading '-'), no second line."""
    for i, p in enumerate(config.get("platforms") or []):
        slurm = p.get("slurm") or {}
        for name, pattern in _SLURM_TEXT.items():
            value = slurm.get(name)
            if value is not None and (not re.fullmatch(pattern, str(value)) or str(value).startswith("-")):
                raise ConfigError(f"platforms[{i}].slurm.{name}: {value!r} is not allowed (allowed: a SLURM name of "
                                  "letters, digits and _.,:+- not starting with '-'; no shell syntax)")
        if slurm.get("extra") is not None:
            shell_words(f"platforms[{i}].slurm.extra", str(slurm["extra"]), "--exclusive")
    v = config.get("validate") or {}
    if v.get("worker_walltime") is not None and not re.fullmatch(r"(\d+-)?\d+(:\d\d){0,2}", str(v["worker_walltime"])):
        raise ConfigError(f"validate.worker_walltime: {v['worker_walltime']!r} is not allowed (allowed: a SLURM time "
                          "such as 01:00:00 or 1-00:00:00)")
    if v.get("worker_memory") is not None and not re.fullmatch(r"\d+(\.\d+)?\s?([KMGT]i?B?)?", str(v["worker_memory"]),
                                                             re.I):
        raise ConfigError(f"validate.worker_memory: {v['worker_memory']!r} is not allowed (allowed: a size such as "
                          "4GiB or 4000MB)")


#: what every study shares under results/ (raw records, the dataset, quarantine, retry requests, FDM
#: outputs, the history): a study named so would put its own files inside theirs
SHARED_DIRS = ("raw", "runs", "quarantine", "retry", "fdm", "history")


def check_study_name(config: Mapping[str, Any]) -> None:
    """``study`` is not a directory the studies share under ``results/`` (nor the history's, where that is
    there): ``results/<study>/`` holds the study's own files."""
    study = str(config["study"])
    shared = set(SHARED_DIRS)
    path = (config.get("history") or {}).get("path")
    if path and "://" not in str(path):
        rel = os.path.relpath(os.path.abspath(str(path)), os.path.abspath("results"))
        if not rel.startswith(".."):
            shared.add(rel.split(os.sep)[0])
    if study.casefold() in {s.casefold() for s in shared}:
        raise ConfigError(f"study: {study!r} is not allowed (allowed: a name that is not one of the directories "
                          f"every study shares under results/: {', '.join(sorted(shared))})")


def check_scheduler_address(config: Mapping[str, Any]) -> None:
    """``validate.scheduler_address`` (or ``DASK_SCHEDULER_ADDRESS`` when it is null) is an address a Dask client
    can parse - a known scheme, a host and a port - checked without connecting, before any measurement."""
    text = (config.get("validate") or {}).get("scheduler_address")
    key = "validate.scheduler_address"
    if not text:
        text, key = os.environ.get("DASK_SCHEDULER_ADDRESS") or None, "DASK_SCHEDULER_ADDRESS"
    if not text:
        return

    def refuse(why: str) -> ConfigError:
        return ConfigError(f"{key}: {text!r} is not allowed (allowed: a Dask scheduler address such as "
                           f"tcp://host:8786; {why})")

    if text != text.strip() or any(c.isspace() or ord(c) < 32 for c in text):
        raise refuse("it holds spaces or spans lines")
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(text, strict=False)
        get_backend(scheme)
    except (ValueError, TypeError) as exc:
        raise refuse(str(exc).splitlines()[0] if str(exc) else "it does not parse") from None
    if scheme in ("tcp", "tls", "ws", "wss"):
        try:
            host, port = parse_host_port(location)
        except (ValueError, TypeError) as exc:
            raise refuse(str(exc).splitlines()[0]) from None
        if not host or not 1 <= int(port) <= 65535:
            raise refuse("it needs a host and a port from 1 to 65535")


def check_launcher(config: Mapping[str, Any]) -> None:
    """The launcher's program is on this machine's PATH, this Python's own bin directory first as the workflow's
    rules see it (checked where runs are about to start, and by ``hetval check-config``; a dry run plans for a
    cluster it need not be on)."""
    import shutil
    import sys

    words = str(config["launcher"]).split()
    program = next((w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)), words[0])  # past VAR=value
    path = os.pathsep.join(filter(None, (os.path.dirname(sys.executable), os.environ.get("PATH", ""))))
    if shutil.which(program, path=path) is None:
        raise ConfigError(f"launcher: {program!r} is not found on PATH (allowed: a program that starts MPI ranks here, "
                          "e.g. mpiexec from the mpich extra, or srun inside a SLURM allocation)")


def check_machine(config: Mapping[str, Any]) -> None:
    """What a run needs of the machine it starts on, checked where runs are about to start (never in a dry run,
    which may preview a cluster elsewhere) and by ``hetval check-config``: the launcher on PATH, a power trace
    that is there to read, and - for runs started here - cores this machine's cpuset has."""
    check_launcher(config)
    trace = (config.get("energy") or {}).get("trace") or {}
    if trace.get("path") and (config.get("energy") or {}).get("meter", "auto") in ("auto", "trace"):
        path = str(trace["path"])
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise ConfigError(f"energy.trace.path: {path!r} is not allowed (allowed: a power meter's CSV that exists "
                              "and can be read where the runs start; every run's meter reads it)")
    if str(config.get("launcher") or "").split()[:1] == ["srun"]:
        return  # the ranks start inside an allocation, whose cpuset is not this machine's
    import importlib.util

    for i, p in enumerate(config.get("platforms") or []):
        for role in ("host", "accel"):
            if (p.get(role) or {}).get("backend") == "cupy" and importlib.util.find_spec("cupy") is None:
                raise ConfigError(f"platforms[{i}].{role}.backend: 'cupy' is not allowed here (allowed: a backend "
                                  "this machine can run: CuPy is not installed - pip install -e '.[gpu-cuda12]' on a "
                                  "machine with a GPU)")
    from sims.placement import cpuset

    here = cpuset()
    for i, p in enumerate(config.get("platforms") or []):
        for role in ("host", "accel"):
            cores = (p.get(role) or {}).get("cores") or []
            if cores and max(int(c) for c in cores) >= len(here):
                raise ConfigError(f"platforms[{i}].{role}.cores: {list(cores)} is not allowed (allowed: positions "
                                  f"0..{len(here) - 1} of the {len(here)} CPU(s) this machine lets a run use)")


#: where a history must never go: the file system's root and the kernel's pseudo-file systems
_NO_HISTORY = ("/", "/proc", "/sys", "/dev", "/run")


def check_history_path(path: Any) -> None:
    """``history.path``: null, a URL of a filesystem pyarrow or fsspec knows, or a directory that can be one: not
    blank, not the root, not under /proc, /sys, /dev or /run, not an existing file, no control characters."""
    if path is None:
        return
    text = str(path)

    def refuse(why: str) -> ConfigError:
        return ConfigError(f"history.path: {text!r} is not allowed (allowed: null, a directory or a filesystem URL "
                           f"such as s3://bucket/history; {why})")

    if not text.strip() or text != text.strip() or any(ord(c) < 32 for c in text):
        raise refuse("it is blank, padded with spaces or spans lines")
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        known = {"file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "az", "memory"}
        try:
            import fsspec

            known |= set(fsspec.available_protocols())
        except ImportError:
            pass
        if scheme not in known:
            raise refuse(f"no filesystem serves {scheme}://")
        if scheme != "file":
            return
        text = text.split("://", 1)[1] or "/"
    where = os.path.realpath(text)
    if where in _NO_HISTORY or any(where.startswith(p + "/") for p in _NO_HISTORY[1:]):
        raise refuse("the file system's root and the kernel's pseudo-file systems are not")
    if os.path.exists(where) and not os.path.isdir(where):
        raise refuse("it is a file, not a directory")


def node_memory_mb(config: Mapping[str, Any], platform: str) -> tuple[float | None, str]:
    """The memory of one node of ``platform`` (MB) and where that figure comes from: the platform's
    ``memory_gb``; else, under SLURM (an ``srun`` launcher) with the platform's partition named, the
    largest node of that partition (``sinfo``); else, for local runs, this machine's memory. ``None`` when
    nothing says (a cluster whose partition is not named): the scheduler then judges the request. A local
    machine's figure is what a job may really use (its memory cgroup's limit where that is smaller)."""
    entry = platform_layouts(config).get(platform) or {}
    if entry.get("memory_gb"):
        return float(entry["memory_gb"]) * 1024.0, f"platform {platform}'s memory_gb"
    launcher = str(config.get("launcher") or "mpiexec").split()
    if launcher and launcher[0] == "srun":
        import shutil

        partition = (entry.get("slurm") or {}).get("partition")
        if shutil.which("sinfo") is None:  # no SLURM here: the runs would start here, so this machine is the node
            return local_memory_mb()
        if not partition:
            return None, ""
        import subprocess

        try:
            out = subprocess.run(["sinfo", "-h", "-p", str(partition), "-o", "%m"], capture_output=True,
                                 text=True, timeout=10, check=True).stdout
            sizes = [float(w.rstrip("+")) for w in out.split() if w.rstrip("+").isdigit()]
        except FileNotFoundError:  # no SLURM here: the runs would start here, so this machine is the node
            return local_memory_mb()
        except (OSError, subprocess.SubprocessError, ValueError):
            return None, ""
        return (max(sizes), f"the largest node of SLURM partition {partition}") if sizes else (None, "")
    return local_memory_mb()


def local_memory_mb() -> tuple[float, str]:
    """The memory a job started here may use (MB): the machine's, or less when a memory cgroup, an rlimit or a
    SLURM allocation holds this process (:func:`sims.memory.memory_limit`), and where that figure comes from."""
    from sims.memory import memory_limit

    limit = memory_limit()
    return limit.bytes / 2**20, limit.source


def check_memory(config: Mapping[str, Any], runs: list[dict[str, Any]]) -> None:
    """Refuse, before anything runs, a job whose memory estimate per node exceeds its node
    (:func:`node_memory_mb`), naming the key, the job and both figures: each platform's characterisation and
    the light jobs first (:func:`_check_jobs`), then every run (its spec's ``resources``: data per rank, ranks
    per node and slack - what its batch job asks for)."""
    from analysis.planning.jobs import Layout

    limits: dict[str, tuple[float | None, str]] = {}
    _check_jobs(config, runs, limits)  # characterisation first: it runs first
    for spec in runs:
        layout = Layout.of(spec)
        platform = spec.get("platform")
        if layout.local or not platform:
            continue
        if platform not in limits:
            limits[platform] = node_memory_mb(config, platform)
        limit, where = limits[platform]
        if limit is None:
            continue
        need = layout.mem_mb_per_node
        if need > limit:
            doc = spec.get("fdm_doc") or {}
            what = ", ".join(str(x) for x in (spec.get("variant"), spec.get("size") and f"size {spec['size']}",
                                               doc.get("grid") and f"grid {doc['grid'].get('shape')}") if x)
            raise ConfigError(
                f"cases.{spec['case']}: run {spec['run_id']} ({what}) needs about {need / 1024:.1f} GiB per node "
                f"({layout.ranks_per_node} rank(s) of {layout.data_bytes_per_rank / 2**30:.2f} GiB data each, with "
                f"slack), more than the {limit / 1024:.1f} GiB of {where} (allowed: runs that fit; give "
                "platforms[].memory_gb if its nodes have more)")


#: the config key that sizes each kind of job, named when it cannot fit
_JOB_KEYS = {"characterize_platform": "characterize.memory_fraction", "gather_runs": "cases",
             "validate_models": "validate.workers", "report_validation": "cases"}


def _check_jobs(config: Mapping[str, Any], runs: list[dict[str, Any]],
                limits: dict[str, tuple[float | None, str]]) -> None:
    """Refuse a study one of whose other jobs (characterisation, gather, validation, report:
    :func:`analysis.planning.estimates.study_jobs`) cannot fit the node it runs on, naming the job and both figures."""
    from analysis.planning.estimates import study_jobs

    for p in config["platforms"]:
        if p["name"] not in limits:
            limits[p["name"]] = node_memory_mb(config, p["name"])
    limits[""] = local_memory_mb()
    node = {name: mb for name, (mb, _) in limits.items()}
    for job, need, limit in study_jobs(config, runs, node):
        if limit is None or need <= limit:
            continue
        platform = next((n for n in limits if n and job.endswith(" " + n)), "")
        where = limits[platform][1]
        key = _JOB_KEYS[job.split()[0]]
        if where.endswith("memory_gb"):  # the node the study declared is too small for the job, whatever sizes it
            key = f"platforms[{[p['name'] for p in config['platforms']].index(platform)}].memory_gb"
        raise ConfigError(
            f"{key}: job {job} needs about {need / 1024:.1f} GiB (its memory estimate), more "
            f"than the {limit / 1024:.1f} GiB of {where} (allowed: jobs that fit; give platforms[].memory_gb if its "
            "nodes have more)")
