"""Claude Code's headless output (``claude -p --output-format stream-json``): the importer on real
streams (tests/fixtures/real/claude-code-stream/SOURCES.md), the calls the harness refused, and the
coding facts read from them. Cases the real streams lack (an error result, a change whose tests
then fail) are tested on copies of them changed for the case, as each test says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, worked_beside
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind, Trace
from schemas.trace import REFUSED
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real" / "claude-code-stream"
HOOKED = REAL / "trackgentic_bun_test_edit_permission_denied.jsonl"  # hooks, bun tests, two denials
COMPACT = REAL / "untether_compact_no_messages_2_1_285.jsonl"  # /compact on an empty session
BUN_FAILED = REPO / "tests" / "fixtures" / "real" / "test-runs" / "bun_test_failed.txt"


def _trace(path: Path) -> Trace:
    imported = next(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("path", [HOOKED, COMPACT], ids=["hooked", "compact"])
def test_a_headless_stream_is_detected_as_claude_code_stream(path):
    assert detect(path)[0] == "claude-code-stream"


def test_the_init_and_result_records_are_the_header():
    meta = _trace(HOOKED).header.metadata
    assert (meta["cwd"], meta["model"], meta["claude_code_version"], meta["permissionMode"]) == (
        "/Users/javi/projects/trackgentic",
        "glm-5.1",
        "2.1.138",
        "default",
    )
    assert meta["session_id"] == "ad4845d4-f978-400b-9e21-b4a29bf0b56c"
    assert (meta["result"]["subtype"], meta["result"]["num_turns"]) == ("success", 13)
    assert [d["tool_name"] for d in meta["result"]["permission_denials"]] == ["Bash", "Edit"]
    assert meta["skipped_records"]["record:system"] >= 3  # hooks, init, the API's retries


def test_hooks_and_their_feedback_are_the_harness_and_no_principal_speaks():
    trace = _trace(HOOKED)
    harness = [s for s in trace.steps if s.actor == "claude-code"]
    assert harness and all(s.actor_kind is ActorKind.system for s in harness)
    assert any(s.raw.get("subtype") == "hook_response" for s in harness)  # the session start's context
    assert any(s.content.startswith("Stop hook feedback:") for s in harness)  # isSynthetic
    # the prompt given on the command line is not in the stream: no step is the principal's
    assert not [s for s in trace.steps if s.actor_kind is ActorKind.human] and trace.header.task is None


def test_the_calls_denied_permission_are_refusals_that_checked_nothing():
    trace = _trace(HOOKED)
    refused = [
        s for s in trace.steps if s.kind is StepKind.tool_result and s.raw.get("error_type") == REFUSED
    ]
    assert [s.tool.name for s in refused] == ["Bash", "Edit"]
    bun = next(r for r in TestRunFacts(trace).runs if r.runner == "bun")
    assert (bun.ok, bun.passed, bun.failed) == (True, 528, 0)
    report = run_rules_audit(trace)
    # a refused edit is no failed check: no claim is judged against it, and it is reported as refused
    assert not [f for f in report.findings if f.disposition.value == "realized"]
    titles = [f.title for f in report.findings]
    assert "Edit was refused once; nobody relayed the failure as success" in titles
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_a_reply_the_harness_wrote_in_the_models_place_is_the_harness():
    (step,) = _trace(COMPACT).steps
    assert (step.actor, step.actor_kind) == ("claude-code", ActorKind.system)
    assert "models" not in _trace(COMPACT).header.metadata


def test_an_error_result_ends_the_run_with_the_harness_record(tmp_path):
    """The hooked stream as if it had run out of turns."""
    records = _records(HOOKED)
    records[-1].update(subtype="error_max_turns", is_error=True)
    records[-1].pop("result")
    end = _trace(_write(tmp_path, records)).steps[-1]
    assert (end.actor_kind, end.raw["record"], end.raw["exit_status"], end.content) == (
        ActorKind.system,
        "exit",
        "error_max_turns",
        "error_max_turns",
    )


def _coding(
    tmp_path: Path, test_output: str, code: int, root: str | None = None, background: str | None = None
) -> Trace:
    """The hooked stream with an edit of the project's code, a bun test run of it and a closing
    claim added before its result record (in the records' own shapes: an Edit and its
    ``tool_use_result``, a Bash call whose failure opens ``Exit code N``). ``background``: the run
    is started in the background, and its output is (``read``) or is not (``unread``) read from
    its file before the claim, or stopped (``stopped``) and then read (``_in_background``)."""
    records = _records(HOOKED)
    base = {"parent_tool_use_id": None, "session_id": records[-1]["session_id"]}
    target = "/Users/javi/projects/trackgentic/packages/library/src/core/tracker.ts"
    if root is not None:  # the session as run on Windows: its working directory and paths
        init = next(r for r in records if r.get("subtype") == "init")
        init["cwd"] = root
        target = root + "\\packages\\library\\src\\core\\tracker.ts"

    def call(ident: str, name: str, arguments: dict) -> dict:
        content = [{"type": "tool_use", "id": ident, "name": name, "input": arguments}]
        return {"type": "assistant", "message": {"role": "assistant", "content": content}, **base}

    def result(ident: str, text: str, error: bool, account: object) -> dict:
        block = {"type": "tool_result", "tool_use_id": ident, "content": text, "is_error": error}
        return {
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "tool_use_result": account,
            **base,
        }

    said = f"Exit code {code}\n{test_output}" if code else test_output
    closing = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Fixed: the tracker is correct and all tests pass."}],
    }
    test = {"command": "bun test", "description": "Run tests"}
    if background is None:
        ran = [
            call("toolu_test", "Bash", test),
            result("toolu_test", said, bool(code), said if code else {"stdout": test_output, "stderr": ""}),
        ]
    else:
        ran = [call("toolu_test", "Bash", test | {"run_in_background": True})]
        ran += _in_background(
            test_output, code, base, read=background != "unread", stopped=background == "stopped"
        )
    records[-1:-1] = [
        call("toolu_edit", "Edit", {"file_path": target, "old_string": "a - b", "new_string": "a + b"}),
        result("toolu_edit", f"The file {target} has been updated.", False, {"filePath": target}),
        *ran,
        {"type": "assistant", "message": closing, **base},
    ]
    return _trace(_write(tmp_path, records))


def _in_background(output: str, code: int, base: dict, *, read: bool, stopped: bool) -> list[dict]:
    """The records of a command ``toolu_test`` run in the background after its call, as Claude Code
    2.1.284 writes them (the hive-mind capture): the result that says it started, with the
    account's ``backgroundTaskId``, and, when ``read``, the harness's word that it ended and a
    ``Read`` of its output file, numbered, that ends ``[exited with code N]``; ``stopped``: the
    agent stopped it first."""
    task, said = "b7k2x9q1", f"{output}\n[exited with code {code}]\n"
    path = (
        f"/private/tmp/claude-501/-Users-javi-projects-trackgentic/{base['session_id']}/tasks/{task}.output"
    )
    numbered = "\n".join(f"{n}\t{line}" for n, line in enumerate(said.split("\n"), 1))

    def turn(role: str, block: dict, account: dict | None = None) -> dict:
        message = {"role": role, "content": [block]}
        return {"type": role, "message": message, **base} | ({"tool_use_result": account} if account else {})

    started = (
        f"Command running in background with ID: {task}. Output is being written to: {path}. You will "
        "be notified when it completes. To check interim output, use Read on that file path."
    )
    account = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False, "backgroundTaskId": task}
    records = [
        turn("user", {"type": "tool_result", "tool_use_id": "toolu_test", "content": started}, account)
    ]
    if stopped:  # the agent stops it (2.1's ``TaskStop``) before it ends
        stop = {"type": "tool_use", "id": "toolu_stop", "name": "TaskStop", "input": {"task_id": task}}
        records += [
            turn("assistant", stop),
            turn(
                "user",
                {"type": "tool_result", "tool_use_id": "toolu_stop", "content": f"Stopped task {task}"},
            ),
        ]
    if read:
        summary = f'Background command "Run tests" completed (exit code {code})'
        records += [
            {"type": "system", "subtype": "task_notification", "task_id": task, "tool_use_id": "toolu_test"}
            | {"status": "completed", "output_file": path, "summary": summary, **base},
            turn(
                "assistant",
                {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": path}},
            ),
            turn(
                "user",
                {"type": "tool_result", "tool_use_id": "toolu_read", "content": numbered},
                {"type": "text", "file": {"filePath": path, "content": said, "startLine": 1}},
            ),
        ]
    return records


def test_an_edit_whose_tests_then_fail_is_a_finding_citing_the_claim_and_the_output(tmp_path):
    trace = _coding(tmp_path, BUN_FAILED.read_text(encoding="utf-8"), 1)
    facts = TestRunFacts(trace)
    assert list(facts.changed) == ["packages/library/src/core/tracker.ts"]  # relative to the cwd
    report = run_rules_audit(trace)
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    assert [f.title for f in coding][:1] == ["agent submitted while its last test run failed"]
    quotes = " ".join(u.quote for u in coding[0].evidence)
    assert "1 fail" in quotes and "all tests pass" in quotes
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_an_edit_whose_tests_then_pass_is_no_coding_finding(tmp_path):
    passed = BUN_FAILED.with_name("bun_test_passed.txt").read_text(encoding="utf-8")
    trace = _coding(tmp_path, passed, 0)
    assert not [f for f in run_rules_audit(trace).findings if f.detector == "coding_verification"]


def test_a_test_run_in_the_background_is_read_from_its_output_file(tmp_path):
    """Its result says only that it started; the ``Read`` of its output file is its result (its
    numbered lines parsed, its last line's exit code), so the failing run is the finding's."""
    trace = _coding(tmp_path, BUN_FAILED.read_text(encoding="utf-8"), 1, background="read")
    run = TestRunFacts(trace).runs[-1]  # the stream's own runs come before the edit
    shown = trace.steps[run.result]
    assert (shown.actor, shown.raw["output_of"], shown.raw["exit_code"]) == ("Read", "toolu_test", 1)
    assert (run.runner, run.failed, run.passed) == ("bun", 1, 2) and run.summary in shown.content
    report = run_rules_audit(trace)
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    assert [f.title for f in coding][:1] == ["agent submitted while its last test run failed"]
    cited = {u.step_id: u.quote for u in coding[0].evidence}
    assert "1 fail" in cited[shown.step_id] and "all tests pass" in " ".join(cited.values())
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_a_background_run_that_passed_was_never_read_or_was_stopped(tmp_path):
    """Passed when read: no coding finding. Claimed before its output was read: the word that it
    started is no check (it passed nothing), so the claim has no test output behind it. Stopped by
    the agent (``TaskStop``): what is read after shows no check's end."""
    passed = BUN_FAILED.with_name("bun_test_passed.txt").read_text(encoding="utf-8")
    trace = _coding(tmp_path, passed, 0, background="read")
    assert TestRunFacts(trace).runs[-1].passed == 3
    assert not [f for f in run_rules_audit(trace).findings if f.detector == "coding_verification"]
    unread = _coding(tmp_path, passed, 0, background="unread")
    assert len(TestRunFacts(unread).runs) == len(TestRunFacts(trace).runs) - 1
    started = next(s for s in unread.steps if s.raw.get("background_task"))
    assert "exit_code" not in started.raw
    coding = [f for f in run_rules_audit(unread).findings if f.detector == "coding_verification"]
    assert coding and started.step_id not in {u.step_id for f in coding for u in f.evidence}
    stopped = _coding(tmp_path, BUN_FAILED.read_text(encoding="utf-8"), 1, background="stopped")
    assert len(TestRunFacts(stopped).runs) == len(TestRunFacts(unread).runs)  # its end was the agent's doing
    assert not [s for s in stopped.steps if "exit_code" in s.raw and s.raw.get("output_of")]


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda lines: [*lines[:4], "{oops", *lines[4:]], ("line 5", "malformed JSON")),
        (
            lambda lines: [*lines[:4], json.dumps({"type": "assistant", "message": 3}), *lines[4:]],
            ("line 5", "message"),
        ),
        (lambda lines: [*lines[:4], json.dumps({"type": 7}), *lines[4:]], ("line 5", "type")),
    ],
    ids=["not-json", "message-not-object", "type-not-text"],
)
def test_bad_input_names_the_file_line_and_field(tmp_path, damage, expected):
    lines = HOOKED.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(damage(lines)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "claude-code-stream")).steps())
    assert str(path) in str(caught.value) and all(e in str(caught.value) for e in expected)


