"""Coding-agent runs (issue 29): mini-SWE-agent trajectories as commands and results (and SWE-agent's
and OpenHands' runs with the same facts and their submission as the final act), test-run facts read
from real runner outputs, the coding verification findings and the attribution of a failed coding
run to its change, on frozen real runs (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from auditor.audit.detectors.coding_verification import _before_command
from auditor.audit.detectors.test_runs import (
    _MESSAGE_KIND,
    TestRun,
    TestRunFacts,
    _program,
    command_of,
    diagnostics,
    failure_reports,
    is_test_code,
    is_test_file,
    parse_output,
    printed_text,
    runner_of,
    uncoloured,
    writes_files,
)
from auditor.audit.detectors.unverified_relay import HIDDEN_FAILURE
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.disposition import ACTIONABLE
from auditor.audit.report.validator import validate_report
from auditor.audit.test_timeline import evidence_lines, result_text, timeline
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind, Trace
from tests.cli_helpers import run
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real"
EDITED = REAL / "mini-swe-agent" / "sympy__sympy-13852.traj.json"  # unresolved; an existing test edited
CLEAN = REAL / "mini-swe-agent" / "sympy__sympy-18211.traj.json"  # tests rerun after the fix, passing
RESTORED = REAL / "mini-swe-agent" / "sympy__sympy-19346.traj.json"  # cp X X.bak; git checkout X; mv back
UNSUPPORTED = REAL / "mini-swe-agent" / "sphinx-doc__sphinx-10435.traj.json"  # unresolved; own scripts only
CAUGHT = REAL / "mini-swe-agent" / "astropy__astropy-7606.traj.json"  # unresolved; prints the caught error
SAME = REAL / "mini-swe-agent" / "sphinx-doc__sphinx-7590.traj.json"  # unresolved; same output both sides
NARROWED = REAL / "mini-swe-agent" / "sympy__sympy-18763.traj.json"  # unresolved; failures, then -k reruns
SAME_UNTESTED = REAL / "mini-swe-agent" / "astropy__astropy-7671.traj.json"  # resolved; same output, no test
SHOWN = REAL / "mini-swe-agent" / "sympy__sympy-19954.traj.json"  # resolved; a failing check then clean
EXTENDED = REAL / "mini-swe-agent" / "sympy__sympy-20438.traj.json"  # unresolved; a script extended by >>
SUBMITTED_TESTS = (
    REAL / "mini-swe-agent" / "sympy__sympy-14531.traj.json"
)  # resolved; tests run, then in the diff
REBUILT = REAL / "mini-swe-agent" / "sphinx-doc__sphinx-9229.traj.json"  # unresolved; rebuilt after each edit
REPLAYED = (
    REAL / "mini-swe-agent" / "sphinx-doc__sphinx-7440.traj.json"
)  # resolved; git checkout X, edits redone
UNDONE = (
    REAL / "mini-swe-agent" / "matplotlib__matplotlib-26342.traj.json"
)  # resolved; sed 'N,Md' undoes, 'Ni' redoes
DEBUG_UNDONE = (
    REAL / "mini-swe-agent" / "sphinx-doc__sphinx-10435.traj.json"
)  # a debug line inserted, then deleted
COMMENTED = (
    REAL / "mini-swe-agent" / "pytest-dev__pytest-5840.traj.json"
)  # a script's comment names the changed file
SWE_AGENT = REAL / "swe-agent" / "sweagenttestrepo-1c2844.traj"  # SWE-agent 1.x, windowed edit, submitted
OPENHANDS = REAL / "openhands" / "wrong_initial_state.json"  # an event stream whose command renames a file
RUNS = REAL / "test-runs"


def trace_of(path: Path) -> Trace:
    imported = next(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


def test_a_mini_swe_agent_run_is_commands_and_results():
    assert detect(EDITED)[0] == "mini-swe-agent"
    trace = trace_of(EDITED)
    steps = trace.steps
    assert trace.header.framework == "mini-SWE-agent" and trace.header.task.startswith(
        "Consider the following PR"
    )
    assert [s.actor_kind.value for s in steps[:2]] == ["system", "human"]
    calls = [s for s in steps if s.kind is StepKind.tool_call]
    assert calls and all(s.tool.name == "bash" and s.tool.arguments["command"] in s.content for s in calls)
    for call in calls:  # every call is answered by the next step, the shell's observation
        result = steps[call.index + 1]
        assert result.kind is StepKind.tool_result and result.refs.reply_to == call.step_id
        answer = call.tool.arguments["command"].split("|")[-1].split()[0] in ("grep", "diff", "cmp", "test")
        if result.content.startswith("<returncode>0<"):
            assert result.raw["status"] == "ok"
        elif result.content.startswith("<returncode>1<") and answer:  # nothing matched: no failure
            assert result.raw["status"] == "ok" and result.raw["exit_code"] == 1
        elif result.content.startswith("<returncode>"):
            assert result.raw["status"] == "error" and result.raw["exit_code"] != 0
    assert steps[-1].kind is StepKind.final_output and steps[-1].content.startswith("diff --git")
    assert trace.header.metadata["exit_status"] == "Submitted" and "outcome" not in trace.header.metadata


def test_detection_reads_the_top_level_keys_when_info_fills_the_head(tmp_path):
    """An older file (no trajectory_format) whose ``info`` comes first and outgrows 64 KiB."""
    doc = json.loads(EDITED.read_text())
    diff = doc["info"]["submission"]
    info = dict(doc["info"], submission=diff * (70_000 // len(diff) + 1))
    path = tmp_path / "old.traj.json"
    path.write_text(json.dumps({"info": info, "messages": doc["messages"]}))
    assert b'"messages"' not in path.read_bytes()[: 64 * 1024]
    name, reason = detect(path)
    assert name == "mini-swe-agent" and "mini_version" in reason


V2 = REAL / "mini-swe-agent-v2"  # mini-swe-agent 2.x (trajectory_format mini-swe-agent-1.1)


@pytest.mark.parametrize("name", ["toolcall_submitted", "toolcall_limits", "textbased_submitted"])
def test_a_mini_swe_agent_v2_run_is_commands_and_results(name):
    """v2 writes the harness's parsed actions (``extra.actions``: one or more a turn, tool calls
    answered by ``role: tool`` messages naming their id, or text turns' ```` ```mswea_bash_command ````
    blocks) and ends with an ``exit`` message: every action is a bash call, every answer its result."""
    path = V2 / f"{name}.traj.json"
    assert detect(path)[0] == "mini-swe-agent"
    doc = json.loads(path.read_text())
    actions = [
        a["command"] for m in doc["messages"] if m["role"] == "assistant" for a in m["extra"]["actions"]
    ]
    steps = trace_of(path).steps
    calls = [s for s in steps if s.kind is StepKind.tool_call]
    assert [c.tool.arguments["command"] for c in calls] == actions
    by_id = {s.step_id: s for s in steps}
    for result in (s for s in steps if s.kind is StepKind.tool_result):
        call = by_id[result.refs.reply_to]
        answered = next(m for m in doc["messages"] if m.get("content") == result.content)
        assert answered.get("tool_call_id") in (None, call.tool.call_id)


def test_a_v2_turn_of_two_calls_gets_each_its_own_result_and_the_fix_stands():
    trace = trace_of(V2 / "toolcall_submitted.traj.json")
    steps = trace.steps
    turn = [s for s in steps if s.kind is StepKind.tool_call and s.tool.call_id.startswith("call_3_")]
    assert [c.tool.arguments["command"] for c in turn] == [
        "python repro.py",
        "python tests/runtests.py utils_tests.test_text",
    ]
    results = {s.refs.reply_to: s for s in steps if s.kind is StepKind.tool_result}
    assert "OK" in results[turn[1].step_id].content and "release-notes" in results[turn[0].step_id].content
    assert steps[-1].kind is StepKind.final_output and steps[-1].content.startswith("diff --git")
    assert coding_findings(trace) == []  # reproduced, fixed, shown fixed, the project's tests pass


def test_a_run_the_harness_stopped_at_its_limit_stopped_only_there(tmp_path):
    """Without a submission the run ends on the harness's record (v2's exit message, v1's
    ``info.exit_status``): it ran until the step or cost limit stopped it (1.5, realized). Such a
    run submits no change, and was read as quiet."""
    v2 = run_rules_audit(trace_of(V2 / "toolcall_limits.traj.json"))
    doc = json.loads(CLEAN.read_text())
    doc["messages"] = [*doc["messages"][:-2], {"role": "user", "content": ""}]
    doc["info"] |= {"exit_status": "LimitsExceeded", "submission": ""}
    (tmp_path / "v1.traj.json").write_text(json.dumps(doc))
    v1 = run_rules_audit(trace_of(tmp_path / "v1.traj.json"))
    for report in (v1, v2):
        (limit,) = [f for f in report.findings if f.detector == "failure_termination"]
        assert limit.failure_mode == "1.5" and limit.disposition.value == "realized"
        assert limit.evidence[0].quote == "LimitsExceeded"
        assert not [f for f in report.findings if f.detector == "coding_verification"]


@pytest.mark.parametrize(
    ("name", "held"),
    [("stash_unpopped_empty", "an empty diff"), ("stash_unpopped_scratch_only", "a diff of repro.py alone")],
)
def test_a_change_stashed_and_never_popped_is_submitted_none_of(name, held):
    """Real mini-swe-agent v2 runs: the fix made and checked, ``git stash`` to see the original
    fail, never popped; the submission is empty (the harness's record) or holds the scratch script
    alone. Nothing of the fix was submitted: realized, filed at the stash."""
    trace = trace_of(V2 / f"{name}.traj.json")
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    (lost,) = coding_findings(trace)
    assert lost.title == "agent submitted none of the change it made" and lost.failure_mode == "3.2"
    assert lost.disposition.value == "realized" and lost.confidence == 0.9
    stash = next(s for s in trace.steps if s.kind is StepKind.tool_call and "git stash" in command_of(s))
    assert lost.first_anomalous_step == stash.step_id
    assert f"is {held}: none of that change" in lost.mechanism and "django/utils/text.py" in lost.mechanism
    if name == "stash_unpopped_empty":
        end = trace.steps[-1]
        assert (
            end.raw["record"] == "exit" and end.raw["empty_submission"] is True and end.content == "Submitted"
        )
        assert lost.evidence[-2].quote == "Submitted" and lost.evidence[-2].step_id == end.step_id


def test_a_run_that_changed_nothing_and_submitted_an_empty_diff_is_a_lead():
    """A real v2 run that reproduced the behaviour, changed nothing and submitted: whether the
    request needed a change is a matter of its wording, so a lead (3.1) at the submitting turn."""
    trace = trace_of(V2 / "submitted_nothing.traj.json")
    (found,) = coding_findings(trace)
    assert (found.title, found.failure_mode, found.disposition.value) == (
        "agent submitted an empty change",
        "3.1",
        "lead",
    )
    submit = next(s for s in reversed(trace.steps) if s.kind is StepKind.tool_call)
    assert found.first_anomalous_step == submit.step_id and found.evidence[0].quote == "Submitted"


def test_a_change_stashed_and_popped_before_the_submission_is_submitted():
    trace = trace_of(V2 / "stash_popped.traj.json")
    assert trace.steps[-1].kind is StepKind.final_output and coding_findings(trace) == []


def test_an_empty_submission_is_the_harness_record_in_v1_and_swe_agent_too(tmp_path):
    """mini-SWE-agent v1 (``info.submission`` empty, ``Submitted``) and SWE-agent (``submitted``):
    the run ends on the harness's record of an empty submission; the v1 run changed a source file in
    place and submitted none of it; the SWE-agent run edited only a test file: nothing of the
    project's code lost, an empty change submitted."""
    v1 = json.loads(CLEAN.read_text())
    v1["info"]["submission"] = ""
    swe = json.loads(SWE_AGENT.read_text())
    swe["info"] |= {"exit_status": "submitted", "submission": ""}
    for name, doc, status in (("v1.traj.json", v1, "Submitted"), ("swe.traj", swe, "submitted")):
        (tmp_path / name).write_text(json.dumps(doc))
        trace = trace_of(tmp_path / name)
        end = trace.steps[-1]
        assert (end.kind, end.content, end.raw.get("empty_submission")) == (StepKind.message, status, True)
        (found,) = coding_findings(trace)
        if status == "Submitted":  # the v1 run changed a source file in place: none of it submitted
            assert found.mechanism.endswith("is an empty diff: none of that change.")
        else:  # the SWE-agent run changed a test file alone: an empty change, a lead
            assert found.title == "agent submitted an empty change" and found.disposition.value == "lead"


def test_edits_of_files_the_run_made_or_copied_are_no_lost_change():
    """A script the run wrote and edited, or a copy it made, existed only in the run: submitting
    without them loses nothing of the project."""
    made = "cat <<'EOF' > tool.py\nx = 1\nEOF"
    copied = f"cp {CHANGED} backup.py"
    trace = _coding_run(
        [(made, "<returncode>0</returncode>"), ("sed -i 's/x = 1/x = 2/' tool.py", "<returncode>0</returncode>"),
         (copied, "<returncode>0</returncode>"), ("sed -i 's/a/b/' backup.py", "<returncode>0</returncode>")]
    )  # fmt: skip
    assert TestRunFacts(trace).edited_in_place == []


@pytest.mark.parametrize(
    ("status", "limit"), [("exit_cost", True), ("submitted (exit_context)", True), ("exit_format", False)]
)
def test_a_swe_agent_run_its_harness_ended_carries_the_record(tmp_path, status, limit):
    """SWE-agent's exit statuses: a cost or context limit (also when the harness then submitted
    what there was) is the run stopping at the framework's limit; a format exit is recorded, no limit."""
    doc = json.loads(SWE_AGENT.read_text())
    doc["info"]["exit_status"] = status
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc))
    trace = trace_of(path)
    record = next(s for s in trace.steps if s.raw.get("record") == "exit")
    assert record.content == status and trace.steps[-1].kind is StepKind.final_output
    found = [f for f in run_rules_audit(trace).findings if f.detector == "failure_termination"]
    assert [f.evidence[0].quote for f in found] == ([status] if limit else [])


