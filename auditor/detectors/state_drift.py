"""Information-state drift: a decision status, a hedge or an attribution changes across a handoff.

Decided from provenance facts: a status that nobody with the decision had stated (``pending`` →
``approved``) appears first at a participant who received the lower status; or a value reaches a
participant with its hedge or named source stripped. The finding records where the state first
changed, how far the changed state travelled, and whether a later step intercepted it before
the endpoint (a final output or an outbound message).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from auditor.detectors.base import AuditContext, FindingDraft, criterion
from auditor.detectors.facts import decision_statements, endpoint_positions, hop, is_authored_decision
from schemas import Criteria, PropagationHop, RiskClass, StepKind

DECIDED = "approved"
UNDECIDED = frozenset({"pending", "submitted_for_approval", "under_review", "not_approved"})


@dataclass(frozen=True)
class _StatusMention:
    pos: int
    status: str
    surface: str


class StateDriftDetector:
    name = "state_drift"
    risk_class = RiskClass.information_state_drift
    needs_annotations = True

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        prov = ctx.graph.provenance
        assert prov is not None
        statuses = [
            _StatusMention(pos, m.status, m.surface)
            for pos, mentions in enumerate(prov.mentions)
            for m in mentions
            if m.kind == "status" and m.status
        ]
        drafts = list(self._status_upgrade(ctx, statuses))
        taken = {d.first_anomalous_step for d in drafts}
        drafts += [d for d in self._qualifier_drops(ctx) if d.first_anomalous_step not in taken]
        return drafts

    # -- decision status upgraded without a decision ------------------------------------------
    def _status_upgrade(self, ctx: AuditContext, statuses: list[_StatusMention]) -> Iterable[FindingDraft]:
        steps = ctx.trace.steps
        decided_at = decision_statements(ctx)
        undecided: list[_StatusMention] = []
        for sm in statuses:
            if sm.status in UNDECIDED:
                undecided.append(sm)
                continue
            if sm.status != DECIDED:
                continue
            step = steps[sm.pos]
            if (
                not undecided
                or is_authored_decision(ctx, sm.pos)
                or any(undecided[-1].pos < d < sm.pos and steps[d].actor != step.actor for d in decided_at)
            ):
                return  # the decision exists (a tool or a decision-holder said so): nothing drifted
            source = self._delivered_to(ctx, undecided, step.actor, sm.pos)
            if source is None:
                continue
            yield self._upgrade_draft(ctx, source, sm, statuses)
            return  # one finding per trace: the first change; the rest is its propagation

    def _delivered_to(
        self, ctx: AuditContext, undecided: list[_StatusMention], actor: str, before: int
    ) -> _StatusMention | None:
        """The latest undecided-status mention this actor could have read: addressed to it,
        broadcast, or its own earlier statement."""
        for sm in reversed(undecided):
            step = ctx.trace.steps[sm.pos]
            if sm.pos >= before:
                continue
            if step.actor == actor or step.recipients is None or actor in step.recipients:
                return sm
            for ref in ctx.graph.step_edges[sm.pos]:
                if ctx.graph.edges[ref].target == ctx.graph.participants.get(actor, actor):
                    return sm
        return None

    def _upgrade_draft(
        self, ctx: AuditContext, source: _StatusMention, sm: _StatusMention, statuses: list[_StatusMention]
    ) -> FindingDraft:
        steps = ctx.trace.steps
        src, step = steps[source.pos], steps[sm.pos]
        carried = [s for s in statuses if s.pos > sm.pos and s.status == DECIDED]
        ends = endpoint_positions(ctx)
        reached = [s for s in carried if s.pos in ends] + ([sm] if sm.pos in ends else [])
        stopped = next(
            (
                s
                for s in statuses
                if s.pos > sm.pos and s.status in UNDECIDED and steps[s.pos].actor != step.actor
            ),
            None,
        )
        if reached and (stopped is None or reached[0].pos < stopped.pos):
            r3 = criterion(
                "holds", f"the upgraded status reached the endpoint at step {steps[reached[0].pos].step_id}"
            )
            effect = f"'{DECIDED}' stated to {', '.join(steps[reached[0].pos].recipients or ['an unknown recipient'])}"
            intercepted = None
        elif stopped is not None:
            r3 = criterion(
                "fails",
                f"step {steps[stopped.pos].step_id} restated the undecided status before any endpoint",
            )
            effect, intercepted = None, steps[stopped.pos].step_id
        else:
            r3 = criterion("unassessed", "the trace shows no endpoint that the upgraded status reached")
            effect, intercepted = None, None
        evidence = [
            ctx.unit(src.step_id, ctx.sentence_around(src.step_id, source.surface)),
            ctx.unit(
                step.step_id, ctx.sentence_around(step.step_id, sm.surface), ctx.graph.step_edges[sm.pos][0]
            ),
        ]
        if reached:
            end = steps[reached[0].pos]
            evidence.append(ctx.unit(end.step_id, ctx.sentence_around(end.step_id, reached[0].surface)))
        if intercepted:
            evidence.append(ctx.unit(intercepted, ctx.sentence_around(intercepted, stopped.surface)))  # type: ignore[union-attr]
        path = [hop(ctx, sm.pos, "status first upgraded")] + [hop(ctx, s.pos) for s in carried[:20]]
        broadcast = src.recipients is None
        return FindingDraft(
            risk_class=self.risk_class,
            title=f"Decision status changed from '{source.status}' to '{DECIDED}' across a handoff",
            boundary_edge=ctx.graph.step_edges[sm.pos][0],
            first_anomalous_step=step.step_id,
            responsible_participant=step.actor,
            mechanism=(
                f"{step.actor} received '{source.surface}' (step {src.step_id}, from {src.actor}) and passed the "
                f"matter on as '{sm.surface}'; no step by a decision-holder or tool states that decision."
            ),
            criteria=Criteria(
                R1=criterion("holds", "the decision status is not preserved across the boundary"),
                R2=criterion(
                    "holds", "the boundary introduced the decided status (it did not merely transport it)"
                ),
                R3=r3,
                R4=criterion(
                    "holds", "the undecided source, the upgrade and the endpoint are each quoted verbatim"
                ),
            ),
            evidence=evidence,
            propagation_path=path,
            material_effect=effect,
            intercepted_at=intercepted,
            confidence=0.6 if broadcast else 0.85,
        )

    # -- hedges and attributions dropped ------------------------------------------------------
    def _qualifier_drops(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        prov = ctx.graph.provenance
        assert prov is not None
        seen: set[str] = set()
        ends = endpoint_positions(ctx)
        for pos, mentions in enumerate(prov.mentions):
            for m in mentions:
                if not (m.hedges or m.attributions) or m.kind == "status" or m.norm in seen:
                    continue
                seen.add(m.norm)
                prop = ctx.graph.value_propagation(m.surface)
                drop = next(
                    (
                        h
                        for h in prop.hops
                        if h.route == "edge"
                        and ("hedge_dropped" in h.changes or "attribution_dropped" in h.changes)
                        and h.actor != ctx.trace.steps[pos].actor
                        and ctx.trace.steps[ctx.position(h.step_id)].kind is not StepKind.tool_result
                    ),
                    None,
                )
                if drop is None or drop.source_step is None:
                    continue
                yield self._drop_draft(ctx, m.surface, drop, prop.hops, ends)

    def _drop_draft(self, ctx: AuditContext, surface: str, drop, hops, ends: set[int]) -> FindingDraft:  # type: ignore[no-untyped-def]
        what = "hedge" if "hedge_dropped" in drop.changes else "attribution"
        lost = (drop.dropped_hedges or drop.dropped_attributions or ["its qualifier"])[0]
        later = [h for h in hops if h.index >= drop.index]
        reached = next(
            (h for h in later if ctx.position(h.step_id) in ends and not (h.hedges or h.attributions)), None
        )
        if reached is not None:
            r3 = criterion("holds", f"the unqualified value reached the endpoint at step {reached.step_id}")
        else:
            r3 = criterion("unassessed", "no endpoint carrying the unqualified value is in the trace")
        src = ctx.step(drop.source_step)
        # the source may spell the value otherwise than its first appearance does ("$5.71M", "5.71M")
        spelled = next((h.surface for h in hops if h.step_id == src.step_id), surface)
        evidence = [
            ctx.unit(src.step_id, ctx.sentence_around(src.step_id, lost if lost in src.content else spelled)),
            ctx.unit(drop.step_id, ctx.sentence_around(drop.step_id, drop.surface), drop.edge_refs[0]),
        ]
        if reached is not None and reached.step_id != drop.step_id:
            evidence.append(ctx.unit(reached.step_id, ctx.sentence_around(reached.step_id, reached.surface)))
        return FindingDraft(
            risk_class=self.risk_class,
            title=f"The {what} on '{surface}' was dropped across a handoff",
            boundary_edge=drop.via_edge or drop.edge_refs[0],
            first_anomalous_step=drop.step_id,
            responsible_participant=drop.actor,
            mechanism=(
                f"{src.actor} qualified '{surface}' with '{lost}' (step {src.step_id}); {drop.actor} carried it on "
                f"as '{drop.surface}' without the {what} (step {drop.step_id})."
            ),
            criteria=Criteria(
                R1=criterion("holds", f"the value's {what} is not preserved across the boundary"),
                R2=criterion("holds", f"the boundary removed the {what}, raising the claim's standing"),
                R3=r3,
                R4=criterion(
                    "holds", "the qualified source and the unqualified carriage are quoted verbatim"
                ),
            ),
            evidence=evidence,
            propagation_path=[
                PropagationHop(step_id=h.step_id, edge_ref=h.edge_refs[0], note=h.carriage)
                for h in later[:20]
            ],
            material_effect=(f"the unqualified value reached step {reached.step_id}" if reached else None),
            confidence=0.7,
        )
