"""Unaware of termination conditions (MAST 1.5): the run keeps working after it said it was done,
keeps pressing an agent that said it cannot go on, or stops only because the framework's budget
ran out.

Three facts, all from structure (``failure_facts``):

- *work after done*: an agent declared the run done (a ``TERMINATE`` line, ``FINAL ANSWER:``, a
  ``\\boxed{}`` answer, a finishing tool call) and afterwards, with no new instruction from a
  human or the framework (a system step) in between, an agent acted again with a tool call or
  code that was executed. Talk after the marker (agreeing, saying ``TERMINATE`` again) is not
  work. Filed at the first such act, by its agent; a lead unless the continuation changed the
  delivered answer or ran into a recorded limit (then realized: the run's end differs from the
  declared one);
- *pressed past a stop*: an agent sent the same instruction (the same act signature) to the same
  addressee three times in a row, and each time before the second and the third that addressee
  had answered that it cannot go on (``failure_facts``: the problem cannot be solved, it needs
  information it lacks). The run went on although the exchange could only end or change course;
  filed at the third sending, by its agent. Realized when the addressee's last act in the run
  still says it cannot go on (the extra rounds changed nothing), else a lead;
- *stopped at a limit*: the framework recorded that a round, turn, time or step budget was
  reached. The run did not end because its agents judged the task done; filed at the recorded
  limit, answerable by the coordinator (the agent that addresses the others), else by the last
  agent that acted. Realized: the budget, not the task, decided the run's end.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.audit.attribution.facts import normalise
from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import (
    RunFacts,
    cannot_go_on,
    code_of,
    failure_draft,
    realized,
    unestablished,
)
from auditor.audit.detectors.unverified_relay import prose
from schemas import ActorKind, RiskClass, StepKind


class FailureTerminationDetector:
    name = "failure_termination"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        drafts = []
        if (after := self._work_after_done(facts)) is not None:
            drafts.append(self._after_draft(facts, *after))
        if (pressed := self._pressed(facts)) is not None:
            drafts.append(self._pressed_draft(facts, *pressed))
        if facts.limit is not None:
            drafts.append(self._limit_draft(facts, *facts.limit))
        return drafts

    def _is_work(self, facts: RunFacts, pos: int) -> bool:
        """A tool call, or code that an observation right after it executed."""
        step = facts.steps[pos]
        if step.kind is StepKind.tool_call and facts.declared_done(pos) is None:
            return True
        return bool(code_of(step.content)) and pos + 1 in facts.observations

    def _work_after_done(self, facts: RunFacts) -> tuple[int, int] | None:
        """(the declaration, the first work after it) for the first declaration followed by work."""
        for decl in facts.declarations:
            for pos in range(decl.pos + 1, len(facts.steps)):
                step = facts.steps[pos]
                if step.actor_kind in (ActorKind.human, ActorKind.system):
                    break  # a new instruction: the framework or the user asked for more
                if pos in facts.act_set and self._is_work(facts, pos):
                    return decl.pos, pos
        return None

    def _after_draft(self, facts: RunFacts, done: int, work: int) -> FindingDraft:
        steps = facts.steps
        decl = facts.declared_done(done) or ""
        final = facts.final_pos
        changed = (
            final is not None
            and final > work
            and normalise(steps[final].content) != normalise(steps[done].content)
            and facts.tf.final_answer is not None
            and normalise(facts.tf.final_answer) not in facts.tf.texts[done]
        )
        limit = facts.limit
        if limit is not None and limit[0] > work:
            effect = realized(
                f"the continuation ran into the recorded limit at step {steps[limit[0]].step_id}",
                "the run ended at its budget instead of at the declared end",
            )
        elif changed:
            effect = realized(
                f"the answer delivered at step {steps[final].step_id} differs from the one declared at "  # type: ignore[index]
                f"step {steps[done].step_id}",
                "the run's delivered answer is not the one it declared final",
            )
        else:
            effect = unestablished("the continuation did not change the delivered answer in the trace")
        return failure_draft(
            facts,
            mode="1.5",
            pos=work,
            title=f"{steps[work].actor} kept working after the run was declared done",
            mechanism=(
                f"{steps[done].actor} declared the run done at step {steps[done].step_id} ('{decl[:80]}'); "
                f"with no new instruction, {steps[work].actor} acted again at step {steps[work].step_id}."
            ),
            violated="a run declared done must stop; work continued past the declared end",
            evidence=[facts.unit(done, decl), facts.unit(work)],
            effect=effect,
            path=[facts.hop(done, "declared done"), facts.hop(work, "work after the end")],
        )

    def _pressed(self, facts: RunFacts) -> tuple[list[int], list[tuple[int, str]]] | None:
        """(the three sendings, the two stop reports between them) for the first instruction an
        agent sent unchanged after its addressee twice said it cannot go on, else None."""
        steps = facts.steps
        # (sender, addressee) -> the sendings of one act in a row, and the stop report before each repeat
        runs: dict[tuple[str, str], tuple[list[int], list[tuple[int, str]]]] = {}
        for pos in facts.acts:
            targets = facts.addressees(pos)
            sig = facts.signature(pos)
            if len(targets) != 1 or sig is None:
                continue
            key = (steps[pos].actor, targets[0])
            sends, stops = runs.get(key, ([], []))
            same = bool(sends) and facts.signature(sends[-1]) == sig
            stop = self._stop(facts, targets[0], sends[-1], pos) if same else None
            if stop is not None:
                sends, stops = [*sends, pos], [*stops, stop]
            else:
                sends, stops = [pos], []
            runs[key] = (sends, stops)
            if len(sends) == 3:
                return sends, stops
        return None

    @staticmethod
    def _stop(facts: RunFacts, worker: str, start: int, end: int) -> tuple[int, str] | None:
        """The addressee's last act between two sendings, if it says it cannot go on."""
        last = facts.last_act_between(worker, start, end)
        if last is None:
            return None
        surface = cannot_go_on(prose(facts.steps[last].content))
        return (last, surface) if surface is not None else None

    def _pressed_draft(self, facts: RunFacts, sends: list[int], stops: list[tuple[int, str]]) -> FindingDraft:
        steps = facts.steps
        first, last = sends[0], sends[-1]
        worker = steps[stops[0][0]].actor
        final = max((p for p in facts.acts if steps[p].actor == worker), default=None)
        if final is not None and final > last and cannot_go_on(prose(steps[final].content)) is not None:
            effect = realized(
                f"{worker}'s last act (step {steps[final].step_id}) still says it cannot go on",
                "the extra rounds changed nothing: the run ended where it could have ended rounds before",
            )
        else:
            effect = unestablished(f"whether the extra rounds changed what {worker} delivered is not judged")
        said = "; ".join(f"step {steps[p].step_id} '{w}'" for p, w in stops)
        return failure_draft(
            facts,
            mode="1.5",
            pos=last,
            title=f"{steps[last].actor} kept pressing {worker} after it said it cannot go on",
            mechanism=(
                f"{steps[last].actor} sent the instruction of step {steps[first].step_id} again at "
                f"{', '.join(steps[p].step_id for p in sends[1:])}, unchanged, after {worker} said it cannot go on "
                f"({said})."
            ),
            violated="an exchange whose worker says it cannot go on must end or change course; it was repeated unchanged",
            evidence=[facts.unit(first), *(facts.unit(p, w) for p, w in stops), facts.unit(last)],
            effect=effect,
            path=[facts.hop(first, "instruction")]
            + [
                h
                for (p, _), s in zip(stops, sends[1:], strict=True)
                for h in (facts.hop(p, "cannot go on"), facts.hop(s, "same instruction"))
            ],
        )

    def _limit_draft(self, facts: RunFacts, pos: int, surface: str) -> FindingDraft:
        steps = facts.steps
        before = [p for p in facts.acts if p < pos]
        who = facts.coordinator or (steps[before[-1]].actor if before else None)
        own = [p for p in before if steps[p].actor == who]
        at = pos if steps[pos].actor == who else (own[-1] if own else pos)
        return failure_draft(
            facts,
            mode="1.5",
            pos=at,
            responsible=who,
            title="The run stopped only at the framework's limit",
            mechanism=(
                f"The framework recorded '{surface[:100]}' at step {steps[pos].step_id}: the run ended because "
                "its budget ran out, not because its agents judged the task done."
            ),
            violated="a run must recognise when to stop or change course; it ran until the budget stopped it",
            evidence=[facts.unit(pos, surface), facts.unit(at) if at != pos else None],
            effect=realized(
                f"the recorded limit at step {steps[pos].step_id} ended the run",
                "the run's end was decided by its budget, not by completing the task",
            ),
            path=[facts.hop(pos, "limit reached")],
            confidence=0.8,
        )
