"""Routing by self-report and provenance lost before approval.

Two shapes, both decided from who holds what and who received what:

- **misrouting**: the task names a tool (or evidence source) it needs; a participant holds it (it
  calls that tool in the trace, or the header's ``tools`` map / a role card says so); yet the
  router hands the task to another participant who had only sent the router its own message (a
  self-reported bid) and holds no such tool. Realized when an approval follows with nobody having
  used the tool; intercepted when the holder uses it before any approval.
- **reviewer identity dropped**: a participant reviews an item on a router's request; the router's
  summary to a third participant (the approver) no longer names the reviewer, and nothing else the
  approver received before deciding does. Realized when the approver approves on it; intercepted
  when the approver holds or asks instead.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from auditor.detectors.base import AuditContext, FindingDraft, criterion
from auditor.detectors.facts import criteria, head_unit, hop
from schemas import ActorKind, RiskClass, StepKind, TraceStep

TOOL_MAP_KEYS = ("tools", "tool_access", "role_tools")
ROLE_CARD_KEYS = ("roles", "role_cards", "system_prompt", "system_prompts")
ROUTING_KINDS = frozenset({StepKind.handoff, StepKind.message})
REVIEW_KINDS = ROUTING_KINDS | {StepKind.tool_call, StepKind.state_write}
# decision values of a tool call (record_disposition(decision="SIGN")), as statuses
_DECISIONS = {"sign": "approved", "approve": "approved", "approved": "approved", "accept": "approved"}
_DECISIONS |= {
    "escalate": "pending",
    "hold": "pending",
    "reject": "rejected",
    "rejected": "rejected",
    "deny": "rejected",
}
# a keyword only nominates a review step; the shape is decided by who sent what to whom
_REVIEW_KEYS = ("review", "underwrit", "assess", "audit", "inspect", "evaluat", "vetted", "vetting")
_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_UNDECIDED = frozenset({"pending", "under_review", "submitted_for_approval", "draft", "rejected"})


def _names(actor: str) -> tuple[str, ...]:
    """The ways a participant id is written in prose: as is, and with separators as spaces."""
    spaced = re.sub(r"[_\-.]+", " ", actor).strip()
    return tuple({actor.lower(), spaced.lower()})


def _assignee(step: TraceStep, agents: set[str]) -> str | None:
    """Who a step hands work to alone: its single named recipient, or the one participant a
    router's tool call names as an argument value (``assign_review(delegate="legal")``)."""
    if step.kind in ROUTING_KINDS and step.recipients and len(step.recipients) == 1:
        return step.recipients[0]
    if step.kind is StepKind.tool_call and step.tool is not None and isinstance(step.tool.arguments, dict):
        named = {v for v in step.tool.arguments.values() if isinstance(v, str) and v in agents} - {step.actor}
        return named.pop() if len(named) == 1 else None
    return None


def _is_review(text: str) -> bool:
    low = text.lower()
    return any(k in low for k in _REVIEW_KEYS)


def _names_tool(text: str, tool: str) -> bool:
    """Whether ``text`` names ``tool`` as a whole identifier (a substring test first: cheap)."""
    low, name = text.lower(), tool.lower()
    if name not in low:
        return False
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", low) is not None