def test_a_subagents_records_name_the_call_that_delegated_to_it():
    """A background subagent (Claude Code 2.1.284): its records carry the ``Agent`` call's id."""
    trace = _trace(REAL / "hive_mind_background_agent_subagent_2_1_284.jsonl")
    (delegation,) = [s for s in trace.steps if s.kind is StepKind.tool_call and s.tool.name == "Agent"]
    sub = [s for s in trace.steps if s.raw.get("parent_tool_use_id") == delegation.tool.call_id]
    kind = delegation.tool.arguments["subagent_type"]
    assert sub and {s.actor for s in sub if s.kind is not StepKind.tool_result} == {
        f"{kind}:{delegation.tool.call_id.removeprefix('toolu_')[:6]}"
    }
    assert all(s.actor_kind is ActorKind.agent for s in sub if s.kind is not StepKind.tool_result)
    assert trace.steps.index(sub[0]) > trace.steps.index(delegation)  # the work follows its call
    assert trace.header.metadata["claude_code_version"] == "2.1.284"


def test_the_github_actions_execution_file_reads_as_the_stream_it_holds(tmp_path):
    """The Claude Code GitHub Action saves the same records as one JSON array (pretty-printed):
    the hooked stream written that way gives the same steps, and a record that is no object is
    named by its place in the array."""
    records = _records(HOOKED)
    path = tmp_path / "claude-execution-output.json"
    path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    assert detect(path)[0] == "claude-code-stream"
    as_lines, as_array = _trace(HOOKED), _trace(path)
    assert [(s.actor, s.kind, s.content, s.raw.get("error_type")) for s in as_array.steps] == [
        (s.actor, s.kind, s.content, s.raw.get("error_type")) for s in as_lines.steps
    ]
    assert as_array.steps[0].raw["record"] == "[1]" and "line" not in as_array.steps[0].raw
    path.write_text(json.dumps([*records[:3], 7, *records[3:]]), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "claude-code-stream")).steps())
    assert str(path) in str(caught.value) and "[3]" in str(caught.value)


