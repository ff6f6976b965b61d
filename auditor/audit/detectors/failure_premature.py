"""Premature termination (MAST 3.1): the run is declared done while a required step is visibly
unfinished.

The end is the last protocol marker by which an agent declared the run done (``failure_facts``:
``TERMINATE``, ``FINAL ANSWER:``, ``\\boxed{}``, a finishing tool call). A required step is
visibly unfinished at that end when:

- *a check failed and was never passed*: an observation failed (by structure), no later
  observation of the same check succeeded before the end, and the agent whose act it answered
  got no working result afterwards (none of its later tool calls or code, a finishing call
  aside, came back unfailed): it stopped on the failure. An agent that went on to work with
  another tool left the failed call behind (a wrong API name replaced by the right one), not a
  step unfinished. Nor is the run of a coding run's check that shows its fix
  (``TestRunFacts.shown_fixed``): a linter that still exits non-zero for the reproduction's own
  conventions once the reported message is gone has passed the check. Nor is a run of a coding
  run's tests that reached none of them for a reason outside its change
  (``TestRunFacts.reached_no_test``: Django's settings not configured for the runner): the tests
  never ran, which the coding findings judge. A coding run that handed its change over (a
  submitted diff, a closing report, the harness's record of an empty submission:
  ``TestRunFacts.handed_over``) is not judged so at all: ``coding_verification`` judges each of
  its tests and checks by what it ran, where "the tool 'bash' failed" would count every command
  as one check and file a second finding on the failure the coding finding names. (Its own check
  left failing while another shows the fix is no sign either: read so, it held for 1 of 25
  resolved and none of 23 unresolved runs of the SWE-bench development repositories, 2 of 11 and
  2 of 6 kept apart; a script that shows an error the request asks for fails so.) The check is
  the tool the result names, else the tool of the act it answers (the call id, or the nearest
  earlier act when that act is a tool call), else code execution (whoever wrote the code: a later
  run of anyone's code that passes is the check passing), else the result's actor;
- *the coordinator's own ledger says unfinished*: the latest structured status ledger before the
  end records ``is_request_satisfied`` false;
- *a question to another agent was never answered*: an agent addressed a named agent (explicit
  recipients, never a human) with a message whose last line asks a question, and that agent never
  acted again before the end.

Filed at the ending act; answerable is the coordinator (the agent that addresses the others by
name), which decides when the run ends, else the agent that ended it; realized (the run's end state lacks the
step). A run that ends without any marker (a customer hanging up, a log that stops) is not judged
here.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import RunFacts, code_of, failure_draft, realized
from auditor.audit.detectors.test_runs import TestRunFacts
from schemas import ActorKind, EvidenceUnit, RiskClass, StepKind


def check_key(facts: RunFacts, pos: int) -> str:
    """Which check an observation reports on (see the module doc)."""
    steps = facts.steps
    step = steps[pos]
    if step.tool is not None and step.kind is StepKind.tool_result:
        return f"tool:{facts.tool_of(pos)}"
    call_id = step.refs.call_id if step.refs else None
    if call_id:
        for p in range(pos - 1, -1, -1):
            s = steps[p]
            if s.kind is StepKind.tool_call and s.tool is not None and s.tool.call_id == call_id:
                return f"tool:{facts.tool_of(p)}"
    act = next((p for p in range(pos - 1, -1, -1) if p in facts.act_set), None)
    if act is not None:
        if steps[act].kind is StepKind.tool_call and steps[act].tool is not None:
            return f"tool:{facts.tool_of(act)}"
        if code_of(steps[act].content):
            return "code:execution"
    return f"actor:{step.actor}"


class FailurePrematureDetector:
    name = "failure_premature"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        facts = RunFacts.of(ctx)
        ends = [d for d in facts.declarations if facts.steps[d.pos].actor_kind is not ActorKind.human]
        if not ends:
            return []
        end = ends[-1].pos
        reasons: list[tuple[int, str, str]] = []  # (position, surface, what is unfinished)
        if (failed := self._unpassed_check(facts, end)) is not None:
            reasons.append(failed)
        if (ledger := self._unsatisfied_ledger(facts, end)) is not None:
            reasons.append(ledger)
        if (question := self._open_question(facts, end)) is not None:
            reasons.append(question)
        if not reasons:
            return []
        return [self._draft(facts, end, ends[-1].surface, reasons)]

    @staticmethod
    def _describe(key: str) -> str:
        kind, _, name = key.partition(":")
        return {"tool": f"the tool '{name}'", "code": "code execution"}.get(kind, f"{name}'s result")

    def _unpassed_check(self, facts: RunFacts, end: int) -> tuple[int, str, str] | None:
        passed: set[str] = set()
        unpassed: dict[str, int] = {}
        for pos in sorted(facts.observations):
            if pos >= end:
                break
            key = check_key(facts, pos)
            if pos in facts.failures:
                unpassed.setdefault(key, pos)
            elif facts.succeeded(pos):
                passed.add(key)
                unpassed.pop(key, None)
        stuck = [p for p in unpassed.values() if not self._moved_on(facts, p, end)]
        if stuck:
            tests = TestRunFacts.of(facts.ctx)
            if tests.handed_over:
                return None  # a coding run: coding_verification judges each test and check it ran
            shown = tests.shown_fixed.result if tests.shown_fixed is not None else None
            unreached = {r.result for r in tests.runs if tests.reached_no_test(r)}
            # the check that shows the fix passed; tests that never started were no check left failing
            stuck = [p for p in stuck if p != shown and p not in unreached]
        if not stuck:
            return None
        pos = max(stuck)
        what = self._describe(check_key(facts, pos))
        return pos, facts.failures[pos], f"{what} failed at step {facts.steps[pos].step_id} and never passed"

    @staticmethod
    def _moved_on(facts: RunFacts, failed: int, end: int) -> bool:
        """Whether the agent whose act the failed observation answered later got a working result
        from a tool call or code of its own before the end."""
        act = next((p for p in range(failed - 1, -1, -1) if p in facts.act_set), None)
        if act is None:
            return False
        actor = facts.steps[act].actor
        for p in facts.acts:
            step = facts.steps[p]
            if p <= failed or p >= end or step.actor != actor or facts.finishes(p):
                continue
            if step.kind is StepKind.tool_call or code_of(step.content):
                answer = facts.answer_of(p)
                if answer is not None and answer < end and facts.succeeded(answer):
                    return True
        return False

    def _unsatisfied_ledger(self, facts: RunFacts, end: int) -> tuple[int, str, str] | None:
        latest = None
        for step, flags in facts.tf.ledgers:
            pos = facts.ctx.position(step.step_id)
            if pos < end and "is_request_satisfied" in flags:
                latest = (pos, flags["is_request_satisfied"])
        if latest is None or latest[1]:
            return None
        pos = latest[0]
        return (
            pos,
            '"is_request_satisfied"',
            f"the coordinator's ledger at step {facts.steps[pos].step_id} records the request as not satisfied",
        )

    def _open_question(self, facts: RunFacts, end: int) -> tuple[int, str, str] | None:
        steps = facts.steps
        agents = {s.actor for s in steps if s.actor_kind is ActorKind.agent}
        for pos in facts.acts:
            if pos >= end:
                break
            step = steps[pos]
            lines = [ln.strip() for ln in step.content.splitlines() if ln.strip()]
            targets = [r for r in step.recipients or [] if r in agents and r != step.actor]
            if not lines or not lines[-1].endswith("?") or not targets:
                continue
            if not any(steps[p].actor in targets for p in range(pos + 1, end + 1)):
                return (
                    pos,
                    lines[-1],
                    f"the question to {', '.join(targets)} at step {step.step_id} was never answered",
                )
        return None

    def _draft(
        self, facts: RunFacts, end: int, surface: str, reasons: list[tuple[int, str, str]]
    ) -> FindingDraft:
        steps = facts.steps
        what = "; ".join(r[2] for r in reasons)
        evidence: list[EvidenceUnit | None] = [facts.unit(end, surface)]
        evidence += [facts.unit(pos, quote) for pos, quote, _ in reasons]
        who = facts.coordinator or steps[end].actor
        return failure_draft(
            facts,
            mode="3.1",
            pos=end,
            responsible=who,
            title=f"{who} ended the run with a required step unfinished",
            mechanism=(
                f"The run was declared done at step {steps[end].step_id} ({steps[end].actor}'s step) although {what}"
                + (f"; {who} coordinates the run and decides its end." if who != steps[end].actor else ".")
            ),
            violated="a run may end only when its required steps are done; this one ended with one visibly unfinished",
            evidence=evidence,
            effect=realized(
                f"the run ended at step {steps[end].step_id} in that state",
                f"the run's end state lacks the unfinished step ({reasons[0][2]})",
            ),
            path=[facts.hop(pos, "unfinished") for pos, _, _ in sorted(reasons)]
            + [facts.hop(end, "run declared done")],
            confidence=0.75,
        )
