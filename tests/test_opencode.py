"""OpenCode sessions: the importer on real `opencode run --format json` output
(tests/fixtures/real/opencode/SOURCES.md) and the coding facts read from it. The export form, a
session's error, a refused call and a failing test run are tested on copies changed for them, as
each test says."""

from __future__ import annotations

import json

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

REAL = REPO / "tests" / "fixtures" / "real" / "opencode"
COMMIT = REAL / "run_json_git_commit_exit128_retried.jsonl"
EDITS = REAL / "run_json_five_edits_go_test.jsonl"
PROMPT = "Rename AddFile to Upload and keep the tests passing."


def _tool(events: list[dict], tool: str) -> dict:
    return next(e["part"] for e in events if e["type"] == "tool_use" and e["part"]["tool"] == tool)


@pytest.mark.parametrize("path", [COMMIT, EDITS], ids=["commit", "edits"])
def test_run_output_is_detected_as_opencode(path):
    assert detect(path)[0] == "opencode"


def test_a_bash_calls_exit_code_is_its_metadatas_and_a_non_zero_one_fails_it():
    """git commit with no identity: exit 128 though the part says "completed"; the retry passes."""
    trace = trace_of(COMMIT)
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert [exit_code(r) for r in results] == [0, 128, 0]
    assert (results[1].raw["status"], results[1].raw["error_type"]) == ("error", "exit_code")
    assert all(r.refs.reply_to == trace.steps[trace.steps.index(r) - 1].step_id for r in results)
    said = [s.content for s in trace.steps if s.actor == "agent" and s.kind is StepKind.message]
    assert said[-1].startswith("Committed. Summary of where things stand:")
    meta = trace.header.metadata
    assert (
        meta["session_id"] == "ses_fd1beea6affe6AbwlE1YotY142"
        and meta["skipped_records"]["part:step-finish"] == 4
    )
    assert meta["cost"] == pytest.approx(0.0984558)
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_edits_are_the_change_and_the_go_test_after_them_a_passing_run():
    trace = trace_of(EDITS)
    facts = TestRunFacts(trace)
    assert list(facts.changed) == [
        "/agent/workspace/pipedrive/v1/files.go",
        "/agent/workspace/pipedrive/v1/files_test.go",
    ]
    assert not any(c.new for c in facts.changed.values())
    (run,) = facts.runs
    assert (run.runner, run.ok, run.exit) == ("go", True, 0)
    assert trace.header.metadata["skipped_records"]["part:text (blank)"] == 2
    assert [f for f in run_rules_audit(trace).findings if f.detector == "coding_verification"] == []


def test_a_failing_go_test_the_closing_words_call_passing_is_a_finding(tmp_path):
    """The edits' go test failing (exit 1, ``--- FAIL``) under the same closing words (a changed copy)."""
    events = json_lines(EDITS)
    state = _tool(events, "bash")["state"]
    output = "--- FAIL: TestFilesService_Upload (0.00s)\n    files_test.go:41: unexpected file\nFAIL\nFAIL\tgithub.com/juhokoskela/pipedrive-go/pipedrive/v1\t0.031s\nFAIL\n"
    state["output"] = state["metadata"]["output"] = output
    state["metadata"]["exit"] = 1
    trace = trace_of(write_json_lines(tmp_path / "failing.jsonl", events))
    (run,) = TestRunFacts(trace).runs
    assert (run.runner, run.ok, run.exit) == ("go", False, 1)
    coding_finding(
        trace, '"filePath":"/agent/workspace/pipedrive/v1/files.go"', "FAIL", "Tests updated and passing"
    )


