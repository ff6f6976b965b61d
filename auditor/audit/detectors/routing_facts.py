"""Routing facts: who assigns work to whom, who holds which tool, what a step decides.

Shared by the routing-and-provenance detector's two shapes. Everything is read from the trace:
explicit recipients, tool-call arguments that name a participant, tools a participant calls, the
header's tool map, role cards (header cards, or a system message addressed to one participant),
and the declared policy's required checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.audit.detectors.base import AuditContext
from auditor.audit.detectors.limits import _failed as failed_result  # one definition of a failed tool result
from schemas import ActorKind, StepKind, TraceStep

TOOL_MAP_KEYS = ("tools", "tool_access", "role_tools")
ROLE_CARD_KEYS = ("roles", "role_cards", "system_prompt", "system_prompts")
ROUTING_KINDS = frozenset({StepKind.handoff, StepKind.message})
# decision values of a tool call (record_disposition(decision="SIGN")), as statuses
DECISIONS = {"sign": "approved", "approve": "approved", "approved": "approved", "accept": "approved"}
DECISIONS |= {"escalate": "pending", "hold": "pending", "reject": "rejected", "rejected": "rejected"}
UNDECIDED = frozenset({"pending", "under_review", "submitted_for_approval", "draft", "rejected"})
_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_EXCLUSIVE = ("alone", "only", "exclusive", "sole")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


def agents(ctx: AuditContext) -> set[str]:
    return {s.actor for s in ctx.trace.steps if s.actor_kind in (ActorKind.agent, ActorKind.human)}


def assignee(step: TraceStep, acting: set[str]) -> str | None:
    """Who a step hands work to alone: its single named recipient, or the one participant a
    router's tool call names as an argument value (``assign_review(delegate="legal")``)."""
    if step.actor not in acting:
        return None  # a system prompt or a tool assigns nothing
    if step.kind in ROUTING_KINDS and step.recipients and len(step.recipients) == 1:
        return step.recipients[0]
    if step.kind is StepKind.tool_call and step.tool is not None and isinstance(step.tool.arguments, dict):
        named = {v for v in step.tool.arguments.values() if isinstance(v, str) and v in acting} - {step.actor}
        return named.pop() if len(named) == 1 else None
    return None


def _call_decisions(step: TraceStep) -> set[str]:
    """The statuses a tool call's decision arguments ask for."""
    if step.kind is not StepKind.tool_call or step.tool is None or not isinstance(step.tool.arguments, dict):
        return set()
    values = (v.lower() for v in step.tool.arguments.values() if isinstance(v, str))
    return {DECISIONS[v] for v in values if v in DECISIONS}


@dataclass(frozen=True)
class Decisions:
    """What each step decides. A decision call its tool refused (a signing gate's error) decided
    nothing: the refusal, not the request, is the outcome. Indexed in one pass per audit."""

    ctx: AuditContext
    refused: dict[int, int]  # decision call position -> position of the result that refused it

    @classmethod
    def of(cls, ctx: AuditContext) -> Decisions:
        calls: dict[str, int] = {}
        refused: dict[int, int] = {}
        for pos, s in enumerate(ctx.trace.steps):
            if s.tool is not None and s.tool.call_id and _call_decisions(s):
                calls[s.tool.call_id] = pos
            elif s.kind is StepKind.tool_result:
                cid = (s.refs.call_id if s.refs else None) or (s.tool.call_id if s.tool else None)
                call = calls.pop(cid, None) if cid else None  # the first result answers the call
                if call is not None and failed_result(s):
                    refused[call] = pos
        return cls(ctx, refused)

    def statuses(self, pos: int) -> set[str]:
        """Decision statuses a step states: in its text, or as a decision value of a tool call."""
        if pos in self.refused:
            return set()
        prov = self.ctx.graph.provenance
        assert prov is not None
        found = {m.status for m in prov.mentions[pos] if m.kind == "status" and m.status}
        return found | _call_decisions(self.ctx.trace.steps[pos])

    def refused_approval(self, pos: int) -> int | None:
        """The result that refused the step's approval request, if its tool refused one."""
        asked = pos in self.refused and "approved" in _call_decisions(self.ctx.trace.steps[pos])
        return self.refused[pos] if asked else None


def targets(ctx: AuditContext, pos: int) -> set[str]:
    g = ctx.graph
    return {g.g.nodes[g.edges[r].target]["name"] for r in g.step_edges[pos]}


def names_tool(text: str, tool: str) -> bool:
    """Whether ``text`` names ``tool`` as a whole identifier (a substring test first: cheap)."""
    low, name = text.lower(), tool.lower()
    if name not in low:
        return False
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", low) is not None


def grants_tool(card: str, tool: str) -> bool:
    """A role card grants a tool when it names it, or when one sentence states exclusive access
    and holds every word of the tool's name ("You alone can query the policy knowledge base" for
    ``query_policy_kb``: query, policy; "kb" spelled out)."""
    if names_tool(card, tool):
        return True
    words = [w for w in re.split(r"[_.\-]+", tool.lower()) if len(w) >= 3]
    for sentence in _SENTENCE_END.split(card.lower()):
        if words and all(w in sentence for w in words) and any(x in sentence for x in _EXCLUSIVE):
            return True
    return False


def policy_tools(ctx: AuditContext) -> dict[str, list[str]]:
    """guarded action -> tools a declared required check needs before it."""
    out: dict[str, list[str]] = {}
    for check in ctx.policy.required_checks if ctx.policy is not None else []:
        for action in check.before:
            out.setdefault(action, []).extend(check.requires_tool)
    return out


def holders(ctx: AuditContext) -> dict[str, set[str]]:
    """tool -> participants that hold it: they call it, the header's tool map gives it to them, or
    their role card grants it."""
    held: dict[str, set[str]] = {}
    for step in ctx.trace.steps:
        if step.kind is StepKind.tool_call and step.tool is not None:
            held.setdefault(step.tool.name.split(".")[0], set()).add(step.actor)
    meta = ctx.trace.header.metadata
    for key in TOOL_MAP_KEYS:
        if isinstance(meta.get(key), dict):
            for who, tools in meta[key].items():
                for tool in [tools] if isinstance(tools, str) else list(tools or []):
                    held.setdefault(str(tool).split(".")[0], set()).add(str(who))
    candidates = set(held) | set(_IDENTIFIER.findall(ctx.trace.header.task or ""))
    candidates |= {t for tools in policy_tools(ctx).values() for t in tools}
    for who, card in role_cards(ctx):
        for tool in candidates:
            if grants_tool(card, tool):
                held.setdefault(tool, set()).add(who)
    return held


def role_cards(ctx: AuditContext) -> list[tuple[str, str]]:
    """(participant, card text): header role cards and system messages addressed to one participant."""
    cards: list[tuple[str, str]] = []
    meta = ctx.trace.header.metadata
    for key in ROLE_CARD_KEYS:
        if isinstance(meta.get(key), dict):
            cards += [(str(who), str(card)) for who, card in meta[key].items()]
    for step in ctx.trace.steps:
        if step.actor_kind is ActorKind.system and step.recipients and len(step.recipients) == 1:
            cards.append((step.recipients[0], step.content))
    return cards
