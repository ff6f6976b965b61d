"""The rules Repair Reviewer: original and patched workflow against the plan, on four dimensions.

It is handed the two configurations, the plan items and the patch's declared changes, never the
Repair Agent's parameters or reasoning, and it recomputes the diff itself. Risk resolution and
proportionality come from the per-control checks; fidelity and introduced risk are generic.
Approval is derived: all four dimensions pass, or the review is a rejection.
"""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import version
from typing import Any

from repair.review_checks import CONTROL_CHECKS, PROPORTION, RISK, CheckResult
from repair.scope import check_scope
from schemas.repair import DimensionVerdict, RepairPatch, ReviewDimension, ReviewIssue, ReviewVerdict
from schemas.report import RepairPlanItem
from worlds import Workflow

MAX_CHANGED_LEAVES_PER_ITEM = 8


def reviewer_engine() -> str:
    return f"rules-reviewer/{version('agent-auditor')}"


def _dimension(
    checks: list[str], issues: list[ReviewIssue], notes: list[str], ok_text: str
) -> ReviewDimension:
    if issues:
        text = "; ".join(i.detail for i in issues)
        return ReviewDimension(verdict=DimensionVerdict.failed, rationale=text, checks=checks, issues=issues)
    text = ok_text + (" Notes: " + "; ".join(notes) if notes else "")
    return ReviewDimension(verdict=DimensionVerdict.passed, rationale=text, checks=checks)


def _fidelity(
    orig: Workflow, new: Workflow, patch: RepairPatch, items: list[RepairPlanItem]
) -> ReviewDimension:
    by_id = {i.item_id: i for i in items}
    issues: list[ReviewIssue] = []
    declared = {c.path: c for c in patch.changes}
    actual = orig.changed_paths(new)
    for path in sorted(set(actual) - set(declared)):
        issues.append(
            ReviewIssue(
                check="no_undeclared_change",
                path=path,
                detail=f"{path} changed but the patch does not declare it",
            )
        )
    for path in sorted(set(declared) - set(actual)):
        issues.append(
            ReviewIssue(check="declared_changes_real", path=path, detail=f"{path} is declared but unchanged")
        )
    for c in patch.changes:
        item = by_id.get(c.plan_item_id)
        if item is None:
            issues.append(
                ReviewIssue(check="attributable", path=c.path, detail=f"{c.path} cites no item of the plan")
            )
        elif not any(c.path == s or c.path.startswith(s + ".") for s in item.surface):
            issues.append(
                ReviewIssue(
                    check="within_item_surface",
                    path=c.path,
                    detail=f"{c.path} lies outside {item.item_id}'s surface",
                )
            )
        elif c.control != item.control:
            issues.append(
                ReviewIssue(
                    check="named_control",
                    path=c.path,
                    detail=f"{c.path} builds {c.control}, the plan asks {item.control}",
                )
            )
    for item in items:
        if not any(c.plan_item_id == item.item_id for c in patch.changes):
            issues.append(
                ReviewIssue(check="item_implemented", detail=f"plan item {item.item_id} has no change")
            )
    checks = [
        "no_undeclared_change",
        "declared_changes_real",
        "attributable",
        "within_item_surface",
        "named_control",
        "item_implemented",
    ]
    return _dimension(
        checks,
        issues,
        [],
        f"All {len(actual)} changed paths are declared, attributed to a plan item and inside its surface.",
    )


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _introduced(orig: Workflow, new: Workflow, patch: RepairPatch) -> ReviewDimension:
    issues: list[ReviewIssue] = []
    scope = check_scope(orig, new)
    for path in scope.violations:
        issues.append(
            ReviewIssue(check="scope", path=path, detail=f"{path} is outside the repair surface or protected")
        )
    for path in orig.changed_paths(new):
        before, after = orig.get(path), new.get(path)
        if isinstance(after, dict) and not isinstance(before, dict):  # a bare flag grown into a gate
            before, after = (
                ({"enabled": before} if isinstance(before, bool) else before),
                after.get("enabled"),
            )
        if before is True and after is not True:
            issues.append(
                ReviewIssue(
                    check="no_disabled_control",
                    path=path,
                    detail=f"{path} turns an enforcement off",
                    expected=True,
                )
            )
        if isinstance(before, list) and not (isinstance(after, list) and all(x in after for x in before)):
            issues.append(
                ReviewIssue(
                    check="no_shrunk_list",
                    path=path,
                    detail=f"{path} drops entries {before}",
                    expected=before,
                )
            )
        if (
            before is not None
            and not isinstance(before, dict)
            and (isinstance(before, bool) != isinstance(after, bool) or _is_num(before) != _is_num(after))
        ):
            issues.append(
                ReviewIssue(
                    check="types_kept",
                    path=path,
                    detail=f"{path} changes type {type(before).__name__}→{type(after).__name__}",
                )
            )
    try:
        new.validate()
    except Exception as exc:  # the configuration's own validator names the broken field
        issues.append(ReviewIssue(check="patched_validates", detail=str(exc)))
    checks = ["scope", "no_disabled_control", "no_shrunk_list", "types_kept", "patched_validates"]
    return _dimension(
        checks,
        issues,
        [],
        "No enforcement is turned off or narrowed, types are kept, the patched configuration validates.",
    )


