"""How large characterisation's arrays are: the cache rule, capped by a memory budget.

STREAM's rule is that each array spans several times the last-level cache, so that the triad measures
memory, not the cache. A machine's reported LLC ranges from a few MiB to hundreds (some virtual machines
report the host's whole L3), and the rule alone then asks for more memory than a job may use. So the
triad (and with it the intensity sweep and the random-access table, which share its length) is sized

    n = min(llc_factor x LLC / 12 B,  memory_fraction x limit / ranks on the node / PEAK_BYTES_PER_ELEMENT)

where ``limit`` is what the job may really use (:func:`sims.memory.memory_limit`: the machine, its memory
cgroup, its rlimit, its SLURM allocation). Characterisation allocates one phase's arrays at a time, and its
largest phase (the triad's three float32 arrays, or the float32 and float64 random-access tables) holds
:data:`PEAK_BYTES_PER_ELEMENT` bytes per element. When the cap bites the platform file says so
(``sizing``), with a flag when the triad's arrays fall below 4x the LLC (the triad then partly measures the
cache). The workflow estimates the job from the same plan (``analysis/planning/estimates.py``).
"""

from __future__ import annotations

import glob
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sims.la.matrix import DTYPES, TILE
from sims.memory import MemoryLimit

#: bytes per triad element of the largest phase held at once (three float32 arrays; or float32 + float64 tables)
PEAK_BYTES_PER_ELEMENT = 12
#: the triad's counted bytes per element (STREAM: read b, read c, write a)
TRIAD_BYTES = 12
#: STREAM's own rule: each array at least this many times the last-level cache
STREAM_RULE = 4
#: the smallest triad (elements): a few MiB, still far above the sweep's and the ops' in-cache blocks
MIN_ELEMENTS = 2**20
#: default share of the job's memory that characterisation's arrays may take (``characterize.memory_fraction``)
FRACTION = 0.5


#: the LLC assumed where the machine does not report one
DEFAULT_LLC_BYTES = 32 * 2**20
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def _parse_size(text: str) -> int | None:
    m = _SIZE_RE.match(text)
    if not m:
        return None
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def llc_detected(cache_dir: str = "/sys/devices/system/cpu/cpu0/cache") -> tuple[int, str]:
    """Size in bytes of the last-level (highest-level data/unified) cache of cpu0, and where it comes from.

    Read from ``<cache_dir>/index*/{level,type,size}``; falls back to :data:`DEFAULT_LLC_BYTES` when nothing
    readable is there (the source then says so).
    """
    best: tuple[int, int] | None = None  # (level, size)
    for idx in sorted(glob.glob(os.path.join(cache_dir, "index*"))):
        try:
            with open(os.path.join(idx, "size")) as f:
                size = _parse_size(f.read())
            with open(os.path.join(idx, "level")) as f:
                level = int(f.read().strip())
            ctype = ""
            tpath = os.path.join(idx, "type")
            if os.path.exists(tpath):
                with open(tpath) as f:
                    ctype = f.read().strip()
        except (OSError, ValueError):
            continue
        if size is None or size <= 0 or ctype.lower() == "instruction":
            continue
        if best is None or (level, size) > best:
            best = (level, size)
    if best is None:
        return DEFAULT_LLC_BYTES, f"assumed: {cache_dir} does not say"
    return best[1], f"detected: L{best[0]} of cpu0 ({cache_dir})"


def cache_size(llc_mib: float | None) -> tuple[int, str]:
    """The LLC the cache rule uses: ``characterize.llc_mib`` when set (an override, recorded as such), else detected."""
    if llc_mib:
        return int(float(llc_mib) * 2**20), "override: characterize.llc_mib"
    return llc_detected()


@dataclass(frozen=True)
class Plan:
    """The sizes characterisation uses on one rank, and why."""

    llc_bytes: int
    llc_source: str
    llc_factor: float
    memory_fraction: float
    limit_bytes: int
    limit_source: str
    ranks_sharing: int
    budget_bytes: int
    wanted_elements: int
    elements: int

    @property
    def capped(self) -> bool:
        """The memory budget, not the cache rule, set the triad's size."""
        return self.elements < self.wanted_elements

    @property
    def below_stream_rule(self) -> bool:
        """Each triad array is smaller than 4 x the LLC: the triad partly measures the cache."""
        return 4 * self.elements < STREAM_RULE * self.llc_bytes - 4 * 1024  # rounding to 1024 elements

    @property
    def peak_bytes(self) -> int:
        """The largest set of characterisation arrays one rank holds at once."""
        return PEAK_BYTES_PER_ELEMENT * self.elements

    def document(self) -> dict[str, Any]:
        """The ``sizing`` entry of the platform file."""
        return {
            **asdict(self),
            "capped": self.capped,
            "below_stream_rule": self.below_stream_rule,
            "triad_bytes_per_array": 4 * self.elements,
            "wanted_bytes_per_array": 4 * self.wanted_elements,
            "peak_bytes_per_rank": self.peak_bytes,
            "rule": (f"triad arrays together span llc_factor ({self.llc_factor:g}) x LLC, each array >= "
                     f"{STREAM_RULE} x LLC wanted; capped at memory_fraction ({self.memory_fraction:g}) x the job's "
                     f"memory / {self.ranks_sharing} rank(s) on the node, {PEAK_BYTES_PER_ELEMENT} B per element "
                     "held at once"),
        }


