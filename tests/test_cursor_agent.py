"""The Cursor CLI agent's headless output: the importer on real captures
(tests/fixtures/real/cursor-agent/SOURCES.md) and the coding facts read from them. Cases the real
captures lack (a failing test run, a capture cut mid-message, an error result) are tested on copies
changed for them, as each test says."""

from __future__ import annotations

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, exit_code
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind
from schemas.trace import REFUSED
from tests.conftest import REPO
from tests.trace_files import coding_finding, json_lines, trace_of, write_json_lines

REAL = REPO / "tests" / "fixtures" / "real" / "cursor-agent"
REJECTED = REAL / "shell_rejected_twice_partial_output.jsonl"
FORCED = REAL / "shell_echo_force_partial_output.jsonl"
NO_RESULT = REAL / "unknown_option_retries_stderr_no_result.jsonl"
EDITED = REAL / "read_then_edit_overwrite.ndjson"
FAILED = REAL / "shell_false_exit1_exit3_stderr_read_missing_file.jsonl"
CLAUDE_STREAM = REPO / "tests" / "fixtures" / "real" / "claude-code-stream"


@pytest.mark.parametrize(
    "path",
    [REJECTED, FORCED, NO_RESULT, EDITED, FAILED],
    ids=["rejected", "forced", "no-result", "edit", "failed"],
)
def test_a_capture_is_detected_as_cursor_and_claude_codes_stream_still_is_its_own(path):
    assert detect(path)[0] == "cursor-agent"
    assert {detect(p)[0] for p in CLAUDE_STREAM.glob("*.jsonl")} == {"claude-code-stream"}


def test_streamed_words_are_one_message_each_and_the_rejected_calls_are_refusals():
    """Every message arrives as deltas, then whole, and the result repeats them all: each is one
    step. The shell call rejected twice ran nothing."""
    trace = trace_of(REJECTED)
    said = [
        s.content
        for s in trace.steps
        if s.actor == "agent" and s.kind is StepKind.message and not s.raw.get("block")
    ]
    assert said == [
        "I'll run that command and report the exact output.",
        "The shell call was rejected with no output. I'll try the same command once more.",
        "The shell tool rejected the command both times, so there is no output to report. The rejection "
        "message was empty (`Rejected:`), and `echo dsh-tool-ok` never ran.",
    ]
    thoughts = [s for s in trace.steps if s.raw.get("block") == "reasoning"]
    assert (
        len(thoughts) == 3
        and thoughts[0].content == "Running `echo dsh-tool-ok` to capture the exact output."
    )
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert [(r.tool.name, r.raw["error_type"]) for r in results] == [("shell", REFUSED), ("shell", REFUSED)]
    assert all(r.refs.reply_to for r in results) and TestRunFacts(trace).runs == []
    humans = [s for s in trace.steps if s.actor_kind is ActorKind.human]
    assert [s.content for s in humans] == [trace.header.task]
    meta = trace.header.metadata
    assert (meta["session_id"], meta["model"], meta["result"]) == (
        "17e650d2-1c02-439a-bfc7-989b3de62988",
        "Grok 4.7 256K Extra High",
        "success",
    )
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_a_shell_call_that_ran_is_its_output_and_exit_code():
    trace = trace_of(FORCED)
    (call,) = [s for s in trace.steps if s.kind is StepKind.tool_call]
    (result,) = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert call.tool.arguments["command"] == "echo dsh-tool-ok" and result.refs.reply_to == call.step_id
    assert (result.content, exit_code(result), result.raw["status"]) == ("dsh-tool-ok\n", 0, "ok")


def test_failed_commands_and_a_failed_read_are_errors_with_what_they_said():
    """The recorded capture: a non-zero exit is ``result.failure`` (its ``exitCode`` the exit code,
    its printed output the result), a read of a missing file ``result.error`` (its
    ``errorMessage`` the result); the run still ends ``result/success``."""
    trace = trace_of(FAILED)
    results = {s.refs.reply_to: s for s in trace.steps if s.kind is StepKind.tool_result}
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    said = [(c.tool.arguments.get("command") or c.tool.name, results[c.step_id]) for c in calls]
    assert [(what, exit_code(r), r.raw["status"]) for what, r in said] == [
        ("false", 1, "error"),
        ("sh -c 'echo OOPS >&2; exit 3'", 3, "error"),
        ("read", None, "error"),
        ("edit", 0, "ok"),  # a result that did not fail counts as exit 0
        ("echo FINE", 0, "ok"),
    ]
    assert said[1][1].content.startswith("OOPS") and said[2][1].content == "File not found"
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_the_clis_stderr_captured_with_its_output_is_the_cli_speaking():
    trace = trace_of(NO_RESULT)
    last = trace.steps[-1]
    assert (last.actor, last.actor_kind) == ("cursor-agent", ActorKind.system)
    assert last.content == "RetriableError: [invalid_argument] unknown option '--system-prompt'"
    assert trace.header.metadata["skipped_records"] == {"event:connection": 6, "event:retry": 3}


