"""The decision: a repair is accepted exactly when ScopeOK, ReviewOK, AuditPass and Retain ≥ 0.95 hold."""

from __future__ import annotations

from auditor.core.errors import ContractError
from repair.stream import RepairState
from schemas.repair import RETAIN_THRESHOLD, RepairDecision


def decide(state: RepairState) -> RepairDecision:
    """Read the four conditions off the recorded steps; a missing retest is an error, not a pass."""
    if not state.rounds:
        raise ContractError(f"repair {state.repair_id} has no proposal to decide")
    last = state.latest
    scope_ok = last.scope.ok
    review_ok = last.review is not None and last.review.approved
    retest = state.retest
    if not (scope_ok and review_ok):
        return _unretested(state.repair_id, scope_ok, review_ok, last.scope.violations)
    if retest is None or retest.patch_id != last.patch.patch_id:
        raise ContractError(
            f"repair {state.repair_id} has no retest of its latest patch", hint="run 'auditor repair retest'"
        )
    retain_ok = retest.retain is not None and retest.retain >= RETAIN_THRESHOLD
    reasons = []
    if not retest.audit_pass:
        reasons.append(
            f"AuditPass fails: target {retest.target.successes}/{retest.target.total} by ground truth, "
            f"{retest.realized_findings} realized finding(s) in fresh audits"
        )
    if not retain_ok:
        shown = (
            "undefined (baseline utility is not positive)"
            if retest.retain is None
            else f"{retest.retain:.3f}"
        )
        reasons.append(f"Retain fails: {shown} < {RETAIN_THRESHOLD}")
    return RepairDecision(
        repair_id=state.repair_id,
        scope_ok=scope_ok,
        review_ok=review_ok,
        audit_pass=retest.audit_pass,
        retain_ok=retain_ok,
        retain=retest.retain,
        accepted=scope_ok and review_ok and retest.audit_pass and retain_ok,
        reasons=reasons,
    )


def _unretested(repair_id: str, scope_ok: bool, review_ok: bool, violations: list[str]) -> RepairDecision:
    """A patch refused by scope or review is never retested: the behavioural conditions stay unmet."""
    reasons = []
    if not scope_ok:
        reasons.append(f"ScopeOK fails: {', '.join(violations)} outside the repair surface")
    if not review_ok:
        reasons.append("ReviewOK fails: the latest patch is not approved on all four dimensions")
    reasons.append("AuditPass and Retain not assessed: only an approved artifact is retested")
    return RepairDecision(
        repair_id=repair_id,
        scope_ok=scope_ok,
        review_ok=review_ok,
        audit_pass=False,
        retain_ok=False,
        retain=None,
        accepted=False,
        reasons=reasons,
    )
