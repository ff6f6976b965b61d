"""OpenHands V1 (Software Agent SDK) events: a real persisted conversation
(tests/fixtures/real/openhands-sdk/SOURCES.md) and the other forms the same events take — an
exported list, an evaluation's output.jsonl — as copies of it. The 2025 shapes (``execute_bash``, a
shell's exit code only in its metadata, a file editor's ``create``), a failing test run, a refusal
and the harness's errors are changed copies too, as each test says: the real conversation runs one
``pwd``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, exit_code, worked_beside
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.pipeline import iter_files
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind, Trace
from schemas.trace import REFUSED
from tests.conftest import REPO
from tests.trace_files import coding_finding

CONVERSATION = REPO / "tests" / "fixtures" / "real" / "openhands-sdk" / "terminal_pwd_finish_conversation"
STATE = CONVERSATION / "base_state.json"
DIFF = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _events() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((CONVERSATION / "events").iterdir())]


def _traces(path: Path) -> list[Trace]:
    return [Trace(header=t.header, steps=list(t.steps())) for t in open_traces(path)]


def _listed(tmp_path: Path, events: list[dict]) -> Trace:
    path = tmp_path / "history.json"
    path.write_text(json.dumps(events, indent=2))
    (trace,) = _traces(path)
    return trace


def _shell_2025(event: dict, output: str, metadata_code: int, command: str = "pytest -q") -> None:
    """A terminal action or observation as 2025's records write it: ``execute_bash``, the output in
    ``output``, ``exit_code`` null and ``error`` false whatever the command did."""
    event["tool_name"] = "execute_bash"
    if event["kind"] == "ActionEvent":
        event["action"] = {"kind": "ExecuteBashAction", "command": command, "is_input": False, "reset": False}
    else:
        suffix = f"\n[The command completed with exit code {metadata_code}.]"
        event["observation"] = {
            "kind": "ExecuteBashObservation",
            "output": output,
            "command": command,
            "exit_code": None,
            "error": False,
            "timeout": False,
            "metadata": {"exit_code": metadata_code, "pid": -1, "suffix": suffix},
        }


def test_a_persisted_conversation_is_found_by_its_state_and_read_in_its_events_order():
    assert detect(STATE)[0] == "openhands-sdk"
    (trace,) = _traces(STATE)
    kinds = [(s.kind, s.actor) for s in trace.steps]
    assert kinds == [
        (StepKind.message, "system"),
        (StepKind.message, "user"),
        (StepKind.tool_call, "agent"),
        (StepKind.tool_result, "terminal"),
        (StepKind.message, "agent"),  # the finish action's message: its closing words, not a call
        (StepKind.message, "user"),
        (StepKind.message, "agent"),
    ]
    call, result = trace.steps[2], trace.steps[3]
    assert call.tool.arguments["command"] == "pwd > tool_output.txt" and result.refs.reply_to == call.step_id
    assert exit_code(result) == 0 and result.raw["status"] == "ok"
    assert trace.header.task.startswith("Use the terminal tool to run `pwd`")
    meta = trace.header.metadata
    assert (
        meta["conversation_id"],
        meta["model"],
        meta["execution_status"],
        meta["events"],
        meta["tools"],
    ) == (
        "cd945624-03b9-487e-bdd4-018e3f531dfd",
        "openai/gpt-4o-mini",
        "finished",
        8,
        3,
    )
    assert meta["skipped_records"] == {"event:FinishObservation": 1}
    assert trace.steps[0].raw["file"].endswith("event-00000-5df490d1-98e8-4dea-9ae7-7f36c59f8ed5.json")
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_an_event_file_alone_points_to_its_conversation(tmp_path):
    event = next((CONVERSATION / "events").iterdir())
    with pytest.raises(InputError) as caught:
        detect(event)
    assert "import the conversation's base_state.json" in caught.value.hint


def test_a_new_event_file_gives_the_conversation_a_new_id(tmp_path):
    copy = tmp_path / "conversation"
    shutil.copytree(CONVERSATION, copy)
    (before,) = _traces(copy / "base_state.json")
    extra = _events()[-1] | {"id": "later"}
    (copy / "events" / "event-00008-later.json").write_text(json.dumps(extra))
    (after,) = _traces(copy / "base_state.json")
    assert before.header.trace_id != after.header.trace_id and len(after.steps) == len(before.steps) + 1


def test_2025_shell_records_read_their_exit_code_from_the_metadata(tmp_path):
    """The shell action and observation in 2025's shapes, failing (exit 1 in the metadata alone),
    then the code only in the line the shell appends, then a command still running (-1)."""
    events = _events()
    _shell_2025(events[2], "", 0)
    _shell_2025(events[3], "F.\n1 failed, 1 passed in 0.02s", 1)
    trace = _listed(tmp_path, events)
    result = trace.steps[3]
    assert result.tool.name == "execute_bash" and exit_code(result) == 1
    assert (result.raw["status"], result.raw["error_type"]) == ("error", "exit_code")
    del events[3]["observation"]["metadata"]["exit_code"]
    assert exit_code(_listed(tmp_path, events).steps[3]) == 1  # "[The command completed with exit code 1.]"
    events[3]["observation"]["metadata"] = {"exit_code": -1, "suffix": "\n[The command has no new output]"}
    running = _listed(tmp_path, events).steps[3]
    assert exit_code(running) is None and running.raw["status"] == "running"


def test_a_test_run_failing_after_an_edit_the_finish_claims_passing_is_a_finding(tmp_path):
    """A file editor's ``str_replace`` on a file that existed, a pytest run that fails, and a finish
    that says the tests pass (the conversation's pwd changed to that)."""
    events = _events()
    edit = events[2] | {"tool_call_id": "call_edit", "tool_name": "str_replace_editor", "id": "edit"}
    edit["action"] = {"kind": "FileEditorAction", "command": "str_replace", "path": "/workspace/calc.py",
                      "old_str": "x = 1", "new_str": "x = 2"}  # fmt: skip
    edited = events[3] | {"tool_call_id": "call_edit", "tool_name": "str_replace_editor", "action_id": "edit"}
    edited["observation"] = {"kind": "FileEditorObservation", "command": "str_replace", "path": "/workspace/calc.py",
                             "output": "The file /workspace/calc.py has been edited.", "prev_exist": True,
                             "old_content": "x = 1\n", "new_content": "x = 2\n"}  # fmt: skip
    _shell_2025(events[2], "", 0)
    _shell_2025(events[3], "F.\n1 failed, 1 passed in 0.02s", 1)
    events[4]["action"]["message"] = "Fixed calc.py; all tests pass."
    trace = _listed(tmp_path, [*events[:2], edit, edited, *events[2:6]])
    assert trace.steps[3].raw["written"] == {"path": "/workspace/calc.py", "created": False}
    facts = TestRunFacts(trace)
    assert list(facts.changed) == ["/workspace/calc.py"] and [r.failed for r in facts.runs] == [1]
    coding_finding(trace, "1 failed", "all tests pass")


def _waited(events: list[dict], then: str, output: str, code: int) -> list[dict]:
    """The conversation's terminal call as a ``pytest -q`` still running at its soft time-out (-1,
    its output's first half), then a call sending ``then`` to the running command (``""`` waits
    for it; ``C-c`` stops it) whose observation shows the rest and exit code ``code``; the finish
    says the tests pass (a changed copy: the real conversation's command ended at once)."""
    lines = output.split("\n")
    first, rest = "\n".join(lines[: len(lines) // 2]), "\n".join(lines[len(lines) // 2 :])
    call, running = json.loads(json.dumps(events[2])), json.loads(json.dumps(events[3]))
    call["action"]["command"] = running["observation"]["command"] = "pytest -q"
    running["observation"] |= {"content": [{"type": "text", "text": first}], "exit_code": -1}
    running["observation"]["metadata"] |= {
        "exit_code": -1,
        "suffix": "\n[The command has no new output after 30 seconds. You may wait longer to see additional output "
        "by sending empty command '', send other commands to interact with the current process, or send keys "
        "to interrupt/kill the command.]",
    }
    sent = call | {"id": "wait", "tool_call_id": "call_wait", "action": call["action"] | {"command": then}}
    sent["action"]["is_input"] = then != ""
    shown = running | {"id": "shown", "tool_call_id": "call_wait", "action_id": "wait"}
    shown["observation"] = running["observation"] | {
        "content": [{"type": "text", "text": rest}],
        "exit_code": code,
    }
    shown["observation"]["metadata"] = running["observation"]["metadata"] | {"exit_code": code, "suffix": ""}
    finish = json.loads(json.dumps(events[4]))
    finish["action"]["message"] = "Done: all the tests pass."
    return [*events[:2], call, running, sent, shown, finish, *events[5:6]]


def test_a_command_still_running_at_its_time_out_ends_where_the_wait_for_it_shows(tmp_path):
    """The -1 observation says only that it runs on; the empty command's observation, which shows
    it exited, is its result: the failing pytest run is the run, and the finish's claim relays it
    as success. Stopped with ``C-c`` instead (keys sent to it, no command), it ended by the agent's
    doing: no run, and its ^C is no failed check."""
    failed = (REPO / "tests" / "fixtures" / "real" / "test-runs" / "pytest_failed.txt").read_text(
        encoding="utf-8"
    )
    trace = _listed(tmp_path, _waited(_events(), "", failed, 1))
    started = next(s for s in trace.steps if s.raw.get("background_task"))
    shown = next(s for s in trace.steps if s.raw.get("output_of"))
    assert (started.raw["status"], shown.raw["output_of"]) == ("running", started.raw["background_task"])
    (run,) = TestRunFacts(trace).runs
    assert (run.command, trace.steps[run.result], run.failed, run.exit) == ("pytest -q", shown, 1, 1)
    report = run_rules_audit(trace)
    realized = [f for f in report.findings if f.disposition.value == "realized"]
    assert realized and all(shown.step_id in {u.step_id for u in f.evidence} for f in realized)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    stopped = _listed(tmp_path, _waited(_events(), "C-c", "collecting ...\n^C", 130))
    assert not TestRunFacts(stopped).runs and not [s for s in stopped.steps if s.raw.get("output_of")]
    (ended,) = [p for p, s in enumerate(stopped.steps) if s.raw.get("stopped")]
    assert stopped.steps[ended].raw["stopped"] == started.raw["background_task"]
    assert ended in worked_beside(stopped.steps)  # the ^C the agent sent is no failed check
    assert not [f for f in run_rules_audit(stopped).findings if f.risk_class.value == "realized"]


def test_a_refused_call_an_agent_error_and_the_conversations_error(tmp_path):
    """The pwd call refused by the user, then an agent error answering a second call, then the
    conversation's error (changed copies: the real conversation holds none)."""
    events = _events()
    refused = {"kind": "UserRejectObservation", "id": "r", "timestamp": events[3]["timestamp"], "source": "environment",
               "tool_name": "terminal", "tool_call_id": events[2]["tool_call_id"], "action_id": events[2]["id"],
               "rejection_reason": "User rejected the action", "rejection_source": "user"}  # fmt: skip
    second = events[2] | {"id": "a2", "tool_call_id": "call_2"}
    error = {"kind": "AgentErrorEvent", "id": "e", "timestamp": events[3]["timestamp"], "source": "agent",
             "tool_name": "terminal", "tool_call_id": "call_2", "error": "Invalid arguments for terminal"}  # fmt: skip
    ended = {"kind": "ConversationErrorEvent", "id": "x", "timestamp": events[3]["timestamp"], "source": "environment",
             "code": "LLMContextWindowExceedError", "detail": "Conversation exceeded the context window"}  # fmt: skip
    trace = _listed(tmp_path, [*events[:3], refused, second, error, ended])
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert [r.raw.get("error_type") for r in results] == [REFUSED, "error"]
    assert [r.refs.reply_to for r in results] == [trace.steps[2].step_id, trace.steps[4].step_id]
    end = trace.steps[-1]
    assert (end.actor_kind, end.raw["record"], end.raw["exit_status"]) == (
        ActorKind.system,
        "exit",
        "LLMContextWindowExceedError",
    )
    assert TestRunFacts(trace).runs == []  # a refused command ran nothing


def test_evaluation_records_are_a_trace_each_their_grading_withheld(tmp_path):
    """An evaluation's output.jsonl of two records built from the conversation's events (its history
    starts at the agent's first act, as the benchmarks write it): the instruction is the request, the
    git patch the final act, the rest of test_result and the instance go to the labels."""
    events = _events()
    record = {
        "instance_id": "demo__calc-1",
        "instruction": "Make x equal 2 in calc.py.",
        "history": events[2:6],
        "test_result": {"git_patch": DIFF, "report": {"resolved": True}},
        "instance": {"patch": "the gold patch", "FAIL_TO_PASS": ["test_x"]},
        "error": None,
    }
    path = tmp_path / "output.jsonl"
    path.write_text(
        json.dumps(record)
        + "\n"
        + json.dumps(record | {"instance_id": "demo__calc-2", "error": "timeout"})
        + "\n"
    )
    assert detect(path)[0] == "openhands-sdk"
    imported = list(open_traces(path))
    first, second = (Trace(header=t.header, steps=list(t.steps())) for t in imported)
    assert first.header.trace_id != second.header.trace_id and first.header.source.endswith("#1")
    assert first.steps[0].actor_kind is ActorKind.human and first.steps[0].content == record["instruction"]
    assert first.header.task == record["instruction"]
    assert (first.steps[-1].kind, first.steps[-1].content) == (StepKind.final_output, DIFF)
    assert [s.raw.get("record") for s in second.steps[-2:]] == ["exit", None]  # the error, then the patch
    assert "the gold patch" not in json.dumps([s.model_dump(mode="json") for s in first.steps])
    labels = imported[0].labels.labels
    assert labels["test_result"] == {"report": {"resolved": True}} and labels["instance"]["FAIL_TO_PASS"]
    assert {w.what for w in first.header.withheld} == {"grading:test_result", "grading:instance"}


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda e: e.__setitem__(2, 7), "[2]"),
        (lambda e: e[2].pop("kind"), "[2].kind"),
        (lambda e: e[2].__setitem__("action", "pwd"), "[2].action"),
        (lambda e: e[3].__setitem__("observation", []), "[3].observation"),
        (lambda e: e[1].__setitem__("llm_message", None), "[1].llm_message"),
    ],
    ids=["not-object", "no-kind", "action-not-object", "observation-not-object", "no-message"],
)
def test_bad_events_name_the_file_and_field(tmp_path, damage, where):
    events = _events()
    damage(events)
    path = tmp_path / "history.json"
    path.write_text(json.dumps(events))
    with pytest.raises(InputError) as caught:
        _traces(path)
    assert str(path) in str(caught.value) and f"'{where}'" in str(caught.value)


