"""The package floors of DESIGN.md, read from the source with ``ast`` (nothing is imported or run).

Every import of every module, lazy ones inside functions included, must run up the table or stay
on its own floor, and no two floors may import each other. The top-level package ``auditor`` holds
three floors (the ground floor, the audit, and the faces on the top floor), so ``auditor`` and
``ingest`` reach each other only through the ground floor, which is allowed.
"""

from __future__ import annotations

import ast
import itertools
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schemas", "auditor", "ingest", "graph", "scoring", "worlds", "repair")
NEVER_IMPORTED = ("tests", "benchmarks")

# A module's floor is that of the longest dotted prefix listed here.
FLOOR_OF_PREFIX = {
    "schemas": "schemas",
    "auditor": "audit",
    "auditor.store": "ground",
    "auditor.errors": "ground",
    "auditor.llm": "ground",
    "auditor.llm_providers": "ground",
    "auditor.local_model": "ground",
    "auditor.local_worker": "ground",
    "auditor.local_generate": "ground",
    "auditor.prompt_fit": "ground",
    "auditor.installed": "ground",
    "auditor.traces": "ground",
    "auditor.lean": "ground",
    "auditor.reports": "ground",
    "auditor.verbatim": "ground",
    "auditor.markdown": "ground",
    "auditor.registry": "ground",
    "ingest": "ingest",
    "graph": "graph",
    "scoring": "scoring",
    "scoring.stats": "scoring.stats",
    "worlds": "worlds",
    "repair": "repair",
    "auditor.evidence": "evidence",
    "auditor.server": "server",
    "auditor.cli": "cli",
}
BELOW_TOP = {"schemas", "ground", "ingest", "graph", "scoring.stats", "scoring", "audit", "worlds", "repair"}
MAY_IMPORT = {
    "schemas": set(),
    "ground": {"schemas"},
    "ingest": {"schemas", "ground"},
    "graph": {"schemas"},
    "scoring.stats": {"schemas", "ground"},
    "scoring": {"schemas", "ground", "scoring.stats"},
    "audit": {"schemas", "ground", "graph", "ingest", "scoring", "scoring.stats"},
    "worlds": {"schemas", "ground", "scoring.stats"},
    "repair": {"schemas", "ground", "scoring.stats", "audit", "worlds"},
    "evidence": BELOW_TOP,
    "server": BELOW_TOP,
    "cli": BELOW_TOP | {"evidence", "server"},
}


def floor(module: str) -> str:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in FLOOR_OF_PREFIX:
            return FLOOR_OF_PREFIX[prefix]
    raise AssertionError(f"{module} is on no floor")


@cache
def modules() -> dict[str, Path]:
    """Dotted name → source file, for every module of our packages."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imported(module: str, source: str, package: bool = False) -> set[str]:
    """The modules of ours (or tests, benchmarks) that ``module`` imports anywhere in its source;
    ``package``: the source is the package's ``__init__.py`` (relative imports start there)."""
    known = modules()
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, module)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if package else module.split(".")[:-1]
                anchor = here[: len(here) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import name` imports the submodule pkg.name where there is one
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        found |= {n for n in names if n.split(".")[0] in PACKAGES + NEVER_IMPORTED}
    return found


@cache
def imports_between_floors() -> dict[tuple[str, str], list[str]]:
    """(importing floor, imported floor) → the imports that make that arrow, as 'module -> module'."""
    arrows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, path in modules().items():
        source = path.read_text(encoding="utf-8")
        for target in sorted(imported(module, source, path.name == "__init__.py")):
            here = floor(module)
            there = "never-imported" if target.split(".")[0] in NEVER_IMPORTED else floor(target)
            if here != there:
                arrows[(here, there)].append(f"{module} -> {target}")
    return dict(arrows)


def test_every_module_is_read_and_every_floor_is_populated() -> None:
    assert len(modules()) > 300
    assert {floor(m) for m in modules()} == set(MAY_IMPORT)


def test_imports_run_up_the_table() -> None:
    wrong = [
        f"{imports[0]} ({here} may import {', '.join(sorted(MAY_IMPORT[here])) or 'nothing of ours'})"
        for (here, there), imports in sorted(imports_between_floors().items())
        if there not in MAY_IMPORT[here]
    ]
    assert not wrong, "imports against the floors of DESIGN.md:\n" + "\n".join(wrong)


def test_no_cycle_between_floors() -> None:
    arrows = imports_between_floors()
    graph: dict[str, set[str]] = defaultdict(set)
    for here, there in arrows:
        graph[here].add(there)
    assert graph, "no imports between floors were found"

    def path_back(start: str) -> list[str] | None:
        """A path of arrows from ``start`` back to itself, or None."""
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    return [*path, start]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        return None

    for start in sorted(graph):
        cycle = path_back(start)
        assert cycle is None, "floors import each other: " + "; ".join(
            arrows[(a, b)][0] for a, b in itertools.pairwise(cycle)
        )


def test_the_scan_sees_lazy_and_relative_imports() -> None:
    """Imports inside functions count, relative ones resolve as Python resolves them, and
    ``from package import submodule`` names the submodule."""
    source = "def f():\n    from .table import Table\n    from . import render\n    from .. import errors\n"
    assert imported("auditor.evidence.probe", source) == {
        "auditor.evidence.table",
        "auditor.evidence.render",
        "auditor.errors",
    }
    assert imported("auditor.evidence", "from . import worlds\n", package=True) == {"auditor.evidence.worlds"}