def plan(llc_bytes: int, llc_source: str, llc_factor: float, memory_fraction: float, limit: MemoryLimit,
         ranks_sharing: int) -> Plan:
    """The triad's length for one rank (see the module's docstring)."""
    if not llc_factor > 0:
        raise ValueError(f"llc_factor must be positive, got {llc_factor!r}")
    if not 0 < memory_fraction <= 1:
        raise ValueError(f"memory_fraction must be in (0, 1], got {memory_fraction!r}")
    ranks = max(1, int(ranks_sharing))
    budget = int(memory_fraction * limit.bytes / ranks)
    wanted = _round(int(llc_factor * llc_bytes) // TRIAD_BYTES)
    elements = max(MIN_ELEMENTS, min(wanted, _round(budget // PEAK_BYTES_PER_ELEMENT)))
    return Plan(int(llc_bytes), llc_source, float(llc_factor), float(memory_fraction), int(limit.bytes), limit.source,
                ranks, budget, wanted, elements)


#: the plateau search's first length: 2 MiB of float32 per array, a working set in any last-level cache
PLATEAU_START = 2**19
#: rates within this share of each other are one level of the memory hierarchy
PLATEAU_TOLERANCE = 0.05


def plateau(rate: Callable[[int], float], stop: int, start: int = PLATEAU_START,
            tolerance: float = PLATEAU_TOLERANCE) -> tuple[int, list[dict[str, Any]], str]:
    """The triad's length at the memory plateau, found by measuring: the length doubles from ``start`` (``rate(n)``:
    the triad's rate over arrays of ``n`` elements) until the rate has fallen below the cache's (below ``1 -
    tolerance`` of the fastest seen) and then stayed within ``tolerance`` over two doublings; that last length is
    the plateau. ``stop`` (the cache rule's length, capped by the memory budget) ends the search without one.
    Returns the length, every step ``{elements, rate}`` and how the length was chosen.

    A machine's reported last-level cache says little of what one job gets from it (a virtual machine of two cores
    reports its host socket's whole L3, shared with other tenants), and arrays of four times it cost minutes on
    such a machine; where the rate stops falling is what the triad must reach."""
    steps: list[dict[str, Any]] = []
    n, fastest, dropped = _round(start), 0.0, False
    while True:
        n = min(n, stop)
        r = float(rate(n))
        steps.append({"elements": int(n), "rate": r})
        fastest = max(fastest, r)
        dropped = dropped or r < (1.0 - tolerance) * fastest
        if dropped and len(steps) >= 3:
            a, b, c = (x["rate"] for x in steps[-3:])
            if abs(b / a - 1.0) < tolerance and abs(c / b - 1.0) < tolerance and c < (1.0 - tolerance) * fastest:
                return n, steps, (f"the memory plateau: the rate fell below the cache's and held within "
                                  f"{tolerance:.0%} over two doublings")
        if n >= stop:
            return n, steps, ("the cache rule's length (capped by the memory budget): no plateau below it"
                              if dropped or len(steps) < 3 else "the cache rule's length (capped by the memory "
                              "budget): the rate never fell below the cache's")
        n *= 2


def _round(n: int) -> int:
    return max(1024, int(n) // 1024 * 1024)


def transpose_sizes(sizes: Sequence[int] | None, triad_elements: int, dtype: str, budget_bytes: int | None,
                    say: Callable[[str], None] = lambda _m: None) -> list[int]:
    """The square sizes the transpose ceiling of ``dtype`` is measured at: ``sizes`` (the study's) whose two
    arrays fit ``budget_bytes``, else the triad-matched :func:`transpose_size`. A size left out is said."""
    s = DTYPES[dtype]
    fit = [int(n) for n in sizes or () if budget_bytes is None or 2 * s * int(n) ** 2 <= budget_bytes]
    for n in sorted(set(map(int, sizes or ())) - set(fit)):
        say(f"transpose {dtype} n = {n} left out of its ceiling: its two arrays ({2 * s * n * n / 2**20:.0f} MiB) "
            f"exceed the rank's budget ({budget_bytes / 2**20:.0f} MiB)")
    return sorted(set(fit)) or [transpose_size(triad_elements, dtype)]


def transpose_size(triad_elements: int, dtype: str) -> int:
    """The square size whose two arrays take the memory of the triad's three float32 arrays (a multiple of the
    transpose kernel's tile, at least one tile)."""
    n = int(math.isqrt(max(12 * int(triad_elements) // (2 * DTYPES[dtype]), 1)))
    return max(TILE, n - n % TILE)