def test_an_openhands_run_its_controller_stopped_at_maximum_iteration(tmp_path):
    """OpenHands records the end as the agent's state changing to ``error`` with its reason: the
    controller's record, a step now, and a maximum iteration reached is the framework's limit."""
    events = json.loads(OPENHANDS.read_text())
    reason = "RuntimeError: Agent reached maximum iteration in headless mode. Current iteration: 3, max iteration: 3"
    events.append(
        {"id": 99, "timestamp": "2025-02-01T00:20:00", "source": "environment", "message": "",
         "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "error", "reason": reason}}
    )  # fmt: skip
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    trace = trace_of(path)
    assert trace.steps[-1].content == reason and trace.steps[-1].raw["record"] == "exit"
    (limit,) = [f for f in run_rules_audit(trace).findings if f.detector == "failure_termination"]
    assert limit.failure_mode == "1.5" and limit.evidence[0].quote == reason


def test_v2_actions_that_are_not_commands_are_refused_with_their_field(tmp_path):
    doc = json.loads((V2 / "textbased_submitted.traj.json").read_text())
    doc["messages"][2]["extra"]["actions"] = [{"cmd": "ls"}]
    path = tmp_path / "bad.traj.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        trace_of(path)
    assert "messages[2].extra.actions" in info.value.one_line()


def test_a_broken_message_names_the_field(tmp_path):
    doc = json.loads(EDITED.read_text())
    doc["messages"][3]["content"] = 7
    path = tmp_path / "bad.traj.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        trace_of(path)
    assert "messages[3].content" in info.value.one_line()


@pytest.mark.parametrize(
    ("name", "runner", "failed", "passed"),
    [
        ("pytest_failed.txt", "pytest", 1, 0),
        ("pytest_passed.txt", "pytest", 0, 11),
        ("pytest_interrupted.txt", "pytest", 2, 0),
        ("pytest_old_seconds.txt", "pytest", 1, 3),
        ("pytest_coloured.txt", "pytest", 0, 201),
        ("pytest_nothing_collected.txt", "pytest", 0, 0),
        ("pytest_qq_failing.txt", "pytest", 4, 4),
        ("pytest_qq_passing.txt", "pytest", 0, 2),
        ("pytest_params_spaced.txt", "pytest", 4, 1),
        ("pytest_params_spaced_verbose.txt", "pytest", 4, 1),
        ("sympy_wrapped.txt", "sympy", 1, 212),
        ("sympy_failed.txt", "sympy", 1, 8),
        ("sympy_exception.txt", "sympy", 1, 1623),
        ("unittest_failed.txt", "unittest", 2, 1),
        ("unittest_ok.txt", "unittest", 0, 1),
        ("django_failed.txt", "unittest", 2, 1),
        ("django_ok.txt", "unittest", 0, 3),
        ("django_runtests_subtests_failed.txt", "unittest", 7, 9),
        ("django_runtests_ok_skipped.txt", "unittest", 0, 619),
        ("tox_failed.txt", "tox", 1, 0),
        ("tox_ok.txt", "tox", 0, 1),
        ("nox_failed.txt", "nox", 1, 0),
        ("nox_ok.txt", "nox", 0, 1),
        # every test binary's summary counts: unit tests, integration tests, doctests
        ("cargo_test_failed.txt", "cargo", 2, 1),
        ("cargo_test_no_fail_fast.txt", "cargo", 3, 4),
        ("cargo_test_passed.txt", "cargo", 0, 7),
        ("cargo_test_quiet.txt", "cargo", 0, 7),
        ("cargo_test_filtered.txt", "cargo", 0, 2),
        ("cargo_test_compile_error.txt", "cargo", 1, 0),  # the change does not compile
        # a package a line: failing tests by name, packages that passed
        ("go_test_failed.txt", "go", 2, 1),
        ("go_test_verbose_failed.txt", "go", 2, 1),
        ("go_test_passed.txt", "go", 0, 2),
        ("go_test_build_failed.txt", "go", 1, 1),
        ("node_test_failed.txt", "node", 1, 1),
        ("node_test_passed.txt", "node", 0, 2),
        ("bun_test_failed.txt", "bun", 1, 2),
        ("bun_test_passed.txt", "bun", 0, 3),
        ("vitest_failed.txt", "vitest", 1, 3),
        ("vitest_failed_coloured.txt", "vitest", 1, 3),
        ("vitest_passed.txt", "vitest", 0, 4),
        ("jest_failed.txt", "jest", 1, 3),  # jest's "Tests:" line, not pytest's counts
        ("jest_passed.txt", "jest", 0, 4),
    ],
)
def test_runner_summaries_are_read_from_real_outputs(name, runner, failed, passed):
    text = (RUNS / name).read_text()
    found = parse_output(text)
    assert found is not None and found[:1] == (runner,) and found[2:4] == (failed, passed)
    assert found[1] in text  # the summary is a verbatim quote


def test_a_coloured_summary_is_read_and_quoted_verbatim():
    """pytest --color: the counts sit between colour codes; the quote keeps them, the prose drops them."""
    text = (RUNS / "pytest_coloured.txt").read_text()
    summary = parse_output(text)[1]
    assert summary in text and "\x1b[" in summary
    assert uncoloured(summary).strip("= ") == "201 passed, 4 skipped in 0.59s"


def test_a_runner_that_collected_nothing_reached_no_project_test():
    """pytest on a path not found (exit 4, ``collected 0 items``) ran no test of the project."""
    facts = TestRunFacts(trace_of(REPLAYED))
    runner, summary, failed, passed, ids = parse_output((RUNS / "pytest_nothing_collected.txt").read_text())
    nothing = TestRun(0, 1, runner, "pytest tests/test_domain_python.py", summary, failed, passed, ids, 4)
    assert not nothing.ok and not facts.project_test(nothing)
    assert facts.project_test(replace(nothing, passed=1, exit=0))


def test_a_runner_the_shell_could_not_find_is_no_run():
    """``pytest`` not installed (exit 127, the shell's not found): nothing ran, no check failed."""
    facts = TestRunFacts(trace_of(NARROWED))
    missing = next(p for p, (command, _) in facts.calls.items() if command.startswith("pytest "))
    assert facts.steps[missing + 1].raw["exit_code"] == 127
    assert missing not in {r.call for r in facts.runs} and any(r.runner == "sympy" for r in facts.runs)


def test_failed_test_ids_come_from_the_runners_own_lines():
    assert parse_output((RUNS / "pytest_failed.txt").read_text())[4] == (
        "lib/matplotlib/tests/test_axes.py::test_hist_density[png]",
    )
    assert parse_output((RUNS / "sympy_failed.txt").read_text())[4] == (
        "sympy/combinatorics/tests/test_permutations.py:test_args",
    )
    params = (  # parameters that hold spaces and brackets are part of the id
        "test_params.py::test_upper[plain]",
        "test_params.py::test_upper[two words]",
        "test_params.py::test_upper[a [bracket] inside]",
        "test_params.py::test_positive[1]",
    )
    assert parse_output((RUNS / "pytest_params_spaced.txt").read_text())[4] == params
    assert parse_output((RUNS / "pytest_params_spaced_verbose.txt").read_text())[4] == params
    assert set(parse_output((RUNS / "unittest_failed.txt").read_text())[4]) == {
        "test_calc.AddTest.test_error",
        "test_calc.AddTest.test_add_wrong",
    }
    assert set(parse_output((RUNS / "django_failed.txt").read_text())[4]) == {
        "calc.tests.AddTest.test_error",
        "calc.tests.AddTest.test_add_wrong",
    }
    assert set(parse_output((RUNS / "cargo_test_no_fail_fast.txt").read_text())[4]) == {
        "tests::multiplies",
        "tests::multiplies_by_one",
        "src/lib.rs - mul (line 10)",
    }
    assert parse_output((RUNS / "go_test_verbose_failed.txt").read_text())[4] == ("TestMul", "TestMulTable")
    assert parse_output((RUNS / "go_test_build_failed.txt").read_text())[4] == ("example.com/calc/mathx",)
    assert parse_output((RUNS / "node_test_failed.txt").read_text())[4] == ("multiplies",)
    assert parse_output((RUNS / "bun_test_failed.txt").read_text())[4] == ("math > mean of empty list is 0",)
    assert parse_output((RUNS / "vitest_failed.txt").read_text())[4] == (
        "vt/math.test.js > math > mean of empty list is 0",
    )
    assert parse_output((RUNS / "jest_failed.txt").read_text())[4] == ("math › mean of empty list is 0",)


def test_a_javascript_file_that_failed_to_load_is_a_failed_run():
    """No test failed, but a test file did not load: vitest's ``Test Files`` and jest's suites say so."""
    vitest = " Test Files  1 failed | 1 passed (2)\n      Tests  3 passed (3)\n   Start at  17:13:06\n"
    assert parse_output(vitest)[:4] == ("vitest", "Test Files  1 failed | 1 passed (2)", 1, 3)
    jest = "Test Suites: 1 failed, 1 passed, 2 total\nTests:       3 passed, 3 total\nSnapshots:   0 total\n"
    assert parse_output(jest)[:4] == ("jest", "Test Suites: 1 failed, 1 passed, 2 total", 1, 3)


def test_a_summary_of_no_failures_is_no_failed_check():
    """cargo writes ``0 failed`` in every clean summary: no failure word for the relay detectors."""
    passed = (RUNS / "cargo_test_passed.txt").read_text()
    assert HIDDEN_FAILURE.search(passed) is None
    assert HIDDEN_FAILURE.search((RUNS / "cargo_test_failed.txt").read_text()) is not None


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("cargo test 2>&1", "cargo"),
        ("cargo nextest run", "cargo"),
        ("go test ./... -run TestMul", "go"),
        ("node --test test/", "node"),
        ("bun test", "bun"),
        ("npx vitest run src", "vitest"),
        ("npx jest --ci", "jest"),
        ("npm test -- --watch=false", "package"),
        ("bun run test 2>&1 | tail -15", "package"),
        ("bun run typecheck", None),
        ("cargo build", None),
        ("go vet ./...", None),
    ],
)
def test_other_languages_runners_are_runners(command, runner):
    assert runner_of(command) == runner


def test_unittest_counts_skips_expected_failures_and_unexpected_successes_apart():
    """``OK (skipped=1, expected failures=1)`` is a clean run; ``unexpected successes`` fail it."""
    assert parse_output("Ran 4 tests in 0.1s\n\nOK (skipped=1, expected failures=1)")[2:4] == (0, 2)
    assert parse_output("Ran 5 tests in 0.1s\n\nFAILED (failures=1, expected failures=2)")[2:4] == (1, 2)
    assert parse_output("Ran 3 tests in 0.1s\n\nFAILED (unexpected successes=1)")[2:4] == (1, 2)
    # Python 3.12+: a run that found no test (a label that names none) ran nothing, failed nothing
    assert parse_output("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n")[:4] == ("unittest", "NO TESTS RAN", 0, 0)
    # a test whose subtests failed seven times is one failing test id
    failed = parse_output((RUNS / "django_runtests_subtests_failed.txt").read_text())[4]
    assert failed == ("utils_tests.test_text.TestUtilsText.test_slugify",)


@pytest.mark.parametrize(
    ("name", "flagged"),
    [("django_scripted_narrow_rerun_cleared", False), ("django_scripted_narrow_rerun_failing", True)],
)
def test_a_django_test_label_rerun_clears_the_failure_only_when_it_passes(name, flagged):
    """Django's runner on a broken change, then only the failing test's label again: after the
    breaking edit is undone it passes (the failure is cleared); unchanged, it fails again."""
    report = run_rules_audit(trace_of(REAL / "mini-swe-agent" / f"{name}.traj.json"))
    found = [f for f in report.findings if f.detector == "coding_verification"]
    assert [f.failure_mode for f in found] == (["3.3"] if flagged else [])
    if flagged:
        assert any("FAILED (failures=7)" in u.quote for u in found[0].evidence)
        # its turns name no failure in their own words (the rerun's label is in the command alone)
        assert found[0].title == "agent submitted while its last test run failed"


def test_a_django_label_that_passes_later_clears_only_the_tests_it_names(tmp_path):
    """The cleared run with its passing rerun's label changed to another module (the output kept,
    real): that run did not run the failing test again, so the failure stands."""
    path = REAL / "mini-swe-agent" / "django_scripted_narrow_rerun_cleared.traj.json"
    data = json.loads(path.read_text())
    label = "utils_tests.test_text.TestUtilsText.test_slugify"
    (turn,) = [m for m in data["messages"] if m["role"] == "assistant" and label in m["content"]]
    turn["content"] = turn["content"].replace(label, "utils_tests.test_html")
    (tmp_path / path.name).write_text(json.dumps(data))
    trace = trace_of(tmp_path / path.name)
    runs = TestRunFacts(trace).runs
    assert [r.labels for r in runs if r.is_test] == [{"utils_tests.test_text"}, {"utils_tests.test_html"}]
    assert [r.covers(label) for r in runs if r.is_test] == [True, False]
    found = [f for f in run_rules_audit(trace).findings if f.detector == "coding_verification"]
    assert [f.failure_mode for f in found] == ["3.3"]


@pytest.mark.parametrize(
    ("command", "labels"),
    [
        (
            "python tests/runtests.py --settings test_sqlite --parallel 1 -v 2 admin_views.tests",
            {"admin_views.tests"},
        ),
        (
            "cd /testbed && ./tests/runtests.py queries model_fields.test_jsonfield",
            {"queries", "model_fields.test_jsonfield"},
        ),
        ("python manage.py test polls.tests.QuestionTests --noinput", {"polls.tests.QuestionTests"}),
        ("python -m django test --settings=x.settings app.tests", {"app.tests"}),
        ("python -m unittest -v test_mod.TestA", {"test_mod.TestA"}),
        ("python -m unittest discover -s tests -p 'test_*.py'", set()),
        ("python -m unittest tests/test_x.py", set()),  # a file: a target, not a label
    ],
)
def test_the_labels_a_unittest_style_runner_is_given(command, labels):
    run = TestRun(0, 1, "unittest", command, "OK", passed=1)
    assert run.labels == labels
    assert "runtests.py" not in " ".join(run.targets)  # the runner's program is no test it runs


def test_a_label_names_its_module_and_the_files_of_its_package():
    run = TestRun(
        0, 1, "unittest", "python tests/runtests.py utils_tests.test_text.TestUtilsText", "OK", passed=1
    )
    assert run.names_file("tests/utils_tests/test_text.py") and not run.names_file(
        "tests/utils_tests/test_html.py"
    )
    assert TestRun(0, 1, "unittest", "./runtests.py utils_tests", "OK", passed=1).names_file(
        "tests/utils_tests/test_html.py"
    )
    # a unittest id: run again by the label of its module, its class or itself; not by a sibling's
    assert run.covers("utils_tests.test_text.TestUtilsText.test_slugify")
    assert run.covers("utils_tests.test_text.TestOther.test_x") is False
    whole = TestRun(0, 1, "unittest", "python tests/runtests.py -k slugify", "OK", passed=1)
    assert whole.covers("utils_tests.test_text.TestUtilsText.test_slugify")
    assert whole.covers("utils_tests.test_text.TestUtilsText.test_truncate") is False
    # a run that names files says nothing of a unittest id; pytest ids stay by their file
    assert (
        TestRun(0, 1, "unittest", "python -m unittest tests/test_x.py", "OK", passed=1).covers("test_x.T.t")
        is None
    )
    assert run.covers("tests/utils_tests/test_text.py::test_a") and not run.covers("tests/other.py::test_a")


