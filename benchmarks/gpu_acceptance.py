"""Acceptance run for a freshly provisioned GPU node: does hetval work there, and how fast (at most 8 minutes).

The node is assumed offline, with Python >= 3.11 and NumPy, SciPy, pandas, pyarrow, Numba, mpi4py (and an MPI),
Matplotlib, PyYAML, CuPy and nvidia-ml-py installed; whatever else hetval needs travels beside the clone as
wheels in one folder (at most 40 MiB), which ``--prepare`` downloads on a machine with PyPI::

    python benchmarks/gpu_acceptance.py --prepare wheels/            # where PyPI is (hetval installed there)
    python benchmarks/gpu_acceptance.py --dry-run --wheels wheels/   # on the node: the plan and what is missing
    python benchmarks/gpu_acceptance.py OUT --wheels wheels/         # on the node: every step, figures in OUT

Each step prints one line and writes its figures to ``OUT/<step>.json``; every step runs even when an earlier one
failed, and the exit status is non-zero naming the first that failed. The steps:

1. ``install``: a virtual environment ``OUT/venv`` over the node's own packages, hetval and the wheels installed
   into it with ``pip --no-index`` (without ``--wheels``: this interpreter, which must import hetval already);
2. ``pytest-gpu``: ``pytest -m gpu`` - every backend kernel (SA, LA and PEACH phases, triad and FMA chains, the
   FDM kernels, the three marshaling designs on two ranks) on CuPy against NumPy;
3. ``fdm-gpu``: the 3D elastic code with C-PML on one GPU, orders 2 and 4, at 256^3 and 512^3: its seismograms
   against the CPU's on a small grid (largest difference relative to the largest amplitude), its rate in grid
   points per second, and that rate's traffic at the bulk step's compulsory 108 bytes per point as a fraction
   of the device's own streaming bandwidth, measured by a CuPy triad just before (docs/fdm.md);
4. ``marshaling``: two MPI ranks sharing the GPU, one launch per halo design (``gpu-aware`` only where the MPI
   under mpi4py takes device buffers; it says so where it does not): each design's rate and its seismograms
   against ``device-pack``'s;
5. ``cases-nvml``: the SA and LA cases on a ``numpy`` + ``cupy`` platform, energy from NVML (``energy.meter:
   nvml``: measured, never estimated; a run without it fails);
6. ``tiny-gpu``: the tiny study end to end on a CPU + GPU platform; its report and scorecard are kept in OUT.

The GPU steps have not yet run on a GPU: this script was built and its plan, ``--prepare`` and ``--dry-run``
tested where none was available (tests/test_gpu_acceptance.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform as _platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: what the node has before anything is installed (and what those packages need): never downloaded
NODE_BASE = {"numpy", "scipy", "pandas", "pyarrow", "numba", "llvmlite", "mpi4py", "matplotlib", "contourpy",
             "cycler", "fonttools", "kiwisolver", "pillow", "pyparsing", "python-dateutil", "six", "pytz", "tzdata",
             "pyyaml", "cupy-cuda13x", "cupy-cuda12x", "fastrlock", "nvidia-ml-py"}
#: what the node runs beyond hetval's own requirements: the test runner, and what builds hetval's own package
EXTRA_ROOTS = ("pytest", "setuptools", "wheel")
WHEELS_LIMIT = 40 * 2**20
#: the whole run's limit: each step has its own, and none runs past what is left of this
TOTAL_S = 480
MANIFEST = "MANIFEST.json"
#: the bulk elastic step's compulsory traffic (bytes per grid point and step): docs/fdm.md, benchmarks/bench_fdm.py
BULK_BYTES_PER_POINT = 108
SIZES, ORDERS = (256, 512), (2, 4)
GPU_TESTS = ["tests/test_gpu.py", "tests/sims/test_backends.py", "tests/sims/test_sa_kernels.py",
             "tests/sims/test_bench_kernels.py"]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# --- --prepare: the wheels the node lacks -------------------------------------------------------------------


def wheel_pins(python: str = "3.12") -> list[tuple[str, str]]:
    """``(name, version)`` of every package hetval needs on the node that the node does not have: hetval's own
    requirements (with the extras they name), pytest, setuptools and wheel, followed through their requirements
    as they apply on Linux under ``python``, at the versions installed here (where hetval was set up)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    env = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": _platform.machine(), "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    try:
        roots = [Requirement(r) for r in metadata.requires("hetval") or []]
    except metadata.PackageNotFoundError:
        raise SystemExit("gpu_acceptance --prepare: hetval is not installed here: pip install -c constraints.txt "
                         "-e '.[test]' first (its versions are what the node gets)") from None
    todo = [(r, "") for r in roots if r.marker is None or r.marker.evaluate({**env, "extra": ""})]
    todo += [(Requirement(n), "") for n in EXTRA_ROOTS]
    pins: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    while todo:
        req, _ = todo.pop()
        name = _norm(req.name)
        extras = sorted(req.extras)
        if (name, ",".join(extras)) in seen or name in NODE_BASE:
            continue
        seen.add((name, ",".join(extras)))
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"gpu_acceptance --prepare: {req.name} (needed by hetval) is not installed here") from None
        pins[name] = dist.version
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({**env, "extra": e}) for e in ["", *extras]):
                todo.append((sub, name))
    return sorted(pins.items())


