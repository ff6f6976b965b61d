"""Facts several detectors share: endpoints, decision holders, hops. Derived from the trace and
its graph, never from wording alone."""

from __future__ import annotations

import re
from collections.abc import Iterator

from auditor.audit.detectors.base import AuditContext, criterion
from graph.values import Mention, amounts_match
from schemas import ActorKind, Criteria, Criterion, EvidenceUnit, PropagationHop, StepKind

_DECISION_WORDS = ("approv", "authori", "sign", "decid")


def external_participants(ctx: AuditContext) -> set[str]:
    """Named recipients that never act in the trace: customers, requesters, outside parties."""
    actors = {s.actor for s in ctx.trace.steps}
    named = {r for s in ctx.trace.steps for r in (s.recipients or [])}
    return named - actors


def endpoint_positions(ctx: AuditContext) -> set[int]:
    """Where an effect becomes material: final outputs, and messages to external participants."""
    external = external_participants(ctx)
    out = set()
    for pos, s in enumerate(ctx.trace.steps):
        if s.kind is StepKind.final_output or (
            s.kind in (StepKind.message, StepKind.handoff) and s.recipients and set(s.recipients) & external
        ):
            out.add(pos)
    return out


def decision_holders(ctx: AuditContext) -> set[str]:
    """Participants the trace, its metadata or the declared policy give a decision authority."""
    holders: set[str] = set()
    if ctx.graph.annotations is not None:
        for label in ctx.graph.annotations.authority:
            if label.basis in ("role_card", "title", "claim") and any(
                w in label.authority.lower() for w in _DECISION_WORDS
            ):
                holders.add(label.participant)
    if ctx.policy is not None:
        holders |= set(ctx.policy.approvers())
    return holders


def decision_statements(ctx: AuditContext) -> list[int]:
    """Positions of steps where a participant states a decision in the first person ("I approve")."""
    if ctx.graph.annotations is None:
        return []
    return sorted(
        {
            ctx.position(label.step_id)
            for label in ctx.graph.annotations.authority
            if label.step_id
            and label.basis == "claim"
            and any(w in label.authority.lower() for w in _DECISION_WORDS)
        }
    )


def is_authored_decision(ctx: AuditContext, pos: int) -> bool:
    """A decided status is authored when a tool or system reports it, or a decision-holder states it."""
    step = ctx.trace.steps[pos]
    if step.kind is StepKind.tool_result or step.actor_kind in (ActorKind.tool, ActorKind.system):
        return True
    return step.actor in decision_holders(ctx)


def hop(ctx: AuditContext, pos: int, note: str | None = None) -> PropagationHop:
    step = ctx.trace.steps[pos]
    return PropagationHop(step_id=step.step_id, edge_ref=ctx.graph.step_edges[pos][0], note=note)


# A fact a mention states when it names what it is about: ("amount", anchor id, label) or
# ("status", anchor id, ""). Two mentions of one fact with different values are a conflict.
FactKey = tuple[str, str, str]


def fact_key(m: Mention) -> FactKey | None:
    if m.anchor is None:
        return None
    if m.kind == "amount" and m.label:
        return ("amount", m.anchor, m.label)
    if m.kind == "status":
        return ("status", m.anchor, "")
    return None


def same_value(a: Mention, b: Mention) -> bool:
    """Same fact and same value (amounts up to rounding, statuses exactly)."""
    if fact_key(a) != fact_key(b):
        return False
    return amounts_match(a, b) if a.kind == "amount" else a.status == b.status


def criteria(*verdicts: Criterion | tuple[str, str]) -> Criteria:
    """R1–R4 from four (verdict, rationale) pairs or ready criteria, in that order."""
    r1, r2, r3, r4 = (v if isinstance(v, Criterion) else criterion(*v) for v in verdicts)
    return Criteria(R1=r1, R2=r2, R3=r3, R4=r4)


def head_unit(ctx: AuditContext, pos: int, limit: int = 200) -> EvidenceUnit:
    """An evidence unit quoting the opening of a step (for steps whose whole act is the point)."""
    step = ctx.trace.steps[pos]
    return ctx.unit(step.step_id, step.content.strip()[:limit])


def windowed(
    pattern: re.Pattern[str], keys: tuple[str, ...], text: str, reach: int
) -> Iterator[re.Match[str]]:
    """``pattern``'s matches, searched only within ``reach`` characters of its key words (found with
    ``str.find`` on the lower-cased text): long logs cost a few linear scans instead of a regex
    attempt at every position. Every match of ``pattern`` must contain one of ``keys``."""
    low = text.lower()
    if len(low) != len(text):  # rare case-mappings that change length: search the whole text
        yield from pattern.finditer(text)
        return
    hits = sorted({i for k in keys if k in low for i in _positions(low, k)})  # `in` skips absent keys fast
    last = -1
    for i in hits:
        if i < last:
            continue
        m = pattern.search(text, max(0, i - reach), i + reach)
        if m is not None and m.start() >= last:
            last = m.end()
            yield m


def _positions(text: str, key: str) -> Iterator[int]:
    i = text.find(key)
    while i >= 0:
        yield i
        i = text.find(key, i + 1)
