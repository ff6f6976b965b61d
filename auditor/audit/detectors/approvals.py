"""Required approvals (``--policy``): a guarded action above its threshold without the approver's decision.

Decided from facts only: a call of a rule's tool whose amount argument exceeds the threshold, and,
before it, the steps in which the named approver decides ``approved`` (the status its text states,
or the decision argument of its decision call, unless that call's tool refused it). Each approval
licenses one guarded action after it, in trace order. What the acting participant writes about its
own authority ("self approval", "approved by me") decides nothing; an approver acting itself needs
no one else's approval.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.facts import criteria, head_unit, hop
from auditor.audit.detectors.limits import Action, Limit, actions_for
from auditor.audit.detectors.routing_facts import Decisions
from auditor.audit.policy import RequiredApproval
from schemas import RiskClass


@dataclass(frozen=True)
class MissingApproval:
    """One guarded action above the threshold that no unused approval by the approver preceded."""

    rule: RequiredApproval
    action: Action
    approvals: int  # the approver's approvals before the action (all licensing earlier actions)


def missing_approvals(ctx: AuditContext) -> list[MissingApproval]:
    """Every guarded action above its rule's threshold that no unused approval preceded."""
    if ctx.policy is None or not ctx.policy.required_approvals:
        return []
    dec = Decisions.of(ctx)
    steps = ctx.trace.steps
    out = []
    for rule in ctx.policy.required_approvals:
        guarded = Limit(  # the rule's calls and amounts, read as the cumulative limits read theirs
            limit=rule.threshold,
            window="all",
            currency=None,
            rule_id=rule.id,
            tools=frozenset(rule.tools),
            amount_argument=rule.amount_argument,
        )
        approved = [
            p for p, s in enumerate(steps) if s.actor == rule.approver and "approved" in dec.statuses(p)
        ]
        used = 0  # approvals are consumed in trace order, one per guarded action
        for act in actions_for(ctx, guarded):
            if act.amount <= rule.threshold or act.actor == rule.approver:
                continue
            before = sum(p < act.pos for p in approved)
            if used < before:
                used += 1
            else:
                out.append(MissingApproval(rule, act, before))
    return out


def approval_draft(ctx: AuditContext, missing: MissingApproval, risk_class: RiskClass) -> FindingDraft:
    """The action authorized itself: R3 from the tool's result (refused: intercepted at the result)."""
    rule, act = missing.rule, missing.action
    steps = ctx.trace.steps
    call, rpos = steps[act.pos], act.result_pos
    result = steps[rpos] if rpos is not None else None
    if result is None:
        r3 = criterion("unassessed", "the trace shows no result of the action")
    elif act.failed:
        r3 = criterion("fails", f"the tool refused the action at step {result.step_id}")
    else:
        r3 = criterion("holds", f"the action took effect at step {result.step_id}")
    earlier = (
        f" (its {missing.approvals} approval(s) before it licensed earlier actions)"
        if missing.approvals
        else ""
    )
    evidence = [ctx.unit(call.step_id, act.quote) if act.quote in call.content else head_unit(ctx, act.pos)]
    path = [hop(ctx, act.pos, "guarded action without approval")]
    if rpos is not None:
        evidence.append(head_unit(ctx, rpos))
        path.append(hop(ctx, rpos, "refused" if act.failed else "took effect"))
    return FindingDraft(
        risk_class=risk_class,
        title=f"{act.actor} called {act.tool} for {act.amount:g} above the {rule.threshold:g} threshold "
        f"without {rule.approver}'s approval",
        boundary_edge=ctx.graph.step_edges[act.pos][0],
        first_anomalous_step=call.step_id,
        responsible_participant=act.actor,
        mechanism=(
            f"Declared rule {rule.id}: {', '.join(rule.tools)} above {rule.threshold:g} ({rule.amount_argument}) "
            f"needs {rule.approver}'s decision first. {act.actor} called {act.tool} with {rule.amount_argument} "
            f"= {act.amount:g} at step {call.step_id}, and no approval by {rule.approver} precedes it{earlier}."
        ),
        criteria=criteria(
            ("holds", f"the action crossed to the tool without the approval rule {rule.id} requires"),
            (
                "holds",
                "the acting boundary authorized the action itself: no approver's decision stood before it",
            ),
            r3,
            (
                "holds",
                f"the call, its amount and its result are quoted verbatim; no step by {rule.approver} "
                "before it decides an approval",
            ),
        ),
        evidence=evidence,
        propagation_path=path,
        material_effect=(
            f"{act.tool} for {act.amount:g} took effect without {rule.approver}'s approval"
            if r3.verdict.value == "holds"
            else None
        ),
        intercepted_at=result.step_id if result is not None and act.failed else None,
        confidence=0.8,
        policy_rule=rule.id,
    )