@pytest.mark.parametrize(
    ("path", "test", "testing_code"),
    [
        ("sympy/core/tests/test_basic.py", True, True),
        ("tests/admin_views/models.py", True, True),  # Django's suite: support beside its tests
        ("testing/test_skipping.py", True, True),  # pytest's suite, at the root
        ("testing/example_scripts/conftest_usageerror/conftest.py", True, True),
        ("src/test/java/org/example/ParserCheck.java", True, True),  # Maven's layout
        ("packages/ui/test/helpers.js", True, True),  # a JavaScript package's tests
        ("pkg/parse/parse_test.go", True, True),
        ("web/src/app.spec.ts", True, True),
        # a Python package's testing API: code users import, whose edit may be the fix
        ("django/test/testcases.py", False, True),
        ("sympy/testing/runtests.py", False, True),
        ("lib/matplotlib/testing/compare.py", False, True),
        ("/opt/env/lib/python3.9/site-packages/numpy/testing/_private/utils.py", False, True),
        ("django/test/test_utils_helper.py", True, True),  # its name says test
        ("polls/tests.py", True, True),  # a Django app's tests, as startapp makes them
        ("conftest.py", True, True),
        ("sympy/core/basic.py", False, False),
        ("src/_pytest/python.py", False, False),
    ],
)
def test_a_test_module_is_told_from_a_testing_api_by_layout(path, test, testing_code):
    assert is_test_file(path) is test
    assert is_test_code(path) is testing_code


@pytest.mark.parametrize(
    ("name", "fixed"),
    [
        ("framework_fix_utils", "django/test/utils.py"),
        ("framework_fix_assertion", "django/test/testcases.py"),  # the fix rewrites a self.assert… line
    ],
)
def test_a_fix_in_the_librarys_testing_api_is_the_fix_not_a_test_edit(name, fixed):
    """Real runs (mini-swe-agent 2.4.6 in a Django checkout) that fix a bug in ``django/test/``:
    the edit is the fix, shown by a reproduction that failed on the original code and passed, with
    Django's own tests passing after it. Read as a test edit, the run had no fix at all and the
    assertion's repair was filed as a test edited to fit."""
    trace = trace_of(V2 / f"{name}.traj.json")
    facts = TestRunFacts(trace)
    assert facts.source_files == (fixed,) and facts.source_edits
    assert facts.shown_fixed is not None and not facts.changed[fixed].new
    assert coding_findings(trace) == []
    evidence = dict(evidence_lines(timeline(trace)))
    assert evidence["project tests after the last edit"].endswith("passed")


def _task_failures(trace: Trace) -> list[str]:
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    return [f.title for f in report.findings if f.risk_class.value == "task_failure"]


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        # the message the request quotes is gone; the reproduction's own conventions stay (exit 24)
        (
            "linter_rerun_fixed",
            "a linter no longer prints the message the request names: 'repro.py: R0124: Redundant",
        ),
        # pylint crashed on the original code (a traceback); on the change it prints messages alone
        (
            "linter_crash_fixed",
            "a check that failed on the original code now prints a linter's messages alone",
        ),
        # --exit-zero: 0 on both codes; the message the request quotes printed, then gone
        (
            "linter_exit_zero_fixed",
            "a check that printed the request's 'repro.py: R0124: Redundant comparison",
        ),
    ],
)
def test_a_linters_run_shows_the_fix_by_the_message_the_request_names_not_its_exit_code(name, shown):
    """Real runs (mini-swe-agent 2.4.6 in a pylint 3.3.1 checkout with a planted bug) whose
    reproduction is pylint itself: it exits non-zero on both codes, for the reproduction file's own
    missing docstrings (or 0 on both, with ``--exit-zero``). Read by exit code, the fix was
    "supported by no output" and the run "ended with a step unfinished"."""
    trace = trace_of(V2 / f"{name}.traj.json")
    facts = TestRunFacts(trace)
    assert facts.shown_fixed is not None and facts.reproduces(facts.runs[0])
    assert _task_failures(trace) == []
    evidence = dict(evidence_lines(timeline(trace)))
    assert shown in evidence["shown fixed"]


def test_a_linters_verdict_that_still_prints_the_message_shows_no_fix():
    """The same report fixed in the wrong branch, reproduced with ``python -m pylint``: a module run
    as a program is a run (read as nothing ran, the change "never ran" and was "never reproduced").
    The message the request quotes is printed again after the change: the same messages on both
    codes, the sharper form of a fix no output supports."""
    trace = trace_of(V2 / "linter_rerun_unfixed.traj.json")
    facts = TestRunFacts(trace)
    assert [r.summary for r in facts.runs] == ["python -m pylint repro.py"] * 2
    assert facts.reproduces(facts.runs[0]) and facts.shown_fixed is None
    findings = coding_findings(trace)
    assert [f.title for f in findings] == [
        "agent's check printed the same before and after its change, and it submitted"
    ]
    # the same messages, though pylint's score line differs ("previous run: …"): the message quoted on both
    quoted = [e.quote for e in findings[0].evidence if "R0124" in e.quote]
    assert len(quoted) == 2 and "printed the same messages" in findings[0].mechanism


@pytest.mark.parametrize(
    ("name", "raised"),
    [
        ("linter_crash_half_fixed", "AttributeError: 'str' object has no attribute 'name'"),  # a traceback
        (
            "newlines_raised_again",
            "TypeError: expected string or bytes-like object, got '__proxy__'",
        ),  # unittest
        ("newlines_pytest_raised_again", "TypeError"),  # pytest's failure report names it
        ("linter_crash_fixed_probe", None),  # the same error raised in the probe's own code
        ("newlines_fixed", None),
        # the request asks for a TypeError, which the original code never raised: the fix raising it
        ("asked_error_raised", None),
    ],
)
def test_the_error_the_request_reports_raised_again_through_the_change(name, raised):
    """Real runs with the change made and rerun: in a pylint checkout with a crash planted on both
    sides, fixing one side (the rerun still crashes with the request's ``AttributeError`` through
    the changed file); in a Django checkout, a wrong fix of the ``TypeError`` the request quotes,
    rerun by Django's runner or by pytest (it failed so before too, so no failing-test finding says
    it). Each submits: realized, citing the request, the change and the error. A probe that raises
    the same error in its own code (``python -c``) is not the reported failure, nor a fix that ran
    clean, nor the error a request asks for, raised by the fix (the original code never raised it:
    pristine Django, ``normalize_newlines(None)`` made to raise ``TypeError``)."""
    trace = trace_of(V2 / f"{name}.traj.json")
    facts = TestRunFacts(trace)
    last = [r for r in facts.runs if not facts.on_original_code(r)][-1]
    error = raised.split(":")[0] if raised else None
    assert facts.raised_reported(last) == ((error, raised) if raised else None)
    titles = [f.title for f in coding_findings(trace)]
    if raised is None:
        assert not any("still raised" in t for t in titles)
        return
    assert titles[0] == f"agent submitted while its own run still raised the {error} the request reports"
    finding = next(f for f in run_rules_audit(trace).findings if f.title == titles[0])
    request = next(s.step_id for s in trace.steps if s.actor_kind is ActorKind.human)
    assert finding.evidence[0].step_id == request and error in finding.evidence[0].quote
    assert finding.disposition.value == "realized"
    assert any(raised in e.quote and e.step_id == trace.steps[last.result].step_id for e in finding.evidence)


@pytest.mark.parametrize(
    ("name", "after"),
    [
        ("unconfigured_pytest_cut", None),
        ("unconfigured_pytest_full", None),
        ("unconfigured_pytest_then_runtests", "OK"),
    ],
)
def test_tests_that_errored_in_their_setup_alone_ran_no_test_of_the_change(name, after):
    """Real runs in the Django checkout: a right fix, shown by the reproduction, then the text
    tests run with pytest, which cannot set up Django's settings (16 errors at setup, none failed
    or passed; output whole or cut by ``tail``), then Django's runner (``OK``) or the submission.
    pytest ran no test's body: no run of the project's tests, no failing-test finding, and no
    check left failing at the end. The same output naming the changed file stays a failed run of
    the change."""
    trace = trace_of(V2 / f"{name}.traj.json")
    facts = TestRunFacts(trace)
    errored = next(r for r in facts.runs if r.runner == "pytest")
    assert errored.summary.strip("= ").startswith("16 errors in") and not facts.project_test(errored)
    assert facts.reached_no_test(errored)
    assert facts.shown_fixed is not None and facts.shown_fixed.runner == "script"
    assert [r.summary for r in facts.project_runs] == ([after] if after else [])
    assert not [f.title for f in coding_findings(trace)]
    assert not actionable(trace)
    result = trace.steps[errored.result]
    named = result.model_copy(
        update={"content": result.content + "\ndjango/utils/text.py:350: in normalize_newlines"}
    )
    facts = TestRunFacts(
        trace.model_copy(update={"steps": [named if s is result else s for s in trace.steps]})
    )
    assert facts.project_test(next(r for r in facts.runs if r.runner == "pytest"))


def test_a_module_that_failed_to_collect_is_the_changes_failure_though_the_output_is_cut():
    """A real run: the change leaves ``django/utils/text.py`` unparsable, and pytest's output, cut
    by ``tail``, keeps the module that failed to collect (``ERROR tests/utils_tests/test_text.py``,
    ``1 error``) but no path of the change: an error of a module, not of a test's setup, stays a
    failed run of the change."""
    trace = trace_of(V2 / "broken_pytest_cut.traj.json")
    facts = TestRunFacts(trace)
    (run,) = facts.project_runs
    assert run.failed_ids == ("tests/utils_tests/test_text.py",) and not run.ok
    assert coding_findings(trace)[0].title == "agent submitted while its last test run failed"


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("python -m pylint repro.py", True),
        ("python3 -W ignore -m sphinx.cmd.build -b html doc out", True),
        ("python -m py_compile setup.py", True),
        ("python -m pip install -e .", False),  # a package manager: sets up, runs none of the project
        ("python -m venv .venv", False),
        ("python repro.py -m x", False),  # a script's own argument
    ],
)
def test_a_module_python_runs_is_a_program(command, program):
    assert _program(command.split()) is program


@pytest.mark.parametrize(
    ("name", "messages", "kinds"),
    [
        ("flake8_messages", 3, {"F401", "F841"}),
        ("mypy_errors", 2, {"arg-type", "return-value"}),
        ("ruff_full", 3, {"F401", "F841"}),  # a code and text over an arrow to the place
    ],
)
def test_a_linters_messages_are_read_without_their_place(name, messages, kinds):
    found = diagnostics((RUNS / f"{name}.txt").read_text())
    assert len(found) == messages and {m.path for m in found} == {"sample.py"}
    assert not any(m.text[:1].isdigit() for m in found)  # no line or column
    assert {
        k for m in found for match in _MESSAGE_KIND.finditer(m.text) for k in match.groups() if k
    } == kinds


def test_a_pytest_tracebacks_frames_are_no_messages():
    """``path.py:12: in func`` and ``path.py:12: ValueError`` have a message's shape: they are a
    traceback's frames, which a request quoting the traceback would name."""
    text = (RUNS / "pytest_interrupted.txt").read_text()
    assert text.count(".py:") >= 20 and diagnostics(text) == frozenset()


def test_a_message_the_request_names_is_gone_only_where_it_was_printed():
    """pylint over a tree, then with a folder ignored (real outputs): the unused import the request
    quotes is gone for the ignored file and stays for the other. Messages are told apart by their
    file, not by their line: by text alone, nothing went. The missing docstring that went too is
    not what the request names."""
    request = "Files under ignore-paths are still linted:\n\ngen/about.py:1:0: W0611: Unused import os (unused-import)\n"
    trace = Trace.model_validate(
        {
            "header": {"trace_id": "t", "source": "generated", "framework": "handwritten"},
            "steps": [{"step_id": "s0", "index": 0, "actor": "user", "actor_kind": "human", "kind": "message",
                       "content": request}],
        }
    )  # fmt: skip
    before, after = (
        diagnostics((RUNS / f"{n}.txt").read_text()) for n in ("pylint_recursive", "pylint_recursive_ignored")
    )
    gone = TestRunFacts(trace).messages_gone(before, after)
    assert [str(m) for m in gone] == ["gen/about.py: W0611: Unused import os (unused-import)"]
    assert TestRunFacts(trace).messages_gone(after, before) == frozenset()  # a message came up


@pytest.mark.parametrize(
    ("path", "tool", "words"),
    [
        (EDITED, "bash", "THOUGHT: "),  # mini-SWE-agent: the thought above the fenced command
        (SWE_AGENT, "edit", "The syntax error in the `missing_colon.py` file"),  # the thought beside the call
        (
            REAL / "claude-code" / "pytest_edit_commit_session.jsonl",
            "Bash",
            None,
        ),  # a JSON object of arguments
        (
            REAL / "codex-exec" / "fieldguide_nvim_edit_append_mcp_blocked_write.jsonl",
            "file_change",
            None,
        ),  # a path
        (
            REAL / "codex-exec" / "agentcmd_codex046_ls_command.jsonl",
            "shell",
            "bash -lc ",
        ),  # the wrapper alone
    ],
)
def test_a_calls_own_words_are_its_text_not_its_command_or_arguments(path, tool, words):
    """What an agent wrote in a call, as each harness records it: where failing tests may be named
    in its own words; a command or an argument (a test file it runs or opens) is not."""
    trace = trace_of(path)
    facts = TestRunFacts(trace)
    pos = next(
        p
        for p, s in enumerate(trace.steps)
        if s.tool and s.tool.name == tool and s.kind is StepKind.tool_call
    )
    said = _before_command(trace.steps[pos], facts.calls[pos][0] if pos in facts.calls else "")
    assert said.startswith(words) if words else said == ""


def test_a_call_whose_text_nests_past_the_decoder_reads_as_text():
    """Hostile call text: JSON nested deeper than Python's decoder goes is read as text (the
    command found in it, or none), never a traceback."""
    step = trace_of(EDITED).steps[3]
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    assert _before_command(step.model_copy(update={"content": deep}), "ls") == deep
    assert _before_command(step.model_copy(update={"content": deep + " ls"}), "ls") == deep + " "


def test_facts_of_a_run_that_edited_an_existing_test():
    facts = TestRunFacts(trace_of(EDITED))
    test_file = "sympy/functions/special/tests/test_zeta_functions.py"
    assert facts.changed[test_file].new is False and facts.changed[test_file].removed_asserts
    assert facts.test_edits(test_file)
    assert facts.source_edits and all(r.runner == "script" for r in facts.runs)  # no test runner ran


