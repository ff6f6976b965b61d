"""A coding agent's change, checked against what its own test runs said (MAST 3.2 / 3.3).

Reads the test-run facts (``test_runs``) of a run that submitted a diff (its final act), or of a
session whose harness records which files each edit wrote and created (Claude Code), which hands
its change over in its closing report (``closing_report``); any other run is judged only for
having submitted nothing, since which files existed before is otherwise unknown. The fix is the
edits of files that existed before and are neither tests nor prose (a release note); the
*submission* is the run's final act (the submitted diff, a session's closing report), else its
last command; the claim is the submitting turn, or the closing report itself (its success
sentence when it has one, else its first line). Each shape is filed at the act the failure
follows from:

- *submitted on a failing test* (3.3): a run of the project's tests after the fix failed, its
  failed tests did not all run again later without failing (a narrower rerun, ``-k`` or one test
  id, clears only the tests it picks), and they were not shown failing on the original code (a run
  before the first source edit, or after a ``git stash`` / ``git checkout`` revert): the change
  broke them or left them broken. When the agent's next turn names the failures (a failed test's
  name or file, or what was raised: the run's output in its own words) the title says it read
  them and went on, and the finding quotes that line, whatever it called them ("unrelated",
  "expected"): what the run did decides, not the words; when a later run of other tests passed,
  it says the failing tests were never passed again, not that the last run failed. Filed at the
  source edit just before the first failing run (of those tests, or a runner that died on the
  change just before them); realized (the run ended on it). When every failure the run reports
  was raised in code that is neither a test nor changed, through none of the changed files (the
  change is not on its path: a parser of the environment's Python), the failures are not shown
  to be the change's: a lead that quotes where they were raised;
- *the reported error raised again* (3.3): after the last edit, a check's last run (the project's
  tests or the agent's own script) raised an error the request reports and a run on the original
  code printed (one the request asks for, which the fix raises, is none), its traceback running
  through a changed file (``TestRunFacts.raised_reported``): the reported failure is still there
  on the path the change was to fix, whether or not it failed so before. Filed at the edit just
  before that run; realized; it stands in for a failing test run (the sharper form). The same
  error raised in code the change is not on (a probe of the standard library, the environment's
  import machinery) is not it;
- *an existing test edited to fit* (3.3): the submitted diff removes assertion lines from a test
  file that existed before (``new file mode`` absent) and adds others: the test now expects what
  the change does (also when the diff changes tests alone). Filed at the edit of that file;
  realized (the diff holds it). Not when a removed assertion expected what the principal's request
  quotes for the call it tested (``detectors.assertions``): the test pinned down the behaviour the
  request reports, and rewriting it is what the request asks;
- *the changed code never ran* (3.2): after the fix's last edit no command ran a test or a
  program before the submission (a script that patches the code is no run). Filed at that edit;
  realized; not when an earlier state of the change was shown fixing the failure (a check that
  failed on the original code passed on it), as below;
- *a fix no output supports* (3.2): after the last edit only the agent's own checks ran (its
  scripts, or a runner on files it wrote and does not submit), and no check that failed on the
  original code passes on the changed code (running the code that failed, or code that goes on
  from it: a script whose setup was mended in between may pass by its own change): nothing in the
  trace shows the failure going away,
  yet the change is submitted as the fix. Filed at the last edit; realized. When a check did go
  from failing to passing, the fix is shown and the project's tests not running after it is no
  finding (on the SWE-bench sample, 2 unresolved and 6 resolved runs have that shape). A script
  that caught an error the request reports and printed it (``except Exception as e: print(e)``,
  exit 0), or a linter's message the request names (``pylint --exit-zero``), failed so, and
  passes once it no longer prints it (``TestRunFacts.shown_fixed``). A
  linter exits non-zero while any message stands (pylint on a reproduction without docstrings):
  its run passes when the message the request names is gone and none came up, or when it crashed
  on the original code and prints its messages alone on the change (``TestRunFacts.verdict``);
- *a check that printed the same before and after* (3.2): every check that ran on the original
  code and again after the last edit printed byte for byte the same (and something), or, a
  linter's verdict, the same messages (pylint's score line says "previous run"): the change
  made no difference the run shows. Filed at the last edit; realized; it stands in for the two
  above (the same failure to show the fix, with both outputs quoted). A check whose code imports
  none of the changed files' packages never ran the change, and is not counted;
- *a fix never reproduced* (3.2): nothing ran before the first edit of the fix (tests that never
  started, ``TestRunFacts.reached_no_test``, ran nothing), so the failure it fixes was never
  shown. A lead; not for a session, whose request may ask for a feature;
- *none of the change submitted* (3.2): the run changed project files in place (``sed -i`` that
  exited 0, an editor's replace or insert: files that existed) and its submission holds no change
  of the project's code: an empty diff (the harness's record, ``empty_submission``) or a diff of
  new files, tests or prose alone (a ``git stash`` never popped, a cleanup that undid the fix).
  Filed at the revert that undid the change, else at its last edit; realized; it stands alone
  (the checks judged code never submitted). A diff that changes other code of the project may
  hold the fix moved there (an edit tried and put back), and is judged as any other;
- *an empty change submitted* (3.1): the harness recorded an empty submission and the run changed
  no project file on the way. Whether the request needed a change is a matter of its wording: a
  lead, at the submitting turn.

Every finding quotes the change, the output it rests on and the submitting turn's claim. For
attribution, a coding run's failure follows from its change: ``first_change`` is where the
submitted change begins, the decisive step when no finding names another.

A fix-and-rerun loop (a test fails, the code is edited, the rerun passes) is none of these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from auditor.audit.detectors.assertions import expectation, reported
from auditor.audit.detectors.base import AuditContext, FindingDraft
from auditor.audit.detectors.failure_facts import RunFacts, failure_draft, realized, unestablished
from auditor.audit.detectors.failure_verification import claim_of
from auditor.audit.detectors.test_runs import (
    Edit,
    TestRun,
    TestRunFacts,
    failure_reports,
    first_line,
    is_test_file,
    output_body,
    printed_text,
    uncoloured,
)
from auditor.core.json_text import json_value, strings
from schemas import ActorKind, EvidenceUnit, PropagationHop, RiskClass, StepKind, TraceStep

_NAME_PART = re.compile(r"::?")
_PARAMETERS = re.compile(r"\[.*\]$")
_TOKEN = re.compile(r"[\w./-]+")  # a name as a turn writes it: a test, a file, an exception
_NAMED = 6  # a shorter name (``E``, ``test``) is no sign that a turn read the failures


# How strongly each shape says the submitted fix is wrong (the finding's confidence, which grades
# risk_score). The run shows no evidence at all that the fix works (it never ran, only the agent's
# own checks ran and none showed a failure going away, or its check printed the same): strongest.
# Tests failing after the change: the failures may be the environment's, and the agent often says so
# rightly: the default. Existing assertions rewritten: a change of behaviour often rewrites them as
# the project's own fix does: weakest. Chosen on the development repositories (AUROC 0.730 -> 0.756).
LOST = 0.9  # nothing of the change was submitted: whatever the checks said, the fix is not there
UNSHOWN = 0.8
FAILING = 0.7
# Failing tests raised in code the change did not touch: their link to the change is not shown.
ELSEWHERE = 0.5
EDITED = 0.5


_FAILING_RULE = (
    "a change is submitted when the tests it affects pass, or their failures are shown not to be its own"
)


def _edit_before(fix: list[Edit], pos: int) -> Edit:
    """The fix's last edit before ``pos`` (its first when none is)."""
    return max((e for e in fix if e.pos <= pos), key=lambda e: e.pos, default=fix[0])


