"""ScopeOK: a patch may change only the workflow's declared repair surface, never a protected part.

Patches are applied here without the configuration's own guard (``Workflow.with_values`` refuses
out-of-surface paths by raising), so that an out-of-scope proposal becomes a recorded refusal that
names every offending path instead of an exception halfway through building it.
"""

from __future__ import annotations

import copy
from typing import Any

from schemas.repair import ScopeCheck
from worlds import Workflow


def apply_changes(wf: Workflow, changes: dict[str, Any]) -> Workflow:
    """A patched copy with every dotted path set, inside the surface or not (the scope check judges)."""
    data = copy.deepcopy(wf.data)
    for path, value in changes.items():
        node = data
        *parents, leaf = path.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = copy.deepcopy(value)
    return Workflow(data=data, origin=wf.origin)


def _protected(wf: Workflow, path: str) -> bool:
    return path.split(".")[0] in wf.protected


def check_scope(original: Workflow, patched: Workflow) -> ScopeCheck:
    """Every changed leaf must sit under a declared surface path and outside the protected parts."""
    changed = original.changed_paths(patched)
    bad = sorted({p for p in changed if not original.in_surface(p) or _protected(original, p)})
    return ScopeCheck(
        ok=not bad, surface=original.repair_surface, protected=original.protected, violations=bad
    )
