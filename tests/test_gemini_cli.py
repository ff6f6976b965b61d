"""Gemini CLI chat sessions: the importer on real sessions (tests/fixtures/real/gemini-cli/SOURCES.md)
and the coding facts read from them. A case the real sessions lack (a test run failing after an
edit) is tested on a copy changed for it, as the test says."""

from __future__ import annotations

import json

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, command_of, exit_code
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind
from schemas.trace import REFUSED
from tests.conftest import REPO
from tests.trace_files import json_lines, trace_of, write_json_lines

REAL = REPO / "tests" / "fixtures" / "real" / "gemini-cli"
AGENT_BUILT = REAL / "interactive_python_agent_pip_exit127_venv_rewrite_unrun.json"
REPLACED = REAL / "headless_replace_edit_then_reread.json"
NO_TOOL = REAL / "headless_write_file_not_in_registry_ends_on_error.json"
UPSERTED = REAL / "recording_write_shell_upserted_calls.jsonl"  # the JSON-lines recording (0.40+)
SHELL_LS = REAL / "recording_0_40_shell_ls.jsonl"
RESUMED = REAL / "recording_checkpoints_resume_fake_model.jsonl"
RECORDINGS = [UPSERTED, SHELL_LS, RESUMED]


@pytest.mark.parametrize(
    "path",
    [AGENT_BUILT, REPLACED, NO_TOOL, *RECORDINGS],
    ids=["interactive", "replace", "no-tool", "upserted", "shell-ls", "resumed"],
)
def test_a_session_is_detected_as_gemini_cli(path):
    assert detect(path)[0] == "gemini-cli"


def test_a_recording_is_its_messages_each_once_in_their_last_copy():
    """Each assistant record is written twice (its thoughts first, then again with its tool calls
    and their results): one message each. The context the CLI opens with and the function
    responses it sends back to the model are not the principal's words."""
    trace = trace_of(UPSERTED)
    humans = [s for s in trace.steps if s.actor_kind is ActorKind.human]
    assert [s.content for s in humans] == [trace.header.task] and trace.header.task.startswith(
        "Read hello.txt"
    )
    assert trace.steps[0].actor == "gemini-cli" and trace.steps[0].content.startswith("<session_context>")
    calls = [s.tool.name for s in trace.steps if s.kind is StepKind.tool_call]
    assert calls == ["update_topic", "read_file", "write_file", "run_shell_command", "update_topic"]
    thoughts = [s for s in trace.steps if s.raw.get("block") == "reasoning"]
    assert len(thoughts) == 4  # three of the first record, one of the second: none read twice
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert all(r.refs.reply_to for r in results) and len(results) == len(calls)
    (written,) = [r.raw["written"] for r in results if "written" in r.raw]
    assert written == {"path": "probe_out.txt", "created": True}
    meta = trace.header.metadata
    assert (meta["session_kind"], meta["models"], meta["skipped_records"]) == (
        "main",
        ["gemini-3.5-flash"],
        {"record:function_responses": 2},
    )
    assert meta["last_updated"] == "2026-07-31T11:42:53.039Z"  # the last $set's
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_a_checkpoint_writes_the_messages_again_and_later_records_go_on_from_it():
    """The resumed session: a checkpoint, a prompt, a reply, a resume, a checkpoint of the whole
    history (the reply's content now parts), a prompt and a reply."""
    trace = trace_of(RESUMED)
    said = [(s.actor, s.content) for s in trace.steps if s.actor != "gemini-cli"]
    reply = "Hello from the fake model. 1 + 1 = 2."
    assert said == [("user", "say hi"), ("agent", reply), ("user", "and again"), ("agent", reply)]
    assert trace.steps[1].raw["message"] == "$set.messages[1]" and trace.steps[1].raw["line"] == 9
    assert trace.header.metadata["summary"] == reply


def test_the_results_the_cli_sent_back_answer_calls_recorded_without_one(tmp_path):
    """The upserted session with every call's recorded result taken out: the function responses
    sent back to the model (its ``user`` records) answer them, word for word."""
    records = json_lines(UPSERTED)
    for record in records:
        for call in record.get("toolCalls", []):
            del call["result"]
    trace = trace_of(write_json_lines(tmp_path / "session-x.jsonl", records))
    whole = trace_of(UPSERTED)
    assert [s.content for s in trace.steps] == [s.content for s in whole.steps]