def test_an_edit_says_whether_it_made_the_file_and_is_the_change():
    trace = trace_of(EDITED)
    read, edit = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert read.tool.name == "read" and read.content.startswith('{\n  "name": "toadstool-ts"')
    assert edit.raw["written"] == {"path": "/tmp/toadstool-cursor-fixture.txt", "created": False}
    assert "afterFullFileContent" not in edit.raw["result"]  # the file whole: the source keeps it
    facts = TestRunFacts(trace)
    assert list(facts.changed) == ["/tmp/toadstool-cursor-fixture.txt"]
    assert [e.targets for e in facts.edits] == [("/tmp/toadstool-cursor-fixture.txt",)]


def test_a_failing_test_run_after_the_edit_is_a_finding(tmp_path):
    """The edit capture, its file a module, with a pytest run that fails after the edit (a shell call
    whose result is ``failure``, exit 1) and a closing message that says the tests pass (a changed
    copy)."""
    records = json_lines(EDITED)
    for record in records[4:6]:  # the edit made of a module's, not a text file's
        edit = record["tool_call"]["editToolCall"]
        for part in (edit["args"], edit.get("result", {}).get("success", {})):
            if "path" in part:
                part["path"] = "/Users/boice/Documents/GitHub/toad-ts/summary.py"
    start = {"type": "tool_call", "subtype": "started", "call_id": "call_test", "session_id": records[0]["session_id"],
             "tool_call": {"shellToolCall": {"args": {"command": "pytest -q"}}}}  # fmt: skip
    output = "F.\n1 failed, 1 passed in 0.02s\n"
    done = start | {"subtype": "completed", "tool_call": {"shellToolCall": {"result": {"failure": {
        "command": "pytest -q", "exitCode": 1, "stdout": output, "stderr": "", "interleavedOutput": output}}}}}  # fmt: skip
    records[-2]["message"]["content"][0]["text"] = "Done. The summary is written and all tests pass."
    trace = trace_of(
        write_json_lines(tmp_path / "run.jsonl", [*records[:6], start, done, records[-2], records[-1]])
    )
    (run,) = TestRunFacts(trace).runs
    assert (run.runner, run.failed, run.exit) == ("pytest", 1, 1)
    coding_finding(
        trace, '"path":"/Users/boice/Documents/GitHub/toad-ts/summary.py"', "1 failed", "all tests pass"
    )


def test_a_capture_cut_mid_message_keeps_what_streamed(tmp_path):
    """The edit capture cut after its reply's deltas, before the whole message (a changed copy)."""
    records = json_lines(EDITED)
    trace = trace_of(write_json_lines(tmp_path / "cut.jsonl", records[:12]))
    last = trace.steps[-1]
    assert (last.actor, last.content, last.raw["streamed"]) == (
        "agent",
        "Done. Wrote a one-line summary to `/tmp/toadstool-cursor-fixture.txt`.",
        True,
    )


def test_an_error_result_ends_the_run_with_the_harnesss_record(tmp_path):
    records = json_lines(FORCED)
    records[-1] |= {"subtype": "error", "is_error": True, "result": "Request failed"}
    trace = trace_of(write_json_lines(tmp_path / "error.jsonl", records))
    end = trace.steps[-1]
    assert (end.raw["record"], end.raw["exit_status"], end.content) == ("exit", "error", "Request failed")


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('{"type": "user", "message": ', "line 3"),
        ('{"type": "tool_call", "subtype": "started", "call_id": "x", "tool_call": {}}', "line 3, field 'tool_call'"),
        ('{"type": "tool_call", "subtype": "completed", "call_id": "x", "tool_call": {"shellToolCall": {"result": {}}}}',
         "line 3, field 'tool_call.shellToolCall.result'"),
        ('{"type": "assistant", "message": {"content": 5}}', "line 3, field 'message.content'"),
        ("[1, 2]", "line 3"),
    ],
    ids=["cut-json", "no-tool", "no-outcome", "content-not-text", "not-object"],
)  # fmt: skip
def test_bad_lines_name_the_file_line_and_field(tmp_path, line, where):
    lines = FORCED.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([*lines[:2], line, *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "cursor-agent")).steps())
    assert f"{path}, {where}" in str(caught.value)
