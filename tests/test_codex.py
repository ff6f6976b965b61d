"""Codex CLI session rollouts: the importer on a real rollout (tests/fixtures/real/codex/SOURCES.md)
and the commands and exit codes the coding facts read from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, command_of, exit_code, worked_beside
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind, Trace
from tests.conftest import REPO

ROLLOUT = REPO / "tests" / "fixtures" / "real" / "codex" / "vscode_shell_exit127_interrupted.jsonl"
UNIFIED = ROLLOUT.with_name("unified_exec_npx_running_then_write_stdin_exited_0_126.excerpt.jsonl")


def _trace(path: Path) -> Trace:
    imported = next(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


def test_a_rollout_is_detected_as_codex():
    assert detect(ROLLOUT)[0] == "codex"


def test_the_harness_context_the_request_and_the_agents_reasoning_are_who_the_rollout_says():
    trace = _trace(ROLLOUT)
    meta = trace.header.metadata
    assert trace.header.framework == "Codex CLI"
    assert meta["session_id"] == "0199955b-5deb-72e2-9988-4b1b799e1206"
    assert (meta["cli_version"], meta["originator"], meta["turn_context"]["model"]) == (
        "0.42.0-alpha.3",
        "codex_vscode",
        "gpt-5-codex",
    )
    context = [s for s in trace.steps if s.actor == "codex"]
    assert context and all(
        s.actor_kind is ActorKind.system and s.content.startswith("<environment_context>") for s in context
    )
    request = next(s for s in trace.steps if s.actor_kind is ActorKind.human)
    assert request.content.rstrip().endswith("/specify --help") and trace.header.task == request.content
    reasoning = [s for s in trace.steps if s.raw.get("block") == "reasoning"]
    assert len(reasoning) == 8 and all(s.actor == "agent" for s in reasoning)
    counted = meta["skipped_records"]
    assert counted["event_msg:token_count"] == 17 and counted["event_msg:agent_reasoning"] == 9


def test_shell_calls_are_commands_with_their_exit_codes_and_the_interrupt_ends_the_run():
    trace = _trace(ROLLOUT)
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    assert [command_of(s) for s in calls][:4] == [
        "./specify --help",
        "ls",
        "rg --files -g 'specify*'",
        "find . -maxdepth 3 -name 'specify*'",
    ]
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert [exit_code(s) for s in results] == [127, 0, 127, 0, 0, 0, 127, 127]
    assert results[0].content == "/bin/bash: line 1: ./specify: No such file or directory\n"
    assert all(r.refs.reply_to == c.step_id for c, r in zip(calls, results, strict=True))
    end = trace.steps[-1]
    assert (end.actor_kind, end.raw["record"], end.content) == (ActorKind.system, "exit", "interrupted")
    # a program the shell could not find ran nothing; listing and reading files are no runs either
    assert TestRunFacts(trace).runs == []


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda lines: [*lines[:3], "{oops", *lines[3:]], ("line 4", "malformed JSON")),
        (
            lambda lines: [
                *lines[:3],
                json.dumps({"timestamp": "t", "type": "event_msg", "payload": 3}),
                *lines[3:],
            ],
            ("line 4", "payload"),
        ),
    ],
    ids=["not-json", "payload-not-object"],
)
def test_bad_input_names_the_file_and_line(tmp_path, damage, expected):
    lines = ROLLOUT.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(damage(lines)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "codex")).steps())
    assert str(path) in str(caught.value) and all(e in str(caught.value) for e in expected)


def test_an_output_that_is_no_text_names_its_line(tmp_path):
    records = [json.loads(line) for line in ROLLOUT.read_text(encoding="utf-8").splitlines()]
    at = next(i for i, r in enumerate(records) if r["payload"].get("type") == "function_call_output")
    records[at]["payload"]["output"] = {"output": "x"}
    path = tmp_path / "typed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "codex")).steps())
    assert f"line {at + 1}" in str(caught.value) and "output" in str(caught.value)


def _shell_run(test_output: str, code: int) -> list[dict]:
    """``pytest -q tests`` run by the ``shell`` tool: its output the JSON envelope with its exit code."""
    envelope = json.dumps({"output": test_output, "metadata": {"exit_code": code, "duration_seconds": 0.5}})
    return [
        {
            "type": "function_call",
            "name": "shell",
            "call_id": "call_test",
            "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q tests"]}),
        },
        {"type": "function_call_output", "call_id": "call_test", "output": envelope},
    ]


def _unified_run(
    test_output: str, code: int | None, chars: str = "", cmd: str = "pytest -q tests"
) -> list[dict]:
    """``pytest -q tests`` run by the unified exec tools, in the layout Codex's source writes
    (``codex-rs/core/src/tools/context.rs``, ``ExecCommandToolOutput::response_text``): still
    running when ``exec_command`` returned (its output's first half), then a ``write_stdin`` on its
    session (writing it ``chars``) shows the rest and that it exited with ``code`` (None: still
    running)."""
    half = test_output.count("\n") // 2
    lines = test_output.split("\n")
    first, rest = "\n".join(lines[:half]), "\n".join(lines[half:])
    ended = "Process running with session ID 34117" if code is None else f"Process exited with code {code}"
    return [
        {
            "type": "function_call",
            "name": "exec_command",
            "call_id": "call_test",
            "arguments": json.dumps({"cmd": cmd, "yield_time_ms": 10000}),
        },
        {
            "type": "function_call_output",
            "call_id": "call_test",
            "output": "Chunk ID: 4f2a91\nWall time: 10.0021 seconds\nProcess running with session ID 34117\n"
            f"Original token count: 61\nOutput:\n{first}",
        },
        {
            "type": "function_call",
            "name": "write_stdin",
            "call_id": "call_poll",
            "arguments": json.dumps({"session_id": 34117, "chars": chars, "yield_time_ms": 30000}),
        },
        {
            "type": "function_call_output",
            "call_id": "call_poll",
            "output": f"Chunk ID: 9be013\nWall time: 2.4107 seconds\n{ended}\nOriginal token count: 58\n"
            f"Output:\n{rest}",
        },
    ]


def _extended(tmp_path: Path, patch_call: dict, test_output: str, code: int, run=_shell_run) -> Path:
    """The real rollout with an apply_patch edit (the envelope a real MoonMind rollout holds:
    ``custom_tool_call`` apply_patch, ``*** Begin Patch`` …), a test run (``run``: by the ``shell``
    tool, or the unified exec tools) and a closing claim added in place of the interrupt."""
    records = [json.loads(line) for line in ROLLOUT.read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["payload"].get("type") != "turn_aborted"]
    stamp = records[-1]["timestamp"]

    def item(payload: dict) -> dict:
        return {"timestamp": stamp, "type": "response_item", "payload": payload}

    records += [
        item(patch_call),
        item({"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Success."}),
        *(item(payload) for payload in run(test_output, code)),
        item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done: the help works and the tests pass."}],
            }
        ),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


PATCH = (
    "*** Begin Patch\n*** Update File: spec-kit/src/specify_cli/__init__.py\n@@\n-x = 1\n+x = 2\n"
    "*** Add File: spec-kit/notes.py\n+y = 1\n*** End Patch\n"
)


@pytest.mark.parametrize(
    "call",
    [
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": "call_patch",
            "name": "apply_patch",
            "input": PATCH,
        },
        {
            "type": "function_call",
            "name": "shell",
            "call_id": "call_patch",
            "arguments": json.dumps({"command": ["apply_patch", PATCH]}),
        },
    ],
    ids=["custom-tool", "shell-argv"],
)
def test_a_patch_is_the_sessions_change_and_a_failing_run_after_it_a_finding(tmp_path, call):
    trace = _trace(
        _extended(
            tmp_path,
            call,
            "F.\nFAILED tests/test_cli.py::test_help - AssertionError\n1 failed, 1 passed in 0.05s\n",
            1,
        )
    )
    facts = TestRunFacts(trace)
    assert facts.changed.keys() == {"spec-kit/src/specify_cli/__init__.py", "spec-kit/notes.py"}
    assert facts.source_files == ("spec-kit/src/specify_cli/__init__.py",)  # the added file is new
    assert [r.command for r in facts.runs] == ["pytest -q tests"]  # the patch applied is no run
    report = run_rules_audit(trace)
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    assert [f.title for f in coding] == ["agent submitted while its last test run failed"]
    quotes = " ".join(u.quote for u in coding[0].evidence)
    assert "Update File: spec-kit/src/specify_cli/__init__.py" in quotes and "1 failed" in quotes
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_a_patch_whose_tests_then_pass_is_no_finding(tmp_path):
    call = {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": PATCH}
    trace = _trace(_extended(tmp_path, call, "..\n2 passed in 0.05s\n", 0))
    assert not [f for f in run_rules_audit(trace).findings if f.detector == "coding_verification"]


PYTEST_FAILED = (REPO / "tests" / "fixtures" / "real" / "test-runs" / "pytest_failed.txt").read_text(
    encoding="utf-8"
)


def test_a_test_run_still_running_when_exec_command_returned_ends_where_write_stdin_shows_it(tmp_path):
    """Unified exec: the ``exec_command`` output that says the process runs on is no check; the
    ``write_stdin`` on its session that shows it exited is its result, so the failing run is the
    finding's, quoting that output."""
    call = {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": PATCH}
    trace = _trace(_extended(tmp_path, call, PYTEST_FAILED, 1, run=_unified_run))
    started = next(s for s in trace.steps if s.raw.get("background_task"))
    shown = next(s for s in trace.steps if s.raw.get("output_of"))
    assert (started.raw["background_task"], "exit_code" in started.raw) == ("34117", False)
    assert (shown.raw["output_of"], shown.raw["exit_code"], shown.raw["status"]) == ("call_test", 1, "error")
    (run,) = TestRunFacts(trace).runs
    assert (run.command, trace.steps[run.result], run.failed) == ("pytest -q tests", shown, 1)
    report = run_rules_audit(trace)
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    assert [f.title for f in coding] == ["agent submitted while its last test run failed"]
    assert shown.step_id in {u.step_id for u in coding[0].evidence}
    assert validate_report(report.model_dump(mode="json"), trace).ok
    passed = _trace(_extended(tmp_path, call, "..\n2 passed in 0.05s\n", 0, run=_unified_run))
    assert [(r.ok, r.exit) for r in TestRunFacts(passed).runs] == [(True, 0)]
    running = _trace(_extended(tmp_path, call, PYTEST_FAILED, None, run=_unified_run))
    assert not TestRunFacts(running).runs  # never seen to end: no run's outcome


def test_a_server_the_agent_stopped_with_ctrl_c_through_write_stdin_is_no_failed_check(tmp_path):
    """A dev server started with ``exec_command`` runs on; the agent writes it ^C and it exits 130:
    that end is the agent's doing (``raw.stopped``), no run and no failure the claim contradicts."""
    call = {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": PATCH}

    def server(output: str, code: int) -> list[dict]:
        return _unified_run(output, code, chars="\u0003", cmd="python -m http.server 8000")

    served = "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n^C\nKeyboard interrupt received, exiting."
    trace = _trace(_extended(tmp_path, call, served, 130, run=server))
    (stopped,) = [p for p, s in enumerate(trace.steps) if s.raw.get("stopped")]
    assert trace.steps[stopped].raw["stopped"] == "call_test" and stopped in worked_beside(trace.steps)
    assert not TestRunFacts(trace).runs
    cited = {u.step_id for f in run_rules_audit(trace).findings for u in f.evidence}
    assert trace.steps[stopped].step_id not in cited  # its exit 130 is no failure of any finding


def test_an_exec_command_that_exited_within_its_wait_carries_its_exit_code(tmp_path):
    """The preamble's ``Process exited with code N`` is the result's exit code and status; an
    output of content items (newer builds) reads as their text."""
    records = [json.loads(line) for line in ROLLOUT.read_text(encoding="utf-8").splitlines()]
    (at,) = [i for i, r in enumerate(records) if "./specify --help" in str(r["payload"].get("arguments"))]
    call_id = records[at]["payload"]["call_id"]
    records[at]["payload"] |= {"name": "exec_command", "arguments": json.dumps({"cmd": "./specify --help"})}
    out = next(
        r
        for r in records
        if r["payload"].get("type") == "function_call_output" and r["payload"]["call_id"] == call_id
    )
    text = json.loads(out["payload"]["output"])["output"]
    said = f"Chunk ID: 0c1d2e\nWall time: 0.0510 seconds\nProcess exited with code 127\nOutput:\n{text}"
    out["payload"]["output"] = [{"type": "input_text", "text": said}]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    trace = _trace(path)
    (result,) = [s for s in trace.steps if s.refs and s.refs.reply_to and s.content == said]
    assert (result.raw["exit_code"], result.raw["status"]) == (127, "error")
    assert "background_task" not in result.raw


def test_a_real_unified_exec_run_ends_where_write_stdin_shows_it_exited():
    """The real 0.126 excerpt: two ``exec_command`` calls answer that they still run (session ids
    80697, 57878), the harness's ``exec_command_end`` at their start says nothing of their end, and
    the ``write_stdin`` poll on each session that shows ``Process exited with code 0`` is its end."""
    assert detect(UNIFIED)[0] == "codex"
    trace = _trace(UNIFIED)
    started = {s.raw["background_task"]: s for s in trace.steps if s.raw.get("background_task")}
    assert sorted(started) == ["57878", "80697"] and all("exit_code" not in s.raw for s in started.values())
    ends = [s for s in trace.steps if s.raw.get("output_of")]
    assert [(e.raw["exit_code"], e.raw["status"]) for e in ends] == [(0, "ok"), (0, "ok")]
    facts = TestRunFacts(trace)
    npx = [(trace.steps[p], trace.steps[r]) for p, (c, r) in facts.calls.items() if c.startswith("npx")]
    assert len(npx) == 2  # each command's result is its poll that shows the exit
    assert all(result.raw["output_of"] == call.tool.call_id for call, result in npx)
    assert {trace.steps.index(s) for s in started.values()} <= worked_beside(trace.steps)
    assert not [r for r in facts.runs if not r.ok]
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