def test_a_bad_event_file_of_a_conversation_is_named(tmp_path):
    copy = tmp_path / "conversation"
    shutil.copytree(CONVERSATION, copy)
    bad = sorted((copy / "events").iterdir())[3]
    bad.write_text(bad.read_text()[:-1])
    with pytest.raises(InputError) as caught:
        _traces(copy / "base_state.json")
    assert str(bad) in str(caught.value)


def _repeated_pwd(events: list[dict], action: dict) -> list[dict]:
    """The pwd call and its observation four times over, each exiting 1."""
    repeated = []
    for n in range(4):
        observation = json.loads(json.dumps(events[3])) | {
            "id": f"o{n}",
            "tool_call_id": f"c{n}",
            "action_id": f"a{n}",
        }
        observation["observation"]["exit_code"] = observation["observation"]["metadata"]["exit_code"] = 1
        repeated += [action | {"id": f"a{n}", "tool_call_id": f"c{n}"}, observation]
    return [*events[:2], *repeated]


def test_a_call_kept_as_an_object_is_quoted_by_its_json(tmp_path):
    """The same repetition with the text the model wrote taken out but the action's fields kept:
    the call's content is their JSON, so the repetition is filed, quoting the command asked for."""
    events = _events()
    action = {k: v for k, v in events[2].items() if k != "tool_call"}
    trace = _listed(tmp_path, _repeated_pwd(events, action))
    call = next(s for s in trace.steps if s.kind is StepKind.tool_call)
    assert json.loads(call.content) == call.tool.arguments
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    (found,) = [f for f in report.findings if f.detector == "failure_repetition"]
    assert all('"command":"pwd > tool_output.txt"' in u.quote for u in found.evidence)