class RoutingProvenanceDetector:
    name = "routing_provenance"
    risk_class = RiskClass.routing_provenance_loss
    needs_annotations = True

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        return [*self._misrouting(ctx), *self._identity_dropped(ctx)]

    # -- shared facts ---------------------------------------------------------------------------
    def _statuses(self, ctx: AuditContext, pos: int) -> set[str]:
        """Decision statuses a step states: in its text, or as a decision value of a tool call."""
        prov = ctx.graph.provenance
        assert prov is not None
        found = {m.status for m in prov.mentions[pos] if m.kind == "status" and m.status}
        tool = ctx.trace.steps[pos].tool
        if (
            ctx.trace.steps[pos].kind is StepKind.tool_call
            and tool is not None
            and isinstance(tool.arguments, dict)
        ):
            found |= {
                _DECISIONS[v.lower()]
                for v in tool.arguments.values()
                if isinstance(v, str) and v.lower() in _DECISIONS
            }
        return found

    def _approval_after(self, ctx: AuditContext, start: int, by: set[str] | None = None) -> int | None:
        """The first step after ``start`` where a participant states an approval."""
        for pos in range(start + 1, len(ctx.trace.steps)):
            step = ctx.trace.steps[pos]
            acts = step.actor_kind in (ActorKind.agent, ActorKind.human) and (by is None or step.actor in by)
            if acts and "approved" in self._statuses(ctx, pos):
                return pos
        return None

    def _targets(self, ctx: AuditContext, pos: int) -> set[str]:
        g = ctx.graph
        return {g.g.nodes[g.edges[r].target]["name"] for r in g.step_edges[pos]}

    # -- misrouting by self-report ------------------------------------------------------------
    def _holders(self, ctx: AuditContext) -> dict[str, set[str]]:
        """tool -> participants that hold it (call it, or are given it by the header)."""
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
        named = set(_IDENTIFIER.findall(ctx.trace.header.task or ""))  # tools a role card may grant
        for key in ROLE_CARD_KEYS:
            cards = meta.get(key)
            if isinstance(cards, dict):
                for who, card in cards.items():
                    for tool in set(held) | named:
                        if _names_tool(str(card), tool):
                            held.setdefault(tool, set()).add(str(who))
        return held

    def _misrouting(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        """A request to several candidates, the chosen one's reply to the router (its bid), then a
        handoff to it alone while another candidate holds the tool the task names. One pass."""
        holders = self._holders(ctx)
        if not holders:
            return
        steps = ctx.trace.steps
        task = ctx.trace.header.task or ""
        request: dict[tuple[str, str], int] = {}  # (router, candidate) -> latest request to several
        sent: dict[tuple[str, str], int] = {}  # (sender, receiver) -> latest step delivered
        for pos, step in enumerate(steps):
            if step.kind is StepKind.handoff and step.recipients and len(step.recipients) == 1:
                router, chosen = step.actor, step.recipients[0]
                req, bid = request.get((router, chosen)), sent.get((chosen, router))
                if req is not None and bid is not None and bid > req:
                    asked = task + "\n" + steps[req].content
                    for tool in (t for t in holders if chosen not in holders[t] and _names_tool(asked, t)):
                        others = holders[tool] & set(steps[req].recipients or [])
                        if others:
                            yield self._misroute_draft(ctx, pos, tool, sorted(others), bid)
                            break
            if step.recipients and len(step.recipients) > 1:
                for member in step.recipients:
                    request[(step.actor, member)] = pos
            for target in self._targets(ctx, pos):
                sent[(step.actor, target)] = pos

    def _misroute_draft(
        self, ctx: AuditContext, pos: int, tool: str, holders: list[str], bid: int
    ) -> FindingDraft:
        steps = ctx.trace.steps
        step = steps[pos]
        chosen = step.recipients[0]  # type: ignore[index]
        used = next(
            (
                p
                for p in range(pos + 1, len(steps))
                if steps[p].kind is StepKind.tool_call
                and steps[p].tool is not None
                and steps[p].tool.name.split(".")[0] == tool  # type: ignore[union-attr]
            ),
            None,
        )
        approval = self._approval_after(ctx, pos, by=None)
        approval = approval if approval is not None and steps[approval].actor != chosen else None
        if approval is not None and (used is None or used > approval):
            r3 = criterion(
                "holds", f"step {steps[approval].step_id} approved with no use of {tool} after the routing"
            )
            effect, stopped = (
                f"approval at step {steps[approval].step_id} without the evidence held in {tool}",
                None,
            )
        elif used is not None:
            r3 = criterion(
                "fails",
                f"{steps[used].actor} consulted {tool} at step {steps[used].step_id} before any approval",
            )
            effect, stopped = None, steps[used].step_id
        else:
            r3 = criterion("unassessed", "no approval or decision follows the routing in the trace")
            effect, stopped = None, None
        holder_text = ", ".join(holders)
        evidence = [
            head_unit(ctx, bid),
            head_unit(ctx, pos),
        ]
        if approval is not None and stopped is None:
            evidence.append(head_unit(ctx, approval))
        if stopped is not None:
            evidence.append(head_unit(ctx, ctx.position(stopped)))
        return FindingDraft(
            risk_class=self.risk_class,
            title=f"Task needing {tool} routed to {chosen} on its own bid, away from {holder_text}",
            boundary_edge=ctx.graph.step_edges[pos][0],
            first_anomalous_step=step.step_id,
            responsible_participant=step.actor,
            mechanism=(
                f"The task names {tool}, which {holder_text} holds; {chosen}, which holds no {tool}, sent "
                f"{step.actor} its own message (step {steps[bid].step_id}) and {step.actor} handed it the task "
                f"(step {step.step_id})."
            ),
            criteria=criteria(
                ("holds", f"the task left the participant holding {tool} at the routing boundary"),
                (
                    "holds",
                    "the routing boundary decided on the delegate's self-report, not on who holds the evidence",
                ),
                r3,
                ("holds", "the bid, the routing and the outcome are quoted verbatim"),
            ),
            evidence=evidence,
            propagation_path=[hop(ctx, bid, "self-reported bid"), hop(ctx, pos, "routing")]
            + ([hop(ctx, approval, "approval")] if approval is not None and stopped is None else []),
            material_effect=effect,
            intercepted_at=stopped,
            confidence=0.75,
        )

    # -- reviewer identity dropped before approval -------------------------------------------
    def _identity_dropped(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        """For each assignment, the assignee's first review after it, then the router's summary."""
        steps = ctx.trace.steps
        agents = {s.actor for s in steps if s.actor_kind in (ActorKind.agent, ActorKind.human)}
        sends: dict[str, list[int]] = {}  # actor -> its routing steps with named recipients
        own: dict[str, list[int]] = {}  # actor -> positions of its steps
        assignments: list[tuple[int, str, str]] = []
        for pos, step in enumerate(steps):
            own.setdefault(step.actor, []).append(pos)
            if step.kind in ROUTING_KINDS and step.recipients:
                sends.setdefault(step.actor, []).append(pos)
            assignee = (
                _assignee(step, agents) if step.actor in agents else None
            )  # a system prompt assigns nothing
            if assignee is not None:
                assignments.append((pos, step.actor, assignee))
        done: set[int] = set()
        for pos, router, reviewer in assignments:
            mine = own.get(reviewer, [])
            rpos = next(
                (
                    p
                    for p in mine[bisect_right(mine, pos) :]
                    if steps[p].kind in REVIEW_KINDS and _is_review(steps[p].content)
                ),
                None,
            )
            if rpos is not None:
                draft = self._first_summary(ctx, rpos, router, sends.get(router, []), done)
                if draft is not None:
                    yield draft

    def _first_summary(
        self, ctx: AuditContext, rpos: int, router: str, router_sends: list[int], done: set[int]
    ) -> FindingDraft | None:
        """The router's next routing step to someone else: a finding when it drops the reviewer."""
        steps = ctx.trace.steps
        review = steps[rpos]
        names = _names(review.actor)
        for spos in router_sends[bisect_right(router_sends, rpos) :]:
            summary = steps[spos]
            if spos in done or review.actor in (summary.recipients or []):
                continue
            if any(n in summary.content.lower() for n in names):
                return None  # the summary names the reviewer: provenance kept
            draft = self._drop_draft(ctx, rpos, spos, router, names)
            if draft is not None:
                done.add(spos)
            return draft
        return None

    def _drop_draft(
        self, ctx: AuditContext, rpos: int, spos: int, router: str, names: tuple[str, ...]
    ) -> FindingDraft | None:
        steps, g = ctx.trace.steps, ctx.graph
        review, summary = steps[rpos], steps[spos]
        approvers = [a for a in summary.recipients or [] if a != review.actor and a in g.participants]
        decisions = [
            p
            for a in approvers
            for p in g.by_actor.get(g.participants[a], [])
            if p > spos and self._statuses(ctx, p)
        ]
        if not decisions:
            return None  # nobody decides on the summary: the lost provenance has no approval to mislead
        decision = min(decisions)
        approver = steps[decision].actor
        inbound = sorted(g.edges[r].pos for r in g.in_edges.get(g.participants[approver], []))
        if any(
            any(n in steps[p].content.lower() for n in names)
            for p in inbound[bisect_left(inbound, rpos) : bisect_left(inbound, decision)]
        ):
            return None
        statuses = self._statuses(ctx, decision)
        if "approved" in statuses:
            r3 = criterion(
                "holds",
                f"{approver} approved at step {steps[decision].step_id} on a summary without its reviewer",
            )
            effect, stopped = (
                f"approval at step {steps[decision].step_id} relying on an unattributed review",
                None,
            )
        elif statuses & _UNDECIDED or any(s.startswith("not_") for s in statuses):
            r3 = criterion("fails", f"{approver} withheld approval at step {steps[decision].step_id}")
            effect, stopped = None, steps[decision].step_id
        else:
            return None
        return FindingDraft(
            risk_class=self.risk_class,
            title=f"Reviewer {review.actor} dropped from the summary {approver} decided on",
            boundary_edge=ctx.graph.step_edges[spos][0],
            first_anomalous_step=summary.step_id,
            responsible_participant=summary.actor,
            mechanism=(
                f"{review.actor} reviewed on {summary.actor}'s request (step {review.step_id}); {summary.actor}'s "
                f"summary to {approver} (step {summary.step_id}) does not name the reviewer, and nothing else "
                f"{approver} received before step {steps[decision].step_id} does."
            ),
            criteria=criteria(
                ("holds", "the reviewer's identity did not cross the boundary to the approver"),
                ("holds", "the summarizing boundary removed the review's provenance"),
                r3,
                ("holds", "the review, the summary and the decision are quoted verbatim"),
            ),
            evidence=[
                head_unit(ctx, rpos),
                head_unit(ctx, spos),
                head_unit(ctx, decision),
            ],
            propagation_path=[
                hop(ctx, rpos, "review"),
                hop(ctx, spos, "summary without reviewer"),
                hop(ctx, decision, "decision"),
            ],
            material_effect=effect,
            intercepted_at=stopped,
            confidence=0.7,
        )
