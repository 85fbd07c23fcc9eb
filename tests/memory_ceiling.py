"""A hard memory ceiling for a command in a test: a memory cgroup (v1 or v2) as root, else an address-space rlimit.

``with memory_ceiling(2 * 2**30) as ceiling:`` gives ``ceiling.words``, the words to put before a command so
that it and everything it starts run under the ceiling; ``ceiling.shell``, the same as a shell snippet to put
before a shell command; and ``ceiling.kind`` (``cgroup v1``, ``cgroup v2`` or ``rlimit``). The cgroup is removed
afterwards.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Ceiling:
    shell: str
    kind: str

    @property
    def words(self) -> list[str]:
        return ["sh", "-c", f'{self.shell}exec "$@"', "sh"]


def _writable_v2() -> bool:
    try:
        return "memory" in (V2 / "cgroup.controllers").read_text().split() and os.access(V2, os.W_OK)
    except OSError:
        return False


@contextmanager
def memory_ceiling(limit_bytes: int) -> Iterator[Ceiling]:
    """How to run a command under a memory ceiling of ``limit_bytes`` (see the module's docstring)."""
    root = os.geteuid() == 0
    cgroup = None
    if root and (V1 / "memory.limit_in_bytes").exists():
        cgroup, kind, limit_file = V1 / f"hetval-test-{secrets.token_hex(4)}", "cgroup v1", "memory.limit_in_bytes"
    elif root and _writable_v2():
        cgroup, kind, limit_file = V2 / f"hetval-test-{secrets.token_hex(4)}", "cgroup v2", "memory.max"
    if cgroup is not None:
        try:
            cgroup.mkdir()
            (cgroup / limit_file).write_text(str(int(limit_bytes)))
        except OSError:
            cgroup = None
    if cgroup is None:
        yield Ceiling(f"ulimit -v {int(limit_bytes) // 1024} && ", "rlimit")
        return
    try:
        yield Ceiling(f"echo $$ > {cgroup}/cgroup.procs && ", kind)
    finally:
        for _ in range(50):  # the command's processes leave the cgroup as they exit
            try:
                cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.1)
