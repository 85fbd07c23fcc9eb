"""How much memory a job may really use, and the peak a job's process tree reached.

``/proc/meminfo`` shows the whole node, but a job is often held to less: a memory cgroup (v1
``memory.limit_in_bytes`` or v2 ``memory.max``, on the job's own cgroup or any parent: SLURM's
``--mem`` is enforced this way), an address-space rlimit, or SLURM's own ``SLURM_MEM_PER_NODE`` /
``SLURM_MEM_PER_CPU`` where the site does not confine jobs with cgroups. :func:`memory_limit` is the
smallest of them and says which one it is; microbenchmarks size their arrays from a fraction of it
(:func:`sims.bench.plan.plan`). Pure standard library; no side effects at import.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

#: a cgroup limit at or above this is "no limit" (v1 writes 2^63 rounded down to the page size)
UNLIMITED = 2**60


@dataclass(frozen=True)
class MemoryLimit:
    """The memory a process may use (bytes) and what sets it (``this machine``, ``memory cgroup ...``)."""

    bytes: int
    source: str


def physical_bytes() -> int | None:
    """The machine's physical memory (bytes), or None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (OSError, ValueError, AttributeError):
        return None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if 0 < value < UNLIMITED else None


def _mounts(mountinfo: Path) -> list[tuple[str, str, str, str]]:
    """(root inside the hierarchy, mount point, fs type, super options) of every cgroup mount."""
    out = []
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((fields[3], fields[4], tail[0], tail[2]))
    return out


def _walk_up(mount: str, root: str, path: str, name: str) -> list[tuple[int, str]]:
    """Limits in file ``name`` of the cgroup at ``path`` and of each parent visible under ``mount``."""
    rel = path
    if root not in ("", "/") and (path == root or path.startswith(root.rstrip("/") + "/")):
        rel = path[len(root.rstrip("/")):]  # a cgroup namespace or a bind mount of a sub-hierarchy
    here = Path(mount) / rel.lstrip("/")
    if not here.is_dir():
        here = Path(mount)  # the path is not visible from here (another namespace): the mount's own cgroup
    found = []
    while True:
        value = _read_int(here / name)
        if value is not None:
            found.append((value, str(here)))
        if here == Path(mount) or here.parent == here:
            return found
        here = here.parent


def cgroup_limit(proc_cgroup: str | Path = "/proc/self/cgroup",
                 mountinfo: str | Path = "/proc/self/mountinfo") -> MemoryLimit | None:
    """The tightest memory-cgroup limit on this process (v1 and v2, own cgroup and parents), or None."""
    try:
        lines = Path(proc_cgroup).read_text().splitlines()
    except OSError:
        return None
    mounts = _mounts(Path(mountinfo))
    found: list[tuple[int, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hier, controllers, path = parts
        if hier == "0" and controllers == "":
            for root, point, fstype, _ in mounts:
                if fstype == "cgroup2":
                    found += _walk_up(point, root, path, "memory.max")
        elif "memory" in controllers.split(","):
            for root, point, fstype, opts in mounts:
                if fstype == "cgroup" and "memory" in opts.split(","):
                    found += _walk_up(point, root, path, "memory.limit_in_bytes")
    if not found:
        return None
    value, where = min(found)
    return MemoryLimit(value, f"memory cgroup {where}")


def slurm_limit(environ: dict[str, str] | None = None) -> MemoryLimit | None:
    """SLURM's memory allocation of this job on this node (``--mem`` / ``--mem-per-cpu``), or None."""
    env = os.environ if environ is None else environ
    per_node = env.get("SLURM_MEM_PER_NODE", "")
    if per_node.isdigit() and int(per_node) > 0:
        return MemoryLimit(int(per_node) * 2**20, f"SLURM_MEM_PER_NODE={per_node} MB")
    per_cpu, cpus = env.get("SLURM_MEM_PER_CPU", ""), env.get("SLURM_CPUS_ON_NODE", "")
    if per_cpu.isdigit() and cpus.isdigit() and int(per_cpu) > 0 and int(cpus) > 0:
        return MemoryLimit(int(per_cpu) * int(cpus) * 2**20, f"SLURM_MEM_PER_CPU={per_cpu} MB x {cpus} CPUs")
    return None


def rlimit() -> MemoryLimit | None:
    """The address-space rlimit (``ulimit -v``) when one is set."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft in (resource.RLIM_INFINITY, -1) or soft <= 0:
        return None
    return MemoryLimit(int(soft), "RLIMIT_AS (ulimit -v)")


def memory_limit() -> MemoryLimit:
    """The memory this process may really use: the smallest of the machine's, its memory cgroup's, its
    address-space rlimit and its SLURM allocation."""
    candidates = [c for c in (cgroup_limit(), slurm_limit(), rlimit()) if c is not None]
    phys = physical_bytes()
    if phys:
        candidates.append(MemoryLimit(phys, "this machine"))
    if not candidates:
        return MemoryLimit(8 * 2**30, "assumed (the OS does not say)")
    return min(candidates, key=lambda c: c.bytes)


def release_freed() -> bool:
    """Give the memory this process freed back to the system: a garbage collection, then glibc's
    ``malloc_trim(0)``. Arrays of a few MiB (an FDM block's fields) come from the heap, whose freed pages glibc
    keeps; a phase that allocates after many such arrays were freed would count twice against a memory cgroup.
    True once ``malloc_trim`` ran (whether or not it found pages to give back); False where the C library has
    none."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
        return True
    except (OSError, AttributeError):
        return False


def oom_kills() -> int | None:
    """The kernel's count of processes it killed for lack of memory (``/proc/vmstat`` ``oom_kill``)."""
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def _proc_table() -> tuple[dict[int, list[int]], dict[int, int]]:
    """Every process's children and resident bytes, from one pass over ``/proc``."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields after the last ')' are fixed
        fields = stat[stat.rfind(")") + 2:].split()
        p = int(entry)
        children.setdefault(int(fields[1]), []).append(p)
        rss[p] = int(fields[21]) * page
    return children, rss


def _subtree(children: dict[int, list[int]], rss: dict[int, int], pid: int) -> int:
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


class JobPeaks:
    """The peak resident memory of each job a parent process (Snakemake) starts, its whole process tree summed.

    :meth:`poll` is called every few tens of milliseconds while the parent runs; each direct child of the parent
    is one job, known by its command line. Shared pages (the libraries every rank maps) count once per process,
    as RSS does, so the figure is an upper bound of what the job's memory cgroup would be charged.
    """

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self.peaks: dict[int, int] = {}
        self.commands: dict[int, str] = {}
        self.seen: dict[int, float] = {}  # when each job was first seen (POSIX time)

    def poll(self) -> None:
        children, rss = _proc_table()
        for job in children.get(self.parent, []):
            if job not in self.commands:
                try:
                    with open(f"/proc/{job}/cmdline", "rb") as fh:
                        self.commands[job] = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
                except OSError:
                    continue
                self.seen[job] = time.time()
            self.peaks[job] = max(self.peaks.get(job, 0), _subtree(children, rss, job))

    def jobs(self) -> list[tuple[str, int, float]]:
        """(command line, peak bytes, when first seen) of every job seen."""
        return [(self.commands[p], self.peaks[p], self.seen[p]) for p in self.peaks if p in self.commands]