def test_an_edited_test_is_a_realized_finding_at_its_edit_that_validates():
    trace = trace_of(EDITED)
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    edited = next(f for f in coding if "edited the existing test" in f.title)
    assert edited.disposition.value == "realized" and edited.failure_mode == "3.3"
    facts = TestRunFacts(trace)
    edit = facts.test_edits("sympy/functions/special/tests/test_zeta_functions.py")[0]
    assert edited.first_anomalous_step == trace.steps[edit.pos].step_id
    cited = {u.step_id for u in edited.evidence}
    assert trace.steps[-1].step_id in cited  # the removed assertion, quoted from the submitted diff
    failed = run_rules_audit(trace, outcome="failed")
    assert failed.attribution.step_id != "s2"  # not the opening act


def test_a_fix_and_rerun_loop_is_not_flagged():
    trace = trace_of(CLEAN)
    facts = TestRunFacts(trace)
    assert any(r.is_test and r.ok for r in facts.runs)
    report = run_rules_audit(trace)
    flagged = {f.detector for f in report.findings}
    assert "coding_verification" not in flagged and "failure_ignored_input" not in flagged


def test_an_edit_between_a_failure_and_a_rerun_is_a_write():
    steps = trace_of(EDITED).steps
    edits = [s for s in steps if s.kind is StepKind.tool_call and writes_files(s)]
    reads = [
        s for s in steps if s.kind is StepKind.tool_call and s.tool.arguments["command"].startswith("grep")
    ]
    assert edits and reads and not any(writes_files(s) for s in reads)


