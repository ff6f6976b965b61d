"""A customer's request the run left open, or refused although the policy grants it.

The requests and their states come from the request ledger (``request_ledger``: each claimant
sentence that asks for a write the agent was given, resolved by the tools' own words; decided by a
write, handed off, refused with a stated reason, or open). The policy's ``requests`` name, per
write tool, the record a request concerns and the rules that decide it. Two facts:

- *left open*: the run ends with requests open: no write of their tool went through after them,
  nobody handed them to a human (``handoffs``) and the agent stated no refusal; or the run ended
  on the claimant's message that made them; or an "all" request left items the records list
  untouched. One finding per run, at the agent's last message (MAST 3.1, premature termination);
- *refused though granted*: the request names a record (its key, stated by the claimant in the
  request or in their next message), the agent read that record, and the action rules the request
  is ``decided_by`` allow it there: none refuses on the record (a condition on the call's own
  arguments cannot refuse a call not made: the agent could have made one that meets it) and an
  eligible-only rule has a condition that holds. No call of the request's tools on that record
  went through. Filed at the agent's first message after the request and the record (MAST 1.1:
  the agent did not do what the policy grants the customer).

Both are realized with a moderate confidence: the run's end state lacks what the customer asked
for, though a customer who withdrew a request without saying so is not seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.policy_facts import Call, PolicyFacts, Record, values_at
from auditor.audit.detectors.request_ledger import Entry, Request, RequestLedger
from auditor.audit.policy_rules import ActionRule, Condition, RequestKind
from schemas import ActorKind, Criteria, EvidenceUnit, PropagationHop, RiskClass, StepKind, TraceStep


class PolicyRequestDetector:
    name = "policy_requests"
    risk_class = RiskClass.policy_violation
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterator[FindingDraft]:
        if ctx.policy is None or not ctx.policy.requests:
            return
        facts = PolicyFacts(ctx)
        ledger = RequestLedger(facts)
        if not ledger.requests:
            return
        left = _left_open(facts, [e for e in ledger.entries if e.state == "open"])
        if left is not None:
            yield left
        for entry in ledger.entries:
            kind = _kind(facts, entry.request.tools)
            if kind is None or kind.decided_by is None or entry.state == "decided":
                continue
            for key in _named_keys(facts, ledger, kind, entry.request):
                draft = _refused(facts, kind, entry.request, key)
                if draft is not None:
                    yield draft


def _kind(facts: PolicyFacts, tools: tuple[str, ...]) -> RequestKind | None:
    """The policy's request entry for a request of one write tool: the record it concerns and the
    rules that decide it (none for a request several writes could serve)."""
    if len(tools) != 1:
        return None
    return next((k for k in facts.policy.requests if tools[0] in k.tools), None)


def _served(facts: PolicyFacts, kind: RequestKind, key: str) -> bool:
    """A call of the request's tools went through on the record ``key``."""
    arg = facts.policy.record(kind.record).key
    return any(
        c.name in kind.tools
        and c.result is not None
        and not c.failed
        and str(c.arguments.get(arg, "")) == key
        for c in facts.calls
    )


def _agent_messages(facts: PolicyFacts, after: int) -> list[int]:
    """Positions of the agent's messages (with text) after ``after``."""
    return [
        p
        for p in range(after + 1, len(facts.steps))
        if facts.steps[p].kind is StepKind.message
        and facts.steps[p].actor_kind is ActorKind.agent
        and facts.steps[p].content.strip()
    ]


def _first_line(facts: PolicyFacts, step: TraceStep) -> EvidenceUnit:
    """The step's first non-blank line, verbatim."""
    line = next(ln.strip() for ln in step.content.splitlines() if ln.strip())
    return facts.ctx.unit(step.step_id, line[:240].strip())


def _left_open(facts: PolicyFacts, entries: list[Entry]) -> FindingDraft | None:
    """One finding naming every request open at the run's end (the first of each tool's)."""
    first: dict[str, Entry] = {}
    for entry in entries:
        first.setdefault(entry.request.tools, entry)
    if not first:
        return None
    kinds = list(first.values())
    replies = _agent_messages(facts, min(e.request.pos for e in kinds))
    if not replies:
        return None
    ctx = facts.ctx
    end = facts.steps[replies[-1]]
    names = ", ".join(_name(facts, e) for e in kinds)
    units = [ctx.unit(e.request.step.step_id, e.request.sentence) for e in kinds]
    units.append(_first_line(facts, end))
    items = sorted({i for e in kinds for i in e.open_items})
    state = "neither carried out, refused, nor passed on"
    if any(e.request.pos > replies[-1] for e in kinds):
        how = "the run ended on the customer's message that asked, unanswered"
    elif items:
        state = "carried out in part"
        how = f"asked for all of them, no write changed {', '.join(items)}, which the records list"
    else:
        handoff = ", ".join(facts.policy.handoffs) or "no handoff tool declared"
        how = (
            f"no write of it went through, it was not handed to a human ({handoff}) and no refusal "
            "on a record read was stated"
        )
    return FindingDraft(
        risk_class=RiskClass.policy_violation,
        title=f"the customer's request ({names}) was left open",
        boundary_edge=ctx.graph.edges_of_step(end.step_id)[0],
        first_anomalous_step=end.step_id,
        responsible_participant=end.actor,
        mechanism=(
            f"The customer asked ({names}); {how}: the run ended at {end.step_id} with the request {state}."
        ),
        propagation_path=[
            *(PropagationHop(step_id=e.request.step.step_id, note="the request") for e in kinds),
            PropagationHop(step_id=end.step_id, note="the run ends with the request open"),
        ],
        material_effect="the run ended without the customer's request decided",
        criteria=Criteria(
            R1=criterion("holds", f"request ({names}): {how}"),
            R2=criterion(
                "holds", f"{end.actor} ended without carrying out, refusing or handing off the request"
            ),
            R3=criterion("holds", "the run ended with the request unserved and undecided"),
            R4=criterion("holds", "the request and the agent's last message are quoted verbatim"),
        ),
        evidence=units,
        confidence=0.6,
        policy_rule=next((k.id for e in kinds if (k := _kind(facts, e.request.tools)) is not None), None),
        failure_mode="3.1",
    )