def test_what_a_rewind_took_back_is_kept_and_marked(tmp_path):
    """The shell session rewound to before its reply, then prompted again (a copy changed for the
    case: no public recording holds a rewind): the command that ran stays in the trace."""
    records = json_lines(SHELL_LS)
    records += [
        {"$rewindTo": "g-assistant-1"},
        {"id": "g-user-2", "timestamp": "2026-04-29T21:40:01.000Z", "type": "user", "content": [{"text": "Just say hello."}]},
        {"id": "g-assistant-3", "timestamp": "2026-04-29T21:40:03.000Z", "type": "gemini", "content": "Hello!"},
    ]  # fmt: skip
    trace = trace_of(write_json_lines(tmp_path / "session-r.jsonl", records))
    rewound = [s for s in trace.steps if s.raw.get("rewound")]
    assert [s.kind for s in rewound] == [StepKind.tool_call, StepKind.tool_result, StepKind.message]
    assert [s.content for s in trace.steps[-2:]] == ["Just say hello.", "Hello!"]
    assert not trace.steps[0].raw.get("rewound")


def test_a_failing_test_run_in_a_recording_is_a_finding(tmp_path):
    """The shell session's command made a failing pytest run, its reply a claim (a changed copy)."""
    records = json_lines(SHELL_LS)
    call = records[3]["toolCalls"][0]
    call["args"]["command"] = "pytest -q"
    output = "Output: F.\n1 failed, 1 passed in 0.02s\nExit Code: 1\nProcess Group PGID: 12345"
    call["result"][0]["functionResponse"]["response"]["output"] = output
    records[4]["content"] = "All tests pass."
    trace = trace_of(write_json_lines(tmp_path / "session-t.jsonl", records))
    (run,) = TestRunFacts(trace).runs
    assert (run.runner, run.failed, run.exit) == ("pytest", 1, 1)
    found = run_rules_audit(trace).findings
    assert any("1 failed" in u.quote for f in found for u in f.evidence)


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda r: r.insert(2, "[1, 2]"), "line 3"),
        (lambda r: r.insert(2, {"$set": []}), "line 3, field '$set'"),
        (lambda r: r.insert(2, {"$set": {"messages": [5]}}), "line 3, field '$set.messages[0]'"),
        (lambda r: r.insert(2, {"type": "user", "content": "x", "id": None}), "line 3, field 'id'"),
        (lambda r: r[3]["toolCalls"][0].update(result=[{"functionResponse": 3}]), "line 4, field 'toolCalls[0].result'"),
    ],
    ids=["not-object", "set-not-object", "checkpoint-message", "no-id", "response-not-object"],
)  # fmt: skip
def test_bad_recording_lines_name_the_file_line_and_field(tmp_path, damage, where):
    records = json_lines(SHELL_LS)
    damage(records)
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8"
    )
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "gemini-cli")).steps())
    assert f"{path}, {where}" in str(caught.value)


def test_the_principal_the_agents_thoughts_and_the_header_are_who_the_session_says():
    trace = trace_of(AGENT_BUILT)
    meta = trace.header.metadata
    assert (meta["session_id"], meta["models"]) == (
        "981c87cb-90ef-4c7f-948d-23173ff43e4e",
        ["gemini-2.5-pro"],
    )
    humans = [s for s in trace.steps if s.actor_kind is ActorKind.human]
    assert len(humans) == 3 and trace.header.task == humans[0].content
    thoughts = [s for s in trace.steps if s.raw.get("block") == "reasoning"]
    assert thoughts and all(s.actor == "agent" and s.raw.get("subject") for s in thoughts)


def test_shell_results_carry_the_exit_code_the_cli_wrote_and_a_cancelled_call_is_a_refusal():
    trace = trace_of(AGENT_BUILT)
    shells = [s for s in trace.steps if s.kind is StepKind.tool_result and s.tool.name == "run_shell_command"]
    assert [exit_code(s) for s in shells] == [None, 127, 1, 0, 0]
    assert shells[0].raw["error_type"] == REFUSED  # the user cancelled it: nothing ran
    assert shells[0].step_id not in {trace.steps[r.result].step_id for r in TestRunFacts(trace).runs}
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call and s.tool.name == "run_shell_command"]
    assert command_of(calls[1]) == "pip install RestrictedPython"
    assert all(r.refs.reply_to == c.step_id for c, r in zip(calls, shells, strict=True))