def test_the_harness_word_that_a_background_task_ended_names_the_call_that_started_it():
    trace = _trace(REAL / "hive_mind_background_agent_subagent_2_1_284.jsonl")
    ended = [s for s in trace.steps if s.raw.get("subtype") == "task_notification"]
    assert len(ended) == 3 and all(
        (s.actor, s.actor_kind) == ("claude-code", ActorKind.system) for s in ended
    )
    calls = {s.tool.call_id: s for s in trace.steps if s.kind is StepKind.tool_call}
    bash = next(s for s in ended if "exit code 0" in s.content)
    assert calls[bash.raw["tool_use_id"]].tool.name == "Bash" and bash.raw["status"] == "completed"
    assert trace.steps.index(bash) > trace.steps.index(calls[bash.raw["tool_use_id"]])
    assert (bash.raw["output_of"], bash.raw["exit_code"]) == (bash.raw["tool_use_id"], 0)


def test_a_background_command_the_harness_says_failed_is_a_failed_result(tmp_path):
    """A changed copy of the real capture whose notification says the command failed with exit
    code 1: the notification carries a failed command's marks (status ``error``, ``error_type``
    ``exit_code``), as every importer's failed command does."""
    records = _records(REAL / "hive_mind_background_agent_subagent_2_1_284.jsonl")
    (notice,) = [r for r in records if "(exit code 0)" in str(r.get("summary"))]
    notice["summary"] = notice["summary"].replace("completed (exit code 0)", "failed with exit code 1")
    notice["status"] = "failed"
    (bash,) = [s for s in _trace(_write(tmp_path, records)).steps if "exit code 1" in s.content]
    assert (bash.raw["exit_code"], bash.raw["status"], bash.raw["error_type"]) == (1, "error", "exit_code")
    assert bash.raw["output_of"] == bash.raw["tool_use_id"]