def _name(facts: PolicyFacts, entry: Entry) -> str:
    kind = _kind(facts, entry.request.tools)
    if kind is not None:
        return kind.id
    tools = entry.request.tools
    return tools[0] if len(tools) == 1 else f"one of {', '.join(tools)}"


def _named_keys(facts: PolicyFacts, ledger: RequestLedger, kind: RequestKind, req: Request) -> list[str]:
    """Keys of the request's records (read in the run) that the claimant stated: in the request's
    message, else in their first later message that states one, unless they asked for another
    write first."""
    keys = sorted({r.key for r in facts.records if r.name == kind.record})
    others = {r.pos for r in ledger.requests if r.pos > req.pos and not set(r.tools) & set(kind.tools)}
    for p in range(req.pos, len(facts.steps)):
        s = facts.steps[p]
        if s.kind is not StepKind.message or not facts.is_claimant(s):
            continue
        named = [k for k in keys if re.search(rf"(?<!\w){re.escape(k)}(?!\w)", s.content, re.IGNORECASE)]
        if named:
            return named
        if p in others:
            return []
    return []


def _refused(facts: PolicyFacts, kind: RequestKind, req: Request, key: str) -> FindingDraft | None:
    if _served(facts, kind, key):
        return None
    found = facts.records_before(kind.record, len(facts.steps), key)
    if not found:
        return None
    record = found[0]
    rules = [r for r in facts.policy.action_rules if r.id in (kind.decided_by or [])]
    reasons = _grants(facts, rules, record)
    if reasons is None:
        return None
    pos = req.pos
    after = max(pos, record.pos)
    replies = _agent_messages(facts, after)
    if not replies:
        return None
    ctx = facts.ctx
    reply = facts.steps[replies[0]]
    handed = next((c for c in facts.calls if c.name in facts.policy.handoffs and c.pos > after), None)
    units = [ctx.unit(req.step.step_id, req.sentence)]
    key_unit = facts.quote_field(
        record.step,
        facts.policy.record(kind.record).key,
        [record.value.get(facts.policy.record(kind.record).key, key)],
    )
    units += [u for u in (key_unit, *reasons) if u is not None]
    units.append(_first_line(facts, reply))
    basis = (
        f"rules {', '.join(r.id for r in rules)} allow it on that record"
        if rules
        else "the policy grants it on any record"
    )
    instead = (
        f"; {reply.actor} handed the customer to a human at {handed.step.step_id} instead" if handed else ""
    )
    return FindingDraft(
        risk_class=RiskClass.policy_violation,
        title=f"request {kind.id} on {key} granted by the policy but not carried out",
        boundary_edge=ctx.graph.edges_of_step(reply.step_id)[0],
        first_anomalous_step=reply.step_id,
        responsible_participant=reply.actor,
        mechanism=(
            f"The customer asked for {kind.id} on {key} ('{req.sentence}'); {reply.actor} read the {kind.record} record, "
            f"and {basis}, yet no {', '.join(kind.tools)} call on {key} went through{instead}."
        ),
        propagation_path=[
            PropagationHop(step_id=facts.steps[pos].step_id, note="the request"),
            PropagationHop(step_id=record.step.step_id, note="the record that grants it"),
            PropagationHop(step_id=reply.step_id, note="the answer that did not carry it out"),
        ],
        material_effect=f"the run ended without the {kind.id} the policy grants on {key}",
        criteria=Criteria(
            R1=criterion("holds", f"request {kind.id}: {basis}"),
            R2=criterion("holds", f"{reply.actor} did not carry out a request the policy grants"),
            R3=criterion("holds", f"no {', '.join(kind.tools)} call on {key} went through"),
            R4=criterion("holds", "the request, the record and the agent's answer are quoted verbatim"),
        ),
        evidence=units,
        confidence=0.6,
        policy_rule=kind.id,
        failure_mode="1.1",
    )


def _grants(facts: PolicyFacts, rules: list[ActionRule], record: Record) -> list[EvidenceUnit] | None:
    """The record fields that show the rules allow the request (empty: nothing to show), or None
    when a rule refuses it on the record or cannot be shown to allow it."""
    # a call not made: it has no arguments of its own, so no condition on them decides anything
    probe = Call(len(facts.steps), record.step.model_copy(update={"tool": None}), None)
    units: list[EvidenceUnit] = []
    for rule in rules:
        for cond in rule.deny_if_any:
            if _holds(facts, cond, probe, record):
                return None
        if rule.deny_if_all and all(_holds(facts, c, probe, record) for c in rule.deny_if_all):
            return None
        if rule.allow_if_any:
            held = next((c for c in rule.allow_if_any if _holds(facts, c, probe, record)), None)
            if held is None:
                return None
            for part in (held, *held.and_):
                if part.field is not None and part.record is None:
                    unit = facts.quote_field(record.step, part.field, values_at(record.value, part.field))
                    if unit is not None:
                        units.append(unit)
    return units


def _holds(facts: PolicyFacts, cond: Condition, probe: Call, record: Record) -> bool:
    verdict = facts.holds(cond, probe, record)
    return verdict is not None and verdict[0]