def test_writes_say_whether_they_made_the_file_and_a_made_file_is_new():
    trace = trace_of(AGENT_BUILT)
    written = [s.raw["written"] for s in trace.steps if "written" in s.raw]
    path = "/Users/jnarowski/Dev/playground/src/test-project/main.py"
    assert written == [{"path": path, "created": True}, {"path": path, "created": False}]
    facts = TestRunFacts(trace)
    assert {p: c.new for p, c in facts.changed.items()} == {path: True}
    assert trace.steps[facts.closing_report].content.startswith("I've updated `main.py`.")


def test_an_edit_checked_by_reading_it_back_files_no_claim_from_the_agents_thoughts():
    """The replace session re-reads its file and says "Done.": its thoughts ("I've confirmed …")
    are said to no one, so no claim is judged in them."""
    trace = trace_of(REPLACED)
    (replace,) = [s for s in trace.steps if s.kind is StepKind.tool_result and s.tool.name == "replace"]
    assert replace.raw["written"] == {"path": "/private/tmp/gemini-test/created.txt", "created": False}
    report = run_rules_audit(trace)
    assert report.findings == [] and validate_report(report.model_dump(mode="json"), trace).ok


def test_a_tool_the_cli_did_not_offer_is_a_failed_call():
    trace = trace_of(NO_TOOL)
    (result,) = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert result.raw["status"] == "error" and "not found in registry" in result.content
    assert "written" not in result.raw


def test_a_test_run_failing_after_the_edit_is_a_finding_citing_the_claim_and_the_output(tmp_path):
    """The replace session with a pytest run after its edit and a claim in place of "Done."."""
    session = json.loads(REPLACED.read_text(encoding="utf-8"))
    target = "/private/tmp/gemini-test/src/greet.py"
    edit = next(
        m for m in session["messages"] if m.get("toolCalls") and m["toolCalls"][0]["name"] == "replace"
    )
    edit["toolCalls"][0]["args"]["file_path"] = target
    output = "F.\n1 failed, 1 passed in 0.02s"
    shell = {
        "id": "run_shell_command-1-a",
        "name": "run_shell_command",
        "args": {"command": "pytest -q", "description": "Run the tests."},
        "result": [
            {
                "functionResponse": {
                    "id": "run_shell_command-1-a",
                    "name": "run_shell_command",
                    "response": {
                        "output": f"Command: pytest -q\nDirectory: (root)\nOutput: {output}\nError: (none)\n"
                        "Exit Code: 1\nSignal: 0\nBackground PIDs: (none)\nProcess Group PGID: 1"
                    },
                }
            }
        ],
        "status": "success",
    }
    session["messages"][-1]["toolCalls"] = [shell]
    session["messages"].append(
        {"id": "x", "type": "gemini", "content": "Done: greet.py is fixed and all tests pass."}
    )
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session, indent=2), encoding="utf-8")
    trace = trace_of(path)
    report = run_rules_audit(trace)
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    assert [f.title for f in coding][:1] == ["agent submitted while its last test run failed"]
    quotes = " ".join(u.quote for u in coding[0].evidence)
    assert "1 failed" in quotes and "all tests pass" in quotes
    assert validate_report(report.model_dump(mode="json"), trace).ok


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (lambda s: s["messages"].insert(1, 7), "messages[1]"),
        (lambda s: s["messages"][1].update(toolCalls={"name": "x"}), "messages[1].toolCalls"),
        (lambda s: s["messages"][1]["toolCalls"][0].update(result=[{"functionResponse": 3}]), "result"),
        (lambda s: s["messages"][0].update(content=5), "messages[0].content"),
    ],
    ids=["message-not-object", "calls-not-list", "response-not-object", "content-not-text"],
)
def test_bad_input_names_the_file_and_field(tmp_path, damage, field):
    session = json.loads(REPLACED.read_text(encoding="utf-8"))
    damage(session)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "gemini-cli")).steps())
    assert str(path) in str(caught.value) and field in str(caught.value)
