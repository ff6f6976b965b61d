"""Codex CLI session rollouts: the importer on a real rollout (tests/fixtures/real/codex/SOURCES.md)
and the commands and exit codes the coding facts read from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, command_of, exit_code
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind, Trace
from tests.conftest import REPO

ROLLOUT = REPO / "tests" / "fixtures" / "real" / "codex" / "vscode_shell_exit127_interrupted.jsonl"


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


def _extended(tmp_path: Path, patch_call: dict, test_output: str, code: int) -> Path:
    """The real rollout with an apply_patch edit (the envelope a real MoonMind rollout holds:
    ``custom_tool_call`` apply_patch, ``*** Begin Patch`` …), a test run and a closing claim added
    in place of the interrupt."""
    records = [json.loads(line) for line in ROLLOUT.read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["payload"].get("type") != "turn_aborted"]
    stamp = records[-1]["timestamp"]

    def item(payload: dict) -> dict:
        return {"timestamp": stamp, "type": "response_item", "payload": payload}

    envelope = json.dumps({"output": test_output, "metadata": {"exit_code": code, "duration_seconds": 0.5}})
    records += [
        item(patch_call),
        item({"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Success."}),
        item(
            {
                "type": "function_call",
                "name": "shell",
                "call_id": "call_test",
                "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q tests"]}),
            }
        ),
        item({"type": "function_call_output", "call_id": "call_test", "output": envelope}),
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