def prepare(folder: Path, python: str, machine: str, only: list[str] | None = None) -> dict[str, Any]:
    """Download exactly the wheels :func:`wheel_pins` names for ``python`` on ``machine`` into ``folder`` and
    write its manifest (each file's name, version, size and SHA-256); refuse a set over 40 MiB. ``only``: those
    packages of the set alone (a folder topped up, or the step itself checked quickly)."""
    pins = wheel_pins(python)
    if only:
        unknown = sorted({_norm(n) for n in only} - dict(pins).keys())
        if unknown:
            raise SystemExit(f"gpu_acceptance --prepare: {', '.join(unknown)} is not among the wheels the node needs")
        pins = [(n, v) for n, v in pins if n in {_norm(o) for o in only}]
    folder.mkdir(parents=True, exist_ok=True)
    plats = {"x86_64": ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"],
             "aarch64": ["manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"]}[machine]
    print(f"[gpu-acceptance] --prepare: {len(pins)} wheels for Python {python} on {machine} -> {folder}", flush=True)
    wanted, built = list(pins), []
    while wanted:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", python,
               "--implementation", "cp", *(w for p in plats for w in ("--platform", p)), "-d", str(folder),
               *(f"{n}=={v}" for n, v in wanted)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode == 0:
            break
        lacking = re.search(r"No matching distribution found for ([A-Za-z0-9_.-]+)==(\S+)", done.stderr)
        if not lacking:
            raise SystemExit(f"gpu_acceptance --prepare: pip download failed:\n{done.stderr[-3000:]}")
        # published as source only: built here into a wheel (pure Python ones only: the node compiles nothing)
        name = _norm(lacking.group(1))
        wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(folder),
                                f"{name}=={lacking.group(2)}"], capture_output=True, text=True)
        made = [f for f in folder.glob("*.whl") if _norm(f.name.split("-")[0]) == name]
        if wheel.returncode != 0 or not made or not made[0].name.endswith("-none-any.whl"):
            raise SystemExit(f"gpu_acceptance --prepare: {name} has no wheel and builds none for any Python:\n"
                             f"{wheel.stderr[-2000:]}")
        built.append(name)
        wanted = [(n, v) for n, v in wanted if n != name]
    if built:
        print(f"[gpu-acceptance] --prepare: built here from their sources (pure Python): {', '.join(built)}",
              flush=True)
    files = {}
    for f in sorted(folder.glob("*.whl")):
        name = _norm(f.name.split("-")[0])
        if name in dict(pins):
            files[name] = f
    missing = [n for n, _ in pins if n not in files]
    if missing:
        raise SystemExit(f"gpu_acceptance --prepare: no wheel came for {', '.join(missing)}")
    for f in folder.glob("*.whl"):
        if f not in files.values():
            f.unlink()  # an earlier preparation's: the folder holds exactly this set
    entries = [{"name": n, "version": v, "file": files[n].name, "bytes": files[n].stat().st_size,
                "sha256": hashlib.sha256(files[n].read_bytes()).hexdigest()} for n, v in pins]
    total = sum(e["bytes"] for e in entries)
    doc = {"python": python, "machine": machine, "node_base": sorted(NODE_BASE), "wheels": entries,
           "total_bytes": total}
    (folder / MANIFEST).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"[gpu-acceptance] --prepare: {len(entries)} wheels, {total / 2**20:.1f} MiB (limit "
          f"{WHEELS_LIMIT / 2**20:.0f} MiB), largest {max(entries, key=lambda e: e['bytes'])['file']}", flush=True)
    if total > WHEELS_LIMIT:
        raise SystemExit(f"gpu_acceptance --prepare: the wheels take {total / 2**20:.1f} MiB, over the "
                         f"{WHEELS_LIMIT / 2**20:.0f} MiB a node is sent")
    return doc