def test_a_finding_with_nothing_to_quote_is_left_out_and_said(tmp_path):
    """The pwd call repeated four times, failing each time, with its arguments taken out (the text
    the model wrote and the action's fields) and nothing printed (a changed copy): the repetition has
    no words to cite, so no finding is filed, and the report says which it left out (it was a
    crash)."""
    events = _events()
    action = {k: v for k, v in events[2].items() if k != "tool_call"}
    action["action"] = {"kind": action["action"]["kind"]}
    trace = _listed(tmp_path, _repeated_pwd(events, action))
    report = run_rules_audit(trace)
    assert report.findings == []
    left = [n for n in report.notes if "left out, none of its steps has text to quote" in n]
    assert any("failure_repetition" in n for n in left)


def test_a_folder_walk_reads_a_conversation_once(tmp_path):
    """``auditor ingest DIR --recursive`` and triage walk folders: a conversation is its
    base_state.json, its events read with it, not each on its own."""
    shutil.copytree(CONVERSATION, tmp_path / "conversations" / "cd94")
    walked = list(iter_files(tmp_path, recursive=True))
    assert walked == [tmp_path / "conversations" / "cd94" / "base_state.json"]


def test_an_evaluation_record_longer_than_the_head_is_still_one_line(tmp_path):
    """Real records run to megabytes (a long history): a line past the first 64 KiB is still a
    record of JSON lines, not the start of one document."""
    record = {"instance_id": "demo__calc-1", "instruction": "x" * 70_000, "history": _events()[2:6]}
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(record | {"instance_id": "demo__calc-2"}) + "\n")
    assert [t.header.metadata["instance_id"] for t in _traces(path)] == ["demo__calc-1", "demo__calc-2"]
