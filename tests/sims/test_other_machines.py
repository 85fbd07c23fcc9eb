"""Machines other than this one: a larger cache, a hard memory ceiling and one core at once; and a job the kernel
kills.

Characterisation runs as if the last-level cache were 480 MiB, as another machine of this kind reports
(``characterize.llc_mib``, recorded as an override), under a memory ceiling (a memory cgroup as root, else an
rlimit), with both ranks in a cpuset of one CPU: the cache rule alone would ask for more than the ceiling holds,
so the budget caps the arrays, the platform file says so, and the job completes inside it. A run killed by the kernel for lack of memory leaves a
failed record that says so.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from sims.bench import plan
from sims.memory import MemoryLimit, cgroup_limit, memory_limit
from tests.conftest import REPO
from tests.memory_ceiling import memory_ceiling

LAYOUT = {"host": {"backend": "numpy", "cores": [0]}, "accel": {"backend": "numba", "cores": [1]}}
CEILING = 2**30  # 1 GiB: the cache rule would want 5.6 GiB; the budget is a quarter of it


def spec(llc_mib: float | None) -> dict:
    return {"platform": "pair", "description": "test", "layout": LAYOUT, "warmup": 0, "repetitions": 5,
            "llc_factor": 12, "llc_mib": llc_mib, "memory_fraction": 0.25, "gemm_sizes": [128],
            "energy": {"meter": "none"}}


def characterize(words: list[str], mpiexec: str, env: dict, s: dict, out, timeout: float = 300):
    cmd = [*words, mpiexec, "-n", "2", sys.executable, "-m", "mpi4py", "-m", "sims.bench", "--spec", json.dumps(s),
           "--out", str(out)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_the_cache_rule_capped_by_the_budget():
    limit = MemoryLimit(4 * 2**30, "test")
    big = plan.plan(2 * 2**30, "override", 12, 0.5, limit, 2)
    assert big.wanted_elements == 2 * 2**30  # 12 x LLC over three 4-byte arrays: each array 4 x LLC
    assert big.capped and big.below_stream_rule
    assert big.budget_bytes == 2**30 and big.peak_bytes <= big.budget_bytes  # one rank's arrays within its budget
    small = plan.plan(32 * 2**20, "detected", 12, 0.5, limit, 2)
    assert not small.capped and not small.below_stream_rule and small.elements == small.wanted_elements
    assert plan.plan(32 * 2**20, "detected", 12, 0.5, limit, 4).budget_bytes == big.budget_bytes // 2
    assert plan.plan(32 * 2**20, "detected", 8, 0.5, limit, 2).below_stream_rule  # 8/3 x LLC per array
    with pytest.raises(ValueError, match="memory_fraction"):
        plan.plan(32 * 2**20, "detected", 8, 0.0, limit, 2)


def test_memory_limit_reads_cgroups(tmp_path):
    """v1 and v2 limits of the process's own cgroup and its parents; the smallest wins."""
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    (v1 / "job" / "step").mkdir(parents=True)
    (v1 / "job" / "memory.limit_in_bytes").write_text(str(3 * 2**30))
    (v1 / "job" / "step" / "memory.limit_in_bytes").write_text("9223372036854771712")  # unlimited
    (v2 / "a").mkdir(parents=True)
    (v2 / "a" / "memory.max").write_text("max")
    proc = tmp_path / "cgroup"
    proc.write_text("4:memory:/job/step\n0::/a\n")
    mounts = tmp_path / "mountinfo"
    mounts.write_text(f"30 20 0:30 / {v1} rw - cgroup cgroup rw,memory\n40 20 0:40 / {v2} rw - cgroup2 cgroup2 rw\n")
    got = cgroup_limit(proc, mounts)
    assert got is not None and got.bytes == 3 * 2**30 and got.source.endswith("/job")
    (v2 / "a" / "memory.max").write_text(str(2**30))
    assert cgroup_limit(proc, mounts).bytes == 2**30
    assert memory_limit().bytes > 0


FREED = """
import gc
import numpy as np
from sims.memory import release_freed

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096

big = np.ones(8 * 2**20 // 8)
del big  # freeing an 8 MiB mapping raises glibc's mmap threshold to it: the blocks that follow come from the heap
blocks = [np.ones(2**20 // 8 * 3) for _ in range(64)]  # 64 x 3 MiB
pin = np.ones(1024)  # a small live allocation above them keeps the heap's top from shrinking by itself
before = rss()
del blocks
gc.collect()
kept = rss()
print(release_freed(), (before - kept) // 2**20, (before - rss()) // 2**20)
"""