def _from_checks(results: list[CheckResult], dim: str, ok_text: str) -> ReviewDimension:
    mine = [r for r in results if r.dimension == dim]
    return _dimension(
        sorted({r.name for r in mine}),
        [r.issue for r in mine if r.issue is not None],
        [r.note for r in mine if r.note],
        ok_text,
    )


def review_patch(
    orig: Workflow, new: Workflow, patch: RepairPatch, items: list[RepairPlanItem], round_: int = 1
) -> ReviewVerdict:
    """Judge one patch; the verdict's approval is the conjunction of the four dimensions."""
    results: list[CheckResult] = []
    for item in items:
        checker = CONTROL_CHECKS.get(item.control)
        if checker is None:
            results.append(
                CheckResult(
                    RISK,
                    "known_control",
                    ReviewIssue(check="known_control", detail=f"no review checks for control {item.control}"),
                )
            )
        else:
            results.extend(checker(orig, new, item))
        n = sum(1 for c in patch.changes if c.plan_item_id == item.item_id)
        if n > MAX_CHANGED_LEAVES_PER_ITEM:
            results.append(
                CheckResult(
                    PROPORTION,
                    "change_size",
                    ReviewIssue(
                        check="change_size",
                        detail=f"{item.item_id} changes {n} settings (at most {MAX_CHANGED_LEAVES_PER_ITEM})",
                    ),
                )
            )
        else:
            results.append(CheckResult(PROPORTION, "change_size"))
    dims = {
        "risk_resolution": _from_checks(
            results, RISK, "Each plan item's mechanism is in force at its surface and fails closed."
        ),
        "plan_fidelity": _fidelity(orig, new, patch, items),
        "introduced_risk": _introduced(orig, new, patch),
        "proportionality": _from_checks(
            results, PROPORTION, "Changes are confined to the named controls and match the declared policy."
        ),
    }
    approved = all(d.verdict is DimensionVerdict.passed for d in dims.values())
    key = json.dumps([patch.patch_id, new.digest(), round_, reviewer_engine()], sort_keys=True)
    return ReviewVerdict(
        review_id="rev-" + hashlib.sha256(key.encode()).hexdigest()[:16],
        patch_id=patch.patch_id,
        patched_digest=new.digest(),
        reviewer=reviewer_engine(),
        round=round_,
        approved=approved,
        **dims,
    )


def issues_of(review: ReviewVerdict) -> list[ReviewIssue]:
    return [i for d in review.dimensions().values() for i in d.issues]