def check_wheels(folder: Path) -> str | None:
    """Why the wheels folder cannot install (missing manifest, a missing or altered wheel), or None."""
    try:
        doc = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        return f"{folder / MANIFEST} does not read ({exc}): run --prepare"
    if doc.get("python") != f"{sys.version_info.major}.{sys.version_info.minor}":
        return f"the wheels are for Python {doc.get('python')}, this is {sys.version.split()[0]}"
    for e in doc["wheels"]:
        f = folder / e["file"]
        if not f.is_file():
            return f"{f} is missing"
        if hashlib.sha256(f.read_bytes()).hexdigest() != e["sha256"]:
            return f"{f} is not the wheel --prepare downloaded"
    return None


# --- the steps ------------------------------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    plan: str
    needs: Callable[[argparse.Namespace], list[str]]  # what is missing (empty: ready)
    run: Callable[[argparse.Namespace, Path], tuple[bool, str, dict]]  # (ok, one line, figures)
    timeout_s: int


def _python(args: argparse.Namespace) -> str:
    venv = Path(args.out) / "venv" / "bin" / "python"
    return str(venv) if args.wheels else sys.executable


def _run(cmd: list[str], timeout: float, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    # the node's Python's own bin first (an MPI from PyPI puts mpiexec there), as the workflow's rules see it
    path = os.pathsep.join(filter(None, (str(Path(sys.executable).parent), os.environ.get("PATH", ""))))
    base = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
                PYTHONUNBUFFERED="1", PATH=path)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(base, **(env or {})),
                          cwd=cwd)


def _import_missing(*modules: str) -> list[str]:
    import importlib.util

    return [f"the module {m} is not importable" for m in modules if importlib.util.find_spec(m) is None]


def _gpu_missing(args: argparse.Namespace) -> list[str]:
    missing = _import_missing("cupy")
    if missing:
        return [*missing, "so no GPU can be driven"]
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return ["no CUDA device is visible"]
    except Exception as exc:  # noqa: BLE001 - the driver's own error, whatever it is
        return [f"no CUDA device ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"]
    return []


def _mpiexec() -> str | None:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def needs_install(args: argparse.Namespace) -> list[str]:
    missing = _import_missing("numpy", "scipy", "pandas", "pyarrow", "numba", "mpi4py", "matplotlib", "yaml")
    if sys.version_info < (3, 11):  # noqa: UP036 - a node may have an older Python than the project needs
        missing.append(f"Python {sys.version.split()[0]} is older than 3.11")
    if args.wheels:
        why = check_wheels(Path(args.wheels))
        if why:
            missing.append(why)
    else:
        missing += [m + " (give --wheels)" for m in _import_missing("snakemake", "dask", "distributed", "pytest")]
    return missing


