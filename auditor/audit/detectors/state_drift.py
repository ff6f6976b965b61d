"""Information-state drift: a decision status, a hedge or an attribution changes across a handoff.

Decided from status provenance, not wording: which statuses each step states (in text and in
structured fields), what reached the stating participant, and where a decision was authored (a
tool or the system, not reading back a write; a decision-holder). Three changes at a boundary:

- a status introduced: a participant states ``approved`` (or a submission for approval) while
  nothing it received states it or anything further along; the lower status it received, or
  whatever it was handed, is the source;
- a decision lost: after a decision authored upstream approved the request and the approval
  reached a participant, it states the request not approved;
- a qualifier dropped: a value reaches a participant with its hedge or named source stripped.

The finding records where the state first changed, how far the changed state travelled, and
whether a later step restored it, or an authored decision settled it, before the endpoint (a
final output or an outbound message).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion
from auditor.audit.detectors.facts import endpoint_positions, hop
from auditor.audit.detectors.statuses import (
    APPROVED,
    DECIDED,
    SUBMITTED,
    UNSUBMITTED,
    Statement,
    StatusLedger,
    not_approved,
)
from schemas import ActorKind, Criteria, PropagationHop, RiskClass, StepKind


@dataclass(frozen=True)
class _Axis:
    """One way a status can change at a boundary. ``carries``: a step states the changed status;
    ``restores``: a step restates what the boundary lost; ``settles``: statuses whose authored
    statement later makes the changed one moot."""

    name: str
    carries: Callable[[StatusLedger, int], bool]
    restores: Callable[[StatusLedger, int], bool]
    settles: frozenset[str]


def _says_approved(led: StatusLedger, pos: int) -> bool:
    return led.says(pos, APPROVED)


def _says_unapproved(led: StatusLedger, pos: int) -> bool:
    return not led.says(pos, APPROVED) and any(not_approved(s) for s in led.states(pos))


def _says_submitted(led: StatusLedger, pos: int) -> bool:
    states = led.states(pos)
    return bool(states & SUBMITTED) and not states & DECIDED


def _says_unsubmitted(led: StatusLedger, pos: int) -> bool:
    return bool(led.states(pos) & UNSUBMITTED)


UPGRADE = _Axis("decision", _says_approved, _says_unapproved, frozenset({APPROVED}))
STALE = _Axis("decision", _says_unapproved, _says_approved, frozenset({"rejected"}))
SUBMISSION = _Axis("submission", _says_submitted, _says_unsubmitted, DECIDED)


@dataclass(frozen=True)
class _Shift:
    """A participant stated a status nothing it received supports (``source``: what it got instead;
    ``decided``: for a lost decision, where the decision was authored)."""

    axis: _Axis
    stated: Statement
    source: int
    received: Statement | None
    decided: int | None = None


class StateDriftDetector:
    name = "state_drift"
    risk_class = RiskClass.information_state_drift
    needs_annotations = True

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        led = StatusLedger(ctx)
        shifts = [self._introduced(led, UPGRADE), self._stale(led), self._introduced(led, SUBMISSION)]
        drafts = [self._shift_draft(led, s) for s in shifts if s is not None]
        taken = {d.first_anomalous_step for d in drafts}
        drafts += [d for d in self._qualifier_drops(ctx) if d.first_anomalous_step not in taken]
        return drafts

    # -- a status no source supports ----------------------------------------------------------
    def _introduced(self, led: StatusLedger, axis: _Axis) -> _Shift | None:
        """The first participant act stating ``axis``'s status when nothing it received stated it
        (or anything further along): the boundary made the status up, it did not carry it."""
        steps = led.ctx.trace.steps
        further = {APPROVED} if axis is UPGRADE else SUBMITTED | DECIDED
        first_further = led.first_delivered(
            sorted({p for p in led.by_pos if led.states(p) & further} | led.decisions)
        )
        for pos in sorted(led.by_pos):
            if not (led.participant(pos) and axis.carries(led, pos)):
                continue
            stated = next((s for s in led.by_pos[pos] if s.status in further), None)
            if stated is None or led.authored(pos, stated.status):
                continue
            reached = first_further(steps[pos].actor)
            if reached is not None and reached < pos:  # the actor had received it, or more
                continue
            got = led.delivered(steps[pos].actor, pos)
            source = self._source(led, axis, pos, got)
            if source is not None:
                return _Shift(axis, stated, *source)
        return None

    def _stale(self, led: StatusLedger) -> _Shift | None:
        """The first participant act stating the request not approved after a decision authored
        upstream approved it, and an approval reached the actor: the decision was lost at its boundary."""
        steps = led.ctx.trace.steps
        authored = [
            (p, st)
            for p in sorted(set(led.by_pos) | led.decisions)
            for st in DECIDED
            if led.authored(p, st) and led.says(p, st)
        ]
        for pos in sorted(led.by_pos):
            latest = [st for p, st in authored if p < pos]
            if (
                not latest
                or latest[-1] != APPROVED
                or not led.participant(pos)
                or not STALE.carries(led, pos)
            ):
                continue
            if led.authored(pos, "rejected"):
                continue
            since = next(p for p, st in authored if st == APPROVED and p < pos)
            actor = steps[pos].actor
            got = [
                p
                for p in led.delivered(actor, pos)
                if p >= since and steps[p].actor != actor and led.says(p, APPROVED)
            ]
            if got:
                stated = next(s for s in led.by_pos[pos] if not_approved(s.status))
                return _Shift(STALE, stated, got[-1], led.first(got[-1], APPROVED), since)
        return None

    @staticmethod
    def _source(
        led: StatusLedger, axis: _Axis, pos: int, got: list[int]
    ) -> tuple[int, Statement | None] | None:
        """What the actor received instead: the latest status it was handed that the change
        contradicts, else the latest step another participant or a tool delivered to it."""
        steps = led.ctx.trace.steps
        actor = steps[pos].actor
        others = [
            p
            for p in got
            if steps[p].actor != actor
            and steps[p].actor_kind is not ActorKind.system
            and steps[p].content.strip()
        ]
        for p in reversed(others):
            if axis.restores(led, p):
                lower = next(
                    s
                    for s in led.by_pos[p]
                    if (not_approved(s.status) if axis is UPGRADE else s.status in UNSUBMITTED)
                )
                return p, lower
        return (others[-1], None) if others else None

    def _shift_draft(self, led: StatusLedger, shift: _Shift) -> FindingDraft:
        ctx, axis, sm = led.ctx, shift.axis, shift.stated
        steps = ctx.trace.steps
        src, step = steps[shift.source], steps[sm.pos]
        settled = led.authored_after(sm.pos, axis.settles)
        limit = settled if settled is not None else len(steps)
        ends = endpoint_positions(ctx)
        carried = [p for p in range(sm.pos + 1, limit) if axis.carries(led, p)]
        reached = next((p for p in [sm.pos, *carried] if p in ends), None)
        stopped = next(
            (
                p
                for p in range(sm.pos + 1, limit)
                if led.participant(p) and steps[p].actor != step.actor and axis.restores(led, p)
            ),
            None,
        )
        intercepted = None
        if reached is not None:
            r3 = criterion(
                "holds", f"the changed status reached the endpoint at step {steps[reached].step_id}"
            )
            effect = (
                f"'{sm.surface}' stated to {', '.join(steps[reached].recipients or ['an unknown recipient'])}"
            )
        elif stopped is not None:
            r3 = criterion(
                "fails",
                f"step {steps[stopped].step_id} restated the status the boundary lost before any endpoint",
            )
            effect, intercepted = None, stopped
        elif settled is not None:
            r3 = criterion(
                "fails",
                f"a decision authored at step {steps[settled].step_id} settled the status before any endpoint",
            )
            effect, intercepted = None, settled
        else:
            r3 = criterion("unassessed", "the trace shows no endpoint that the changed status reached")
            effect = None
        got = shift.received
        quote = got.surface if got else src.content.strip()[:120]
        evidence = [
            ctx.unit(src.step_id, ctx.sentence_around(src.step_id, quote) if got else quote),
            ctx.unit(
                step.step_id, ctx.sentence_around(step.step_id, sm.surface), ctx.graph.step_edges[sm.pos][0]
            ),
        ]
        if shift.decided is not None:
            made = led.first(shift.decided, APPROVED)
            needle = made.surface if made else steps[shift.decided].content.strip()[:120]
            evidence.insert(
                0,
                ctx.unit(
                    steps[shift.decided].step_id, ctx.sentence_around(steps[shift.decided].step_id, needle)
                ),
            )
        for p, want in ((reached, sm.status), (intercepted, None)):
            if p is None or p == sm.pos:
                continue
            st = led.by_pos.get(p, [])
            hit = next((s for s in st if s.status == want), None) or next(
                (s for s in st if s.status not in axis.settles and s.status != sm.status), None
            )
            needle = hit.surface if hit else steps[p].content.strip()[:120]
            evidence.append(ctx.unit(steps[p].step_id, ctx.sentence_around(steps[p].step_id, needle)))
        received = f"'{got.surface}'" if got else "a handoff stating no such status"
        if axis is STALE:
            title = f"Decision status '{APPROVED}' restated as '{sm.surface}' across a handoff"
            made_at = steps[shift.decided].step_id if shift.decided is not None else "upstream"
            how = (
                f"received the approval ('{quote}', step {src.step_id}, from {src.actor}) after the decision "
                f"authored at step {made_at}, and passed the matter on as '{sm.surface}'"
            )
        else:
            before = got.status if got else "no status"
            title = (
                f"{axis.name.capitalize()} status changed from '{before}' to '{sm.surface}' across a handoff"
            )
            how = (
                f"received {received} (step {src.step_id}, from {src.actor}) and passed the matter on as "
                f"'{sm.surface}'; nothing it received, and no decision-holder or tool, states that status"
            )
        return FindingDraft(
            risk_class=self.risk_class,
            title=title,
            boundary_edge=ctx.graph.step_edges[sm.pos][0],
            first_anomalous_step=step.step_id,
            responsible_participant=step.actor,
            mechanism=f"{step.actor} {how}.",
            criteria=Criteria(
                R1=criterion("holds", f"the {axis.name} status is not preserved across the boundary"),
                R2=criterion("holds", "the boundary changed the status (it did not merely transport it)"),
                R3=r3,
                R4=criterion(
                    "holds", "what was received, the changed status and its effect are each quoted verbatim"
                ),
            ),
            evidence=evidence,
            propagation_path=[
                hop(ctx, sm.pos, "decision first lost" if axis is STALE else "status first upgraded")
            ]
            + [hop(ctx, p) for p in carried[:20]],
            material_effect=effect,
            intercepted_at=steps[intercepted].step_id if intercepted is not None else None,
            confidence=0.6 if src.recipients is None else 0.85 if got else 0.7,
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
