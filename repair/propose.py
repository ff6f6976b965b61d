"""The rules Repair Agent: plan items → catalogue controls → one attributed patch of the workflow.

It sees the plan and the configuration, never the reviewer's code; a rejected review comes back
only as the reviewer's stated issues, which the agent turns into revised control parameters for
its next round.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from auditor.core.errors import InputError
from repair.catalogue import catalogue_control
from repair.scope import apply_changes, check_scope
from schemas.repair import AppliedControl, PatchChange, RepairPatch, ReviewIssue, ScopeCheck
from schemas.report import AuditReport, RepairPlanItem
from worlds import Workflow


def repair_engine() -> str:
    return f"rules-repair/{version('agent-auditor')}"


@dataclass(frozen=True)
class Proposal:
    patch: RepairPatch
    patched: Workflow
    scope: ScopeCheck


def select_items(
    report: AuditReport, wf: Workflow, item_ids: list[str] | None = None
) -> list[RepairPlanItem]:
    """The plan items to implement: those named, or else every item whose surface this workflow exposes."""
    plan = {i.item_id: i for i in report.repair_plan}
    if not plan:
        raise InputError(
            f"report {report.report_id} carries no repair plan",
            hint="only actionable findings get plan items",
        )
    if item_ids:
        unknown = [i for i in item_ids if i not in plan]
        if unknown:
            raise InputError(
                f"no plan item {', '.join(unknown)}", field="--item", hint=f"items: {', '.join(plan)}"
            )
        return [plan[i] for i in item_ids]
    seen: set[str] = set()
    chosen = []
    for item in report.repair_plan:
        if item.control not in seen and all(wf.in_surface(p) for p in item.surface):
            seen.add(item.control)
            chosen.append(item)
    if not chosen:
        raise InputError(
            "no plan item's surface lies in this workflow's repair surface",
            path=wf.origin,
            hint=f"plan controls: {', '.join(sorted({i.control for i in plan.values()}))}; "
            f"workflow surface: {', '.join(wf.repair_surface)}",
        )
    return chosen


def revise_parameters(
    params: dict[str, dict[str, Any]], items: list[RepairPlanItem], issues: list[ReviewIssue]
) -> dict[str, dict[str, Any]]:
    """Fold a reviewer's stated expectations back into control parameters (by surface-relative key)."""
    out = {k: dict(v) for k, v in params.items()}
    for issue in issues:
        if issue.path is None or issue.expected is None:
            continue
        for item in items:
            for base in catalogue_control(item.control).surface:
                if issue.path.startswith(base + "."):
                    key = issue.path[len(base) + 1 :]
                    if key in catalogue_control(item.control).defaults:
                        out.setdefault(item.control, {})[key] = issue.expected
    return out


def propose_patch(
    wf: Workflow,
    items: list[RepairPlanItem],
    params: dict[str, dict[str, Any]] | None = None,
    round_: int = 1,
) -> Proposal:
    """The catalogue's patch: one control per item, every leaf change attributed to its item."""
    wanted: dict[str, Any] = {}
    owner: dict[str, tuple[RepairPlanItem, str]] = {}
    applied: list[AppliedControl] = []
    for item in items:
        control = catalogue_control(item.control)
        p = control.parameters((params or {}).get(item.control))
        applied.append(AppliedControl(control=control.name, plan_item_id=item.item_id, parameters=p))
        for path, value in control.changes(wf, p).items():
            if path in wanted and wanted[path] != value:
                raise InputError(
                    f"plan items {owner[path][0].item_id} and {item.item_id} conflict", field=path
                )
            wanted[path] = value
            owner[path] = (item, f"{control.name} for {item.finding_id}: {item.rationale}"[:400])
    return build_proposal(wf, wanted, owner, repair_engine(), round_, applied)


def build_proposal(
    wf: Workflow,
    wanted: dict[str, Any],
    owner: dict[str, tuple[RepairPlanItem, str]],
    engine: str,
    round_: int,
    applied: list[AppliedControl] | None = None,
) -> Proposal:
    """Apply the wanted paths, attribute each changed leaf to the item that asked for it, scope-check."""
    if not wanted:
        raise InputError("the plan's controls are already in force: nothing to change", path=wf.origin)
    patched = apply_changes(wf, wanted)
    changes = []
    for leaf in wf.changed_paths(patched):
        root = next((p for p in owner if leaf == p or leaf.startswith(p + ".")), None)
        if root is None:  # a scalar grown into a mapping: the old leaf sits above the wanted path
            root = next(p for p in owner if p.startswith(leaf + "."))
        item, rationale = owner[root]
        changes.append(
            PatchChange(
                path=leaf,
                before=wf.get(leaf),
                after=patched.get(leaf),
                plan_item_id=item.item_id,
                control=item.control,
                rationale=rationale,
            )
        )
    if not changes:
        raise InputError("the proposed values are already in force: nothing to change", path=wf.origin)
    if applied is None:
        applied = [
            AppliedControl(
                control=i.control,
                plan_item_id=i.item_id,
                parameters={p: v for p, v in wanted.items() if owner[p][0].item_id == i.item_id},
            )
            for i in {o[0].item_id: o[0] for o in owner.values()}.values()
        ]
    body = json.dumps(
        [wf.digest(), patched.digest(), round_, [c.model_dump(mode="json") for c in changes]], sort_keys=True
    )
    patch = RepairPatch(
        patch_id="pat-" + hashlib.sha256(body.encode()).hexdigest()[:16],
        world=wf.world,
        engine=engine,
        round=round_,
        base_digest=wf.digest(),
        patched_digest=patched.digest(),
        controls=applied,
        changes=changes,
    )
    return Proposal(patch=patch, patched=patched, scope=check_scope(wf, patched))
