"""A coding agent's change, checked against what its own test runs said (MAST 3.2 / 3.3).

Reads the test-run facts (``test_runs``) of a run that submitted a diff (its final act; a run
without one is not judged, since which files existed before is then unknown): the fix is the edits
of files that existed before and are not tests; the *submission* is the run's final act (the submitted
diff), else its last command; the claim is the submitting turn (its success sentence when it has
one, else its command). Each shape is filed at the act the failure follows from:

- *submitted on a failing test* (3.3): the last run of a test command after the fix failed, no
  later run passed it, and the failing tests were not shown failing on the original code (a run
  before the first source edit, or after a ``git stash`` / ``git checkout`` revert): the change
  broke them or left them broken. When the agent's next turn dismisses the failures ("unrelated",
  "pre-existing", "environment") the title says so: explained away instead of fixed. Filed at the
  source edit just before the first failing run; realized (the run ended on it);
- *an existing test edited to fit* (3.3): the submitted diff removes assertion lines from a test
  file that existed before (``new file mode`` absent) and adds others: the test now expects what
  the change does. Filed at the edit of that file; realized (the diff holds it);
- *the changed code never ran* (3.2): after the fix's last edit no command ran a test or a
  program before the submission. Filed at that edit; realized;
- *no test of the project after the change* (3.2): programs ran after the last edit (the agent's
  own scripts) but no test runner did: the project's tests never saw the change. A lead;
- *a fix never reproduced* (3.2): nothing ran before the first edit of the fix, so the failure
  it fixes was never shown. A lead.

A fix-and-rerun loop (a test fails, the code is edited, the rerun passes) is none of these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from auditor.detectors.base import AuditContext, FindingDraft
from auditor.detectors.failure_facts import RunFacts, failure_draft, realized, unestablished
from auditor.detectors.failure_verification import claim_of
from auditor.detectors.test_runs import Edit, TestRun, TestRunFacts, is_test_file
from schemas import RiskClass, StepKind

# words that nominate a dismissal of failures; the facts (failures persisting, not shown on the
# original code) decide
_DISMISS = re.compile(
    r"(?i)\b(?:unrelated|not related|pre-?existing|already (?:failing|broken)|environment(?:al)?|flaky|"
    r"expected (?:to fail|failure)|outside (?:the )?scope)\b"
)


class CodingVerificationDetector:
    name = "coding_verification"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        tests = TestRunFacts(ctx.trace)
        if tests.submission is None:
            return []  # without the submitted diff, which files existed before (the fix) is unknown
        fix = tests.source_edits
        if not fix:
            return []
        facts = RunFacts.of(ctx)
        end = self._submission(tests)
        drafts = [
            d
            for d in (
                self._failing(facts, tests, fix, end),
                *self._edited_tests(facts, tests, end),
                self._unrun(facts, tests, fix, end),
                self._unreproduced(facts, tests, fix),
            )
            if d is not None
        ]
        return drafts

    @staticmethod
    def _submission(tests: TestRunFacts) -> int:
        """The run's last act: the submitted diff, else the last command."""
        steps = tests.steps
        final = [p for p, s in enumerate(steps) if s.kind is StepKind.final_output]
        return final[-1] if final else max(tests.calls, default=len(steps) - 1)

    @staticmethod
    def _claim(facts: RunFacts, tests: TestRunFacts, end: int) -> tuple[int, str] | None:
        """The submitting turn and what to quote of it: its success sentence, else its first line."""
        turn = max((p for p in tests.calls if p < end), default=None)
        if turn is None:
            return None
        found = claim_of(facts.steps[turn].content)
        if found is not None:
            return turn, found[0]
        line = next((ln.strip() for ln in facts.steps[turn].content.splitlines() if ln.strip()), None)
        return (turn, line) if line else None

    def _claim_units(self, facts: RunFacts, tests: TestRunFacts, end: int) -> list:
        claim = self._claim(facts, tests, end)
        return [facts.unit(claim[0], claim[1])] if claim else []

    # -- submitted on a failing test ---------------------------------------------------------------
    def _failing(
        self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit], end: int
    ) -> FindingDraft | None:
        after = [r for r in tests.runs if r.is_test and r.call >= fix[0].pos and r.call < end]
        last_by_command: dict[str, TestRun] = {}
        for run in after:
            if not tests.on_original_code(run):
                last_by_command[run.key] = run
        broken = [
            r
            for r in last_by_command.values()
            if not r.ok
            and r.failed
            and not self._passed_later(tests, r, end)
            and not self._pre_existing(tests, r)
        ]
        if not broken:
            return None
        run = max(broken, key=lambda r: r.call)
        first = (
            next((r for r in after if not r.ok and set(r.failed_ids) & set(run.failed_ids or ("",))), run)
            if run.failed_ids
            else run
        )
        edit = max((e for e in fix if e.pos <= first.call), key=lambda e: e.pos, default=fix[0])
        step = facts.steps[edit.pos]
        reply = next((p for p in tests.calls if p > run.result), None)
        dismissed = None
        if reply is not None and reply < end:
            m = _DISMISS.search(facts.steps[reply].content.split("```")[0])
            dismissed = (reply, m.group()) if m else None
        title = (
            f"{step.actor} explained failing tests away instead of fixing them, and submitted"
            if dismissed
            else f"{step.actor} submitted while its last test run failed"
        )
        mechanism = (
            f"After the change at step {step.step_id} ('{edit.quote[:80]}'), the test run at step "
            f"{facts.steps[run.result].step_id} reported '{run.summary}'; no later run passed it and no run on the "
            "original code showed those failures"
        )
        if dismissed:
            mechanism += (
                f"; at step {facts.steps[dismissed[0]].step_id} {step.actor} called them '{dismissed[1]}'"
            )
        evidence = [facts.unit(edit.pos, edit.quote), facts.unit(run.result, run.summary)]
        if dismissed:
            evidence.append(facts.unit(dismissed[0], dismissed[1]))
        evidence += self._claim_units(facts, tests, end)
        return failure_draft(
            facts,
            mode="3.3",
            pos=edit.pos,
            title=title,
            mechanism=mechanism + ".",
            violated="a change is submitted when the tests it affects pass, or their failures are shown not to be its own",
            evidence=evidence,
            effect=realized(
                f"the run ended (step {facts.steps[end].step_id}) with the failure unfixed",
                "the submitted change leaves tests failing",
            ),
            path=[
                facts.hop(edit.pos, "code changed"),
                facts.hop(run.result, "tests failed"),
                facts.hop(end, "submitted"),
            ],
        )

    @staticmethod
    def _passed_later(tests: TestRunFacts, run: TestRun, end: int) -> bool:
        """A later passing run covered the failed tests (their files, else the same check)."""
        later = [r for r in tests.runs if r.is_test and run.call < r.call < end and r.ok]
        files = {i.split("::")[0] for i in run.failed_ids} or {run.key}
        return all(any(f in r.targets or r.key == run.key for r in later) for f in files)

    @staticmethod
    def _pre_existing(tests: TestRunFacts, run: TestRun) -> bool:
        """The same tests failed on the original code."""
        originals = [r for r in tests.runs if r.is_test and tests.on_original_code(r) and not r.ok]
        if run.failed_ids:
            return all(any(i in r.failed_ids for r in originals) for i in run.failed_ids)
        return any(r.key == run.key for r in originals)

    # -- an existing test edited to fit -------------------------------------------------------------
    def _edited_tests(self, facts: RunFacts, tests: TestRunFacts, end: int) -> Iterable[FindingDraft]:
        for changed in tests.changed.values():
            if (
                changed.new
                or not is_test_file(changed.path)
                or not changed.removed_asserts
                or not changed.added_asserts
            ):
                continue
            edits = tests.test_edits(changed.path)
            pos = edits[0].pos if edits else end
            step = facts.steps[pos]
            removed = changed.removed_asserts[0]
            evidence = [facts.unit(edits[0].pos, edits[0].quote)] if edits else []
            evidence.append(facts.unit(end, removed) if removed in facts.steps[end].content else None)
            evidence += self._claim_units(facts, tests, end)
            yield failure_draft(
                facts,
                mode="3.3",
                pos=pos,
                title=f"{step.actor} edited the existing test {changed.path} to fit its change",
                mechanism=(
                    f"The submitted diff removes {len(changed.removed_asserts)} assertion line(s) of {changed.path}, "
                    f"a test that existed before the run ('{removed[:100]}'), and adds "
                    f"{len(changed.added_asserts)}: the test now expects what the change does."
                ),
                violated="existing tests check the required behaviour; a fix must pass them, not rewrite them",
                evidence=evidence,
                effect=realized(
                    "the submitted diff holds the edited assertions",
                    "the change is checked against tests rewritten to agree with it",
                ),
                path=[facts.hop(pos, "test edited"), facts.hop(end, "submitted")],
            )

    # -- the changed code never ran / no project test after the change ------------------------------
    def _unrun(self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit], end: int) -> FindingDraft | None:
        last = fix[-1]
        after = [r for r in tests.runs if last.pos <= r.call < end and not tests.on_original_code(r)]
        if any(r.is_test for r in after):
            return None
        step = facts.steps[last.pos]
        evidence = [facts.unit(last.pos, last.quote), *self._claim_units(facts, tests, end)]
        if not after:
            return failure_draft(
                facts,
                mode="3.2",
                pos=last.pos,
                title=f"{step.actor} submitted a change that never ran",
                mechanism=(
                    f"{step.actor} changed the code at step {step.step_id} ('{last.quote[:80]}'); no test or program "
                    f"ran after it before the submission at step {facts.steps[end].step_id}."
                ),
                violated="a change is run before it is submitted as a fix",
                evidence=evidence,
                effect=realized(
                    f"the run ended (step {facts.steps[end].step_id}) on the unrun change",
                    "the submitted change was never executed",
                ),
                path=[facts.hop(last.pos, "code changed"), facts.hop(end, "submitted unrun")],
            )
        ran = after[-1]
        return failure_draft(
            facts,
            mode="3.2",
            pos=last.pos,
            title=f"No test of the project ran after {step.actor}'s last change",
            mechanism=(
                f"After the change at step {step.step_id} ('{last.quote[:80]}') only the agent's own programs ran "
                f"(last: '{ran.summary[:80]}' at step {facts.steps[ran.result].step_id}); no test runner ran before "
                f"the submission at step {facts.steps[end].step_id}."
            ),
            violated="a change is checked against the project's tests before it is submitted",
            evidence=[*evidence, facts.unit(ran.call, ran.summary)],
            effect=unestablished("whether the project's tests pass with the change is not in the trace"),
            path=[facts.hop(last.pos, "code changed"), facts.hop(ran.result, "own script only")],
        )

    # -- a fix never reproduced ---------------------------------------------------------------------
    def _unreproduced(self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit]) -> FindingDraft | None:
        first = fix[0]
        if any(r.call < first.pos for r in tests.runs):
            return None
        step = facts.steps[first.pos]
        return failure_draft(
            facts,
            mode="3.2",
            pos=first.pos,
            title=f"{step.actor} changed the code without reproducing the failure first",
            mechanism=(
                f"{step.actor}'s first change of the code (step {step.step_id}, '{first.quote[:80]}') came before "
                "any test or program ran: the failure it fixes was never shown."
            ),
            violated="a fix starts from the failure reproduced, so that its disappearance can be seen",
            evidence=[facts.unit(first.pos, first.quote)],
            effect=unestablished("whether the change addresses the reported failure is not shown before it"),
            path=[facts.hop(first.pos, "changed unreproduced")],
        )
