"""Routing by self-report and provenance lost before approval.

Two shapes, both decided from who holds what and who received what (``routing_facts``):

- **misrouting**: several participants sent the router their own messages (self-reported bids);
  the router assigns the work to one of them alone (a handoff, or a tool call naming it), although
  the work needs a tool (named in the task, or required before the work's action by a declared
  check) that the chosen one does not hold and another bidder does (it calls the tool, the header
  or its role card gives it). Realized when an approval follows with nobody having used the tool;
  intercepted when the tool is used, or the decision withheld, before any approval, or when the
  approval's own tool refuses it (a signing gate's error approves nothing).
- **reviewer identity dropped**: a participant reviews an item it was assigned; the router's
  summary to a third participant (the approver) no longer names the reviewer, and nothing else the
  approver received before deciding does. Realized when the approver approves on it; intercepted
  when the approver holds or asks instead.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from functools import cache

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.facts import criteria, head_unit, hop
from auditor.audit.detectors.routing_facts import (
    ROUTING_KINDS,
    UNDECIDED,
    Decisions,
    agents,
    assignee,
    holders,
    names_tool,
    policy_tools,
    targets,
)
from schemas import Criterion, RiskClass, StepKind, TraceStep

REVIEW_KINDS = ROUTING_KINDS | {StepKind.tool_call, StepKind.state_write}
# a keyword only nominates a review step; the shape is decided by who sent what to whom
_REVIEW_KEYS = ("review", "underwrit", "assess", "audit", "inspect", "evaluat", "vetted", "vetting")
_SUMMARY_KEYS = (*_REVIEW_KEYS, "summar", "risk", "finding", "recommend", "checked")


@cache
def _names(actor: str) -> tuple[str, ...]:
    """The ways a participant id is written in prose: as is, and with separators as spaces."""
    spaced = re.sub(r"[_\-.]+", " ", actor).strip()
    return tuple({actor.lower(), spaced.lower()})


def _mentions(text: str, words: Iterable[str]) -> bool:
    low = text.lower()
    return any(w in low for w in words)


def _is_review(text: str) -> bool:
    low = text.lower()
    return any(k in low for k in _REVIEW_KEYS)


def _review_delivered_to(step: TraceStep) -> list[str]:
    """Where a step hands a review back: the routers it messages, or "*" for a review tool."""
    if step.kind in ROUTING_KINDS and step.recipients:
        return list(step.recipients) if _is_review(step.content) else []
    if step.kind in REVIEW_KINDS and step.tool is not None and _is_review(step.tool.name):
        return ["*"]
    return []


def _stopped(steps: list[TraceStep], gate: int | None, decision: int | None) -> tuple[Criterion, None, int]:
    """R3 fails: a gate refused the approval, the decision was withheld, or both (the gate stopped it first)."""
    said = (
        [f"{steps[gate].actor} refused the approval at step {steps[gate].step_id}"]
        if gate is not None
        else []
    )
    if decision is not None:
        said.append(f"{steps[decision].actor} withheld the decision at step {steps[decision].step_id}")
    stop = gate if gate is not None else decision
    assert stop is not None
    return criterion("fails", "; then ".join(said)), None, stop


class RoutingProvenanceDetector:
    name = "routing_provenance"
    risk_class = RiskClass.routing_provenance_loss
    needs_annotations = True

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        decisions = Decisions.of(ctx)
        return [*self._misrouting(ctx, decisions), *self._identity_dropped(ctx, decisions)]

    # -- misrouting by self-report ------------------------------------------------------------
    def _misrouting(self, ctx: AuditContext, dec: Decisions) -> Iterable[FindingDraft]:
        held = holders(ctx)
        if not held:
            return
        acting, steps = agents(ctx), ctx.trace.steps
        task, guarded = ctx.trace.header.task or "", policy_tools(ctx)
        called: dict[str, set[str]] = {}
        for s in steps:
            if s.kind is StepKind.tool_call and s.tool is not None:
                called.setdefault(s.actor, set()).add(s.tool.name)
        heard: dict[str, dict[str, int]] = {}  # router -> sender -> latest step it delivered
        filed: set[tuple[str, str]] = set()
        for pos, step in enumerate(steps):
            routes = step.kind in (StepKind.handoff, StepKind.tool_call)  # a reply routes nothing
            chosen = assignee(step, acting) if routes else None
            bids = heard.get(step.actor, {})
            if chosen is not None and chosen in bids and len(bids) >= 2:
                needed = [t for t in held if ("_" in t or "." in t) and names_tool(task, t)]
                needed += [t for action in called.get(chosen, ()) for t in guarded.get(action, [])]
                for tool in dict.fromkeys(needed):
                    others = (held.get(tool, set()) & set(bids)) - {chosen, step.actor}
                    if others and chosen not in held.get(tool, set()) and (step.actor, tool) not in filed:
                        filed.add((step.actor, tool))  # a later re-routing carries the same failure on
                        yield self._misroute_draft(ctx, dec, pos, chosen, tool, sorted(others), bids[chosen])
                        break
            if step.actor in acting:
                for target in targets(ctx, pos):
                    heard.setdefault(target, {})[step.actor] = pos

    def _after_routing(
        self, ctx: AuditContext, dec: Decisions, pos: int, chosen: str, tool: str
    ) -> tuple[Criterion, int | None, int | None]:
        """(R3, approval step, intercepting step): the first use of the tool or decision after it.
        An approval its tool refused is stopped at that gate; a later decision still counts."""
        steps = ctx.trace.steps
        deciders = {chosen, steps[pos].actor}  # their own recommendations are not the decision
        gate: int | None = None  # the first result that refused an approval
        for p in range(pos + 1, len(steps)):
            s = steps[p]
            if gate is None and s.actor not in deciders:
                gate = dec.refused_approval(p)
            if s.kind is StepKind.tool_call and s.tool is not None and s.tool.name.split(".")[0] == tool:
                return (
                    criterion("fails", f"{s.actor} used {tool} at step {s.step_id} before any approval"),
                    None,
                    p,
                )
            found = (
                set()
                if s.actor in deciders or s.actor_kind.value not in ("agent", "human")
                else dec.statuses(p)
            )
            if "approved" in found:
                return (
                    criterion("holds", f"step {s.step_id} approved with no use of {tool} after the routing"),
                    p,
                    None,
                )
            if found & UNDECIDED or any(x.startswith("not_") for x in found):
                return _stopped(steps, gate, p)
        if gate is not None:
            return _stopped(steps, gate, None)
        return criterion("unassessed", "no approval or decision follows the routing in the trace"), None, None

    def _misroute_draft(
        self,
        ctx: AuditContext,
        dec: Decisions,
        pos: int,
        chosen: str,
        tool: str,
        others: list[str],
        bid: int,
    ) -> FindingDraft:
        steps = ctx.trace.steps
        step = steps[pos]
        r3, approval, stopped = self._after_routing(ctx, dec, pos, chosen, tool)
        evidence = [head_unit(ctx, bid), head_unit(ctx, pos)]
        if approval is not None:
            evidence.append(head_unit(ctx, approval))
        if stopped is not None:
            evidence.append(head_unit(ctx, stopped))
        holder_text = ", ".join(others)
        return FindingDraft(
            risk_class=self.risk_class,
            title=f"Work needing {tool} routed to {chosen} on its own bid, away from {holder_text}",
            boundary_edge=ctx.graph.step_edges[pos][0],
            first_anomalous_step=step.step_id,
            responsible_participant=step.actor,
            mechanism=(
                f"The work needs {tool}, which {holder_text} holds; {chosen}, which holds no {tool}, sent "
                f"{step.actor} its own message (step {steps[bid].step_id}) and {step.actor} assigned it the work "
                f"(step {step.step_id})."
            ),
            criteria=criteria(
                ("holds", f"the work left the participant holding {tool} at the routing boundary"),
                ("holds", "the routing decided on the bidder's self-report, not on who holds the evidence"),
                r3,
                ("holds", "the bid, the routing and the outcome are quoted verbatim"),
            ),
            evidence=evidence,
            propagation_path=[hop(ctx, bid, "self-reported bid"), hop(ctx, pos, "routing")]
            + ([hop(ctx, approval, "approval")] if approval is not None else []),
            material_effect=(
                f"approval at step {steps[approval].step_id} without the evidence held in {tool}"
                if approval is not None
                else None
            ),
            intercepted_at=steps[stopped].step_id if stopped is not None else None,
            confidence=0.75,
        )

    # -- reviewer identity dropped before approval -------------------------------------------
    def _identity_dropped(self, ctx: AuditContext, dec: Decisions) -> Iterable[FindingDraft]:
        """For each assignment, the assignee's first review after it, then the router's summary."""
        steps = ctx.trace.steps
        acting = agents(ctx)
        sends: dict[str, list[int]] = {}  # actor -> its routing steps with named recipients
        reviews: dict[tuple[str, str], list[int]] = {}  # (reviewer, router or "*" for a tool) -> steps
        assignments: list[tuple[int, str, str]] = []
        for pos, step in enumerate(steps):
            if step.kind in ROUTING_KINDS and step.recipients:
                sends.setdefault(step.actor, []).append(pos)
            for to in _review_delivered_to(step):
                reviews.setdefault((step.actor, to), []).append(pos)
            chosen = assignee(step, acting)
            if chosen is not None:
                assignments.append((pos, step.actor, chosen))
        done: set[int] = set()
        deciding: dict[str, list[int]] = {}  # participant node -> its decision steps, in trace order
        if assignments:
            for p, node in enumerate(ctx.graph.actor_node):
                if dec.statuses(p):
                    deciding.setdefault(node, []).append(p)
        for pos, router, reviewer in assignments:
            after = [
                found[i]
                for found in (reviews.get((reviewer, router), []), reviews.get((reviewer, "*"), []))
                if (i := bisect_right(found, pos)) < len(found)
            ]
            if after:
                draft = self._first_summary(
                    ctx, dec, deciding, min(after), router, sends.get(router, []), done
                )
                if draft is not None:
                    yield draft

    def _first_summary(
        self,
        ctx: AuditContext,
        dec: Decisions,
        deciding: dict[str, list[int]],
        rpos: int,
        router: str,
        router_sends: list[int],
        done: set[int],
    ) -> FindingDraft | None:
        """The router's next routing step to someone else: a finding when it drops the reviewer."""
        steps = ctx.trace.steps
        review = steps[rpos]
        names = _names(review.actor)
        for i in range(bisect_right(router_sends, rpos), len(router_sends)):  # no copy of the tail
            spos = router_sends[i]
            summary = steps[spos]
            if spos in done or review.actor in (summary.recipients or []):
                continue
            if _mentions(summary.content, names):
                return None  # the summary names the reviewer: provenance kept
            if not _mentions(summary.content, _SUMMARY_KEYS):
                return None  # the router's next message does not pass the review on
            draft = self._drop_draft(ctx, dec, deciding, rpos, spos, names)
            if draft is not None:
                done.add(spos)
            return draft
        return None

    def _drop_draft(
        self,
        ctx: AuditContext,
        dec: Decisions,
        deciding: dict[str, list[int]],
        rpos: int,
        spos: int,
        names: tuple[str, ...],
    ) -> FindingDraft | None:
        steps, g = ctx.trace.steps, ctx.graph
        review, summary = steps[rpos], steps[spos]
        approvers = [a for a in summary.recipients or [] if a != review.actor and a in g.participants]
        decisions = [
            found[i]
            for a in approvers
            if (i := bisect_right(found := deciding.get(g.participants[a], []), spos)) < len(found)
        ]
        if not decisions:
            return None  # nobody decides on the summary: the lost provenance has no approval to mislead
        decision = min(decisions)
        approver = steps[decision].actor
        inbound = g.in_edges.get(g.participants[approver], [])  # in trace order

        def at(ref: str) -> int:
            return g.edges[ref].pos

        if any(
            _mentions(steps[at(r)].content, names)
            for r in inbound[bisect_left(inbound, rpos, key=at) : bisect_left(inbound, decision, key=at)]
        ):
            return None
        decided = dec.statuses(decision)
        if "approved" in decided:
            r3 = criterion(
                "holds",
                f"{approver} approved at step {steps[decision].step_id} on a summary without its reviewer",
            )
            effect, stopped = (
                f"approval at step {steps[decision].step_id} relying on an unattributed review",
                None,
            )
        elif decided & UNDECIDED or any(s.startswith("not_") for s in decided):
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
