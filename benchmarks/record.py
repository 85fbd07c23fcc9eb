"""Where a benchmark writes what it measured: its own section of ``docs/benchmarks.md``.

Every benchmark takes ``--write``: :func:`run_writing` records what its ``main`` printed; a benchmark with
its own tables calls :func:`write_section` itself.

Each section is delimited by ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` and is replaced whole by the
next run that writes it (``--write``), headed by the date and the machine's fingerprint (CPU model, cores,
memory, MPI library, GPU) so that every figure says where it was measured.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"


def machine_line() -> str:
    sys.path.insert(0, str(ROOT))
    from sims.fingerprint import fingerprint, machine_facts

    facts = machine_facts()
    return (f"machine {fingerprint(facts)}: {facts.get('cpu_model')}, {facts.get('cores')} cores, "
            f"{facts.get('memory_gib')} GiB, GPU {facts.get('gpu_model') or 'none'}")


def write_section(name: str, title: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) benchmark ``name``'s section of ``doc`` with ``body`` under ``title``; a script with
    several sections names them ``<script>-<part>``."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    block = (f"<!-- bench:{name} -->\n## {title}\n\n_Written by `benchmarks/{name.partition('-')[0]}.py --write` on {when}; "
             f"{machine_line()}._\n\n{body.rstrip()}\n<!-- /bench:{name} -->\n")
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmark figures\n"
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->\n", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block
    tmp = doc.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(doc)


class _Tee(io.TextIOBase):
    def __init__(self, *streams: io.TextIOBase) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


def run_writing(name: str, title: str, main: Callable[[], int | None]) -> int:
    """Run a benchmark's ``main``; with ``--write`` on its command line (removed before ``main`` parses it),
    also record everything it printed as its section of ``docs/benchmarks.md`` (headed by the date, the
    machine's fingerprint and the command). Returns ``main``'s exit status."""
    write = "--write" in sys.argv[1:]
    if write:
        sys.argv = [a for a in sys.argv if a != "--write"]
    command = " ".join(["python", f"benchmarks/{name}.py", *sys.argv[1:]])
    buffer = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, buffer)):
        rc = main() or 0
    if write and rc == 0:
        write_section(name, title, f"`{command}`\n\n```\n{buffer.getvalue().rstrip()}\n```")
    return int(rc)