def test_freed_heap_memory_goes_back_to_the_system():
    """Blocks of a few MiB come from glibc's heap once a larger one was freed; after they are freed, the RSS may stay
    until malloc_trim (the FDM calibration's blocks before the triad's third moment). In a fresh process, whose
    heap has no history."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip(f"malloc_trim is glibc's; this C library is {platform.libc_ver()[0] or 'unknown'}")
    out = subprocess.run([sys.executable, "-c", FREED], capture_output=True, text=True, cwd=REPO, timeout=60,
                         check=True).stdout.split()
    trimmed, freed_alone, freed_trimmed = out[0] == "True", int(out[1]), int(out[2])
    # glibc sometimes trims by itself (how much depends on the heap's layout); after release_freed the blocks are
    # always given back (less the few MiB that loading the C library takes)
    assert trimmed and freed_trimmed >= 100, (out, freed_alone)


@pytest.mark.mpi
def test_characterize_a_large_cache_under_a_memory_ceiling_on_one_core(mpiexec, env, tmp_path):
    """Both ranks in a cpuset of one CPU (the platform's cores are positions in it, so both land on that CPU), under
    a ceiling their cache rule alone would exceed."""
    llc_mib = 480  # another machine of this kind reports it: 12 x LLC would want 5.6 GiB of triad arrays
    out = tmp_path / "pair.yaml"
    with memory_ceiling(CEILING) as ceiling:
        proc = characterize([*ceiling.words, "taskset", "-c", "0"], mpiexec, env, spec(llc_mib), out)
    kind = ceiling.kind
    assert proc.returncode == 0, f"{kind}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    doc = yaml.safe_load(out.read_text())
    for role in ("host", "accel"):
        sizing = doc["sizing"][role]
        assert sizing["llc_bytes"] == llc_mib * 2**20 and sizing["llc_source"] == "override: characterize.llc_mib"
        assert sizing["capped"] and sizing["below_stream_rule"], sizing
        if kind.startswith("cgroup"):  # the job saw the ceiling, not the machine
            assert sizing["limit_bytes"] == CEILING and "cgroup" in sizing["limit_source"]
        assert 2 * sizing["peak_bytes_per_rank"] <= CEILING * 0.25 + 1
        assert "capped by the memory budget" in doc["processors"][role]["t_b"]["method"]
        assert doc["processors"][role]["t_b"]["value"] > 0
    assert "CAPPED by the memory budget" in proc.stdout and "below 4 x LLC" in proc.stdout


def test_a_run_killed_for_memory_leaves_a_record_that_says_so(env, tmp_path):
    """The guard: the kernel's OOM killer ends the command; the failed record's error says why in one line."""
    record = tmp_path / "raw" / "0123456789abcdef.json"
    run = {"run_id": "0123456789abcdef", "study": "t", "case": "sa", "variant": "CO", "platform": "pair",
           "params": {"wp": "CO"}, "size": 1}
    hog = f"{sys.executable} -c 'import numpy; a = numpy.ones(2**30); print(a.sum())'"
    with memory_ceiling(256 * 2**20) as ceiling:
        if ceiling.kind == "rlimit":
            pytest.skip("no memory cgroup here (not root, or no memory controller): the kernel's OOM killer "
                        "cannot be provoked without disturbing the machine")
        proc = subprocess.run([sys.executable, "-m", "sims.guard", "--record", str(record), "--spec", json.dumps(run),
                               "--ranks", "2", "--estimate-mb", "1536", "--node-mb", "24000", "--",
                               f"{ceiling.shell}exec {hog}"],
                              env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(record.read_text())["records"]
    assert len(rows) == 1 and rows[0]["status"] == "failed"
    assert rows[0]["error"] == "killed by the kernel (out of memory): estimate 1.5 GiB, node 23.4 GiB"
    assert "FAILED - killed by the kernel (out of memory)" in proc.stdout


def test_the_guard_says_why_in_one_line():
    from sims.guard import describe

    assert describe(137, 4, 5, 1536, 6144, "limit (memory cgroup /job)") == \
        "killed by the kernel (out of memory): estimate 1.5 GiB, limit (memory cgroup /job) 6.0 GiB"
    assert describe(-9, 4, 4, None, None) == "ended by SIGKILL and wrote no record"
    assert describe(143, None, None, 1024, None) == "ended by SIGTERM and wrote no record (estimate 1.0 GiB)"
    assert describe(3, 0, 0, None, None) == "exited with status 3 and wrote no record"
