"""Real files, damaged: every importer gives traces or a clear InputError, never a traceback or a hang.

The generative fuzzers (test_ingest_fuzz, the span forms') build documents from scratch and rarely
reach past an importer's first checks. Here each real fixture (one or more per importer, under
tests/fixtures) is damaged where it is deep: one to three values anywhere in its JSON tree replaced
by a value of another type, deleted, cut short, doubled or wrapped. Run long (the same damage
outside the suite, each file imported and then reviewed), it found a parent link that made a span
export's import loop for ever, call ids that were objects reaching the step contract as
tracebacks, attribute keys that were numbers and span events that were not objects; each has its
own test below, derived from a real file. After the fixes, 43,000 damaged files gave none.
AUDITOR_FUZZ_EXAMPLES sets the examples per file (40 here).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from ingest import open_traces
from tests.conftest import REPO
from tests.damage import damaged

FIXTURES = REPO / "tests" / "fixtures"
FILES = [
    "ingest/otel_genai.json",
    "ingest/otel_genai_failure.json",
    "ingest/openinference_failure.jsonl",
    "ingest/inspect_events.json",
    "ingest/inspect_eval.json",
    "ingest/trail_gaia.json",
    "ingest/langgraph_state.json",
    "real/inspect/log_tool_call_error.json",
    "real/vercel-ai/ai_sdk_tool_run.json",
    "real/openhands/basic_interactions.json",
    "real/swe-agent/function_calling_simple.traj",
    "real/mini-swe-agent/sympy__sympy-18211.traj.json",
    "real/mini-swe-agent-v2/toolcall_limits.traj.json",
    "real/mini-swe-agent-v2/stash_unpopped_empty.traj.json",
    "real/claude-code/pytest_edit_commit_session.jsonl",
    "real/claude-code/ngrok_background_failed_task_notification_2_1_42.excerpt.jsonl",
    "real/claude-code/tauri_dev_background_taskoutput_running_2_1_44.excerpt.jsonl",
    "real/codex/vscode_shell_exit127_interrupted.jsonl",
    "real/codex/unified_exec_npx_running_then_write_stdin_exited_0_126.excerpt.jsonl",
    "real/aider/shell_commands_search_replace_commits_chat_history.md",
    "real/gemini-cli/interactive_python_agent_pip_exit127_venv_rewrite_unrun.json",
    "real/gemini-cli/recording_write_shell_upserted_calls.jsonl",
    "real/codex-exec/superstar_reviewer_pytest_pass_git_exit128_ready_verdict.jsonl",
    "real/claude-code-stream/trackgentic_bun_test_edit_permission_denied.jsonl",
    "real/claude-code-stream/hive_mind_background_agent_subagent_2_1_284.jsonl",
    "real/cursor-agent/shell_rejected_twice_partial_output.jsonl",
    "real/opencode/run_json_five_edits_go_test.jsonl",
]


def load(name: str) -> tuple[str, Any]:
    text = (FIXTURES / name).read_text()
    if name.endswith(".jsonl"):
        return "jsonl", [json.loads(line) for line in text.splitlines() if line.strip()]
    if name.endswith(".md"):  # a text log: its lines damaged (dropped, repeated, moved, retyped)
        return "lines", text.splitlines()
    return "json", json.loads(text)


def imported(path: Path) -> None:
    """Every trace of the file read whole (steps, header, labels), or an InputError."""
    try:
        for trace in open_traces(path):
            trace.scan()
            assert sum(1 for _ in trace.steps()) == trace.step_count
            _ = trace.labels
    except InputError as exc:
        assert exc.one_line()


@pytest.mark.parametrize("name", FILES)
@settings(
    max_examples=int(os.environ.get("AUDITOR_FUZZ_EXAMPLES", "40")),
    deadline=None,
    derandomize=True,  # the same examples in every CI run; AUDITOR_FUZZ_EXAMPLES explores further
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_a_damaged_real_file_is_traces_or_a_clear_error(name: str, rnd: random.Random) -> None:
    with tempfile.TemporaryDirectory() as d:
        imported(damaged_copy(name, rnd, Path(d)))


def damaged_copy(name: str, rnd: random.Random, folder: Path) -> Path:
    """A damaged copy of the fixture ``name``, written in its own form under ``folder``."""
    form, doc = load(name)
    bad = damaged(doc, rnd)
    if form == "lines":
        text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in bad)
    else:
        text = json.dumps(bad) if form == "json" else "\n".join(json.dumps(r) for r in bad)
    path = folder / Path(name).name
    path.write_text(text)
    return path


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / Path(name).name
    path.write_text(json.dumps(doc))
    return path


def refused(path: Path) -> InputError:
    with pytest.raises(InputError) as caught:
        for trace in open_traces(path):
            list(trace.steps())
    assert str(path) in str(caught.value)
    return caught.value


def spans_of(doc: dict) -> list[dict]:
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"]


@pytest.mark.parametrize("links", [("self",), ("a", "b")])
def test_spans_whose_parents_form_a_cycle_are_refused_not_walked_for_ever(tmp_path, links) -> None:
    """A span that is its own parent, or two that are each other's: finding a span's agent walks
    its parents, and the import never ended."""
    _, doc = load("ingest/otel_genai_failure.json")
    spans = spans_of(doc)
    if links == ("self",):
        spans[1]["parentSpanId"] = spans[1]["spanId"]
    else:
        spans[0]["parentSpanId"] = spans[1]["spanId"]  # the root under its own child
    error = refused(write(tmp_path, "cycle.json", doc))
    assert "parents form a cycle" in str(error) and spans[1]["spanId"] in str(error)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda sp: sp[1]["attributes"][0].update(key=7), "an attribute's key is int, not text"),
        (lambda sp: sp[1].update(events=[["exception"]]), "a span event is list, not an object"),
        (lambda sp: sp[1].update(events=[{"name": {"n": 1}}]), "an event's name is dict, not text"),
        (lambda sp: sp[1].update(parentSpanId=["a"]), "parentSpanId is list, not text"),
    ],
)
def test_a_span_field_of_the_wrong_type_is_named_with_its_line(tmp_path, damage, said) -> None:
    _, doc = load("ingest/otel_genai_failure.json")
    damage(spans_of(doc))
    error = refused(write(tmp_path, "typed.json", doc))
    assert said in str(error) and error.line is not None


def test_a_tool_call_id_that_is_no_text_names_the_step_and_the_field(tmp_path) -> None:
    """Inspect's tool message with an object for its call id: the step contract refuses it, as
    the input's error (it was a pydantic traceback)."""
    _, doc = load("ingest/inspect_events.json")
    messages = doc["samples"][0]["messages"]
    tool = next(m for m in messages if m.get("role") == "tool")
    tool["tool_call_id"] = {"id": 1}
    error = refused(write(tmp_path, "inspect.json", doc))
    assert error.field == "ToolInfo.call_id" and "the inspect importer read a value" in str(error)


def test_tool_calls_that_are_no_list_are_named(tmp_path) -> None:
    _, doc = load("ingest/inspect_events.json")
    doc["samples"][0]["messages"][0]["tool_calls"] = True
    error = refused(write(tmp_path, "inspect.json", doc))
    assert "tool_calls is bool, not a list" in str(error) and error.field == "messages.tool_calls"


def test_a_vercel_tool_call_id_that_is_a_list_is_refused(tmp_path) -> None:
    _, doc = load("real/vercel-ai/ai_sdk_tool_run.json")
    span = next(s for s in doc if "ai.toolCall.id" in json.dumps(s.get("attributes", {})))
    span["attributes"]["ai.toolCall.id"] = ["call", 1]
    error = refused(write(tmp_path, "vercel.json", doc))
    assert error.field == "ToolInfo.call_id"
