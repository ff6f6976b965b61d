"""Codex CLI session rollouts: the importer on a real rollout (tests/fixtures/real/codex/SOURCES.md)
and the commands and exit codes the coding facts read from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, command_of, exit_code
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
        (lambda lines: [*lines[:3], "{oops", *lines[3:]], ("line 4", "not a JSON record")),
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