def run_install(args: argparse.Namespace, out: Path) -> tuple[bool, str, dict]:
    if not args.wheels:
        done = _run([sys.executable, "-c", "import analysis, sims, snakemake, distributed, pytest"], 60)
        return done.returncode == 0, "this interpreter already runs hetval" if done.returncode == 0 else \
            f"hetval does not import here: {done.stderr.strip().splitlines()[-1:]}", {}
    import sysconfig

    venv = out / "venv"
    done = _run([sys.executable, "-m", "venv", str(venv)], args.limit)
    if done.returncode != 0:
        return False, f"python -m venv failed: {done.stderr.strip().splitlines()[-1:]}", {}
    # the node's own packages, wherever this interpreter finds them (itself a venv or a module's prefix too),
    # under the wheels: a .pth file after the venv's own site-packages
    site = Path(next((venv / "lib").glob("python*/site-packages")))
    here = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")] + [p for p in sys.path if p.endswith("-packages")]
    (site / "zz-node-packages.pth").write_text("\n".join(dict.fromkeys(here)) + "\n")
    wheels = str(Path(args.wheels).resolve())
    doc = json.loads((Path(wheels) / MANIFEST).read_text())
    # exactly the set --prepare resolved (no resolver against the node's own versions)
    steps = [[str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps", "--find-links", wheels,
              *(f"{e['name']}=={e['version']}" for e in doc["wheels"])]]
    steps.append([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-build-isolation",
                  "--no-deps", "-e", str(REPO)])
    for cmd in steps:
        done = _run(cmd, args.limit)
        if done.returncode != 0:
            return False, f"{' '.join(cmd[:4])} failed: {done.stderr.strip().splitlines()[-1:]}", {}
    return True, f"{len(doc['wheels'])} wheels ({doc['total_bytes'] / 2**20:.1f} MiB) and hetval in {venv}", {
        "wheels": len(doc["wheels"]), "bytes": doc["total_bytes"]}


def run_pytest(args: argparse.Namespace, out: Path) -> tuple[bool, str, dict]:
    xml = out / "pytest-gpu.xml"
    done = _run([_python(args), "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", "-q", "-rs",
                 f"--junitxml={xml}", *GPU_TESTS], args.limit)
    (out / "pytest-gpu.txt").write_text(done.stdout + done.stderr)
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", done.stdout)}
    # a skip is a failure here (no GPU where one should be), but for an MPI that does not take device buffers
    skips = re.findall(r"^SKIPPED \[\d+\] [^\n]*?: (.*)$", done.stdout, re.M)
    allowed = [w for w in skips if "does not take device buffers" in w]
    ok = done.returncode == 0 and counts.get("passed", 0) > 0 and len(allowed) == len(skips)
    line = ", ".join(f"{v} {k}" for k, v in counts.items()) or done.stdout.strip()[-200:]
    return ok, line + (f" ({allowed[0]})" if allowed else ""), {**counts, "skips": skips}