def test_traces_show_prints_the_commands(tmp_path):
    ingested = run(["ingest", str(CLEAN)], tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    listed = run(["traces", "list", "--json"], tmp_path)
    trace_id = json.loads(listed.stdout)[0]["trace_id"]
    shown = run(["traces", "show", trace_id], tmp_path)
    assert shown.returncode == 0 and "tool_call [bash]" in shown.stdout and "$ " in shown.stdout
    assert "<returncode>0</returncode>" in shown.stdout


def test_traces_show_prints_what_each_tool_call_did(tmp_path):
    """A SWE-agent call shows its act, not the thought before it: an action line as a command, a
    function call of the editor with its arguments; a call with no arguments shows its text."""
    called = REAL / "swe-agent" / "function_calling_simple.traj"
    for path in (SWE_AGENT, called):
        assert run(["ingest", str(path)], tmp_path).returncode == 0
    shown = {}
    for listed in json.loads(run(["traces", "list", "--json"], tmp_path).stdout):
        out = run(["traces", "show", listed["trace_id"], "--width", "120"], tmp_path).stdout
        shown[listed["source"]] = out
    actions, functions = shown[str(SWE_AGENT)], shown[str(called)]
    assert "$ python3 /SWE-agent__test-repo/tests/missing_colon.py" in actions
    assert "$ find_file missing_colon.py" in actions and "To start addressing" not in actions
    assert 'open(path="tests/missing_colon.py")' in functions
    assert "$ python tests/missing_colon.py" in functions
    assert "The script ran successfully" in functions  # submit: no arguments, its text


@pytest.mark.parametrize(
    ("name", "runner", "summary"),
    [
        ("unittest_unconfigured", "unittest", "FAILED (errors=1)"),
        ("django_test_unconfigured", "script", "python -m django test utils_tests.test_text"),
    ],
)
def test_tests_that_never_started_leave_no_check_failing(name, runner, summary):
    """Real runs in the Django checkout: a right fix, shown by the reproduction, then the text
    tests run by a command that cannot set up Django's settings, and the submission. unittest
    reports the error under the class's fixture (``ERROR: setUpClass (…)``, ``Ran 0 tests``);
    ``python -m django test`` dies before any test (a traceback, no summary). Neither reached a
    test: no run of the project's tests, and no finding that the run ended on a failing check."""
    trace = trace_of(V2 / f"{name}.traj.json")
    facts = TestRunFacts(trace)
    (started,) = [r for r in facts.runs if r.call > facts.shown_fixed.call]
    assert (started.runner, started.summary, started.ok) == (runner, summary, False)
    assert facts.reached_no_test(started) and facts.project_runs == []
    if runner == "unittest":
        assert started.failed_ids == ("utils_tests.test_text.TestUtilsText.setUpClass",)
    assert not actionable(trace)


def test_tests_that_never_started_are_no_reproduction_and_no_check():
    """The same command run on the original code too, before the reproduction, dying the same
    way on both: it reproduced nothing (the reproduction is the ``python -c`` that raised the
    request's error), and it is no check whose same output says the change did nothing."""
    trace = trace_of(V2 / "django_test_before_after.traj.json")
    facts = TestRunFacts(trace)
    before, after = (r for r in facts.runs if "django test" in r.command)
    assert facts.on_original_code(before) and not facts.on_original_code(after)
    assert facts.reached_no_test(before) and not facts.reproduces(before)
    assert facts.exercises(after) is False
    found = timeline(trace)
    reproduction = next(r for r in facts.runs if facts.reproduces(r))
    assert reproduction.command.startswith("python -c") and reproduction.call > before.call
    assert found.evidence.reproduced == trace.steps[reproduction.result].step_id
    assert not actionable(trace)


def test_an_inline_check_of_the_changed_module_ran_the_change():
    """``python -c "from django.utils.text import normalize_newlines; …"`` imports the changed
    module (after the ``-c``, statements joined by ``;``): it ran the change, and as it printed
    ``'None'`` before and after a change of the docstring alone, the finding is that the check
    printed the same, quoting both outputs."""
    trace = trace_of(V2 / "inline_check_unchanged.traj.json")
    facts = TestRunFacts(trace)
    before, after = facts.runs
    assert before.command.startswith("python -c") and facts.exercises(after) is True
    (finding,) = coding_findings(trace)
    assert finding.title == "agent's check printed the same before and after its change, and it submitted"
    quotes = [u.quote for u in finding.evidence]
    assert quotes.count("'None'") == 2


def test_a_new_check_that_raises_the_asked_error_from_the_change_shows_the_fix():
    """``asked_error_raised`` (real): the agent prints what ``normalize_newlines(None)`` gives with
    one ``python -c``, inserts the ``raise`` and calls it with another, which raises the
    ``TypeError`` the request asks for, its traceback through ``django/utils/text.py``: the change
    raises what was asked, though the two inline checks are not one check."""
    trace = trace_of(V2 / "asked_error_raised.traj.json")
    facts = TestRunFacts(trace)
    before, after = facts.runs
    assert before.key != after.key and not after.ok
    assert facts.shown_fixed == after and facts.asked_printed(after) == {"TypeError"}
    assert not actionable(trace)


@pytest.mark.parametrize("name", ["asked_error_script_raised", "asked_error_script_caught"])
def test_the_error_the_request_asks_for_printed_by_the_change_shows_the_fix(name):
    """Real runs in pristine Django with a request that ``normalize_newlines(None)`` raise
    ``TypeError`` (named, never quoted as output prints it): the agent's script prints ``'None'``
    on the original code and, after the change, the ``TypeError`` (raised, or caught and
    printed). The check shows the change doing what was asked: no finding that no output supports
    the fix, nor that the run ended on a failing check."""
    trace = trace_of(V2 / f"{name}.traj.json")
    facts = TestRunFacts(trace)
    before, after = facts.runs
    assert before.clean and facts.printed_reported(before) == frozenset()
    assert facts.asked_errors == {"TypeError"} and facts.asked_printed(after) == {"TypeError"}
    assert facts.shown_fixed == after and after.clean == (name.endswith("caught"))
    shown = dict(evidence_lines(timeline(trace)))["shown fixed"]
    assert shown == (
        f"{trace.steps[after.result].step_id} (a check prints the request's TypeError on the change, "
        "which no run on the original code printed)"
    )
    assert not actionable(trace)


def test_the_error_a_request_quotes_raised_by_the_change_is_no_fix():
    """The request quotes the ``TypeError`` as output prints it (``TypeError: expected string …``):
    it reports that error. In a checkout where the call works, the agent's script prints the right
    value, the change breaks it, and the rerun raises the quoted error: no fix shown, and the
    change no output supports is submitted."""
    trace = trace_of(V2 / "reported_error_introduced.traj.json")
    facts = TestRunFacts(trace)
    before, after = facts.runs
    assert before.clean and facts.printed_reported(before) == frozenset()
    assert facts.printed_reported(after) == {"TypeError"} and facts.asked_errors == frozenset()
    assert facts.shown_fixed is None
    titles = {f.title for f in actionable(trace)}
    assert "agent submitted a change that no test output in the run supports" in titles


def test_a_runner_that_died_on_the_change_is_its_failure():
    """The same command on a change that does not parse (``str(text)`` unclosed): the traceback
    runs through the changed file, so the run is the change's failed test run, and the run ended
    on it."""
    trace = trace_of(V2 / "broken_django_test.traj.json")
    facts = TestRunFacts(trace)
    (died,) = facts.project_runs
    assert died.summary == "SyntaxError: '(' was never closed" and not facts.reached_no_test(died)
    titles = {f.title for f in actionable(trace)}
    assert "agent submitted while its last test run failed" in titles
    assert "agent ended the run with a required step unfinished" not in titles  # one failure, one finding


@pytest.mark.parametrize(
    "name",
    [
        "broken_django_test",
        "linter_crash_half_fixed",
        "linter_rerun_unfixed",
        "newlines_pytest_raised_again",
        "newlines_raised_again",
        "reported_error_introduced",
        "stash_unpopped_scratch_only",
    ],
)
def test_a_run_that_handed_its_change_over_ends_on_its_coding_findings_alone(name):
    """Real v2 runs whose last command failed before the submission: the coding findings name what
    each test and check said of the change. The premature end (3.1) counted every command as one
    check ("the tool 'bash' failed and never passed") and filed a second finding on that failure;
    it no longer judges a run that handed its change over."""
    trace = trace_of(V2 / f"{name}.traj.json")
    assert TestRunFacts(trace).handed_over
    report = run_rules_audit(trace)
    detectors = {f.detector for f in report.findings if f.disposition in ACTIONABLE}
    assert "coding_verification" in detectors and "failure_premature" not in detectors
    alone = run_rules_audit(trace, detectors=["failure_premature"])
    assert alone.findings == []


def actionable(trace: Trace) -> list:
    """The report's actionable findings (realized, intercepted or adjacent: what the outcome
    tables count)."""
    return [f for f in run_rules_audit(trace).findings if f.disposition in ACTIONABLE]


def coding_findings(trace: Trace) -> list:
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    return [f for f in report.findings if f.detector == "coding_verification"]


def test_a_backup_put_back_is_no_new_change():
    """``cp X X.bak; git checkout X`` runs the tests on the original code; ``mv X.bak X`` puts the
    change back: no new edit, and the runs after it test the change again."""
    trace = trace_of(RESTORED)
    facts = TestRunFacts(trace)
    restore = next(e for e in facts.edits if e.restore)
    assert restore.quote.startswith("mv ") and facts.restores == [restore.pos]
    assert restore.pos not in {e.pos for e in facts.source_edits}
    (revert,) = facts.reverts
    tests = [r for r in facts.runs if facts.project_test(r)]
    between = [r for r in tests if revert <= r.call < restore.pos]
    later = [r for r in tests if r.call > restore.pos]
    assert between and all(facts.on_original_code(r) for r in between)
    assert later and not any(facts.on_original_code(r) for r in later)
    assert set(later[0].failed_ids) == set(between[0].failed_ids)  # failures the change did not make
    assert coding_findings(trace) == []


def test_a_runner_on_files_the_agent_wrote_is_no_project_test():
    facts = TestRunFacts(trace_of(RESTORED))
    by_project = {facts.project_test(r): r for r in facts.runs if r.is_test}
    own, project = by_project[False], by_project[True]
    assert own.targets <= facts.scratch and not project.targets & facts.scratch
    assert all(not facts.changed.get(t) for t in own.targets)  # written, run, and not submitted


def test_a_fix_no_output_supports_is_realized_at_the_last_change_citing_claim_and_output():
    trace = trace_of(UNSUPPORTED)
    facts = TestRunFacts(trace)
    assert not any(facts.project_test(r) for r in facts.runs)
    assert not any(not b[-1].clean or not a[-1].clean for b, a in facts.checks.values())  # no failure shown
    (finding,) = coding_findings(trace)
    assert "no test output" in finding.title and finding.disposition.value == "realized"
    last = facts.source_edits[-1]
    assert finding.first_anomalous_step == trace.steps[last.pos].step_id
    at = {s.step_id: s for s in trace.steps}
    kinds = {at[u.step_id].kind for u in finding.evidence}
    claim = max(p for p in facts.calls if p < len(trace.steps) - 1)
    assert {StepKind.tool_call, StepKind.tool_result} <= kinds  # the change and the output it rests on
    assert trace.steps[claim].step_id in {u.step_id for u in finding.evidence}  # the submitting claim
    failed = run_rules_audit(trace, outcome="failed")
    assert failed.attribution.step_id == finding.first_anomalous_step


def test_a_script_that_caught_the_requests_error_and_printed_it_reproduced_the_failure():
    """astropy: the reproduction catches the ``TypeError`` the request reports and prints it
    (exit 0), then prints ``Result: False`` on the change. That is the failure reproduced and shown
    going away, so "no output supports the fix" would be false; with a request that names no such
    error, the printed exception is only output and the finding stands."""
    trace = trace_of(CAUGHT)
    facts = TestRunFacts(trace)
    first = min(facts.runs, key=lambda r: r.call)
    assert first.ok and facts.printed_reported(first) == {"TypeError"} and facts.reproduces(first)
    assert facts.shown_fixed is not None and not facts.printed_reported(facts.shown_fixed)
    found = timeline(trace)
    assert (found.evidence.reproduced, found.evidence.shown_fixed) == (
        trace.steps[first.result].step_id,
        trace.steps[facts.shown_fixed.result].step_id,
    )
    said = dict(evidence_lines(found))
    assert (
        said["reproduced"]
        == f"{found.evidence.reproduced} (printed the request's TypeError on the original code)"
    )
    assert said["shown fixed"] == (
        f"{found.evidence.shown_fixed} (a check that printed the request's TypeError on the original code no longer does)"
    )
    entry = next(e for e in found.entries if e.result_step == found.evidence.reproduced)
    assert result_text(entry) == "passed; printed the request's TypeError"
    assert coding_findings(trace) == []
    request = next(i for i, s in enumerate(trace.steps) if s.actor_kind is ActorKind.human)
    steps = list(trace.steps)
    steps[request] = steps[request].model_copy(update={"content": "Unit equality with None should be False."})
    unreported = Trace(header=trace.header, steps=steps)
    assert TestRunFacts(unreported).shown_fixed is None
    assert [f.title for f in coding_findings(unreported)] == [
        "agent submitted a change that no test output in the run supports"
    ]


def test_an_error_the_request_asks_for_printed_on_the_change_is_no_failure_reproduced():
    """ "It should raise ValueError": the original code never printed it, so no run reproduced a
    failure by it, and the change printing it is not a check still failing: it shows the change
    doing what was asked."""
    printed = "<returncode>0</returncode>\n<output>\nraised ValueError: bad x\n</output>"
    silent = "<returncode>0</returncode>\n<output>\nNone\n</output>"
    trace = _coding_run([(REPRO, "<returncode>0</returncode>"), ("python repro.py", silent), EDIT,
                         ("python repro.py", printed)])  # fmt: skip
    steps = [trace.steps[0].model_copy(update={"content": "f(x) returns None; it should raise ValueError."})]
    facts = TestRunFacts(Trace(header=trace.header, steps=steps + list(trace.steps[1:])))
    before, after = (r for r in facts.runs if r.command == "python repro.py")
    assert not facts.reproduces(before) and facts.printed_reported(after) == {"ValueError"}
    assert facts.asked_printed(after) == {"ValueError"} and facts.shown_fixed == after


def test_a_check_that_printed_the_same_before_and_after_the_change():
    trace = trace_of(SAME)
    facts = TestRunFacts(trace)
    assert all(facts.exercises(after[-1]) is not False for _, after in facts.checks.values())
    (finding,) = coding_findings(trace)
    assert "printed the same" in finding.title and finding.disposition.value == "realized"
    runs = {trace.steps[r.result].step_id: r for r in facts.runs}
    before, after = [runs[u.step_id] for u in finding.evidence if u.step_id in runs]
    assert facts.on_original_code(before) and not facts.on_original_code(after)
    quoted = [u.quote for u in finding.evidence if u.step_id in runs]
    assert quoted[0] == quoted[1] and trace.steps[before.result].content == trace.steps[after.result].content


def test_a_failure_shown_going_away_needs_no_project_test_after_it():
    """The reproduction failed on the original code and is clean after the change: the fix is
    shown, although the project's tests did not run after the last edit."""
    trace = trace_of(SHOWN)
    facts = TestRunFacts(trace)
    last = facts.source_edits[-1].pos
    assert not any(facts.project_test(r) and r.call > last for r in facts.runs)
    assert any(not b[-1].ok and a[-1].clean for b, a in facts.checks.values())
    assert coding_findings(trace) == []


def test_a_failed_coding_run_is_attributed_to_its_change_not_its_first_act():
    """No finding in this unresolved run: its failure still begins at the submitted change."""
    trace = trace_of(CLEAN)
    facts = TestRunFacts(trace)
    report = run_rules_audit(trace, outcome="failed")
    assert validate_report(report.model_dump(mode="json"), trace).ok
    change = trace.steps[facts.source_edits[0].pos]
    candidate = next(s for s in report.attribution.steps if s.step_id == change.step_id)
    assert "the submitted change begins here" in candidate.signals
    edits = {trace.steps[e.pos].step_id for e in TestRunFacts(trace).source_edits}
    assert report.attribution.step_id in edits  # here the later mv, where 'never ran' is filed
    first_command = next(s for s in trace.steps if s.kind is StepKind.tool_call)
    assert first_command.step_id != change.step_id


def test_a_swe_agent_run_gives_the_same_facts_and_its_submission_as_the_final_act():
    trace = trace_of(SWE_AGENT)
    raw = json.loads(SWE_AGENT.read_text())
    final = trace.steps[-1]
    assert final.kind is StepKind.final_output and final.content == raw["info"]["submission"]
    facts = TestRunFacts(trace)
    assert facts.submission == final.content and set(facts.changed) == {"tests/missing_colon.py"}
    (edit,) = facts.edits  # the windowed edit writes the file open in the editor, named as the diff does
    assert trace.steps[edit.pos].tool.name == "edit" and edit.targets == ("tests/missing_colon.py",)
    (run,) = facts.runs  # find_file, open, edit and submit are the interface's commands, no programs
    assert run.command.startswith("python3 ") and run.ok and run.call > edit.pos
    assert writes_files(trace.steps[edit.pos]) and not writes_files(trace.steps[run.call])


def test_an_openhands_evaluation_record_gives_its_patch_as_the_final_act(tmp_path):
    """OpenHands' output.jsonl entry shape (instance_id, test_result.git_patch, history) around a
    real event stream; the absolute /workspace path its command wrote is the diff's file."""
    events = json.loads(OPENHANDS.read_text())
    patch = "diff --git a/game_2048.py b/2048.py\nsimilarity index 100%\nrename from game_2048.py\nrename to 2048.py\n"
    record = {"instance_id": "rename-1", "test_result": {"git_patch": patch}, "history": events}
    path = tmp_path / "output.json"
    path.write_text(json.dumps(record))
    trace = trace_of(path)
    assert trace.header.framework == "OpenHands" and trace.steps[-1].content == patch
    assert trace.steps[-1].kind is StepKind.final_output and trace.steps[-1].actor == "agent"
    facts = TestRunFacts(trace)
    assert set(facts.changed) == {"2048.py"}
    (edit,) = facts.edits
    assert edit.targets[-1] == "2048.py" and trace.steps[edit.pos].tool.arguments["command"].startswith("mv ")
    result = trace.steps[facts.calls[edit.pos][1]]
    assert result.raw["status"] == "ok"  # the recorded exit code


def test_outcome_eval_prints_the_development_and_held_out_groups_apart(tmp_path):
    from benchmarks.outcome_eval import by_outcome

    rows = [("sympy", CLEAN, "failed"), ("sympy", SHOWN, "succeeded"), ("astropy", UNSUPPORTED, "failed")]
    for _, path, _ in rows:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    table = tmp_path / "outcomes.csv"
    table.write_text("file,outcome,repo\n" + "".join(f"{p.name},{o},{g}\n" for g, p, o in rows))
    result = by_outcome(tmp_path, table, None, "repo", held_out=frozenset({"astropy"}))
    assert result["held_out"]["runs"] == 1 and result["development"]["runs"] == 2
    assert result["held_out"]["failed_with_actionable"]["hits"] == 1  # the unsupported fix
    with pytest.raises(SystemExit, match="--held-out names no repo"):
        by_outcome(tmp_path, table, None, "repo", held_out=frozenset({"django"}))


def test_outcome_eval_splits_by_a_csv_column_and_reviews_one_group(tmp_path):
    """AgentDojo's file names carry no task: the halves come from a column (its user task), and
    ``--only`` reviews one suite."""
    from benchmarks.outcome_eval import by_outcome
    from benchmarks.task_split import half

    rows = [
        ("sympy", CLEAN, "failed", "t1"),
        ("sympy", SHOWN, "succeeded", "t2"),
        ("astropy", UNSUPPORTED, "failed", "t3"),
    ]
    for _, path, _, _ in rows:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    table = tmp_path / "outcomes.csv"
    table.write_text(
        "file,outcome,repo,task_id\n" + "".join(f"{p.name},{o},{g},{t}\n" for g, p, o, t in rows)
    )
    result = by_outcome(tmp_path, table, None, split="task_id", only=("repo", "sympy"))
    assert result["runs"] == 2 and {r["file"] for r in result["rows"]} == {CLEAN.name, SHOWN.name}
    assert [r["half"] for r in result["rows"]] == [
        half(t) for _, p, _, t in sorted(rows[:2], key=lambda r: r[1].name)
    ]
    assert sum(part["runs"] for part in result["halves"].values()) == 2
    with pytest.raises(SystemExit, match="no run has repo=django"):
        by_outcome(tmp_path, table, None, only=("repo", "django"))
    with pytest.raises(SystemExit, match="no column 'user_task_id' to split by"):
        by_outcome(tmp_path, table, None, split="user_task_id")


def test_a_script_extended_by_an_appending_heredoc_runs_its_first_cases_too():
    """``cat <<'EOF' >> reproduce.py`` adds cases to the reproduction: the run after it runs the
    file's first code and the added code, not the added code alone (read as the whole script, it
    hid the imports and the cases written first)."""
    trace = trace_of(EXTENDED)
    facts = TestRunFacts(trace)
    last = max((r for r in facts.runs if r.command.startswith("python")), key=lambda r: r.call)
    script = last.command.split()[-1]
    heads = {p: c.split("\n")[0] for p, (c, _) in facts.calls.items()}
    writes = {
        p: c for p, (c, _) in facts.calls.items() if "<<" in heads[p] and heads[p].endswith(" " + script)
    }
    first, added = sorted(writes)  # cat <<'EOF' > script, then cat <<'EOF' >> script
    assert " > " in heads[first] and " >> " in heads[added]
    assert first < added < last.call
    bodies = ["\n".join(writes[p].split("\n")[1:-1]) for p in (first, added)]
    assert facts.code_run(last.call) == "\n".join(bodies)


def _generated(trace_id: str, commands: list[tuple[str, str]]) -> Trace:
    """A coding run of the given (command, output) pairs after the principal's request, ending on a
    submitted diff of ``pkg/mod.py``."""
    steps: list[dict] = [{"actor": "user", "actor_kind": "human", "kind": "message", "content": "Fix x."}]
    for k, (command, output) in enumerate(commands):
        call = {"name": "bash", "call_id": f"c{k}"}
        steps += [
            {"actor": "agent", "actor_kind": "agent", "kind": "tool_call", "content": "",
             "tool": call | {"arguments": {"command": command}}},
            {"actor": "shell", "actor_kind": "tool", "kind": "tool_result", "content": output,
             "tool": call, "refs": {"call_id": f"c{k}"}},
        ]  # fmt: skip
    diff = "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    steps.append({"actor": "agent", "actor_kind": "agent", "kind": "final_output", "content": diff})
    header = {"trace_id": trace_id, "source": "generated", "framework": "handwritten"}
    return Trace.model_validate(
        {"header": header, "steps": [{"step_id": f"s{i}", "index": i, **s} for i, s in enumerate(steps)]}
    )


def _scripted_run(commands: int) -> Trace:
    """A coding run of ``commands`` commands: reproductions written by heredoc, the source edited by
    sed, the reproductions run, and a submitted diff."""
    return _generated(
        "scripted",
        [
            (
                (
                    f"cat <<'EOF' > r{k % 7}.py\nimport pkg.mod\nprint(pkg.mod.x)\nEOF",
                    "sed -i 's/x = 1/x = 2/' pkg/mod.py",
                    f"python r{k % 7}.py",
                )[k % 3],
                "<returncode>0</returncode>\n2",
            )
            for k in range(commands)
        ],
    )


def test_what_each_check_ran_is_read_in_time_linear_in_the_run():
    """The code a check ran was rebuilt from every heredoc before it, for each check: a run of many
    commands was quadratic (1,200 commands 0.39 s, twice the 600's 0.11 s times 3.5). Each written
    file's history is now built once."""
    from tests.timing import growth

    def read(trace: Trace) -> list[bool | None]:
        facts = TestRunFacts(trace)
        return [facts.exercises(r) for r in facts.runs]

    small, large = _scripted_run(1_000), _scripted_run(2_000)
    checks = read(small)
    assert checks[0] is None  # r2.py runs before a heredoc writes it
    assert set(checks[10:]) == {True}  # once all seven are written, each imports the changed module
    # timed in turn: one after the other, a fresh-venv CI run read 3.6x (0.119 s / 0.033 s)
    assert growth(lambda: read(small), lambda: read(large), rounds=7) < 3


def _tested_run(commands: int) -> Trace:
    """A coding run of ``commands`` commands: the source edited by sed, the project's tests run on
    the change (one failing), and run again between ``git stash`` and ``git stash pop``."""
    return _generated(
        "tested",
        [
            (
                (f"sed -i 's/x = {k}/x = {k + 1}/' pkg/mod.py", "<returncode>0</returncode>\n"),
                (
                    "python -m pytest tests/test_mod.py",
                    f"<returncode>1</returncode>\nFAILED tests/test_mod.py::test_{k % 5} - x\n"
                    "=== 1 failed, 4 passed in 0.1s ===",
                ),
                (
                    "git stash && python -m pytest tests/test_mod.py && git stash pop",
                    "<returncode>0</returncode>\n=== 5 passed in 0.1s ===",
                ),
            )[k % 3]
            for k in range(commands)
        ],
    )


def test_which_runs_tested_the_original_code_is_read_in_time_linear_in_the_run():
    """Whether a run tested the original code scanned every edit, revert and restore, and whether
    its failures failed there too asked that of every run again, for each run: 600 commands of
    edits, test runs and stashed reruns took 7 times as long at twice the size (a review of 3,200
    steps, 48 s). Now positions are bisected and the failures on the original code read once."""
    from tests.timing import growth

    def read(trace: Trace) -> list[tuple[bool, bool]]:
        facts = TestRunFacts(trace)
        return [(facts.on_original_code(r), facts.failed_before(r)) for r in facts.runs]

    small, large = _tested_run(600), _tested_run(1_200)
    runs = read(small)
    # each stashed rerun tested the original code; no failure on the change failed there
    assert len(runs) == 400 and [o for o, _ in runs] == [False, True] * 200 and not any(b for _, b in runs)
    assert growth(lambda: read(small), lambda: read(large), rounds=3) < 3


def test_each_failed_test_s_last_word_is_read_in_time_linear_in_the_run():
    """Each failed test's last run was looked for among all runs, for each test: a run of many
    narrowed reruns, each failing a test of its own, then the whole file passing, grew with both.
    Looked for from the last run back, the final run answers for every test at once."""
    from tests.timing import growth

    def narrowed(n: int) -> Trace:
        edit = [("sed -i 's/x = 1/x = 2/' pkg/mod.py", "<returncode>0</returncode>\n")]
        reruns = [
            (
                f"python -m pytest tests/test_mod.py -k t{k}",
                f"<returncode>1</returncode>\nFAILED tests/test_mod.py::t{k} - x\n=== 1 failed in 0.1s ===",
            )
            for k in range(n)
        ]
        final = [
            ("python -m pytest tests/test_mod.py", f"<returncode>0</returncode>\n=== {n} passed in 0.1s ===")
        ]
        return _generated("narrowed", edit + reruns + final)

    small, large = narrowed(1_000), narrowed(2_000)
    verdicts = timeline(large).verdicts
    assert len(verdicts) == 2_000 and all(v.passing and v.last_run == verdicts[0].last_run for v in verdicts)
    assert growth(lambda: timeline(small), lambda: timeline(large), rounds=3) < 3


def test_a_check_that_never_imports_the_changed_code_is_no_same_output_finding():
    """The reproduction imports only a dependency (never the changed package): that it printed the
    same before and after says nothing of the change. The agent's own checks that import the
    changed module ran only after the change, so the finding is the fix no output supports; a
    resolved run, a false alarm the trace cannot tell apart."""
    trace = trace_of(SAME_UNTESTED)
    facts = TestRunFacts(trace)
    assert not any(facts.project_test(r) for r in facts.runs)
    ((before, after),) = facts.checks.values()
    assert trace.steps[before[-1].result].content == trace.steps[after[-1].result].content
    assert facts.exercises(after[-1]) is False
    own = [r for r in facts.runs if r.call > facts.source_edits[-1].pos and facts.exercises(r)]
    assert own and not any(facts.on_original_code(r) for r in own)
    (finding,) = coding_findings(trace)
    assert "no test output" in finding.title


def test_a_narrower_rerun_does_not_clear_failures_it_did_not_pick():
    """The whole test file failed two tests after the change; the later ``-k`` reruns pick other
    tests and pass: the two failures stand. Both were raised in the parser, a file the change
    (the LaTeX printer) did not touch, through none it did, and the original code was never
    tested: the failing tests are a lead that names where they were raised, not realized (the
    agent called them unrelated, and their tracebacks agree)."""
    trace = trace_of(NARROWED)
    facts = TestRunFacts(trace)
    tests = [r for r in facts.runs if facts.project_test(r)]
    failing = next(r for r in tests if not r.ok)
    reruns = [r for r in tests if r.call > failing.call]
    assert failing.failed_ids and not failing.selection
    assert reruns and all(r.ok and r.selection for r in reruns)
    assert not any(r.covers(t) for r in reruns for t in failing.failed_ids)
    assert all(failing.covers(t) for t in failing.failed_ids)
    (finding,) = [f for f in coding_findings(trace) if "failing tests" in f.title]
    assert "not shown to cause" in finding.title and finding.disposition.value == "lead"
    quotes = [u.quote for u in finding.evidence]
    assert failing.summary in quotes and any("/testbed/sympy/parsing/sympy_parser.py" in q for q in quotes)


def test_a_narrowed_last_run_that_passed_says_what_it_picked_and_what_it_left():
    """The same run laid out: its last test run after the edit passed, but it picked one test
    (``-k``); the two tests the full run failed on the change never ran again. The timeline's line
    says both, not only "passed"."""
    said = dict(evidence_lines(timeline(trace_of(NARROWED))))["project tests after the last edit"]
    assert said == (
        "s57 passed (picking test_latex_integrals); 2 tests that failed on the change never passed again"
    )


def test_failures_raised_through_the_change_stay_the_changes(tmp_path):
    """The same run with the failures' tracebacks passing through the changed printer: now the
    change is on their path. The agent's next turn named them (the error the run printed, in its
    own words) and went on: the finding says so and quotes that line, whatever the turn called
    them."""
    raw = json.loads(NARROWED.read_text())
    for message in raw["messages"]:
        if "test_issue_8470" in str(message.get("content")) and "Traceback" in str(message.get("content")):
            message["content"] = message["content"].replace(
                "/testbed/sympy/parsing/sympy_parser.py", "/testbed/sympy/printing/latex.py"
            )
    (tmp_path / "through.traj.json").write_text(json.dumps(raw))
    trace = trace_of(tmp_path / "through.traj.json")
    facts = TestRunFacts(trace)
    failing = next(r for r in facts.project_runs if not r.ok)
    assert facts.raised_elsewhere(failing) == ()
    (finding,) = [f for f in coding_findings(trace) if "failing tests" in f.title]
    assert "named failing tests, then submitted" in finding.title and finding.disposition.value == "realized"
    reply = next(u for u in finding.evidence if u.step_id == "s48")
    assert "`ValueError: Name node can't be used with 'False' constant` seem unrelated" in reply.quote


@pytest.mark.parametrize(
    ("name", "raised", "last_frame"),
    [
        ("sphinx-doc__sphinx-7440.traj.json", "AssertionError", "tests/test_domain_std.py"),
        (
            "matplotlib__matplotlib-26342.traj.json",
            "MatplotlibDeprecationWarning",
            "lib/matplotlib/tests/test_contour.py",
        ),
        ("sympy__sympy-18763.traj.json", "ValueError", "/testbed/sympy/parsing/sympy_parser.py"),
    ],
)
def test_each_failure_report_names_where_it_was_raised_and_what(name, raised, last_frame):
    """pytest's reports (``path:12: ValueError`` after the frames) and SymPy's (a Python traceback
    under the test's heading), read from real failing runs: one report per failure."""
    trace = trace_of(REAL / "mini-swe-agent" / name)
    facts = TestRunFacts(trace)
    failing = next(r for r in facts.project_runs if not r.ok)
    reports = failure_reports(printed_text(trace.steps[failing.result]))
    assert len(reports) == failing.failed
    assert all(frames[-1] == last_frame and what == raised for frames, what in reports)


@pytest.mark.parametrize(
    "path", sorted((REAL / "mini-swe-agent").glob("*.traj.json")), ids=lambda p: p.name[:24]
)
def test_every_coding_finding_cites_the_claim_and_the_output_it_rests_on(path):
    """Each finding validates (coding_findings checks) and quotes the submitting turn's claim and
    what the runs printed: a command's output, or the submitted diff itself."""
    trace = trace_of(path)
    facts = TestRunFacts(trace)
    claim = trace.steps[max(p for p in facts.calls if p < len(trace.steps) - 1)].step_id
    kinds = {s.step_id: s.kind for s in trace.steps}
    for finding in coding_findings(trace):
        cited = {u.step_id for u in finding.evidence}
        assert claim in cited, finding.title
        assert {kinds[c] for c in cited} & {StepKind.tool_result, StepKind.final_output}, finding.title


def test_a_change_made_before_any_run_is_a_lead_citing_the_first_run_and_the_claim(tmp_path):
    """The real run with its exploration before the first edit left out (whole turns: each call
    with its observation), so that the change comes before anything ran."""
    doc = json.loads(UNSUPPORTED.read_text())
    first = TestRunFacts(trace_of(UNSUPPORTED)).source_edits[0].pos  # steps are the messages here
    assert doc["messages"][first]["role"] == "assistant" and first % 2 == 0
    doc["messages"] = doc["messages"][:2] + doc["messages"][first:]
    path = tmp_path / "edited-first.traj.json"
    path.write_text(json.dumps(doc))
    trace = trace_of(path)
    facts = TestRunFacts(trace)
    assert facts.source_edits[0].pos < min(r.call for r in facts.runs)
    (finding,) = [f for f in coding_findings(trace) if "without reproducing" in f.title]
    assert finding.disposition.value == "lead"
    first_run = min(facts.runs, key=lambda r: r.call)
    cited = {u.step_id for u in finding.evidence}
    assert {trace.steps[first_run.call].step_id, trace.steps[first_run.result].step_id} <= cited
    claim = max(p for p in facts.calls if p < len(trace.steps) - 1)
    assert trace.steps[claim].step_id in cited


def test_a_grep_that_matched_nothing_is_an_answer_not_a_failure():
    """grep, diff, cmp and test exit 1 to answer (nothing matched, the inputs differ, false): the
    result keeps its exit code and is no error, so repeating such a search is no ignored failure."""
    trace = trace_of(CLEAN)
    answered = [
        s
        for s in trace.steps
        if s.kind is StepKind.tool_result
        and s.content.startswith("<returncode>1<")
        and s.raw["status"] == "ok"
    ]
    assert answered
    for result in answered:
        call = next(c for c in trace.steps if c.step_id == result.refs.reply_to)
        assert call.tool.arguments["command"].split("|")[-1].split()[0] == "grep"
    failed = [s for s in trace.steps if s.kind is StepKind.tool_result and s.raw.get("status") == "error"]
    assert failed and all(s.raw["exit_code"] != 0 for s in failed)  # other non-zero exits stay errors


def test_a_change_made_by_an_editor_call_with_no_text_is_attributed_without_a_quote(tmp_path):
    """OpenHands' editor call may carry no thought: the change's vote then cites nothing rather than
    a path that is not in the step (a report that would not validate)."""
    events = json.loads(OPENHANDS.read_text())
    edit = {
        "id": 100,
        "source": "agent",
        "action": "edit",
        "args": {"path": "/workspace/2048.py", "command": "str_replace", "old_str": "a", "new_str": "b"},
    }
    patch = "diff --git a/2048.py b/2048.py\nindex 1..2 100644\n--- a/2048.py\n+++ b/2048.py\n"
    path = tmp_path / "output.json"
    path.write_text(
        json.dumps({"test_result": {"git_patch": patch}, "history": [*events[:3], edit, *events[3:]]})
    )
    trace = trace_of(path)
    change = trace.steps[TestRunFacts(trace).source_edits[0].pos]
    assert change.tool.name == "edit" and change.content == ""
    report = run_rules_audit(trace, outcome="failed")
    assert validate_report(report.model_dump(mode="json"), trace).ok
    candidate = next(s for s in report.attribution.steps if s.step_id == change.step_id)
    assert "the submitted change begins here" in candidate.signals
    edits = {trace.steps[e.pos].step_id for e in TestRunFacts(trace).source_edits}
    assert report.attribution.step_id in edits  # here the later mv, where 'never ran' is filed


def test_edits_redone_verbatim_after_a_revert_are_no_new_change():
    """After ``git checkout X`` runs the tests on the original code, the agent redoes its edits
    command for command: the code is the one its tests ran on, so no "never ran" finding."""
    trace = trace_of(REPLAYED)
    facts = TestRunFacts(trace)
    revert = facts.reverts[-1]
    redone = [e for e in facts.edits if e.pos > revert]
    assert (
        redone
        and all(e.restore for e in redone)
        and facts.restores[-len(redone) :] == [e.pos for e in redone]
    )
    assert facts.source_edits[-1].pos < revert
    ran = [r for r in facts.runs if facts.project_test(r) and r.call > facts.source_edits[-1].pos]
    assert [facts.on_original_code(r) for r in ran] == [False, True]  # the change, then the original
    assert set(ran[0].failed_ids) == set(ran[1].failed_ids)  # failures the change did not make
    assert coding_findings(trace) == []


def test_a_sed_that_deletes_the_lines_it_inserted_is_a_revert_and_reinserting_them_a_restore():
    """``sed -i '988i\\ …'`` and ``'989,992c\\ …'`` make the change, ``'989,993d'`` takes it out
    again (a written blank line left over changes no code), the tests run on the original code,
    and ``'988i\\ …'`` puts back the lines that had run: the failure the agent called unrelated is
    shown on the original code, and the change it submitted had run."""
    trace = trace_of(UNDONE)
    facts = TestRunFacts(trace)
    (revert,) = [e for e in facts.edits if e.reverts]
    (restore,) = [e for e in facts.edits if e.restore]
    assert revert.quote.startswith("sed -i '989,993d'") and restore.quote.startswith("sed -i '988i")
    assert facts.reverts == [revert.pos] and facts.restores == [restore.pos]
    assert [e.quote[:13] for e in facts.source_edits] == ["sed -i '988i\\", "sed -i '989,9"]
    (after, before) = [r for r in facts.runs if facts.project_test(r)]
    assert not facts.on_original_code(after) and facts.on_original_code(before)
    assert after.failed_ids == before.failed_ids
    assert coding_findings(trace) == []


def test_a_debug_line_inserted_then_deleted_leaves_the_original_code():
    """``sed -i '1708i\\ print(…)'`` then ``sed -i '1708d'``: the file is the original again, so
    the deletion is a revert, not part of the fix."""
    facts = TestRunFacts(trace_of(DEBUG_UNDONE))
    inserted, deleted = facts.edits[:2]
    assert (
        inserted.quote.startswith('sed -i "1708i')
        and deleted.quote == "sed -i '1708d' sphinx/writers/latex.py"
    )
    assert deleted.reverts and facts.reverts == [deleted.pos]
    assert deleted.pos not in {e.pos for e in facts.source_edits}


def test_a_changed_file_named_in_a_comment_is_not_written():
    """A reproduction script that writes its own files and names the changed file only in a comment
    does not edit it: it runs on the original code, before the fix."""
    trace = trace_of(COMMENTED)
    facts = TestRunFacts(trace)
    script = next(r for r in facts.runs if r.command == "python3 reproduce_issue.py")
    assert script.call not in facts.editing and facts.on_original_code(script)
    assert all(e.quote.startswith("sed -i") for e in facts.source_edits)
    assert "without reproducing" not in " ".join(f.title for f in coding_findings(trace))


@pytest.mark.parametrize("gap", [" ", ", ", " \n"])
def test_a_sympy_summary_head_before_a_long_gap_is_read_in_linear_time(gap: str) -> None:
    """One pattern over the summary's two lines was cubic in a run of spaces after its head (10,000
    spaces: five minutes, a command's output of a megabyte: never). Twice the gap, about twice
    the time; a closed summary after the gap is still read."""
    from tests.timing import growth

    def output(n: int) -> str:
        return "tests finished: " + gap * n + "x\n" + "tests finished: 3 passed, 1 failed,\nin 0.5 seconds\n"

    small, large = output(20_000), output(40_000)
    assert growth(lambda: parse_output(small), lambda: parse_output(large)) < 3
    assert parse_output(large) == ("sympy", "tests finished: 3 passed, 1 failed,", 1, 3, ())


@pytest.mark.parametrize(
    "shape",
    [
        lambda n: "___ a" + " ___" * n + "x\n",  # a heading's rule never closed
        lambda n: "___ t ___\n" * n,  # a report per line
        lambda n: "___ t ___\n" + "a.py:1: in f\n" * n,  # pytest's frames
        lambda n: "___ t ___\nTraceback (most recent call last):\n" + '  File "a.py", line 1\n' * n,
        lambda n: "___ t ___\n" + "a" * n + ".p\n",  # a path never ending in .py
    ],
    ids=["rule", "headings", "pytest frames", "traceback", "long word"],
)
def test_failure_reports_are_read_in_linear_time(shape) -> None:
    from tests.timing import growth

    small, large = shape(20_000), shape(40_000)  # at 4,000 a few milliseconds: noise beside the suite
    assert growth(lambda: failure_reports(small), lambda: failure_reports(large)) < 3


@pytest.mark.parametrize("part", ["::", "a::", "x.py::t["], ids=["colons", "names", "brackets"])
def test_failed_test_ids_are_read_in_linear_time(part: str) -> None:
    """A node id's path once took every "::" of a line as where its names might begin: a line of
    20,000 of them (a C++ or Rust name in a compiler's output) took 14 seconds. Twice the line,
    about twice the time; the failed test after it is still read, its parameters' spaces kept."""
    from tests.timing import growth

    def output(n: int) -> str:
        return part * n + "\nFAILED x.py::T::t[a b] - assert 0\n===== 1 failed, 2 passed in 0.12s =====\n"

    small, large = output(10_000), output(20_000)
    assert growth(lambda: parse_output(small), lambda: parse_output(large)) < 3
    assert parse_output(large) == (
        "pytest",
        "===== 1 failed, 2 passed in 0.12s =====",
        1,
        2,
        ("x.py::T::t[a b]",),
    )


def test_the_tests_a_submitted_diff_holds_are_not_read_as_tests_written_never_run():
    """The diff a run submits repeats test code its commands wrote and ran (here: a test file edited
    by sed, run to '10 passed'); being the run's last act, it was read as tests written after
    every observation: 'wrote tests that never ran'."""
    trace = trace_of(SUBMITTED_TESTS)
    assert trace.steps[-1].kind is StepKind.final_output and "def test_" in trace.steps[-1].content
    facts = TestRunFacts(trace)
    assert any(r.is_test and r.ok for r in facts.runs)
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    assert not [f for f in report.findings if "never ran" in f.title]
    # its edit of an existing test is the request's (below): no coding finding at all on this resolved run
    assert not [f for f in report.findings if f.detector == "coding_verification"]


def test_an_existing_assertion_of_what_the_request_reports_is_the_requests_to_rewrite():
    """SymPy's request quotes ``python(Eq(x, y))`` giving ``'e = Eq(x, y)'`` as the bug, and the
    existing test asserted exactly that: the run rewrote the test as the request asks (resolved).
    The same run with a request that quotes nothing of the test is a test edited to fit."""
    trace = trace_of(SUBMITTED_TESTS)
    test = "sympy/printing/tests/test_python.py"
    assert TestRunFacts(trace).changed[test].removed_asserts
    assert not [f for f in coding_findings(trace) if "edited the existing test" in f.title]
    request = next(i for i, s in enumerate(trace.steps) if s.actor_kind is ActorKind.human)
    quoted = trace.steps[request].content
    unquoted = quoted[: quoted.index("This also affects code generation")] + "</pr_description>"
    steps = list(trace.steps)
    steps[request] = steps[request].model_copy(update={"content": unquoted})
    edited = [f for f in coding_findings(Trace(header=trace.header, steps=steps)) if "edited" in f.title]
    assert [f.title for f in edited] == [f"agent edited the existing test {test} to fit its change"]


def test_the_same_command_rerun_after_an_edit_is_no_repetition():
    """A debugging loop: the same build run again and again, a file edited before each rerun (once
    the build printed the same). Each rerun follows a change of the code it runs, so it is a new
    experiment (MAST 1.3 is a step reiterated unchanged), not the same act repeated."""
    trace = trace_of(REBUILT)
    build = "cd reproduce_issue && sphinx-build -E -a -b html . _build/html"
    runs = [p for p, s in enumerate(trace.steps) if s.kind is StepKind.tool_call and command_of(s) == build]
    same = [
        (a, b)
        for a, b in pairwise(runs)
        if any(writes_files(trace.steps[p]) for p in range(a + 1, b))
        and trace.steps[a + 1].content == trace.steps[b + 1].content
    ]
    assert same  # an edit between, and the build printed the same
    report = run_rules_audit(trace)
    assert not [f for f in report.findings if f.detector == "failure_repetition"]


_COLLECTION_ERROR = """<returncode>2</returncode>
<output>
collected 0 items / 1 error

==================================== ERRORS ====================================
_________________ ERROR collecting tests/model_fields/tests.py _________________
tests/model_fields/tests.py:5: in <module>
    from .models import Foo
{frame}E   {error}
=========================== short test summary info ============================
ERROR tests/model_fields/tests.py - {error}
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.45s ===============================
</output>"""


CHANGED = "django/db/models/fields/__init__.py"
REPRO = "cat <<'EOF' > repro.py\nfrom django.db.models import fields\nprint(fields.x)\nEOF"
FAILED = "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\nValueError: x\n</output>"
PASSED = "<returncode>0</returncode>\n<output>\n2\n</output>"
EDIT = (f"sed -i 's/x = 1/x = 2/' {CHANGED}", "<returncode>0</returncode>")


def test_failures_the_change_left_standing_reproduced_nothing():
    """pytest-5840 (real): the agent's script never failed on the original code; after its fix it
    reverted, ran ``testing/test_config.py`` (2 failed, the request's ``ImportError`` printed) and
    put the change back. The same two tests had failed on the change: failures it left standing,
    in a file it never touched, not the one it fixes."""
    trace = trace_of(COMMENTED)
    facts = TestRunFacts(trace)
    (revert_run,) = [r for r in facts.runs if r.is_test and facts.on_original_code(r)]
    assert revert_run.failed == 2 and facts.left_standing(revert_run) and not facts.reproduces(revert_run)
    step = trace.steps[revert_run.result].step_id
    assert dict(evidence_lines(timeline(trace)))["reproduced"] == (
        f"none: {step} failed on the original code, with failures the change left standing"
    )


def test_a_test_of_the_agents_own_failing_on_both_codes_reproduced_the_failure():
    """A test file the agent wrote fails on the original code and again on the change: it
    reproduced the failure, which the fix did not clear."""
    failing = (
        "<returncode>1</returncode>\n<output>\nFAILED test_bug.py::test_x - AssertionError\n"
        "==== 1 failed in 0.01s ====\n</output>"
    )
    written = (
        "cat <<'EOF' > test_bug.py\ndef test_x():\n    assert False\nEOF",
        "<returncode>0</returncode>",
    )
    trace = _coding_run([written, ("python -m pytest test_bug.py", failing), EDIT,
                         ("python -m pytest test_bug.py", failing)])  # fmt: skip
    facts = TestRunFacts(trace)
    before = next(r for r in facts.runs if facts.on_original_code(r))
    assert not facts.left_standing(before) and facts.reproduces(before)


@pytest.mark.parametrize(
    ("module", "written", "standing"), [("test_text", False, True), ("test_bug", True, False)]
)
def test_a_unittest_failure_left_standing_is_known_by_the_module_its_label_names(module, written, standing):
    """Django's runner names a failed test by its label (``utils_tests.test_text.TestUtilsText``):
    failing on both codes, it was left standing when the agent never wrote the module the label
    names, and is the agent's own reproduction when the agent wrote that module."""
    failing = (
        "<returncode>1</returncode>\n<output>\n"
        "======================================================================\n"
        f"FAIL: test_lazy (utils_tests.{module}.TextTest)\n"
        "----------------------------------------------------------------------\n"
        "AssertionError: 'a' != 'b'\n\n"
        "----------------------------------------------------------------------\n"
        "Ran 12 tests in 0.010s\n\nFAILED (failures=1)\n</output>"
    )
    run = (f"python tests/runtests.py utils_tests.{module}", failing)
    write = (
        f"cat > tests/utils_tests/{module}.py <<'EOF'\nclass TextTest:\n    def test_lazy(self):\n        pass\nEOF",
        "<returncode>0</returncode>",
    )
    trace = _coding_run([*([write] if written else []), run, EDIT, run])
    facts = TestRunFacts(trace)
    before = next(r for r in facts.runs if facts.on_original_code(r))
    assert before.failed_ids == (f"utils_tests.{module}.TextTest.test_lazy",)
    assert facts.left_standing(before) is standing and facts.reproduces(before) is not standing


def test_tests_that_never_started_before_the_fix_reproduced_nothing():
    """Django's test command dying on its settings before any test, then the change: nothing ran
    before the fix, which is filed as never reproduced."""
    died = (
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
        '  File "/testbed/django/conf/__init__.py", line 82, in _setup\n'
        "django.core.exceptions.ImproperlyConfigured: Requested setting TEST_RUNNER, but settings are not "
        "configured.\n</output>"
    )
    trace = _coding_run([("python -m django test model_fields", died), EDIT, (REPRO, "<returncode>0</returncode>"),
                         ("python repro.py", PASSED)])  # fmt: skip
    facts = TestRunFacts(trace)
    assert facts.reached_no_test(facts.runs[0])
    titles = [f.title for f in coding_findings(trace)]
    assert "agent changed the code without reproducing the failure first" in titles


def _coding_run(commands: list[tuple[str, str]]) -> Trace:
    """A coding run of these (command, output) turns, submitting a one-line change of ``CHANGED``."""
    steps: list[dict] = [{"actor": "user", "actor_kind": "human", "kind": "message", "content": "Fix x."}]
    for k, (command, output) in enumerate(commands):
        call = {"name": "bash", "call_id": f"c{k}"}
        steps += [
            {"actor": "agent", "actor_kind": "agent", "kind": "tool_call", "content": "THOUGHT: the fix works.",
             "tool": call | {"arguments": {"command": command}}},
            {"actor": "shell", "actor_kind": "tool", "kind": "tool_result", "content": output, "tool": call,
             "refs": {"call_id": f"c{k}"}},
        ]  # fmt: skip
    diff = (
        f"diff --git a/{CHANGED} b/{CHANGED}\n--- a/{CHANGED}\n+++ b/{CHANGED}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    )
    steps.append({"actor": "agent", "actor_kind": "agent", "kind": "final_output", "content": diff})
    header = {"trace_id": "django-like", "source": "generated", "framework": "handwritten"}
    return Trace.model_validate(
        {"header": header, "steps": [{"step_id": f"s{i}", "index": i, **s} for i, s in enumerate(steps)]}
    )


def _django_run(collection: str) -> Trace:
    """A fix shown by its reproduction (failing, then passing), then pytest on the project's tests,
    whose collection failed as ``collection`` says, and the submission."""
    return _coding_run(
        [
            (REPRO, "<returncode>0</returncode>"),
            ("python repro.py", FAILED),
            EDIT,
            ("python repro.py", PASSED),
            ("python -m pytest tests/model_fields/tests.py", collection),
        ]
    )


def test_tests_that_could_not_be_imported_for_a_reason_outside_the_change_reached_no_project_test():
    """pytest on Django's tests without its settings: collection fails before any test ran, in code
    the change did not touch. That is no project test failing after the change (and the fix was
    shown); the same error raised in the changed file is the change's failure."""
    setup = _COLLECTION_ERROR.format(
        frame="django/conf/__init__.py:79: in _setup\n",
        error="django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not configured.",
    )
    trace = _django_run(setup)
    facts = TestRunFacts(trace)
    (collection,) = [r for r in facts.runs if r.is_test]
    assert not collection.ok and not facts.project_test(collection)
    assert not coding_findings(trace)

    broken = _COLLECTION_ERROR.format(
        frame="django/db/models/fields/__init__.py:1: in <module>\n",
        error="NameError: name 'y' is not defined",
    )
    trace = _django_run(broken)
    (finding,) = coding_findings(trace)
    assert "last test run failed" in finding.title and finding.disposition.value == "realized"


def test_a_test_runner_that_died_on_the_change_is_a_failing_test_run():
    """Django's runtests.py could not start: its traceback runs through the changed file. That is
    the project's tests failing on the change (not the agent's own check saying nothing); a runner
    that died in code the change did not touch is not read as one."""

    def died_in(frame: str) -> str:
        return (
            "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
            '  File "/testbed/tests/runtests.py", line 27, in <module>\n    from django.test import TestCase\n'
            f'  File "/testbed/{frame}", line 1, in <module>\n    import not_there\n'
            "ModuleNotFoundError: No module named 'not_there'\n</output>"
        )

    def run_with(output: str) -> Trace:
        return _coding_run(
            [(REPRO, "<returncode>0</returncode>"), ("python repro.py", FAILED), EDIT,
             ("python repro.py", PASSED), ("./tests/runtests.py model_fields", output)]
        )  # fmt: skip

    trace = run_with(died_in(CHANGED))
    facts = TestRunFacts(trace)
    (died,) = [r for r in facts.runs if r.is_test]
    assert facts.project_test(died) and died.summary == "ModuleNotFoundError: No module named 'not_there'"
    (finding,) = coding_findings(trace)
    assert "last test run failed" in finding.title and finding.failure_mode == "3.3"
    assert any(u.quote == died.summary for u in finding.evidence)
    elsewhere = TestRunFacts(run_with(died_in("django/conf/__init__.py")))
    assert not [r for r in elsewhere.runs if r.is_test]


def test_a_failure_a_dying_runner_showed_first_begins_at_the_edit_before_it():
    """An edit breaks the import (the runner dies in the changed file), the next edit mends the
    import but not the rest, and the rerun fails its tests: the failure began at the first edit."""
    died = (
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
        f'  File "/testbed/{CHANGED}", line 1, in <module>\n    import not_there\n'
        "ModuleNotFoundError: No module named 'not_there'\n</output>"
    )
    failing = (
        "<returncode>1</returncode>\n<output>\nFAIL: test_x (model_fields.tests.T.test_x)\n"
        "----------------------------------------------------------------------\n"
        "Ran 3 tests in 0.01s\n\nFAILED (failures=1)\n</output>"
    )
    breaking = (
        f"sed -i '1i import not_there' {CHANGED} && sed -i 's/y = 1/y = 0/' {CHANGED}",
        "<returncode>0</returncode>",
    )
    mending = (f"sed -i '1d' {CHANGED}", "<returncode>0</returncode>")
    trace = _coding_run(
        [(REPRO, "<returncode>0</returncode>"), ("python repro.py", FAILED), EDIT, ("python repro.py", PASSED),
         breaking, ("python tests/runtests.py model_fields", died), mending,
         ("python tests/runtests.py model_fields", failing)]
    )  # fmt: skip
    (finding,) = coding_findings(trace)
    assert "last test run failed" in finding.title
    assert breaking[0] in trace.steps[int(finding.first_anomalous_step[1:])].tool.arguments["command"]


def test_a_release_note_written_after_the_last_run_is_no_unrun_change():
    """Django's convention: the fix, its checks passing, then a line in docs/releases/. Prose
    changes nothing a run could show; the code's last change ran."""
    note = "docs/releases/4.2.txt"
    add_note = (f"cat >> {note} <<'EOF'\n* ``x`` is now 2.\nEOF", "<returncode>0</returncode>")
    trace = _coding_run(
        [(REPRO, "<returncode>0</returncode>"), ("python repro.py", FAILED), EDIT, ("python repro.py", PASSED),
         ("python tests/runtests.py model_fields", "Ran 3 tests in 0.01s\n\nOK"), add_note]
    )  # fmt: skip
    diff = (
        trace.steps[-1].content
        + f"diff --git a/{note} b/{note}\n--- a/{note}\n+++ b/{note}\n@@ -1 +1,2 @@\n x\n+* y\n"
    )
    trace.steps[-1] = trace.steps[-1].model_copy(update={"content": diff})
    facts = TestRunFacts(trace)
    assert note in facts.changed and all(note not in e.targets for e in facts.source_edits)
    assert coding_findings(trace) == []


def test_an_assertion_moved_word_for_word_is_no_test_edited_to_fit():
    """A regression test inserted into an existing test file, its neighbour's assertion shown by the
    diff as removed and added again unchanged: nothing the test expected changed. A rewritten
    assertion still counts."""
    tests = "tests/model_fields/tests.py"

    def run_with(hunk: str) -> Trace:
        trace = _coding_run(
            [(REPRO, "<returncode>0</returncode>"), ("python repro.py", FAILED), EDIT, ("python repro.py", PASSED),
             ("python tests/runtests.py model_fields", "Ran 4 tests in 0.01s\n\nOK")]
        )  # fmt: skip
        diff = (
            trace.steps[-1].content + f"diff --git a/{tests} b/{tests}\n--- a/{tests}\n+++ b/{tests}\n{hunk}"
        )
        trace.steps[-1] = trace.steps[-1].model_copy(update={"content": diff})
        return trace

    moved = (
        "@@ -10,2 +10,6 @@\n-        self.assertEqual(f.x, 1)\n+    def test_dots(self):\n"
        "+        self.assertEqual(slug('a.b'), 'a-b')\n+\n+    def test_x(self):\n+        self.assertEqual(f.x, 1)\n"
    )
    assert coding_findings(run_with(moved)) == []
    rewritten = "@@ -10 +10 @@\n-        self.assertEqual(f.x, 1)\n+        self.assertEqual(f.x, 2)\n"
    (finding,) = coding_findings(run_with(rewritten))
    assert "edited the existing test" in finding.title


def test_a_failure_goes_away_only_in_the_check_that_showed_it():
    """The reproduction failed on the original code for want of its setup; rewritten with the
    setup, it passes after the change: the rewrite, not the fix, may have made it pass, and no
    other output shows the fix. A script that goes on from the one that failed (cases appended)
    still shows it."""
    unconfigured = (
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
        "django.core.exceptions.ImproperlyConfigured: settings are not configured\n</output>"
    )
    mended = REPRO.replace("from django", "import django.conf\ndjango.conf.settings.configure()\nfrom django")
    rewritten = _coding_run(
        [(REPRO, "<returncode>0</returncode>"), ("python repro.py", unconfigured), EDIT,
         (mended, "<returncode>0</returncode>"), ("python repro.py", PASSED)]
    )  # fmt: skip
    (finding,) = coding_findings(rewritten)
    assert "no test output" in finding.title and finding.disposition.value == "realized"

    extended = _coding_run(
        [(REPRO, "<returncode>0</returncode>"), ("python repro.py", FAILED), EDIT,
         ("cat <<'EOF' >> repro.py\nprint(fields.x + 1)\nEOF", "<returncode>0</returncode>"),
         ("python repro.py", "<returncode>0</returncode>\n<output>\n2\n3\n</output>")]
    )  # fmt: skip
    assert not coding_findings(extended)


def test_a_run_that_only_reads_another_project_s_files_is_quiet(tmp_path, capsys):
    """benchmarks/foreign_files_probe.py over a small project: a module whose docstrings and
    messages speak to its users of requests and tasks, a solver that prints its iteration limit,
    and a manual in the second person. Viewing them files nothing the bare run does not."""
    from benchmarks.foreign_files_probe import main

    (tmp_path / "gate.py").write_text(
        'class Gate:\n    """Put this after the session middleware. Set the login_url attribute if you\n'
        '    need another page for the task at hand."""\n\n    login_url = "/login/"\n\n'
        "    def __call__(self, request):\n        if not request.user.is_authenticated:\n"
        '            raise Denied("Log in first. You must enable sessions for this request.")\n'
        "        return self.get_response(request)\n" * 3
    )
    (tmp_path / "solver.py").write_text(
        "def solve(f, max_iter=50):\n    for step in range(max_iter):\n        x = f(x)\n"
        '    print("Maximum number of iterations reached")\n    return x\n' * 5
    )
    (tmp_path / "guide.txt").write_text(
        "Deploying\n=========\n\nSet the timeout on each request before you deploy. Run the task again "
        "if you must, and send the logs to the team.\n" * 8
    )
    result = main([str(tmp_path), "--glob", "*", "--runs", "3", "--views", "3", "--json"])
    assert result["files"] == 3 and result["quiet_runs"] == 3 and result["findings"] == []
    assert json.loads(capsys.readouterr().out)["quiet_runs"] == 3


def test_a_sed_that_failed_wrote_nothing():
    """sed refuses a script it cannot parse and writes nothing: the reproduction after it still ran
    the original code, and the fix begins at the edit that worked."""
    broken = (
        f"sed -i 's/x = 1/x = (2/;s/((/' {CHANGED}",
        "<returncode>1</returncode>\n<output>\nsed: -e expression #2, char 5: unterminated `s' command\n</output>",
    )
    facts = TestRunFacts(
        _coding_run([broken, (REPRO + "\npython repro.py", FAILED), EDIT, ("python repro.py", PASSED)])
    )
    assert [e.pos for e in facts.source_edits] == [5]
    assert facts.on_original_code(facts.runs[0]) and not facts.on_original_code(facts.runs[1])


def test_a_patch_script_edits_when_it_runs_and_a_cleanup_after_the_fix_was_shown_is_no_finding():
    """A script that rewrites the file through a variable (``open(path, 'w')``, ``writelines``)
    edits it when it runs; a cleanup it makes after the fix was shown (the reproduction failing on
    the original code, passing on the change) never ran, and is no finding: a fix shown."""
    patch = (
        "cat <<'EOF' > cleanup.py\n"
        f"path = '{CHANGED}'\n"
        "lines = open(path).readlines()\n"
        "with open(path, 'w') as f:\n"
        "    f.writelines(lines[:-1])\n"
        "EOF"
    )
    trace = _coding_run(
        [(REPRO + "\npython repro.py", FAILED), EDIT, ("python repro.py", PASSED),
         (patch, "<returncode>0</returncode>"), ("python cleanup.py", "<returncode>0</returncode>")]
    )  # fmt: skip
    facts = TestRunFacts(trace)
    assert facts.source_edits[-1].pos == 9  # the run of cleanup.py
    assert coding_findings(trace) == []


def test_a_diff_of_an_existing_test_alone_that_rewrites_its_assertions_is_a_test_edited_to_fit():
    """No source file changed, only an existing test's expectation: the strongest form of a test
    edited to fit, which went unjudged when a run without a fix was not read at all."""
    test = "tests/model_fields/test_integerfield.py"
    edit = (f"sed -i 's/assert value == 1/assert value == 2/' {test}", "<returncode>0</returncode>")
    trace = _coding_run(
        [(REPRO + "\npython repro.py", FAILED), edit, (f"python -m pytest {test}", "1 passed in 0.01s")]
    )
    diff = f"diff --git a/{test} b/{test}\n--- a/{test}\n+++ b/{test}\n@@ -1 +1 @@\n-    assert value == 1\n+    assert value == 2\n"
    steps = [*trace.steps[:-1], trace.steps[-1].model_copy(update={"content": diff})]
    (found,) = coding_findings(Trace(header=trace.header, steps=steps))
    assert (
        found.title == f"agent edited the existing test {test} to fit its change"
        and found.first_anomalous_step == "s3"
    )


def test_failing_tests_that_a_later_run_of_other_tests_did_not_clear_are_not_called_the_last_run():
    """A test fails after the change, then a run of another test passes: the run did not end on a
    failing test run, so the title says the failing tests were never passed again."""
    failing = "FAILED tests/test_x.py::test_a - AssertionError\n===== 1 failed, 4 passed in 0.12s ====="
    other = "===== 1 passed, 4 deselected in 0.1s ====="
    runs = [(REPRO + "\npython repro.py", FAILED), EDIT, ("python -m pytest tests/test_x.py", failing)]
    (ended,) = coding_findings(_coding_run(runs))
    assert ended.title == "agent submitted while its last test run failed"
    (found,) = coding_findings(_coding_run([*runs, ("python -m pytest tests/test_x.py -k test_b", other)]))
    assert found.title == "agent submitted with failing tests that no later run passed"
    assert found.evidence[1].quote == ended.evidence[1].quote  # the failing run's summary, both times


def test_an_assertion_that_a_call_raises_what_the_request_reports_it_raising_is_rewritten_as_asked():
    """The existing test asserted that ``slugify(…)`` raises ``ValueError``; a request reporting that
    very call raising it asks for that to change. A request that names the exception for another
    call reports nothing the test pinned down: rewriting the test is fitting it."""
    test = "tests/utils_tests/test_text.py"
    edit = (f"sed -i 's/assertRaises/assertEqual/' {test}", "<returncode>0</returncode>")
    trace = _coding_run([(REPRO + "\npython repro.py", FAILED), EDIT, edit, ("python repro.py", PASSED)])
    hunk = (
        "@@ -1 +1 @@\n-        self.assertRaises(ValueError, slugify, 'a.b')\n"
        "+        self.assertEqual(slugify('a.b'), 'a-b')\n"
    )
    diff = trace.steps[-1].content + f"diff --git a/{test} b/{test}\n--- a/{test}\n+++ b/{test}\n{hunk}"

    def edited(request: str) -> list[str]:
        steps = [trace.steps[0].model_copy(update={"content": request}), *trace.steps[1:-1]]
        steps.append(trace.steps[-1].model_copy(update={"content": diff}))
        return [
            f.title for f in coding_findings(Trace(header=trace.header, steps=steps)) if "edited" in f.title
        ]

    assert edited("`slugify('a.b')` raises a ValueError; it should give 'a-b'.") == []
    assert edited("`Truncator('a.b')` raises a ValueError; it should give 'a-b'.") == [
        f"agent edited the existing test {test} to fit its change"
    ]


def test_an_edit_tried_elsewhere_is_no_lost_change_when_the_diff_changes_the_project():
    """An edit made from a subdirectory (``cd sub && sed -i … x.py``) or of a copy outside the
    checkout (an absolute path) names no file of the diff; the diff changes the project's code, so
    the fix is there: no lost change. An absolute path is no project file at all."""
    folder, name = CHANGED.rsplit("/", 1)
    edit = (f"cd {folder} && sed -i 's/x = 1/x = 2/' {name}", "<returncode>0</returncode>")
    scratch = ("sed -i 's/a/b/' /tmp/copy_of_fields.py", "<returncode>0</returncode>")  # fmt: skip
    trace = _coding_run([(REPRO + "\npython repro.py", FAILED), edit, scratch, ("python repro.py", PASSED)])
    assert [t for e in TestRunFacts(trace).edited_in_place for t in e.targets] == [name]
    assert not [f for f in coding_findings(trace) if "none of the change" in f.title]


@pytest.mark.parametrize(
    "command, output",
    [
        ("pytest tests/test_x.py | head -5", "tests/test_x.py F..\n\n=== FAILURES ===\n___ test_a ___\n"),
        ("pytest --help | grep -- --runxfail", "  --runxfail           Report the results of xfail tests"),
        ("pytest --collect-only -q tests", "tests/test_x.py::test_a\n\n3 tests collected in 0.01s"),
    ],
)
def test_a_runner_that_summarised_nothing_and_did_not_fail_is_no_run(command, output):
    """Its output cut by ``| head`` (a failure may be above the cut), its help, or a collection
    without a run: nothing says the tests passed, so it is no run (it was a passing check)."""
    facts = TestRunFacts(
        _coding_run([(command, f"<returncode>0</returncode>\n<output>\n{output}\n</output>")])
    )
    assert facts.runs == []


def test_a_runner_piped_beside_a_script_keeps_the_scripts_run():
    both = (
        "pytest tests/test_x.py | head -5; python repro.py",
        "<returncode>0</returncode>\n<output>\nok\n</output>",
    )
    (run,) = TestRunFacts(_coding_run([both])).runs
    assert run.runner == "script" and run.ok


def test_the_long_runs_probe_appends_to_a_request_a_message_and_a_result():
    """benchmarks/long_runs_probe.py: the text goes to the principal's request, the agent's first
    step (here a call with its thought) and the first tool result, once each; each shape is
    reviewed at two lengths."""
    from benchmarks.long_runs_probe import RUNS, probe, with_text

    name = "coding run (mini-SWE-agent)"
    trace = trace_of(REPO / RUNS[name])
    changed = with_text(trace, "@" * 50)
    touched = [s for s, o in zip(changed.steps, trace.steps, strict=True) if s.content != o.content]
    assert [(s.actor_kind, s.kind) for s in touched] == [
        (ActorKind.human, StepKind.message),
        (ActorKind.agent, StepKind.tool_call),
        (ActorKind.tool, StepKind.tool_result),
    ]
    assert all(s.content.endswith("\n" + "@" * 50) for s in touched)
    (row,) = probe(200, 3.0, runs={name: RUNS[name]}, shapes=["A"])
    assert (row["run"], row["shape"]) == (name, "A")
    assert set(row) == {"run", "shape", "seconds", "doubled", "growth", "baseline"}


@pytest.mark.parametrize(
    ("where", "run"),
    [("request", lambda n: "a" + " " * n + "b"), ("turn", lambda n: "```bash\nx" * (n // 8))],
    ids=["blanks in the request", "unclosed actions in a turn"],
)
def test_a_run_s_request_and_turns_are_imported_in_linear_time(tmp_path, where, run):
    """A long blank run inside ``<pr_description>`` (blanks around a lazy body read it once per
    character: 20,000 spaces, 0.5 s), a turn of many ```` ```bash ```` openings never closed (each
    ran to the turn's end: 5,000 of them, 0.9 s). Twice the run, about twice the time; the
    request is still read between its tags, and the real action still found."""
    from tests.timing import growth

    doc = json.loads(CLEAN.read_text())
    user = next(i for i, m in enumerate(doc["messages"]) if m["role"] == "user")
    agent = next(i for i, m in enumerate(doc["messages"]) if m["role"] == "assistant")

    def written(n: int) -> Path:
        changed = json.loads(json.dumps(doc))
        if where == "request":
            text = changed["messages"][user]["content"]
            changed["messages"][user]["content"] = text.replace(
                "</pr_description>", run(n) + "</pr_description>", 1
            )
        else:  # after the turn's action: before it, the first opening would run to its closing
            changed["messages"][agent]["content"] += "\n" + run(n)
        path = tmp_path / f"{where}-{n}.traj.json"
        path.write_text(json.dumps(changed))
        return path

    small, large = written(20_000), written(40_000)
    assert growth(lambda: trace_of(small), lambda: trace_of(large)) < 3
    trace, original = trace_of(large), trace_of(CLEAN)
    assert [s.tool.arguments for s in trace.steps if s.tool and s.kind is StepKind.tool_call] == [
        s.tool.arguments for s in original.steps if s.tool and s.kind is StepKind.tool_call
    ]
    if where == "request":
        task = trace.header.task
        assert task.startswith(original.header.task) and task.endswith("a" + " " * 40_000 + "b")
    else:
        assert trace.header.task == original.header.task
