"""Ignored input (MAST 2.5): an error or another agent's report comes back, and the next act of the
agent it was addressed to does the same thing again, unchanged.

Two facts, both decided by the act's signature (``failure_facts``: the same tool with the same
arguments, the same code, the same text up to whitespace, progress counters and clock times):

- *an error ignored*: an agent's act was answered by a failed observation (by structure), and
  that agent's next act on the same check (the same tool, or code again), with nothing but its own
  acts and their results in between, is the same act — unless one of those acts changed files
  (``test_runs.writes_files``): a failing test, a fix, the same test again is the fix-and-rerun loop;
- *a report ignored*: an agent addressed another (explicit recipients, or the other side of a
  two-party chat: ``failure_facts``), that agent answered with a report that the work failed or
  that it cannot go on (phrases nominate the report), and the first agent's next message to it is
  the same instruction.

Filed at the unchanged act, by its agent. Disposition: when the same check (the same tool, or the
same agent's code) passes later, the run recovered there (anomaly with interception, naming that
result); when it never passes before the run ends, realized; a report ignored with no check to
judge by is realized when the run ends without the reporting agent ever succeeding afterwards,
else a lead.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import (
    Effect,
    RunFacts,
    cannot_go_on,
    failure_draft,
    intercepted,
    realized,
    unestablished,
)
from auditor.audit.detectors.test_runs import writes_files
from auditor.audit.detectors.unverified_relay import FAILED_REPORT, prose
from schemas import ActorKind, RiskClass


def failed_report(text: str) -> str | None:
    """The words of an agent's report that its work failed or that it cannot go on, or None."""
    body = prose(text)
    m = FAILED_REPORT.search(body)
    return m.group() if m is not None else cannot_go_on(body)


class FailureIgnoredInputDetector:
    name = "failure_ignored_input"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        drafts = list(self._errors(facts))
        filed = {d.first_anomalous_step for d in drafts}
        drafts += [d for d in self._reports(facts) if d.first_anomalous_step not in filed]
        return drafts

    # -- an error answered, the same act again -------------------------------------------------
    def _errors(self, facts: RunFacts) -> Iterable[FindingDraft]:
        done: set[str] = set()
        for prev in facts.acts:
            actor = facts.steps[prev].actor
            sig = facts.signature(prev)
            answer = facts.answer_of(prev)
            if actor in done or sig is None or answer is None or answer not in facts.failures:
                continue
            nxt = self._next_same_check(facts, prev, answer)
            if nxt is None or facts.signature(nxt) != sig:
                continue
            if any(writes_files(facts.steps[p]) for p in range(answer + 1, nxt) if p in facts.act_set):
                continue  # a fix and a rerun: the input was acted on
            done.add(actor)  # one per agent: its first ignored error; later ones repeat it
            yield self._draft(
                facts,
                prev,
                answer,
                nxt,
                f"the observation at step {facts.steps[answer].step_id} reported a failure "
                f"('{facts.failures[answer][:80]}')",
                self._check_effect(facts, prev, nxt),
            )

    @staticmethod
    def _next_same_check(facts: RunFacts, prev: int, answer: int) -> int | None:
        """The agent's next act on the same check, if nothing but its own acts and their results
        came between (another participant's word may have asked for exactly that retry)."""
        actor = facts.steps[prev].actor
        for p in range(answer + 1, len(facts.steps)):
            step = facts.steps[p]
            if step.actor != actor and p not in facts.observations:
                return None
            if p in facts.act_set and facts.same_check(p, prev):
                return p
        return None

    def _check_effect(self, facts: RunFacts, first: int, repeat: int) -> Effect:
        for p in facts.acts:
            if p > repeat and facts.same_check(p, first):
                answer = facts.answer_of(p)
                if answer is not None and facts.succeeded(answer):
                    return intercepted(
                        facts.steps[answer].step_id,
                        f"the same check passed later, at step {facts.steps[answer].step_id}",
                    )
        return realized(
            "the check never passed after the error was ignored",
            "what the failed act was for was never achieved in the run",
        )

    # -- a report of failure, the same instruction again ----------------------------------------
    def _reports(self, facts: RunFacts) -> Iterable[FindingDraft]:
        steps = facts.steps
        agents = {s.actor for s in steps if s.actor_kind is ActorKind.agent}
        last_to: dict[tuple[str, str], int] = {}
        for pos in facts.acts:
            step = steps[pos]
            targets = [r for r in facts.addressees(pos) if r in agents]
            if len(targets) != 1:
                continue
            key = (step.actor, targets[0])
            prev = last_to.get(key)
            last_to[key] = pos
            if prev is None or facts.signature(prev) is None or facts.signature(prev) != facts.signature(pos):
                continue
            report = self._report_between(facts, targets[0], prev, pos)
            if report is None:
                continue
            rpos, surface = report
            later = next(
                (
                    p
                    for p in range(pos + 1, len(steps))
                    if steps[p].actor == targets[0] and p in facts.act_set
                ),
                None,
            )
            effect = (
                realized(
                    f"{targets[0]} never acted again before the run ended",
                    "the instruction that had failed was the last word to the reporting agent",
                )
                if later is None
                else unestablished(
                    f"{targets[0]} acted again at step {steps[later].step_id}; the outcome is not judged"
                )
            )
            yield self._draft(
                facts,
                prev,
                rpos,
                pos,
                f"{targets[0]} reported at step {steps[rpos].step_id} '{surface}'",
                effect,
            )
            return  # the first ignored report: later ones repeat it

    @staticmethod
    def _report_between(facts: RunFacts, worker: str, start: int, end: int) -> tuple[int, str] | None:
        for p in range(start + 1, end):
            step = facts.steps[p]
            if step.actor == worker and p in facts.act_set and (surface := failed_report(step.content)):
                return p, surface
        return None

    def _draft(
        self, facts: RunFacts, first: int, answer: int, repeat: int, what: str, effect: Effect
    ) -> FindingDraft:
        step = facts.steps[repeat]
        quote = facts.failures.get(answer) or failed_report(facts.steps[answer].content)
        return failure_draft(
            facts,
            mode="2.5",
            pos=repeat,
            title=f"{step.actor} did the same thing again after being told it failed",
            mechanism=(
                f"{step.actor} acted at step {facts.steps[first].step_id}; {what}; its next act "
                f"(step {step.step_id}) repeats the first unchanged."
            ),
            violated="an error or report addressed to an agent must change what it does next; the act repeated unchanged",
            evidence=[facts.unit(first), facts.unit(answer, quote), facts.unit(repeat)],
            effect=effect,
            path=[
                facts.hop(first, "act"),
                facts.hop(answer, "failure reported"),
                facts.hop(repeat, "same act again"),
            ],
        )
