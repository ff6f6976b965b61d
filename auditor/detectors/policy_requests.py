"""A customer's request the run never decided, or refused although the policy grants it.

The policy's ``requests`` say, in the policy author's words, what a request for a write sounds
like, which write tools serve it and which record it concerns. A claimant's message that states
one of those words (a whole word or phrase, any letter case) is the request. Two facts:

- *undecided*: the run ends with the request not served (no call of its tools went through), not
  handed to a human (no ``handoffs`` tool called) and without the record it concerns ever read.
  The policy decides such a request on the record ("the agent must make sure the rules apply",
  "always confirm the facts"); a run that never read it neither granted nor refused the request,
  it only ended. One finding per run, at the agent's last message, naming every undecided request
  (MAST 3.1, premature termination);
- *refused though granted*: the request names a record (its key, stated by the claimant in the
  request or in their next message), the agent read that record, and the action rules the request
  is ``decided_by`` allow it there: none refuses on the record (a condition on the call's own
  arguments cannot refuse a call not made: the agent could have made one that meets it) and an
  eligible-only rule has a condition that holds. No call of the request's tools on that record
  went through. Filed at the agent's first message after the request and the record (MAST 1.1:
  the agent did not do what the policy grants the customer).

Both are realized with a moderate confidence: the run's end state lacks what the customer asked
for, though a customer who withdrew a request in words the policy does not list is not seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from auditor.detectors.base import AuditContext, FindingDraft, criterion
from auditor.detectors.policy_facts import Call, PolicyFacts, Record, values_at
from auditor.policy_actions import ActionRule, Condition, RequestKind
from schemas import ActorKind, Criteria, EvidenceUnit, PropagationHop, RiskClass, StepKind, TraceStep


class PolicyRequestDetector:
    name = "policy_requests"
    risk_class = RiskClass.policy_violation
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterator[FindingDraft]:
        if ctx.policy is None or not ctx.policy.requests:
            return
        facts = PolicyFacts(ctx)
        stated = sorted(
            ((kind, pos, word) for kind in ctx.policy.requests for pos, word in _stated(facts, kind)),
            key=lambda item: item[1],
        )
        if not stated:
            return
        undecided = _undecided(facts, stated)
        if undecided:
            yield undecided
        for kind, pos, word in stated:
            if kind.decided_by is None:
                continue
            for key in _named_keys(facts, kind, pos):
                draft = _refused(facts, kind, pos, word, key)
                if draft is not None:
                    yield draft


def _pattern(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w']){re.escape(word.lower())}(?![\w'])")


def _stated(facts: PolicyFacts, kind: RequestKind) -> list[tuple[int, str]]:
    """(position, the word as written) of each claimant message stating the request."""
    found = []
    for pos, s in enumerate(facts.steps):
        if s.kind is not StepKind.message or not facts.is_claimant(s):
            continue
        low = s.content.lower()
        for word in kind.words:
            m = _pattern(word).search(low)
            if m is not None:
                found.append((pos, s.content[m.start() : m.end()]))
                break
    return found


def _served(facts: PolicyFacts, kind: RequestKind, key: str | None = None) -> bool:
    """A call of the request's tools went through (on the record ``key``, when given)."""
    arg = facts.policy.record(kind.record).key
    return any(
        c.name in kind.tools
        and c.result is not None
        and not c.failed
        and (key is None or str(c.arguments.get(arg, "")) == key)
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


def _quote(facts: PolicyFacts, step: TraceStep, needle: str | None = None) -> EvidenceUnit:
    """A verbatim sentence of the step: the one holding ``needle``, else the first line."""
    ctx = facts.ctx
    if needle:
        return ctx.unit(step.step_id, ctx.sentence_around(step.step_id, needle))
    line = next(ln.strip() for ln in step.content.splitlines() if ln.strip())
    return ctx.unit(step.step_id, line[:240].strip())


def _undecided(facts: PolicyFacts, stated: list[tuple[RequestKind, int, str]]) -> FindingDraft | None:
    policy = facts.policy
    if facts.records or any(c.name in policy.handoffs and c.result is not None for c in facts.calls):
        return None
    if any(_served(facts, kind) for kind in policy.requests):
        return None
    first: dict[str, tuple[RequestKind, int, str]] = {}
    for kind, pos, word in stated:
        first.setdefault(kind.id, (kind, pos, word))
    kinds = list(first.values())
    start = min(pos for _, pos, _ in kinds)
    replies = _agent_messages(facts, start)
    if not replies:
        return None
    ctx = facts.ctx
    end = facts.steps[replies[-1]]
    kind, pos, word = kinds[0]
    units = [_quote(facts, facts.steps[p], w) for _, p, w in kinds] + [_quote(facts, end)]
    names = ", ".join(k.id for k, _, _ in kinds)
    records = " or ".join(sorted({k.record for k, _, _ in kinds}))
    handoff = ", ".join(policy.handoffs) or "no handoff tool declared"
    return FindingDraft(
        risk_class=RiskClass.policy_violation,
        title=f"the customer's request ({names}) was never decided",
        boundary_edge=ctx.graph.edges_of_step(end.step_id)[0],
        first_anomalous_step=end.step_id,
        responsible_participant=end.actor,
        mechanism=(
            f"The customer asked ({names}); the policy decides such requests on the {records} record. "
            f"{end.actor} read no record at all, no write went through and the customer was not handed to "
            f"a human ({handoff}): the run ended at {end.step_id} with the request neither granted, "
            "refused on the record, nor passed on."
        ),
        propagation_path=[
            *(PropagationHop(step_id=facts.steps[p].step_id, note="the request") for _, p, _ in kinds),
            PropagationHop(step_id=end.step_id, note="the run ends undecided"),
        ],
        material_effect="the run ended without the customer's request decided",
        criteria=Criteria(
            R1=criterion("holds", f"request {kind.id} is decided on the {kind.record} record; none was read"),
            R2=criterion("holds", f"{end.actor} answered without reading a record, acting or handing off"),
            R3=criterion("holds", "the run ended with the request unserved and undecided"),
            R4=criterion("holds", "the request and the agent's last message are quoted verbatim"),
        ),
        evidence=units,
        confidence=0.6,
        policy_rule=kind.id,
        failure_mode="3.1",
    )


def _named_keys(facts: PolicyFacts, kind: RequestKind, pos: int) -> list[str]:
    """Keys of the request's records (read in the run) that the claimant stated: in the request,
    else in their first later message that states one, unless they moved on to another request
    first."""
    keys = sorted({r.key for r in facts.records if r.name == kind.record})
    others = [k for k in facts.policy.requests if k.record != kind.record or k.tools != kind.tools]
    for p in range(pos, len(facts.steps)):
        s = facts.steps[p]
        if s.kind is not StepKind.message or not facts.is_claimant(s):
            continue
        named = [k for k in keys if re.search(rf"(?<!\w){re.escape(k)}(?!\w)", s.content, re.IGNORECASE)]
        if named:
            return named
        low = s.content.lower()
        if p > pos and any(_pattern(w).search(low) for k in others for w in k.words):
            return []
    return []


def _refused(facts: PolicyFacts, kind: RequestKind, pos: int, word: str, key: str) -> FindingDraft | None:
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
    after = max(pos, record.pos)
    replies = _agent_messages(facts, after)
    if not replies:
        return None
    ctx = facts.ctx
    reply = facts.steps[replies[0]]
    handed = next((c for c in facts.calls if c.name in facts.policy.handoffs and c.pos > after), None)
    units = [_quote(facts, facts.steps[pos], word)]
    key_unit = facts.quote_field(
        record.step,
        facts.policy.record(kind.record).key,
        [record.value.get(facts.policy.record(kind.record).key, key)],
    )
    units += [u for u in (key_unit, *reasons) if u is not None]
    units.append(_quote(facts, reply))
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
            f"The customer asked for {kind.id} on {key} ('{word}'); {reply.actor} read the {kind.record} record, "
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
