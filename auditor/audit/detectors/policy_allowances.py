"""A charge the policy computes, written differently into the action (``allowances``).

For each call of an allowance's tool, the allowance is looked up in the declared table by the
named record's field (the booking user's membership) and the call's argument (the cabin), times
the number of items of ``count_argument`` (the passengers); the policy's charge is
``max(0, total − allowance)``. A call whose charged argument differs from it charged the customer
against the policy (or waived a charge the policy demands). Undecidable (no record read, a row or
column not in the table, arguments that are not numbers) means no finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.policy_facts import Call, PolicyFacts, values_at
from auditor.audit.policy_rules import Allowance
from schemas import Criteria, PropagationHop, RiskClass, Severity


class PolicyAllowanceDetector:
    name = "policy_allowances"
    risk_class = RiskClass.policy_violation
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterator[FindingDraft]:
        if ctx.policy is None or not ctx.policy.allowances:
            return
        facts = PolicyFacts(ctx)
        for rule in ctx.policy.allowances:
            for call in facts.calls:
                if call.name in rule.tools:
                    draft = _judge(facts, rule, call)
                    if draft is not None:
                        yield draft


def _judge(facts: PolicyFacts, rule: Allowance, call: Call) -> FindingDraft | None:
    key = facts.policy.record(rule.record).key
    named = call.arguments.get(key)
    records = facts.records_before(rule.record, call.pos, None if named is None else str(named))
    if not records:
        return None
    record = records[0]
    rows = values_at(record.value, rule.row_field)
    row = rule.table.get(str(rows[0]).lower()) if rows else None
    column = call.arguments.get(rule.column_argument)
    per_item = row.get(str(column).lower()) if row is not None and column is not None else None
    total, charged = call.arguments.get(rule.total_argument), call.arguments.get(rule.charged_argument)
    if per_item is None or not _number(total) or not _number(charged):
        return None
    count = len(call.arguments.get(rule.count_argument) or []) if rule.count_argument else 1
    expected = max(0.0, float(total) - per_item * count)
    if float(charged) == expected:
        return None
    ctx = facts.ctx
    # the call itself, every argument; a call too long to quote whole, around the charged amount
    units = [facts.quote_call(call, around=_argument_text(call, rule.charged_argument, charged))]
    row_unit = facts.quote_field(record.step, rule.row_field, rows)
    if row_unit is not None:
        units.append(row_unit)
    intercepted = call.result.step_id if call.failed and call.result is not None else None
    how = "charged" if float(charged) > expected else "waived"
    effect = (
        f"the tool refused the call at {intercepted}"
        if intercepted
        else f"{call.name} {how} {abs(float(charged) - expected):g} against rule {rule.id}"
    )
    return FindingDraft(
        risk_class=RiskClass.policy_violation,
        title=f"{call.name}: {rule.charged_argument} {charged} where the policy gives {expected:g} ({rule.id})",
        boundary_edge=ctx.graph.edges_of_step(call.step.step_id)[0],
        first_anomalous_step=call.step.step_id,
        responsible_participant=call.step.actor,
        mechanism=(
            f"rule {rule.id}: {rule.row_field} {rows[0]!s} and {rule.column_argument} {column!s} allow "
            f"{per_item:g} per item × {count} = {per_item * count:g} of {total} {rule.total_argument}, so "
            f"{rule.charged_argument} should be {expected:g}; {call.step.actor} wrote {charged}"
        ),
        propagation_path=[
            PropagationHop(step_id=record.step.step_id, note=f"the {rule.record} record"),
            PropagationHop(step_id=call.step.step_id, note="the charge written"),
        ],
        material_effect=effect,
        criteria=Criteria(
            R1=criterion("holds", f"declared rule {rule.id}: {rule.description or 'the computed charge'}"),
            R2=criterion("holds", f"{call.step.actor} computed the charge; the record was read before"),
            R3=criterion("fails" if intercepted else "holds", effect),
            R4=criterion("holds", "the written charge and the record's row field are quoted verbatim"),
        ),
        evidence=units,
        intercepted_at=intercepted,
        confidence=0.8,
        policy_rule=rule.id,
        failure_mode="1.2",
        severity=Severity.medium if not intercepted else None,
    )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _argument_text(call: Call, name: str, value: object) -> str | None:
    """The argument as the call writes it (``"name": value``), where it does."""
    return next((t for t in (f'"{name}":{value}', f'"{name}": {value}') if t in call.step.content), None)
