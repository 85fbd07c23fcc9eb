"""The house's rules, checked from the source: no import cycles, sims never imports analysis, analysis
imports only the pure sims modules, pure modules stay pure, imports have no side effects, and a module
longer than 500 lines says why in its docstring."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("sims", "analysis")
#: The sims modules analysis may import: records, counts, identities, vocabulary and the shared helpers.
PURE = {"sims", "sims.vocab", "sims.atomic", "sims.fit", "sims.platform_file", "sims.record", "sims.sa.counts",
        "sims.sa.case", "sims.la.matrix", "sims.fdm.counts", "sims.fdm.cost", "sims.fdm.spec", "sims.fdm.decomp",
        "sims.fdm.stability", "sims.fdm.medium", "sims.fdm.source", "sims.yamlfile", "sims.fingerprint",
        "sims.placement", "sims.memory", "sims.bench", "sims.bench.plan"}
#: The one documented exception: `hetval attach-trace` runs the measurement side's trace tool.
CLI_TOOLS = {("analysis.cli", "sims.meters"), ("analysis.cli", "sims.meters.posthoc")}
LONG = 500


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules ``name`` imports anywhere in its source (top level or inside functions)."""
    found: set[str] = set()
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def test_no_import_cycles():
    g = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    assert cycles == []


def test_sims_never_imports_analysis_and_analysis_only_pure_sims():
    g = graph()
    assert not [(m, t) for m, ts in g.items() if m.startswith("sims") for t in ts if t.startswith("analysis")]
    impure = sorted((m, t) for m, ts in g.items() if m.startswith("analysis") for t in ts
                    if t.startswith("sims") and t not in PURE and (m, t) not in CLI_TOOLS)
    assert impure == []


def test_pure_modules_import_only_pure_modules():
    g = graph()
    assert not [(m, t) for m in PURE if m in g for t in g[m] if t.startswith("sims") and t not in PURE]


def test_imports_have_no_side_effects(env):
    """Importing every analysis module and every sims module leaves the thread limits alone."""
    names = sorted(n for n in modules() if not n.endswith("__main__"))
    code = ("import importlib, json, os, sys\n"
            f"for n in {names!r}:\n    importlib.import_module(n)\n"
            "print(json.dumps({k: os.environ.get(k) for k in ('OMP_NUM_THREADS', 'NUMBA_NUM_THREADS', "
            "'OPENBLAS_NUM_THREADS')}))")
    clean = {k: v for k, v in env.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean, cwd=REPO,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == {"OMP_NUM_THREADS": None, "NUMBA_NUM_THREADS": None,
                                                       "OPENBLAS_NUM_THREADS": None}


def test_long_modules_say_why():
    long = []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if len(text.splitlines()) > LONG and "Why this module is long" not in doc:
            long.append(f"{name} ({len(text.splitlines())} lines)")
    assert long == []


#: what a model may import besides the equations and the contract: the column names of the platform files, the
#: dataset's schema (a record's parameters parsed), the run vocabulary and the solvers' counts - shared words, not scoring
MODEL_MAY_IMPORT = {"analysis.registry", "analysis.storage.platforms", "analysis.storage.schema", "sims.vocab",
                    "sims.sa.counts"}


def test_a_model_imports_no_other_model_and_nothing_that_scores():
    """A model only predicts (analysis.scoring.measured attaches the measurements and the tightness): it imports
    the equations and the contract, never another model, the scorecard or the metrics."""
    g = graph()
    for name, deps in g.items():
        if not name.startswith("analysis.models."):
            continue
        wrong = {d for d in deps if not d.startswith("analysis.equations") and d not in MODEL_MAY_IMPORT
                 and d.startswith(("analysis.", "sims."))}
        assert not wrong, (name, sorted(wrong))


#: Where the engine still names a case or a case's own table (string constants), module by module: what the
#: redesign has yet to move into the cases. A module may name no more than listed here, and the list shrinks as
#: modules are freed (a module freed but still listed fails too). ``runs`` is left out: the two-processor cases'
#: table shares its name with a config section, a scorecard column and an interval level.
CASE_WORDS_PENDING = {
    "analysis.planning.checks": {"fdm"},
    "analysis.planning.config": {"fdm"},
    "analysis.report.common": {"fidelity"},
    "analysis.report.sections.energy": {"energy_runs", "peach_runs"},
    "analysis.report.sections.scorecard": {"published"},
    "analysis.resources": {"published"},
    "analysis.scoring.claims": {"published"},
    "analysis.scoring.scaling": {"fdm"},
    "analysis.scoring.tables": {"published"},
    "analysis.scoring.validate": {"fidelity", "peach_fidelity", "peach_runs", "published"},
    "analysis.storage.synthetic": {"fdm", "published"},
    "analysis.tracking.history": {"fidelity", "published"},
}


def test_the_engine_names_no_case_beyond_what_is_listed():
    from collections import Counter

    from analysis.registry import cases

    registered = cases()
    declared = Counter(t for tables in {id(c.tables): c.tables for c in registered.values()}.values()
                       for t in set(tables))
    # a table one kind of case declares is that case's; one several kinds declare (projection, splits) is shared
    words = set(registered) | {t for t, n in declared.items() if n == 1} - {"runs"}
    own_sections = {s.partition(":")[0] for c in registered.values() for s in c.sections}
    named: dict[str, set[str]] = {}
    for name, path in modules().items():
        if not name.startswith("analysis.") or name.startswith(("analysis.cases", "analysis.models")) \
                or name in own_sections:
            continue
        found = {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in words}
        if found:
            named[name] = found
    assert "analysis.scoring.scorecard" not in named  # the scorecard loops over the cases (Case.scored)
    assert named == CASE_WORDS_PENDING