def test_a_refused_call_ran_nothing_and_a_sessions_error_ends_the_run(tmp_path):
    """The commit refused by a permission prompt, the session ending on an error (a changed copy)."""
    events = json_lines(COMMIT)
    state = _tool(events, "bash")["state"]
    state.update(status="error", error="The user rejected permission to use this specific tool call.")
    events.append({"type": "error", "timestamp": 1787482766200, "sessionID": events[0]["sessionID"],
                   "error": {"name": "UnknownError", "data": {"message": "Unexpected server error."}}})  # fmt: skip
    trace = trace_of(write_json_lines(tmp_path / "refused.jsonl", events))
    first = next(s for s in trace.steps if s.kind is StepKind.tool_result)
    assert (first.raw["status"], first.raw["error_type"]) == ("error", REFUSED)
    assert first.step_id not in {trace.steps[r.result].step_id for r in TestRunFacts(trace).runs}
    end = trace.steps[-1]
    assert (end.raw["record"], end.raw["exit_status"], end.content) == (
        "exit",
        "UnknownError",
        "Unexpected server error.",
    )


def test_an_export_is_the_same_session_with_its_prompt(tmp_path):
    """``opencode export``'s document built from the edits run's parts (one assistant message) with a
    user message first, and a message that ended in an error: the prompt is the principal's, the
    parts read as in the stream, the error is the CLI's notice."""
    events = json_lines(EDITS)
    parts = [e["part"] for e in events]
    session = events[0]["sessionID"]
    doc = {
        "info": {"id": session, "slug": "quiet-lake", "projectID": "global", "directory": "/agent/workspace",
                 "title": "Rename AddFile", "version": "1.2.20"},
        "messages": [
            {"info": {"role": "user", "id": "msg_u", "sessionID": session}, "parts": [{"type": "text", "text": PROMPT}]},
            {"info": {"role": "assistant", "id": "msg_a", "sessionID": session, "modelID": "deepseek-v4-pro"},
             "parts": parts},
            {"info": {"role": "assistant", "id": "msg_b", "sessionID": session, "modelID": "deepseek-v4-pro",
                      "error": {"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}},
             "parts": []},
        ],
    }  # fmt: skip
    path = tmp_path / "session-export.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    assert detect(path)[0] == "opencode"
    trace = trace_of(path)
    stream = trace_of(EDITS)
    assert trace.header.task == PROMPT and trace.steps[0].actor_kind is ActorKind.human
    assert [s.content for s in trace.steps[1:-1]] == [s.content for s in stream.steps]
    assert (trace.steps[-1].actor, trace.steps[-1].raw["error"]) == ("opencode", "MessageAbortedError")
    meta = trace.header.metadata
    assert (meta["title"], meta["version"], meta["models"]) == (
        "Rename AddFile",
        "1.2.20",
        ["deepseek-v4-pro"],
    )
    assert trace.steps[1].raw["part"] == "messages[1].parts[1]"


def test_a_call_still_running_when_the_session_was_cut_has_no_result(tmp_path):
    events = json_lines(COMMIT)
    state = _tool(events, "bash")["state"]
    state["status"] = "running"
    trace = trace_of(write_json_lines(tmp_path / "cut.jsonl", events))
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    answered = {s.refs.reply_to for s in trace.steps if s.kind is StepKind.tool_result}
    assert calls[0].step_id not in answered and len(calls) == 3 and len(answered) == 2


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('{"type": "text", "sessionID": "s", "part": ', "line 2"),
        ('{"type": "text", "sessionID": "s"}', "line 2, field 'part'"),
        ('{"type": "text", "sessionID": "s", "part": {"type": "text", "text": 5}}', "line 2, field 'part.text'"),
        ('{"type": "tool_use", "sessionID": "s", "part": {"type": "tool", "tool": "bash", "state": 3}}',
         "line 2, field 'part.state'"),
        ("[1]", "line 2"),
    ],
    ids=["cut-json", "no-part", "text-not-text", "state-not-object", "not-object"],
)  # fmt: skip
def test_bad_lines_name_the_file_line_and_field(tmp_path, line, where):
    lines = COMMIT.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([lines[0], line, *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "opencode")).steps())
    assert f"{path}, {where}" in str(caught.value)


def test_a_first_event_longer_than_the_head_is_still_detected(tmp_path):
    """A run whose first event is a tool's long output (a changed copy): detected by its opening."""
    events = json_lines(COMMIT)[2:]
    events[0]["part"]["state"]["output"] = "y" * 70_000
    path = write_json_lines(tmp_path / "long.jsonl", events)
    assert detect(path)[0] == "opencode" and trace_of(path).steps[1].content == "y" * 70_000