def test_a_command_run_in_the_background_ends_where_its_output_file_is_read():
    """The real capture: ``sleep 15; echo bash-done`` in the background. Its result says it started
    (no exit code, no check's outcome); the later ``Read`` of ``<task id>.output`` is its result."""
    trace = _trace(REAL / "hive_mind_background_agent_subagent_2_1_284.jsonl")
    (started,) = [p for p, s in enumerate(trace.steps) if s.raw.get("background_task")]
    assert "exit_code" not in trace.steps[started].raw and started in worked_beside(trace.steps)
    (read,) = [p for p, s in enumerate(trace.steps) if s.actor == "Read"]
    call = next(
        p for p, (command, _) in TestRunFacts(trace).calls.items() if command == "sleep 15; echo bash-done"
    )
    assert TestRunFacts(trace).calls[call][1] == read and trace.steps[read].raw["exit_code"] == 0
    assert trace.steps[read].raw["output_of"] == trace.steps[call].tool.call_id


def test_a_windows_working_directory_makes_the_changed_paths_relative(tmp_path):
    passed = BUN_FAILED.with_name("bun_test_passed.txt").read_text(encoding="utf-8")
    trace = _coding(tmp_path, passed, 0, root="C:\\Users\\javi\\trackgentic")
    assert list(TestRunFacts(trace).changed) == ["packages\\library\\src\\core\\tracker.ts"]
