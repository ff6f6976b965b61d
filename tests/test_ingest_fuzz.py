"""Fuzz every importer: any input gives traces or a clear InputError, never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from ingest import open_traces, registry

# Fragments that reach deep into each parser: headers, markers and the keys each format reads.
LINES = [
    "******************** Task 1/2 (abc_1)  ********************",
    "Response from Supervisor Agent",
    "    send_message(app_name='x', message='hi')",
    "Entering X Agent message loop",
    "    Message to X Agent",
    "    Reply from X Agent to Supervisor",
    "Code Execution Output",
    "Exiting X Agent message loop",
    "[2025-17-01 11:36:43 INFO] **[Preprocessing]**",
    "[2025-17-01 11:36:43 INFO] A: **A<->B on : Coding, turn 0**",
    "[2025-17-01 11:36:43 INFO] **[Seminar Conclusion]**:",
    "=== MetaGPT Agent Communication Log - Started ===",
    "[2025-03-27 01:21:03] FROM: Human TO: {'<all>'",
    "[2025-03-27 01:21:03] NEW MESSAGES:",
    "SimpleCoder: x",
    "-" * 80,
    "---------- WebSurfer ----------",
    "[2024-10-21T21:18:20.6], Orchestrator (-> ):",
    "RUN.SH STARTING !#!#",
    "2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:think:82 - 🛠️ Manus selected 1 tools to use",
    "2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:think:86 - 🧰 Tools being prepared: ['a'",
    "2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:think:89 - 🔧 Tool arguments: {",
    "2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:act:150 - 🎯 Tool 'a' completed its mission! Result: ",
    "HyperAgent_x - INFO - Planner's Response: Intern Name: ",
    "HyperAgent_x - INFO - Navigator->Planner: ",
    "result = open_file._run(relative_file_path=",
]
KEYS = [
    "history", "content", "role", "name", "question", "question_ID", "mistake_step", "mistake_agent",
    "trajectory", "problem_statement", "other_data", "note", "instance_id", "run_id", "prompt",
    "mas_name", "benchmark_name", "trace", "trace_id", "annotations", "mast_annotation", "key",
    "resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "attributes", "value", "stringValue",
    "context", "span_id", "parent_id", "eval", "samples", "messages", "tool_calls", "task", "record", "step_id",
]  # fmt: skip
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "x", "s1", "12", "user", "gen_ai.agent.name"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=12,
)
inputs = st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from(LINES) | st.text(max_size=30), max_size=8).map(
        lambda ls: "\n".join(ls).encode()
    ),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.lists(json_values, max_size=3).map(lambda vs: "\n".join(json.dumps(v) for v in vs).encode()),
)


def _check(name: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "input.json"
        path.write_bytes(data)
        try:
            for trace in open_traces(path, name):
                trace.scan()
                assert sum(1 for _ in trace.steps()) == trace.step_count
                _ = trace.labels
        except InputError as exc:
            assert exc.one_line()


@pytest.mark.parametrize("name", sorted(registry))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=inputs)
def test_any_input_is_a_trace_or_a_clear_error(name, data):
    _check(name, data)
