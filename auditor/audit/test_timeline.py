"""What the tests said in a coding run, in order: every edit of the code the run submitted, every
test or check run and on which code it ran (the original or the change), and the last word on each
test that ever failed.

A view over the test-run facts (``detectors.test_runs``) for whoever checks a coding finding: the
facts the coding-verification findings rest on, each by the step that shows it, so "the last test
run failed" or "no output supports the fix" can be read off the run itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from auditor.audit.detectors.test_runs import TestRun, TestRunFacts, first_line, runner_of, uncoloured
from schemas import StepKind, Trace


@dataclass(frozen=True)
class Entry:
    """One command of the run that changed the code or ran it."""

    step: str
    index: int
    act: str  # edit | revert | restore | test (the project's tests) | check (the agent's own)
    command: str
    files: tuple[str, ...] = ()  # what an edit wrote of the files the run changed
    code: str | None = None  # a run's: "original" or "changed"
    result_step: str | None = None
    result: str | None = None  # the runner's summary line (a script: passed / failed, exit code)
    failed: int = 0
    passed: int = 0
    failed_tests: tuple[str, ...] = ()
    raised_outside: tuple[str, ...] = ()  # where its failures were raised, when none ran through the change
    reported: tuple[str, ...] = ()  # the errors the request reports that it printed


@dataclass(frozen=True)
class Verdict:
    """A test that failed somewhere in the run, and what the last run that ran it said."""

    test: str
    first_failed: str  # the step of the result that first reported it failing
    last_run: str  # the step of the last result that ran it
    passing: bool  # the last run that ran it did not fail it
    on_original: bool | None  # it failed on the original code too (None: no run there ran it)


@dataclass(frozen=True)
class Evidence:
    """What the runs show of the fix, each by the step of the result that shows it."""

    reproduced: str | None  # the first run on the original code that failed (or printed the request's error)
    # else the first that failed with failures the change left standing (``left_standing``)
    standing: str | None
    # the request's errors that run printed, when it caught them and did not fail
    reproduced_printing: tuple[str, ...]
    shown_fixed: str | None  # a check that failed on the original code no longer failing so on the change
    # the request's errors that check printed on the original code and no longer prints, when it
    # never failed there (it caught them)
    shown_fixed_printing: tuple[str, ...]
    # that check ran clean; else it is a linter that still exits non-zero for other messages (the
    # reproduction's own conventions), and the messages the request names that it printed on the
    # original code and no longer prints follow (none when it crashed there)
    shown_fixed_clean: bool | None
    shown_fixed_messages: tuple[str, ...]
    # the errors the request names that the check prints on the change and no run on the original
    # code printed: what the request asks the change to raise
    shown_fixed_asked: tuple[str, ...]
    last_test: str | None  # the project's last test run on the change after its last edit
    last_test_passed: bool | None
    last_test_failed_before: bool  # every test it failed also failed on the original code
    last_test_picked: tuple[str, ...]  # what it picked within its targets (``-k`` words, test ids)
    edited_after_pass: (
        tuple[str, ...] | None
    )  # files edited after the last passing test run (None: none passed)


@dataclass(frozen=True)
class Timeline:
    submitted: str | None  # the step of the submitted diff (the harness's record of an empty one, a
    # session's closing report)
    reported: bool  # a session handed its change over in its closing report (no diff)
    empty: bool  # the submission was an empty diff
    changed: tuple[str, ...]  # the files it changes
    new: tuple[str, ...]  # those of them it adds
    entries: tuple[Entry, ...]
    verdicts: tuple[Verdict, ...]
    evidence: Evidence


def timeline(trace: Trace) -> Timeline:
    facts = TestRunFacts(trace)
    steps = facts.steps
    edits = {e.pos: e for e in facts.edits}
    reverts, restores = set(facts.reverts), set(facts.restores)
    runs = {r.call: r for r in facts.runs}
    entries = []
    for pos, (command, _) in facts.calls.items():
        edit, run = edits.get(pos), runs.get(pos)
        if pos in reverts:
            act = "revert"
        elif pos in restores:
            act = "restore"
        elif edit is not None:
            act = "edit"
        elif run is not None:
            # the project's tests, also when the runner printed no summary (the harness stopped it)
            stopped = not run.is_test and runner_of(run.command) is not None and facts.on_project(run)
            act = "test" if facts.project_test(run) or stopped else "check"
        else:
            continue  # a command that read or searched: no part of what the tests said
        patch = pos in facts.editing  # a script that patches the code is no run of it
        ran = run if run is not None and (run.is_test or not patch) else None
        files = tuple(t for t in edit.targets if t in facts.changed) if edit else ()
        entries.append(_entry(facts, pos, act, command, files, ran))
    submitted = [
        s.step_id for s in steps if s.kind is StepKind.final_output and s.content == facts.submission
    ]
    record = facts.empty_submission if facts.submission is None else None  # an empty diff submitted
    if record is not None:
        submitted = [steps[record].step_id]
    elif facts.closing_report is not None:
        submitted = [steps[facts.closing_report].step_id]
    return Timeline(
        submitted=submitted[-1] if submitted else None,
        reported=record is None and facts.submission is None and bool(submitted),
        empty=record is not None,
        changed=tuple(facts.changed),
        new=tuple(p for p, c in facts.changed.items() if c.new),
        entries=tuple(entries),
        verdicts=tuple(_verdicts(facts)),
        evidence=_evidence(facts),
    )


def _evidence(facts: TestRunFacts) -> Evidence:
    def step(run: TestRun | None) -> str | None:
        return facts.steps[run.result].step_id if run is not None else None

    fix = facts.source_edits
    last_edit = fix[-1].pos if fix else -1
    tests = facts.project_runs
    # a run after a revert tests the original code: not the change
    last = next((r for r in reversed(tests) if r.call > last_edit and not facts.on_original_code(r)), None)
    passed = next((r for r in reversed(tests) if r.ok), None)
    after = None
    if passed is not None:
        after = tuple(
            dict.fromkeys(t for e in fix if e.pos > passed.call for t in e.targets if t in facts.changed)
        )
    reproduced = next((r for r in facts.runs if facts.reproduces(r)), None)
    return Evidence(
        reproduced=step(reproduced),
        standing=step(
            next((r for r in facts.runs if facts.on_original_code(r) and facts.left_standing(r)), None)
        ),
        reproduced_printing=tuple(sorted(facts.printed_reported(reproduced)))
        if reproduced is not None and reproduced.ok
        else (),
        shown_fixed=step(facts.shown_fixed),
        shown_fixed_printing=_caught_then_gone(facts),
        shown_fixed_clean=facts.shown_fixed.clean if facts.shown_fixed is not None else None,
        shown_fixed_messages=_messages_then_gone(facts),
        shown_fixed_asked=tuple(sorted(facts.asked_printed(facts.shown_fixed)))
        if facts.shown_fixed is not None
        else (),
        last_test=step(last),
        last_test_passed=last.ok if last is not None else None,
        last_test_failed_before=last is not None and not last.ok and facts.failed_before(last),
        last_test_picked=last.selection if last is not None else (),
        edited_after_pass=after,
    )


def _entry(
    facts: TestRunFacts, pos: int, act: str, command: str, files: tuple[str, ...], run: TestRun | None
) -> Entry:
    step = facts.steps[pos]
    line = first_line(command) or command
    if run is None:
        return Entry(step.step_id, step.index, act, line, files)
    if run.is_test:
        result = uncoloured(run.summary).strip()
    elif run.ok:
        result = "passed"
    elif run.exit is None:  # the importer's reason where it recorded one (aider: the run reported errors)
        reason = facts.steps[run.result].raw.get("error_type")
        why = str(reason).replace("_", " ") if reason else "no exit code: the harness stopped it"
        result = f"failed ({why})"
    else:
        result = f"failed (exit {run.exit})" if run.exit else "failed (printed a traceback)"
    return Entry(
        step.step_id,
        step.index,
        act,
        line if run.is_test else run.summary,
        files,
        "original" if facts.on_original_code(run) else "changed",
        facts.steps[run.result].step_id,
        result,
        run.failed,
        run.passed,
        run.failed_ids,
        facts.raised_elsewhere(run),
        tuple(sorted(facts.printed_reported(run))),
    )


def _verdicts(facts: TestRunFacts) -> list[Verdict]:
    """Each failed test's last word: the last run after its first failure that ran it again (by its
    file and selection; a unittest id, which names no file, by the same check run again)."""
    first: dict[str, TestRun] = {}
    for run in facts.runs:
        for test in run.failed_ids:
            first.setdefault(test, run)
    # each looked for from the last run back: a suite rerun at the end answers for most tests at
    # once (every run asked of every test grew with both: a long run of narrowed reruns)
    runs = [r for r in reversed(facts.runs) if r.is_test]
    originals = [r for r in runs if facts.on_original_code(r)]
    out = []
    for test, failed in first.items():
        # the run that failed it ran it: there is always a last one
        last = next(r for r in runs if r.call >= failed.call and _ran(r, test, failed))
        original = next((r for r in originals if _ran(r, test, failed)), None)
        out.append(
            Verdict(
                test,
                facts.steps[failed.result].step_id,
                facts.steps[last.result].step_id,
                last.clears(test),
                not original.clears(test) if original is not None else None,
            )
        )
    return out


def _ran(run: TestRun, test: str, failed: TestRun) -> bool:
    """Whether ``run`` ran ``test``, which ``failed`` reported failing: it failed it, or its file and
    selection pick it (a unittest id, which names no file: the same check)."""
    covers = run.covers(test)
    return run.is_test and (
        test in run.failed_set or bool(covers) or (covers is None and run.key == failed.key)
    )


def as_json(found: Timeline) -> dict:
    """The timeline for machines (``--json``, the API): its facts, and the lines people read."""
    return {**asdict(found), "headline": submission_line(found), "evidence_lines": evidence_lines(found)}


# -- how every surface shows it (terminal, Markdown, HTML, console) ------------------------------------
ENTRY_COLUMNS = ("step", "act", "on code", "what", "result")
VERDICT_COLUMNS = ("test", "first failed", "last run", "then", "on the original code")
VERDICT_TITLE = "tests that failed, and their last run"


def is_coding(found: Timeline) -> bool:
    """A run that edited the code it submitted and ran something: one whose timeline says something."""
    return any(e.act == "edit" for e in found.entries) and any(e.result is not None for e in found.entries)


def files_text(found: Timeline, paths: tuple[str, ...]) -> str:
    return ", ".join(p + (" (new)" if p in found.new else "") for p in paths) or "none"


def submission_line(found: Timeline) -> str:
    changed = files_text(found, found.changed)
    if found.empty:
        return f"submitted an empty diff at {found.submitted}; files edited: {changed}"
    if found.reported:
        return f"no diff; the closing report at {found.submitted} hands over: {changed}"
    return (
        f"submitted at {found.submitted}: {changed}"
        if found.submitted
        else f"no submitted diff; files edited: {changed}"
    )


def evidence_lines(found: Timeline) -> list[tuple[str, str]]:
    """What the runs show of the fix, a (label, text) pair each."""
    ev = found.evidence
    last = f"{ev.last_test} {'passed' if ev.last_test_passed else 'FAILED'}" if ev.last_test else "none ran"
    if ev.last_test_picked:
        last += f" (picking {', '.join(ev.last_test_picked)})"
    if ev.last_test_failed_before:
        last += " (the same tests failed on the original code)"
    # a narrowed last run passing says nothing of the tests it did not pick
    left = [v for v in found.verdicts if not v.passing and not v.on_original]
    if ev.last_test_passed and left:
        last += (
            f"; {len(left)} test{'s' if len(left) > 1 else ''} that failed on the change never passed again"
        )
    if ev.edited_after_pass is None:
        after = "no test run of the project passed"
    else:
        after = ", ".join(ev.edited_after_pass) or "nothing"
    return [
        ("reproduced", _reproduced_text(ev)),
        ("shown fixed", _shown_text(ev)),
        ("project tests after the last edit", last),
        ("edited after the last passing test run", after),
    ]


def _caught_then_gone(facts: TestRunFacts) -> tuple[str, ...]:
    """The request's errors the shown-fixed check printed on the original code and no longer
    prints, when none of its runs there failed (it caught them); else none."""
    shown = facts.shown_fixed
    if shown is None or shown.key not in facts.checks:
        return ()
    before = facts.checks[shown.key][0]
    if any(not r.ok for r in before):
        return ()
    printed = frozenset().union(*(facts.printed_reported(r) for r in before))
    return tuple(sorted(printed - facts.printed_reported(shown)))


def _messages_then_gone(facts: TestRunFacts) -> tuple[str, ...]:
    """The request's messages the shown-fixed check, a linter's run that still exits non-zero,
    printed on the original code and no longer prints; else none."""
    shown = facts.shown_fixed
    verdict = facts.verdict(shown) if shown is not None and shown.key in facts.checks else None
    if verdict is None:
        return ()
    before = [v for r in facts.checks[shown.key][0] if (v := facts.verdict(r)) is not None]
    return tuple(sorted(str(m) for v in before for m in facts.messages_gone(v, verdict)))


def _listed(printed: tuple[str, ...]) -> str:
    """What a run printed of the request's: error names as they are, a linter's message quoted."""
    return ", ".join(f"'{p}'" if " " in p else p for p in printed)


def _shown_text(ev: Evidence) -> str:
    if ev.shown_fixed is None:
        return "no check went from failing to passing"
    if ev.shown_fixed_asked:
        asked = _listed(ev.shown_fixed_asked)
        return f"{ev.shown_fixed} (a check prints the request's {asked} on the change, which no run on the original code printed)"
    if ev.shown_fixed_messages:
        gone = "; ".join(f"'{m}'" for m in ev.shown_fixed_messages)
        return f"{ev.shown_fixed} (a linter no longer prints the message the request names: {gone})"
    if not ev.shown_fixed_clean:
        return f"{ev.shown_fixed} (a check that failed on the original code now prints a linter's messages alone)"
    if ev.shown_fixed_printing:
        printed = _listed(ev.shown_fixed_printing)
        return f"{ev.shown_fixed} (a check that printed the request's {printed} on the original code no longer does)"
    return f"{ev.shown_fixed} (a check that failed on the original code ran clean)"


def _reproduced_text(ev: Evidence) -> str:
    if ev.reproduced is None and ev.standing is not None:
        return f"none: {ev.standing} failed on the original code, with failures the change left standing"
    if ev.reproduced is None:
        return "no run failed on the original code"
    if ev.reproduced_printing:
        return (
            f"{ev.reproduced} (printed the request's {_listed(ev.reproduced_printing)} on the original code)"
        )
    return f"{ev.reproduced} (failed on the original code)"


def what_text(found: Timeline, entry: Entry) -> str:
    """An edit by the files it wrote, a run by its command."""
    return (
        files_text(found, entry.files)
        if entry.files and entry.act in ("edit", "revert", "restore")
        else entry.command
    )


def result_text(entry: Entry, named: int = 3) -> str:
    """A run's summary without the runner's rules of '=', where its failures were raised when the
    change was on none of their paths, and the first failed tests it names."""
    text = (entry.result or "").strip("= ")
    if entry.raised_outside:
        text += f"; raised outside the change, in {', '.join(entry.raised_outside)}"
    if entry.reported:
        text += f"; printed the request's {_listed(entry.reported)}"
    if entry.failed_tests:
        more = " …" if len(entry.failed_tests) > named else ""
        text += f" [{', '.join(entry.failed_tests[:named])}{more}]"
    return text


def verdict_cells(verdict: Verdict) -> tuple[str, str, str, str, str]:
    original = {True: "failed too", False: "passed", None: "not run"}[verdict.on_original]
    then = "passed" if verdict.passing else "FAILED"
    return verdict.test, verdict.first_failed, verdict.last_run, then, original
