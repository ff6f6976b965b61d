"""Unaware of termination conditions (MAST 1.5): the run keeps working after it said it was done,
or stops only because the framework's budget ran out.

Two facts, both from structure (``failure_facts``):

- *work after done*: an agent declared the run done (a ``TERMINATE`` line, ``FINAL ANSWER:``, a
  ``\\boxed{}`` answer, a finishing tool call) and afterwards, with no new instruction from a
  human or the framework (a system step) in between, an agent acted again with a tool call or
  code that was executed. Talk after the marker (agreeing, saying ``TERMINATE`` again) is not
  work. Filed at the first such act, by its agent; a lead unless the continuation changed the
  delivered answer or ran into a recorded limit (then realized: the run's end differs from the
  declared one);
- *stopped at a limit*: the framework recorded that a round, turn, time or step budget was
  reached. The run did not end because its agents judged the task done; filed at the recorded
  limit, answerable by the coordinator (the agent that addresses the others), else by the last
  agent that acted. Realized: the budget, not the task, decided the run's end.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.attribution.facts import normalise
from auditor.detectors.base import AuditContext, FindingDraft
from auditor.detectors.failure_facts import RunFacts, code_of, failure_draft, realized, unestablished
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
        acts = set(facts.acts)
        for decl in facts.declarations:
            for pos in range(decl.pos + 1, len(facts.steps)):
                step = facts.steps[pos]
                if step.actor_kind in (ActorKind.human, ActorKind.system):
                    break  # a new instruction: the framework or the user asked for more
                if pos in acts and self._is_work(facts, pos):
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
