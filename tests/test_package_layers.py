"""The package floors of docs/architecture.md, read from the source with ``ast`` (nothing is imported
or run).

A module's floor is its path: a top-level package, or one of the three floors of ``auditor/``
(``core``, ``audit``, ``surfaces``). Every import of every module, lazy ones inside functions
included, must run up the table or stay on its own floor, and no two floors may import each other.
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

# floor → the floors it may import; a module is on the floor of its longest dotted prefix listed here
MAY_IMPORT = {
    "schemas": set(),
    "auditor.core": {"schemas"},
    "ingest": {"schemas", "auditor.core"},
    "graph": {"schemas"},
    "scoring.stats": {"schemas", "auditor.core"},
    "scoring": {"schemas", "auditor.core", "scoring.stats"},
    "auditor.audit": {"schemas", "auditor.core", "graph", "ingest", "scoring", "scoring.stats"},
    "worlds": {"schemas", "auditor.core", "scoring.stats"},
    "repair": {"schemas", "auditor.core", "scoring.stats", "auditor.audit", "worlds"},
}
# the top floor, where users meet the service: the server and the evidence report import every floor
# below; the command line may import them too; nothing imports the command line
BELOW_SURFACES = set(MAY_IMPORT)
MAY_IMPORT["auditor.surfaces"] = BELOW_SURFACES
MAY_IMPORT["auditor.surfaces.server"] = BELOW_SURFACES
MAY_IMPORT["auditor.surfaces.evidence_report"] = BELOW_SURFACES
MAY_IMPORT["auditor.surfaces.cli"] = BELOW_SURFACES | {
    "auditor.surfaces.server",
    "auditor.surfaces.evidence_report",
}


def floor(module: str) -> str:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in MAY_IMPORT:
            return prefix
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
            if parts == ["auditor"]:
                continue  # the bare package: it only holds the three floors (checked below)
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
    assert not (ROOT / "auditor" / "__init__.py").read_text(encoding="utf-8").strip()


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
    source = (
        "def f():\n    from .table import Table\n    from . import render\n    from ...core import errors\n"
    )
    assert imported("auditor.surfaces.evidence_report.probe", source) == {
        "auditor.surfaces.evidence_report.table",
        "auditor.surfaces.evidence_report.render",
        "auditor.core.errors",
    }
    assert imported("auditor.surfaces.evidence_report", "from . import worlds\n", package=True) == {
        "auditor.surfaces.evidence_report.worlds"
    }
