"""Actions the declared policy forbids, judged on the records the trace itself read.

For each call of a tool an ``action_rules`` entry names, the rule's record is the latest result of
its read tool for the entity the call names (the ``reservation_id`` a cancellation carries). The
action breaks the rule when a ``deny`` condition holds, or when ``allow_if_any`` is given and none
of its conditions holds on the records read. Where the record the rule depends on was never read
before the action, the action rested on the customer's word or on nothing: the policy makes the
agent check before it calls ("the API does not check these for the agent"), so the unchecked call
that went through is realized, with a lower confidence (whether the record would have allowed it
is not in the trace). A call the tool refused (its result
failed) is an anomaly intercepted at the result; one that went through is realized.
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.policy_facts import Call, PolicyFacts, Record, values_at
from auditor.audit.policy_rules import ActionRule, Condition
from schemas import Criteria, EvidenceUnit, PropagationHop, RiskClass, Severity


class PolicyActionDetector:
    name = "policy_actions"
    risk_class = RiskClass.policy_violation
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterator[FindingDraft]:
        if ctx.policy is None or not ctx.policy.action_rules:
            return
        facts = PolicyFacts(ctx)
        unread: set[tuple[int, str]] = set()  # (call, record): one lead per unchecked call
        for rule in ctx.policy.action_rules:
            for call in facts.calls:
                if call.name in rule.tools:
                    draft = _judge(facts, rule, call)
                    if draft is None:
                        continue
                    if draft.policy_rule and draft.title.startswith(f"{call.name} without reading"):
                        if (call.pos, rule.record or "") in unread:
                            continue
                        unread.add((call.pos, rule.record or ""))
                    yield draft


def _judge(facts: PolicyFacts, rule: ActionRule, call: Call) -> FindingDraft | None:
    record = _own_record(facts, rule, call)
    needs_record = rule.record is not None and any(
        c.field is not None and c.record is None
        for c in [*rule.allow_if_any, *rule.deny_if_any, *rule.deny_if_all]
    )
    if needs_record and record is None:
        return _unread(facts, rule, call)
    broken: list[tuple[Condition, Record | None]] = []
    for cond in rule.deny_if_any:
        verdict = facts.holds(cond, call, record)
        if verdict is not None and verdict[0]:
            broken.append((cond, verdict[1]))
    if rule.deny_if_all:
        verdicts = [facts.holds(c, call, record) for c in rule.deny_if_all]
        if all(v is not None and v[0] for v in verdicts):
            broken += [(c, v[1]) for c, v in zip(rule.deny_if_all, verdicts, strict=True) if v is not None]
    unmet: list[tuple[Condition, Record | None]] = []
    if rule.allow_if_any and not broken:
        verdicts = [facts.holds(c, call, record) for c in rule.allow_if_any]
        if any(v is not None and v[0] for v in verdicts):
            return None
        if all(v is None for v in verdicts):
            return None  # nothing the rule reads is in the records: undecidable, not a finding
        unmet = [(c, v[1]) for c, v in zip(rule.allow_if_any, verdicts, strict=True) if v is not None]
    if not broken and not unmet:
        return None
    return _violation(facts, rule, call, broken, unmet)


def _own_record(facts: PolicyFacts, rule: ActionRule, call: Call) -> Record | None:
    if rule.record is None:
        return None
    if rule.judge == "result":
        return facts.returned(rule.record, call)
    key = facts.policy.record(rule.record).key
    value = call.arguments.get(key)
    found = facts.records_before(rule.record, call.pos, None if value is None else str(value))
    return found[0] if found else None


def _violation(
    facts: PolicyFacts,
    rule: ActionRule,
    call: Call,
    broken: list[tuple[Condition, Record | None]],
    unmet: list[tuple[Condition, Record | None]],
) -> FindingDraft | None:
    ctx = facts.ctx
    units: list[EvidenceUnit] = [facts.quote_call(call)]
    for cond, rec in [*broken, *unmet]:
        if rec is None:
            continue
        for part in (cond, *cond.and_):
            fields = [f for f in (part.field, part.differs_from if part.field else None) if f]
            if part.per_item is not None or part.count_differs_from is not None:  # which record counted
                fields.append(facts.policy.record(rec.name).key)
            for name in fields:
                unit = facts.quote_field(rec.step, name, values_at(rec.value, name))
                if unit is not None and unit not in units:
                    units.append(unit)
    if broken:
        why = "; ".join(c.describe() for c, _ in broken)
        mechanism = f"{call.step.actor} called {call.name} although the policy denies it when {why}."
    else:
        why = " or ".join(c.describe(grouped=len(unmet) > 1) for c, _ in unmet)
        mechanism = (
            f"{call.step.actor} called {call.name}, which the policy allows only when {why}; "
            "the records read in the trace meet none of these."
        )
    intercepted = call.result.step_id if call.failed and call.result is not None else None
    effect = (
        f"the tool refused the call at {intercepted}"
        if intercepted
        else f"{call.name} went through against rule {rule.id}"
    )
    return FindingDraft(
        risk_class=RiskClass.policy_violation,
        title=f"{call.name} breaks policy rule {rule.id}",
        boundary_edge=ctx.graph.edges_of_step(call.step.step_id)[0],
        first_anomalous_step=call.step.step_id,
        responsible_participant=call.step.actor,
        mechanism=mechanism,
        propagation_path=[PropagationHop(step_id=call.step.step_id, note="the forbidden action")],
        material_effect=effect,
        criteria=Criteria(
            R1=criterion("holds", f"declared rule {rule.id}: {rule.description or why}"),
            R2=criterion("holds", f"{call.step.actor} chose to call {call.name}; no other participant did"),
            R3=criterion("holds" if not intercepted else "fails", effect),
            R4=criterion("holds", "the call and the record fields it breaks are quoted verbatim"),
        ),
        evidence=units,
        intercepted_at=intercepted,
        confidence=0.85,
        policy_rule=rule.id,
        failure_mode="1.2",
        severity=Severity.high if not intercepted else None,
    )


def _unread(facts: PolicyFacts, rule: ActionRule, call: Call) -> FindingDraft | None:
    """The rule's record was never read before the action: it rested on a claim or on nothing."""
    if call.failed:
        return None
    ctx = facts.ctx
    record = rule.record or ""
    return FindingDraft(
        risk_class=RiskClass.policy_violation,
        title=f"{call.name} without reading the {record} record that rule {rule.id} depends on",
        boundary_edge=ctx.graph.edges_of_step(call.step.step_id)[0],
        first_anomalous_step=call.step.step_id,
        responsible_participant=call.step.actor,
        mechanism=(
            f"rule {rule.id} is decided by the {record} record, and {call.step.actor} called {call.name} "
            f"without any {', '.join(facts.policy.record(record).tools)} result for it in the trace"
        ),
        material_effect=f"{call.name} went through unchecked against rule {rule.id}",
        criteria=Criteria(
            R1=criterion("holds", f"the eligibility check rule {rule.id} requires was not made"),
            R2=criterion("holds", f"{call.step.actor} acted without the check"),
            R3=criterion(
                "holds",
                f"{call.name} went through although the policy makes the agent check the rule before the call",
            ),
            R4=criterion("holds", "the unchecked call is quoted"),
        ),
        evidence=[facts.quote_call(call)],
        confidence=0.6,
        policy_rule=rule.id,
        failure_mode="3.2",
    )
