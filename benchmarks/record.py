"""Where a benchmark writes what it measured: its own section of ``docs/benchmarks.md``.

Each section is delimited by ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` and is replaced whole by the
next run that writes it (``--write``), headed by the date and the machine's fingerprint (CPU model, cores,
memory, MPI library, GPU) so that every figure says where it was measured.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
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
    """Replace (or append) benchmark ``name``'s section of ``doc`` with ``body`` under ``title``."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    block = (f"<!-- bench:{name} -->\n## {title}\n\n_Written by `benchmarks/{name}.py --write` on {when}; "
             f"{machine_line()}._\n\n{body.rstrip()}\n<!-- /bench:{name} -->\n")
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmark figures\n"
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->\n", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block
    tmp = doc.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(doc)