def _failing_path(facts: RunFacts, edit: Edit, run: TestRun, end: int) -> list[PropagationHop]:
    return [
        facts.hop(edit.pos, "code changed"),
        facts.hop(run.result, "tests failed"),
        facts.hop(end, "submitted"),
    ]


class CodingVerificationDetector:
    name = "coding_verification"
    risk_class = RiskClass.task_failure
    needs_annotations = False

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]:
        tests = TestRunFacts.of(ctx)
        lost = self._lost(ctx, tests) or self._nothing(ctx, tests)
        if lost is not None:
            return [lost]  # what the run tested is not what it submitted: nothing else to judge
        end = self._submission(tests) if tests.submission is not None else tests.closing_report
        if end is None:
            return []  # without the submitted diff, which files existed before (the fix) is unknown
        fix = tests.source_edits
        facts = RunFacts.of(ctx)
        if not fix:  # a diff of tests alone: rewritten assertions are all there is to judge
            return list(self._edited_tests(facts, tests, end))
        drafts = [
            d
            for d in (
                # the error the request reports raised again is the sharper form of a failing run
                self._raised_again(facts, tests, fix, end) or self._failing(facts, tests, fix, end),
                *self._edited_tests(facts, tests, end),
                # a check that printed the same is the sharper form of a fix no output supports
                self._unchanged(facts, tests, fix, end) or self._unverified(facts, tests, fix, end),
                # a session's request may as well ask for a feature as for a fix: nothing to reproduce
                self._unreproduced(facts, tests, fix, end) if tests.submission is not None else None,
            )
            if d is not None
        ]
        return drafts

    # -- submitted none of the change ----------------------------------------------------------------
    def _lost(self, ctx: AuditContext, tests: TestRunFacts) -> FindingDraft | None:
        """The run changed project files in place and submitted no change of the project's code:
        an empty diff (the harness's record) or one of new files, tests or prose alone (a ``git
        stash`` never popped, a cleanup that undid the fix)."""
        edits = tests.edited_in_place
        end = self._submission(tests) if tests.submission is not None else tests.empty_submission
        if not edits or end is None:
            return None  # nothing changed in place, or nothing submitted (a run the harness stopped)
        if tests.submission is not None and tests.source_files:
            return None  # the diff changes the project's code: the fix may have moved (a tried edit put back)
        facts = RunFacts.of(ctx)
        files = list(dict.fromkeys(t for e in edits for t in e.targets))
        last = edits[-1]
        step = facts.steps[last.pos]
        undone = max((p for p in tests.reverts if last.pos < p < end), default=None)
        shown = first_line(facts.steps[end].content)
        held = (
            "an empty diff"
            if tests.submission is None
            else f"a diff of {', '.join(tests.changed) or 'nothing'} alone"
        )
        mechanism = f"{step.actor} changed {', '.join(files)} in place (last at step {step.step_id}: '{last.quote[:80]}')"
        evidence = [facts.unit(last.pos, last.quote)]
        if undone is not None:
            undo = first_line(tests.calls[undone][0])
            mechanism += f"; at step {facts.steps[undone].step_id} '{undo[:80]}' put the code back"
            evidence.append(facts.unit(undone, undo))
        mechanism += f"; the submission at step {facts.steps[end].step_id} is {held}: none of that change."
        evidence += [facts.unit(end, shown), *self._claim_units(facts, tests, end)]
        return failure_draft(
            facts,
            mode="3.2",
            confidence=LOST,
            pos=undone if undone is not None else last.pos,
            title=f"{step.actor} submitted none of the change it made",
            mechanism=mechanism,
            violated="what is submitted is the change the run made and checked",
            evidence=evidence,
            effect=realized(
                f"the run ended (step {facts.steps[end].step_id}) submitting {held}",
                "the submission holds none of the fix",
            ),
            path=[
                facts.hop(last.pos, "code changed"),
                *([facts.hop(undone, "change undone")] if undone is not None else []),
                facts.hop(end, "submitted without it"),
            ],
        )

    def _nothing(self, ctx: AuditContext, tests: TestRunFacts) -> FindingDraft | None:
        """The run submitted an empty diff and changed no project file on the way: it ended with
        nothing to show. Whether the request needed a change is a matter of its wording: a lead."""
        end = tests.empty_submission
        if end is None or tests.submission is not None:
            return None
        facts = RunFacts.of(ctx)
        record = facts.steps[end]
        claim = self._claim(facts, tests, end)
        pos = claim[0] if claim else end
        quoted = first_line(record.content)
        return failure_draft(
            facts,
            mode="3.1",
            pos=pos,
            title=f"{facts.steps[pos].actor} submitted an empty change",
            mechanism=(
                f"The run ended at step {record.step_id} on the harness's record of a submission with no change "
                f"('{quoted}'): no file of the project was changed and kept."
            ),
            violated="a coding run ends by submitting the change it was asked for, or says why none is needed",
            evidence=[facts.unit(end, quoted), *([facts.unit(*claim)] if claim else [])],
            effect=unestablished("whether the request needed a change is not shown by the run"),
            path=[facts.hop(pos, "submitted"), facts.hop(end, "empty submission")],
        )

    @staticmethod
    def _submission(tests: TestRunFacts) -> int:
        """The run's last act: the submitted diff, else the last command."""
        steps = tests.steps
        final = [p for p, s in enumerate(steps) if s.kind is StepKind.final_output]
        return final[-1] if final else max(tests.calls, default=len(steps) - 1)

    @staticmethod
    def _claim(facts: RunFacts, tests: TestRunFacts, end: int) -> tuple[int, str] | None:
        """The submitting turn and what to quote of it: its success sentence, else its first line (a
        session's closing report is its own claim)."""
        closing = facts.steps[end].kind is StepKind.message and facts.steps[end].actor_kind is ActorKind.agent
        turn = end if closing else max((p for p in tests.calls if p < end), default=None)
        if turn is None:
            return None
        found = claim_of(facts.steps[turn].content)
        if found is not None:
            return turn, found[0]
        line = first_line(facts.steps[turn].content)
        return (turn, line) if line else None

    def _claim_units(self, facts: RunFacts, tests: TestRunFacts, end: int) -> list:
        claim = self._claim(facts, tests, end)
        return [facts.unit(claim[0], claim[1])] if claim else []

    # -- submitted on a failing test ---------------------------------------------------------------
    def _failing(
        self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit], end: int
    ) -> FindingDraft | None:
        after = [r for r in tests.project_runs if fix[0].pos <= r.call < end]
        broken = [
            r
            for r in after
            if not tests.on_original_code(r)
            and not r.ok
            and r.failed
            and not self._passed_later(tests, r, end)
            and not tests.failed_before(r)
        ]
        if not broken:
            return None
        raised = {r.call: tests.raised_elsewhere(r) for r in broken}
        shown = [r for r in broken if not raised[r.call]]
        if not shown:  # every failure was raised outside the change: not shown to be its own
            last = max(broken, key=lambda r: r.call)
            return self._failing_elsewhere(facts, tests, fix, last, raised[last.call], end)
        run = max(shown, key=lambda r: r.call)
        first = (
            next((r for r in after if not r.ok and set(r.failed_ids) & set(run.failed_ids or ("",))), run)
            if run.failed_ids
            else run
        )
        # the failing runs just before it that name no test (a runner that died on the change) are
        # the same failure seen earlier: it began at the edit before the first of them
        for earlier in reversed([r for r in after if r.call < first.call]):
            if earlier.ok or earlier.failed_ids:
                break
            first = earlier
        edit = _edit_before(fix, first.call)
        step = facts.steps[edit.pos]
        reply = next((p for p in tests.calls if p > run.result), None)
        named = _naming(tests, run, reply) if reply is not None and reply < end else None
        # a later run of other tests may have passed: then the failing run was not the last
        last = max(r.call for r in after if not tests.on_original_code(r))
        title = (
            f"{step.actor} named failing tests, then submitted without fixing them or showing they failed before"
            if named
            else f"{step.actor} submitted while its last test run failed"
            if run.call == last
            else f"{step.actor} submitted with failing tests that no later run passed"
        )
        mechanism = (
            f"After the change at step {step.step_id} ('{edit.quote[:80]}'), the test run at step "
            f"{facts.steps[run.result].step_id} reported '{uncoloured(run.summary)}'; no later run passed it and no run on the "
            "original code showed those failures"
        )
        if named:
            mechanism += f"; {step.actor} read them (step {facts.steps[named[0]].step_id}: '{named[1][:120]}') and went on"
        evidence = [facts.unit(edit.pos, edit.quote), facts.unit(run.result, run.summary)]
        if named:
            evidence.append(facts.unit(*named))
        evidence += self._claim_units(facts, tests, end)
        return failure_draft(
            facts,
            mode="3.3",
            confidence=FAILING,
            pos=edit.pos,
            title=title,
            mechanism=mechanism + ".",
            violated=_FAILING_RULE,
            evidence=evidence,
            effect=realized(
                f"the run ended (step {facts.steps[end].step_id}) with the failure unfixed",
                "the submitted change leaves tests failing",
            ),
            path=_failing_path(facts, edit, run, end),
        )

    def _raised_again(
        self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit], end: int
    ) -> FindingDraft | None:
        """After the last edit, a check's last run (a test, or the agent's own script) raised the
        error the request reports through a changed file: the reported failure is still there, on
        the path the change was to fix, and the run submitted."""
        latest: dict[str, TestRun] = {}
        for r in tests.runs:
            if fix[-1].pos < r.call < end and not tests.on_original_code(r) and r.call not in tests.editing:
                latest[r.key] = r
        found = [(r, raised) for r in latest.values() if not r.ok and (raised := tests.raised_reported(r))]
        if not found:
            return None
        run, (name, raised) = max(found, key=lambda pair: pair[0].call)
        said = raised[:120] + "…" * (len(raised) > 120)
        edit = _edit_before(fix, run.call)
        step = facts.steps[edit.pos]
        asked = next(
            p for p, s in enumerate(facts.steps) if s.actor_kind is ActorKind.human and name in s.content
        )
        return failure_draft(
            facts,
            mode="3.3",
            confidence=UNSHOWN,
            pos=edit.pos,
            title=f"{step.actor} submitted while its own run still raised the {name} the request reports",
            mechanism=(
                f"The request reports {name} (step {facts.steps[asked].step_id}). After the change at step "
                f"{step.step_id} ('{edit.quote[:80]}'), '{uncoloured(run.summary)[:80]}' raised '{said}' "
                f"at step {facts.steps[run.result].step_id}, through the changed code, and did not run again "
                "before the submission: the reported failure is still there on the path the change was to fix."
            ),
            violated="a fix is submitted when the failure it fixes no longer occurs on the run's own checks",
            evidence=[
                facts.unit(asked, name),
                facts.unit(edit.pos, edit.quote),
                facts.unit(run.result, raised[:200]),
                *self._claim_units(facts, tests, end),
            ],
            effect=realized(
                f"the run ended (step {facts.steps[end].step_id}) submitting the change",
                f"the submitted change leaves the reported {name} raised",
            ),
            path=_failing_path(facts, edit, run, end),
        )

    def _failing_elsewhere(
        self,
        facts: RunFacts,
        tests: TestRunFacts,
        fix: list[Edit],
        run: TestRun,
        raised: tuple[str, ...],
        end: int,
    ) -> FindingDraft:
        """Tests failed after the change, each raised in a file the change did not touch
        (``raised``) and through none it did, and the original code was never tested: whether they
        are the change's is not shown. A lead that names where they were raised, so a reader knows
        what to check (the change may still have made a value that code then rejected)."""
        edit = _edit_before(fix, run.call)
        step = facts.steps[edit.pos]
        return failure_draft(
            facts,
            mode="3.3",
            confidence=ELSEWHERE,
            pos=edit.pos,
            title=f"{step.actor} submitted with failing tests that its change is not shown to cause",
            mechanism=(
                f"After the change at step {step.step_id} ('{edit.quote[:80]}'), the test run at step "
                f"{facts.steps[run.result].step_id} reported '{uncoloured(run.summary)}'; every failure was "
                f"raised in {', '.join(raised)}, through none of the changed files, and no run on the original "
                "code shows whether they failed before."
            ),
            violated=_FAILING_RULE,
            evidence=[
                facts.unit(edit.pos, edit.quote),
                facts.unit(run.result, run.summary),
                facts.unit(run.result, raised[0]),  # where the output says the first was raised
                *self._claim_units(facts, tests, end),
            ],
            effect=unestablished(
                "whether the change causes these failures is not shown: the original code was never tested"
            ),
            path=_failing_path(facts, edit, run, end),
        )

    @staticmethod
    def _passed_later(tests: TestRunFacts, run: TestRun, end: int) -> bool:
        """Every failed test ran again later and did not fail (a narrower rerun, ``-k`` or one
        test id, clears only what it picks); without ids a run can be said to run again (a unittest id
        of a run that names files), a later passing run of the whole check."""
        later = [r for r in tests.project_runs if run.call < r.call < end]

        def cleared(test: str) -> bool:
            return any(r.covers(test) and r.clears(test) for r in later)

        if run.failed_ids and all(run.covers(i) is not None for i in run.failed_ids):
            return all(cleared(i) for i in run.failed_ids)
        return any(r.ok and r.key == run.key and not r.selection for r in later)

    # -- an existing test edited to fit -------------------------------------------------------------
    def _edited_tests(self, facts: RunFacts, tests: TestRunFacts, end: int) -> Iterable[FindingDraft]:
        for changed in tests.changed.values():
            if (
                changed.new
                or not is_test_file(changed.path)
                or not changed.removed_asserts
                or not changed.added_asserts
                or any(_reports(tests.request, line) for line in changed.removed_asserts)
            ):
                continue  # a test that pinned down the behaviour the request reports is the request's to rewrite
            edits = tests.test_edits(changed.path)
            pos = edits[0].pos if edits else end
            step = facts.steps[pos]
            removed = changed.removed_asserts[0]
            evidence = [facts.unit(edits[0].pos, edits[0].quote)] if edits else []
            evidence.append(facts.unit(end, removed) if removed in facts.steps[end].content else None)
            # what that test said: failing before its assertions were rewritten, and after
            ran = [r for r in tests.runs if r.is_test and r.names_file(changed.path) and r.call < end]
            failed = [r for r in ran if not r.ok and r.call < pos]
            evidence += [
                facts.unit(r.result, r.summary) for r in (failed[-1:] + [r for r in ran if r.call > pos][-1:])
            ]
            evidence += self._claim_units(facts, tests, end)
            yield failure_draft(
                facts,
                mode="3.3",
                confidence=EDITED,
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

    # -- the changed code never ran / no test output supports the claim / no project test after ---------
    def _unverified(
        self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit], end: int
    ) -> FindingDraft | None:
        last = fix[-1]
        after = [
            r
            for r in tests.runs
            if last.pos <= r.call < end
            and (r.is_test or r.call not in tests.editing)
            and not tests.on_original_code(r)
        ]
        if any(tests.project_test(r) for r in after):
            return None
        step = facts.steps[last.pos]
        evidence = [facts.unit(last.pos, last.quote), *self._claim_units(facts, tests, end)]
        shown = tests.shown_fixed is not None
        if not after and shown:
            # an earlier state of the change was shown fixing the failure and its last edit (a
            # cleanup, a second thought) never ran: as below, a fix shown is no finding
            return None
        if not after:
            return self._submitted(
                facts,
                last,
                end,
                title=f"{step.actor} submitted a change that never ran",
                mechanism=(
                    f"{step.actor} changed the code at step {step.step_id} ('{last.quote[:80]}'); no test or program "
                    f"ran after it before the submission at step {facts.steps[end].step_id}."
                ),
                violated="a change is run before it is submitted as a fix",
                evidence=evidence,
                material="the submitted change was never executed",
                path=[facts.hop(last.pos, "code changed"), facts.hop(end, "submitted unrun")],
            )
        if shown:
            # A failure shown going away verifies the fix; that the project's tests did not run after
            # it is no failure by itself (no unresolved run of the development repositories had it).
            return None
        # quote the last check that ran the change (one importing none of it shows nothing of it)
        ran = next((r for r in reversed(after) if tests.exercises(r) is not False), after[-1])
        evidence += [facts.unit(ran.call, ran.summary), self._output_unit(facts, ran)]
        named = sorted(tests.reported_errors)
        caught = f" (or printed the request's {', '.join(named[:3])})" if named else ""
        return self._submitted(
            facts,
            last,
            end,
            title=f"{step.actor} submitted a change that no test output in the run supports",
            mechanism=(
                f"After the change at step {step.step_id} ('{last.quote[:80]}') no test runner ran the project's tests, "
                f"and no check that failed{caught} on the original code passed on the changed code: the agent's own "
                f"checks (last: '{uncoloured(ran.summary)[:80]}' at step {facts.steps[ran.result].step_id}) show no "
                "failure going away, yet the run submitted it as a fix."
            ),
            violated="a fix is submitted on output that shows it: the project's tests, or a failure that disappears",
            evidence=evidence,
            material="the submitted fix rests on no output that shows it",
            path=[facts.hop(last.pos, "code changed"), facts.hop(end, "submitted unsupported")],
        )

    @staticmethod
    def _submitted(
        facts: RunFacts,
        last: Edit,
        end: int,
        *,
        title: str,
        mechanism: str,
        violated: str,
        evidence: list[EvidenceUnit | None],
        material: str,
        path: list[PropagationHop],
    ) -> FindingDraft:
        """A 3.2 finding at the change's last edit, realized: the run ended by submitting it."""
        return failure_draft(
            facts,
            mode="3.2",
            confidence=UNSHOWN,
            pos=last.pos,
            title=title,
            mechanism=mechanism,
            violated=violated,
            evidence=evidence,
            effect=realized(
                f"the run ended (step {facts.steps[end].step_id}) submitting the change", material
            ),
            path=path,
        )

    @staticmethod
    def _output_unit(facts: RunFacts, run: TestRun) -> EvidenceUnit | None:
        """The last line a run printed (its verdict, where it prints one), quoted from its result;
        None when it printed nothing."""
        lines = [ln.strip() for ln in output_body(facts.steps[run.result]).splitlines() if ln.strip()]
        return facts.unit(run.result, lines[-1][:200]) if lines else None

    # -- the change made no difference its own check shows ---------------------------------------------
    def _unchanged(
        self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit], end: int
    ) -> FindingDraft | None:
        last = fix[-1]
        pairs = []
        for before, changed in tests.checks.values():
            after = [r for r in changed if last.pos < r.call < end]
            if (
                after and tests.exercises(after[-1]) is not False
            ):  # one that never ran the change says nothing
                pairs.append((before[-1], after[-1]))
        same = [(b, a) for b, a in pairs if self._same(facts, tests, b, a)]
        if not same or len(same) < len(pairs):
            return None  # no check ran on both sides, or one of them shows the change
        before, after = same[-1]
        step = facts.steps[last.pos]
        messages = tests.verdict(after)
        what = "the same messages" if messages else "the same output"
        return self._submitted(
            facts,
            last,
            end,
            title=f"{step.actor}'s check printed the same before and after its change, and it submitted",
            mechanism=(
                f"'{uncoloured(after.summary)[:80]}' printed {what} on the original code (step "
                f"{facts.steps[before.result].step_id}) and after the last change at step {step.step_id} "
                f"(step {facts.steps[after.result].step_id}), and no other check ran on both: the run shows "
                "no effect of the change it submitted as a fix."
            ),
            violated="a fix changes what the check of the reported failure shows",
            evidence=[
                facts.unit(last.pos, last.quote),
                *(
                    self._message_units(facts, tests, (before, after))
                    if messages
                    else (self._output_unit(facts, before), self._output_unit(facts, after))
                ),
                *self._claim_units(facts, tests, end),
            ],
            material="the submitted fix makes no difference its own check shows",
            path=[
                facts.hop(before.result, "check on the original code"),
                facts.hop(last.pos, "code changed"),
                facts.hop(after.result, "same output"),
            ],
        )

    @staticmethod
    def _same(facts: RunFacts, tests: TestRunFacts, before: TestRun, after: TestRun) -> bool:
        """A check printed the same on both codes: byte for byte (and something), or, a linter's
        verdict, the same messages (its score line may still differ: pylint's "previous run")."""
        if facts.steps[before.result].content == facts.steps[after.result].content:
            return bool(output_body(facts.steps[after.result]))
        verdict = tests.verdict(after)
        return verdict is not None and verdict == tests.verdict(before)

    @staticmethod
    def _message_units(facts: RunFacts, tests: TestRunFacts, runs: tuple[TestRun, ...]) -> list:
        """For each run, the line of the message the request names (else its first message)."""
        units = []
        for run in runs:
            messages = sorted(tests.verdict(run) or ())
            shown = next(iter(sorted(tests.named(messages))), messages[0] if messages else None)
            units.append(facts.unit(run.result, shown.text) if shown else None)
        return units

    # -- a fix never reproduced ---------------------------------------------------------------------
    def _unreproduced(
        self, facts: RunFacts, tests: TestRunFacts, fix: list[Edit], end: int
    ) -> FindingDraft | None:
        first = fix[0]
        if any(r.call < first.pos and not tests.reached_no_test(r) for r in tests.runs):
            return None
        step = facts.steps[first.pos]
        ran = next((r for r in tests.runs if r.call > first.pos), None)  # the first run: on the change
        shown = [facts.unit(ran.call, ran.summary), self._output_unit(facts, ran)] if ran else []
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
            evidence=[facts.unit(first.pos, first.quote), *shown, *self._claim_units(facts, tests, end)],
            effect=unestablished("whether the change addresses the reported failure is not shown before it"),
            path=[facts.hop(first.pos, "changed unreproduced")],
        )