def run_worker(args: argparse.Namespace, kind: str, ranks: int, timeout: float) -> tuple[bool, dict, str]:
    """``--worker kind`` under ``mpiexec -n ranks``; its JSON figures (or why it failed)."""
    out = Path(args.out)
    target = out / f"{kind}.json"
    cmd = [_python(args), "-m", "mpi4py", str(Path(__file__).resolve()), "--worker", kind, str(target),
           "--sizes", *map(str, args.sizes)]
    cmd = [_mpiexec() or "mpiexec", "-n", str(ranks), *cmd]
    done = _run(cmd, timeout)
    (out / f"{kind}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not target.exists():
        return False, {}, (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return True, json.loads(target.read_text()), ""


def run_fdm(args: argparse.Namespace, out: Path) -> tuple[bool, str, dict]:
    ok, fig, why = run_worker(args, "fdm-gpu", 1, args.limit)
    if not ok:
        return False, why, {}
    best = max(fig["rates"], key=lambda r: r["points_per_s"])
    worst_diff = max(fig["cpu_difference"].values())
    line = (f"triad {fig['triad_Bps'] / 1e9:.0f} GB/s; best {best['size']}^3 order {best['order']}: "
            f"{best['points_per_s']:.3g} points/s = {best['fraction']:.2f} of the bandwidth limit at "
            f"{BULK_BYTES_PER_POINT} B/point; largest difference from the CPU {worst_diff:.1e}")
    return worst_diff <= 1e-5, line, fig


def run_marshaling(args: argparse.Namespace, out: Path) -> tuple[bool, str, dict]:
    ok, fig, why = run_worker(args, "marshaling", 2, args.limit)
    if not ok:
        return False, why, {}
    parts = [f"{d}: {r['points_per_s']:.3g} points/s" if "points_per_s" in r else f"{d}: {r['skipped']}"
             for d, r in fig["designs"].items()]
    diffs = [r.get("difference", 0.0) for r in fig["designs"].values()]
    return max(diffs) <= 1e-5, "; ".join(parts), fig


def _study(args: argparse.Namespace, out: Path, name: str, cfg: dict, timeout: float) -> tuple[bool, str, Path]:
    import yaml

    work = out / name
    work.mkdir(parents=True, exist_ok=True)
    files = cfg.pop("_files", [])
    (work / "study.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    cores = str(min(16, os.cpu_count() or 2))
    done = _run([_python(args), "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "-d", str(work), "-c",
                 cores, "--configfile", *files, str(work / "study.yaml")], timeout,
                env={"PATH": os.pathsep.join((str(Path(_python(args)).parent), str(Path(sys.executable).parent),
                                              os.environ.get("PATH", "")))})
    (work / "snakemake.log").write_text(done.stdout + done.stderr)
    last = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return done.returncode == 0, (last[-1] if last else "")[:300], work


GPU_PLATFORM = {"name": "gpu-node", "description": "host = NumPy on core 0, accel = CuPy on GPU 0",
                "host": {"backend": "numpy", "cores": [0]}, "accel": {"backend": "cupy", "device": 0}}


def run_cases(args: argparse.Namespace, out: Path) -> tuple[bool, str, dict]:
    import yaml

    tiny = yaml.safe_load((REPO / "config" / "studies" / "tiny.yaml").read_text())
    cfg = {**tiny, "study": "gpu-cases", "platforms": [GPU_PLATFORM], "energy": {"meter": "nvml"},
           "cases": {k: v for k, v in tiny["cases"].items() if k in ("sa", "la")}}
    ok, last, work = _study(args, out, "cases-nvml", cfg, args.limit)
    if not ok:
        return False, last, {}
    import pandas as pd

    df = pd.read_parquet(work / "results" / "runs" / "study=gpu-cases")
    measured = df[(df["status"] == "ok")]
    nvml = measured["energy_source"].astype(str).str.contains("nvml")
    fig = {"records": len(df), "ok": len(measured), "with_nvml_energy": int(nvml.sum()),
           "energy_j_median": float(measured.loc[nvml, "energy_j"].median()) if nvml.any() else None}
    good = len(measured) == len(df) > 0 and bool(nvml.all()) and measured["energy_j"].notna().all()
    return good, (f"{fig['ok']} of {fig['records']} records ok, {fig['with_nvml_energy']} with NVML energy "
                  f"(median {fig['energy_j_median']} J)"), fig


def run_tiny(args: argparse.Namespace, out: Path) -> tuple[bool, str, dict]:
    cfg = {"study": "tiny-gpu", "platforms": [GPU_PLATFORM],
           "_files": [str(REPO / "config" / "studies" / "tiny.yaml")]}
    ok, last, work = _study(args, out, "tiny-gpu", cfg, args.limit)
    result = work / "results" / "tiny-gpu"
    if (result / "report").is_dir():
        shutil.copytree(result / "report", out / "tiny-gpu-report", dirs_exist_ok=True)
    if (result / "validation" / "scorecard.parquet").exists():
        shutil.copy(result / "validation" / "scorecard.parquet", out / "tiny-gpu-scorecard.parquet")
    summary = (result / "report" / "summary.txt")
    head = summary.read_text().splitlines()[2:3] if summary.exists() else [last]
    return ok, (head[0] if head else last)[:300], {"report": str(out / "tiny-gpu-report")}


STEPS = [
    Step("install", "a venv over the node's packages with the wheels and hetval (pip --no-index)", needs_install,
         run_install, 90),
    Step("pytest-gpu", f"python -m pytest -m gpu {' '.join(GPU_TESTS)}",
         lambda a: _gpu_missing(a) + (_import_missing("pytest") if not a.wheels else []), run_pytest, 70),
    Step("fdm-gpu", "CuPy triad; FDM with C-PML, orders 2 and 4 at the sizes given, one GPU; against the CPU on "
                    "48^3", _gpu_missing, run_fdm, 70),
    Step("marshaling", "mpiexec -n 2 on one GPU, each halo design (gpu-aware where MPI takes device buffers)",
         lambda a: _gpu_missing(a) + ([] if _mpiexec() else ["mpiexec is not on PATH nor beside Python"]),
         run_marshaling, 50),
    Step("cases-nvml", "SA and LA on numpy + cupy with energy.meter: nvml (snakemake)",
         lambda a: _gpu_missing(a) + _import_missing("pynvml"), run_cases, 80),
    Step("tiny-gpu", "the tiny study on numpy + cupy (snakemake), report and scorecard kept", _gpu_missing, run_tiny,
         120),
]


# --- what runs on the ranks -------------------------------------------------------------------------------------


def _fdm_doc(n: int, order: int, backend: str, steps: int, reps: int, **over: Any) -> dict:
    c = n * 10.0 / 2
    doc = {"grid": {"shape": [n, n, n], "spacing": 10.0}, "time": {"steps": steps},
           "medium": {"homogeneous": {"vp": 3000.0, "vs": 1732.0, "rho": 2500.0}},
           "source": {"kind": "explosive", "position": [c, c, c], "f0": 5.0, "moment": 1.0e15},
           "receivers": [[c + 60.0, c + 30.0, c - 20.0]], "boundary": {"kind": "cpml", "width": 8},
           "order": order, "backend": backend, "repetitions": reps, "warmup": 1}
    doc.update(over)
    return doc


def _execute(comm: Any, doc: dict) -> Any:
    import tempfile

    import yaml

    from sims.fdm.driver import execute

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        yaml.safe_dump(doc, fh)
    try:
        result = execute(comm, fh.name)
    finally:
        os.unlink(fh.name)
    if result is not None and result.records[0]["status"] != "ok":
        raise SystemExit(result.records[0]["error"])
    return result


def _rate(result: Any) -> float:
    return statistics.median(r["points"] * r["steps"] / r["time_s"] for r in result.records)


def _difference(a: dict, b: dict) -> float:
    import numpy as np

    scale = max(float(np.abs(b[c]).max()) for c in ("vx", "vy", "vz"))
    return max(float(np.abs(a[c] - b[c]).max()) for c in ("vx", "vy", "vz")) / scale


def cupy_triad(elements: int = 1 << 27, reps: int = 10) -> float:
    """The device's streaming bandwidth (B/s, 12 B per float32 element counted): ``a = b + s c``, the median
    of ``reps`` timed with CUDA events after one untimed."""
    import cupy as cp

    kernel = cp.ElementwiseKernel("float32 b, float32 c, float32 s", "float32 a", "a = b + s * c", "hetval_triad")
    b, c = cp.random.random(elements, dtype=cp.float32), cp.random.random(elements, dtype=cp.float32)
    a = cp.empty_like(b)
    kernel(b, c, cp.float32(3.0), a)
    rates = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel(b, c, cp.float32(3.0), a)
        stop.record()
        stop.synchronize()
        rates.append(12.0 * elements / (cp.cuda.get_elapsed_time(start, stop) / 1e3))
    return statistics.median(rates)


def worker(kind: str, target: str, sizes: list[int]) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    figures: dict[str, Any] = {}
    if kind == "fdm-gpu":
        figures["triad_Bps"] = bw = cupy_triad()
        figures["cpu_difference"] = {}
        for order in ORDERS:
            cpu = _execute(MPI.COMM_SELF, _fdm_doc(48, order, "numpy", 60, 1))
            gpu = _execute(MPI.COMM_SELF, _fdm_doc(48, order, "cupy", 60, 1))
            figures["cpu_difference"][f"order {order}"] = _difference(gpu.seismograms, cpu.seismograms)
        figures["rates"] = []
        for n in sizes:
            for order in ORDERS:
                rate = _rate(_execute(MPI.COMM_SELF, _fdm_doc(n, order, "cupy", 40, 3)))
                figures["rates"].append({"size": n, "order": order, "points_per_s": rate,
                                         "fraction": rate * BULK_BYTES_PER_POINT / bw})
    elif kind == "marshaling":
        from sims.fdm.gpu_aware import device_buffers_supported

        figures["designs"] = {}
        n = min(sizes)
        ref = None
        for design in ("device-pack", "host-staging", "gpu-aware"):
            if design == "gpu-aware":
                ok, why = device_buffers_supported()
                if not ok:
                    figures["designs"][design] = {"skipped": f"not run: {why}"}
                    continue
            doc = _fdm_doc(n, 2, "cupy", 40, 3, marshaling=design, decomposition=[2, 1, 1], ranks=2)
            result = _execute(comm, doc)
            if comm.Get_rank() == 0:
                ref = ref or result.seismograms
                figures["designs"][design] = {"size": n, "points_per_s": _rate(result),
                                              "difference": _difference(result.seismograms, ref)}
    if comm.Get_rank() == 0:
        Path(target).write_text(json.dumps(figures, indent=1))


# --- the command ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/gpu_acceptance.py", description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?", help="the output folder (figures, logs, the tiny study's report)")
    p.add_argument("--wheels", help="the folder --prepare filled (install from it, offline)")
    p.add_argument("--prepare", metavar="DIR", help="download the wheels the node lacks into DIR (needs PyPI)")
    p.add_argument("--python", default="3.12", help="the node's Python version, with --prepare")
    p.add_argument("--packages", nargs="+", help="with --prepare: only these packages of the set")
    p.add_argument("--machine", default=_platform.machine(), choices=["x86_64", "aarch64"],
                   help="the node's processor, with --prepare")
    p.add_argument("--dry-run", action="store_true", help="check every step's prerequisites and print the plan")
    p.add_argument("--only", help="run only these steps (comma-separated names)")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="FDM grid sizes (n for n^3)")
    p.add_argument("--worker", nargs=2, metavar=("KIND", "TARGET"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    sys.path.insert(0, str(REPO))
    if args.worker:
        worker(args.worker[0], args.worker[1], args.sizes)
        return 0
    if args.prepare:
        prepare(Path(args.prepare), args.python, args.machine, args.packages)
        return 0
    steps = STEPS
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in {s.name for s in STEPS}]
        if unknown:
            p.error(f"--only {unknown[0]}: not a step ({', '.join(s.name for s in STEPS)})")
        steps = [s for s in STEPS if s.name in wanted]
    if args.dry_run:
        first = None
        for i, s in enumerate(steps, 1):
            missing = s.needs(args)
            first = first or (s.name if missing else None)
            state = "ready" if not missing else "MISSING: " + "; ".join(missing)
            print(f"[gpu-acceptance] step {i} of {len(steps)} {s.name} (at most {s.timeout_s} s): {s.plan} - {state}",
                  flush=True)
        budget = sum(s.timeout_s for s in steps)
        verdict = "every prerequisite is here" if first is None else f"first step missing a prerequisite: {first}"
        print(f"[gpu-acceptance] dry run: {verdict}; the steps' limits add up to {budget} s (the run stops at "
              f"{TOTAL_S} s)", flush=True)
        return 0 if first is None else 1
    if not args.out:
        p.error("give the output folder (or --dry-run, or --prepare DIR)")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    args.out = str(out)
    results, failed = [], None
    started = time.perf_counter()
    for i, s in enumerate(steps, 1):
        t0 = time.perf_counter()
        # each step within its own limit and what is left of the whole run's 8 minutes
        args.limit = max(1.0, min(s.timeout_s, TOTAL_S - (t0 - started)))
        missing = s.needs(args) if s.name != "install" else needs_install(args)
        try:
            ok, line, figures = (False, "MISSING: " + "; ".join(missing), {}) if missing else s.run(args, out)
        except subprocess.TimeoutExpired:
            ok, line, figures = False, f"did not end within its {args.limit:.0f} s", {}
        except Exception as exc:  # noqa: BLE001 - a step's failure is its line; the others still run
            ok, line, figures = False, f"{type(exc).__name__}: {exc}", {}
        took = time.perf_counter() - t0
        (out / f"{s.name}.json").write_text(json.dumps({"ok": ok, "line": line, "seconds": took, **figures},
                                                       indent=1, default=str))
        print(f"[gpu-acceptance] step {i} of {len(steps)} {s.name}: {'ok' if ok else 'FAILED'} - {line} "
              f"({took:.0f} s)", flush=True)
        results.append({"step": s.name, "ok": ok, "line": line, "seconds": took})
        failed = failed or (None if ok else s.name)
    (out / "summary.json").write_text(json.dumps({"steps": results, "first_failed": failed,
                                                  "seconds": time.perf_counter() - started}, indent=1))
    print(f"[gpu-acceptance] {'every step passed' if failed is None else 'first failed step: ' + failed} "
          f"({time.perf_counter() - started:.0f} s); figures in {out}", flush=True)
    return 0 if failed is None else 1


if __name__ == "__main__":
    sys.exit(main())
