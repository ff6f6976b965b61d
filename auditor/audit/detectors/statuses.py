"""What each step states about a request's status: in its text, and in its structured fields.

Text statuses come from the provenance index. Structured fields add what text extraction misses:
an enum-like value such as ``pending_approval`` in a tool call's arguments or in a JSON tool result
reads as the words it is made of. A tool result that returns a field an earlier call wrote (same
key, same value) is a read-back of that write: transport, not the tool's own statement. Everything
else a tool or the system reports is authored there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from auditor.audit.detectors.base import AuditContext
from auditor.audit.detectors.facts import decision_holders, decision_statements
from auditor.core.json_text import json_value
from graph.values import extract_mentions
from schemas import ActorKind, StepKind, TraceStep

APPROVED = "approved"
DECIDED = frozenset({"approved", "rejected"})
SUBMITTED = frozenset({"submitted_for_approval", "under_review"})
UNSUBMITTED = frozenset({"draft", "not_submitted_for_approval", "not_under_review"})
_ENUM = re.compile(r"[A-Za-z]+(?:_[A-Za-z]+)+")
PARTICIPANTS = (ActorKind.agent, ActorKind.human)
_BROADCAST = (StepKind.message, StepKind.handoff)
# in prose, a verb or a document as often as a status ("I will draft the plan"): read only from fields
_PROSE_AMBIGUOUS = frozenset({"draft"})


def not_approved(status: str) -> bool:
    """A status that says the request is not (yet) granted: undecided, negated or refused."""
    return status != APPROVED and (
        status.startswith("not_") or status in {"pending", "draft", "rejected"} | SUBMITTED
    )


@dataclass(frozen=True)
class Statement:
    """One status a step states; ``surface`` is verbatim in the step, ``echoed`` marks a read-back."""

    pos: int
    status: str
    surface: str
    echoed: bool = False


def _leaves(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, string value) for every string leaf of a JSON-like value."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)


def structured_fields(step: TraceStep) -> list[tuple[str, str]] | None:
    """A step's structured fields: a tool call's arguments, or a tool result's JSON object."""
    if step.kind is StepKind.tool_call and step.tool is not None and step.tool.arguments:
        return list(_leaves(step.tool.arguments))
    if step.kind is StepKind.tool_result and step.content.lstrip().startswith("{"):
        body = json_value(step.content)
        return None if body is None else list(_leaves(body))
    return None


def _read(value: str) -> list[tuple[str, str]]:
    """(status, surface) stated by one field value; an enum-like value is cited whole."""
    if _ENUM.fullmatch(value):
        return [(m.status, value) for m in extract_mentions(value.replace("_", " ")) if m.status]
    return [(m.status, m.surface) for m in extract_mentions(value) if m.kind == "status" and m.status]


def _broadcast(step: TraceStep) -> bool:
    """A message or handoff naming no recipient: it reached every participant."""
    return step.recipients is None and step.kind in _BROADCAST


class StatusLedger:
    """Every status statement of a trace, who could read it, and where a decision was authored."""

    def __init__(self, ctx: AuditContext) -> None:
        self.ctx = ctx
        steps = ctx.trace.steps
        prov = ctx.graph.provenance
        assert prov is not None
        self.by_pos: dict[int, list[Statement]] = {}
        written: set[tuple[str, str]] = set()
        for pos, step in enumerate(steps):
            fields = structured_fields(step)
            found: list[Statement] = []
            if step.kind is StepKind.tool_result and fields is not None:
                for key, value in fields:
                    echoed = (key, value) in written
                    found += [
                        Statement(pos, st, surface, echoed)
                        for st, surface in _read(value)
                        if surface in step.content
                    ]
            else:
                found = [
                    Statement(pos, m.status, step.content[m.start : m.start + len(m.surface)])
                    for m in prov.mentions[pos]
                    if m.kind == "status" and m.status and m.status not in _PROSE_AMBIGUOUS
                ]
                for _, value in fields or []:
                    if _ENUM.fullmatch(value) and value in step.content:
                        found += [Statement(pos, st, surface) for st, surface in _read(value)]
            if step.kind is StepKind.tool_call and fields:
                written.update(fields)
            if found:
                self.by_pos[pos] = found
        self.decisions = set(decision_statements(ctx))
        self.holders = decision_holders(ctx)

    def states(self, pos: int) -> set[str]:
        return {s.status for s in self.by_pos.get(pos, [])}

    def participant(self, pos: int) -> bool:
        """A participant's own act (not a tool result or a document it read)."""
        step = self.ctx.trace.steps[pos]
        return step.actor_kind in PARTICIPANTS and step.kind not in (
            StepKind.tool_result,
            StepKind.document_read,
        )

    def authored(self, pos: int, status: str) -> bool:
        """Where ``status`` is stated at its source: a tool or the system reporting it (not reading
        back a write), a decision-holder, or a first-person decision."""
        if status == APPROVED and pos in self.decisions:
            return True
        step = self.ctx.trace.steps[pos]
        if not self.participant(pos):
            return any(s.status == status and not s.echoed for s in self.by_pos.get(pos, []))
        return step.actor in self.holders and status in self.states(pos)

    def authored_after(self, pos: int, statuses: frozenset[str]) -> int | None:
        """The first position after ``pos`` where one of ``statuses`` is authored."""
        for p in sorted(set(self.by_pos) | self.decisions):
            if p > pos and any(self.authored(p, st) for st in statuses):
                return p
        return None

    def delivered(self, actor: str, before: int) -> list[int]:
        """Positions before ``before`` whose content reached ``actor``: addressed or broadcast to it,
        or its own steps."""
        g = self.ctx.graph
        node = g.participants.get(actor, actor)
        got = {g.edges[r].pos for r in g.in_edges.get(node, []) if g.edges[r].pos < before}
        for pos, step in enumerate(self.ctx.trace.steps[:before]):
            if step.actor == actor or _broadcast(step):
                got.add(pos)
        return sorted(got)

    def first_delivered(self, positions: list[int]) -> Callable[[str], int | None]:
        """For ``positions`` in order: per actor, the first of them whose content reached it by
        ``delivered``'s rule (``first(actor) < pos`` says whether any did before ``pos``). One pass
        over these positions, instead of a pass over the trace for every step that asks."""
        g, steps = self.ctx.graph, self.ctx.trace.steps
        by_node: dict[str, int] = {}
        by_actor: dict[str, int] = {}
        broadcast = next((pos for pos in positions if _broadcast(steps[pos])), None)
        for pos in positions:
            by_actor.setdefault(steps[pos].actor, pos)
            for ref in g.step_edges[pos]:
                by_node.setdefault(g.edges[ref].target, pos)

        def first(actor: str) -> int | None:
            node = g.participants.get(actor, actor)
            found = [p for p in (by_node.get(node), by_actor.get(actor), broadcast) if p is not None]
            return min(found, default=None)

        return first

    def says(self, pos: int, status: str) -> bool:
        """The step states ``status`` (a first-person decision states approval)."""
        return status in self.states(pos) or (status == APPROVED and pos in self.decisions)

    def first(self, pos: int, status: str) -> Statement | None:
        return next((s for s in self.by_pos.get(pos, []) if s.status == status), None)