def first_change(ctx: AuditContext) -> tuple[str, EvidenceUnit | None] | None:
    """(step id, a verbatim quote of it) of the first edit of the submitted change: where an
    unresolved coding run's failure begins when no finding names a later act; None for a run that
    submitted no diff and closed no session with a report."""
    tests = TestRunFacts.of(ctx)
    if (tests.submission is None and tests.closing_report is None) or not tests.source_edits:
        return None
    edit = tests.source_edits[0]
    return tests.steps[edit.pos].step_id, RunFacts.of(ctx).unit(edit.pos, edit.quote)


def _failure_names(tests: TestRunFacts, run: TestRun) -> frozenset[str]:
    """What names a run's failures: each failed test's file (or dotted label) and function, its
    parameters dropped, and what its reports say was raised."""
    names = set()
    for test in run.failed_ids:
        parts = _NAME_PART.split(_PARAMETERS.sub("", test))
        names |= {parts[0], parts[0].rsplit("/", 1)[-1], parts[-1], parts[-1].rsplit(".", 1)[-1]}
    names |= {raised for _, raised in failure_reports(printed_text(tests.steps[run.result])) if raised}
    return frozenset(n for n in names if len(n) >= _NAMED)


def _naming(tests: TestRunFacts, run: TestRun, reply: int) -> tuple[int, str] | None:
    """(position, line) of the first line the agent wrote after a run, up to its next command,
    that names one of the run's failures: it read them (a value of the run's output reappears in
    its own words), whatever it then said of them. Its words are its messages and the text of the
    next call before the command (a thought above a fenced block); the command, or a tool call's
    arguments (a JSON object), are not."""
    names = _failure_names(tests, run)
    said = [
        (p, tests.steps[p].content)
        for p in range(run.result + 1, reply)
        if tests.steps[p].kind is StepKind.message and tests.steps[p].actor_kind is ActorKind.agent
    ]
    said.append((reply, _before_command(tests.steps[reply], tests.calls[reply][0])))
    for pos, text in said:
        for line in text.splitlines():
            if any(token.rstrip(".") in names for token in _TOKEN.findall(line)):
                return pos, line.strip()[:200]
    return None


def _before_command(step: TraceStep, command: str) -> str:
    """A call's own words: its text before the command it runs (mini-SWE-agent's thought above a
    fenced block), or the whole of it when it holds neither the command nor an argument (SWE-agent's
    and OpenHands' thought beside the call); none when the text is the call's arguments (a JSON
    object, or an argument's value: a path, a command line)."""
    content = step.content
    if content.lstrip().startswith("{") and isinstance(json_value(content), dict):
        return ""
    at = content.find(command) if command else -1
    if at >= 0:
        return content[:at]
    said = content.strip()
    return (
        "" if any(said in value for value in strings(step.tool.arguments if step.tool else None)) else content
    )


def _reports(request: str, assertion: str) -> bool:
    """Whether the request quotes what an existing assertion expected, for the call it tested."""
    expected = expectation(assertion)
    return expected is not None and reported(expected, request)
