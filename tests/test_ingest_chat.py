"""Chat-message importers on real runs: τ-bench's 88 airline conversations, public fixtures from
mistral-common (OpenAI chat with tools), litellm (an Anthropic Messages request) and NeMo Automodel
(fine-tuning JSONL), and LangChain's own serialisations of a real run (made by langchain_core).

The expected step counts are derived from the raw JSON with separate logic, and two runs were
counted by hand. The shared τ-bench files hold ``tool_calls`` as JSON lists and ``content: null``;
the exporter quirk of ``str()``-ed lists and the string ``'None'`` is produced here from the same
real runs, exactly as ``str()`` writes them, and must import to the same steps.
"""

from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from ingest import detect, ingest_path, open_traces
from schemas.trace import ActorKind, StepKind, TraceStep
from tests.cli_helpers import run
from tests.conftest import DATA, REPO

RUNS = DATA / "taubench" / "airline" / "runs"
OUTCOMES = DATA / "taubench" / "airline" / "outcomes.csv"
REAL = REPO / "tests" / "fixtures" / "real"
MISTRAL = REAL / "mistral-common" / "parallel_calls.json"
LITELLM = REAL / "litellm" / "claude_code_request.json"
NEMO = REAL / "nemo-automodel" / "openai_chat.jsonl"
LANGGRAPH = REPO / "tests" / "fixtures" / "ingest" / "langgraph_state.json"
RUN_FILES = sorted(RUNS.glob("*.json"))


def _steps(path: Path, fmt: str = "auto") -> list[list[TraceStep]]:
    return [list(t.steps()) for t in open_traces(path, fmt)]


def _write(tmp: Path, name: str, value: Any) -> Path:
    path = tmp / name
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def _expected(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, actor) per step, from the raw messages: text first, then one step per call."""
    out: list[tuple[str, str]] = []
    for m in messages:
        calls = m.get("tool_calls") or []
        text = m.get("content") not in (None, "", "None") or not calls
        if m["role"] == "tool":
            out.append(("tool_result", m["name"]))
            continue
        actor = {"user": "user", "assistant": "assistant", "system": "system"}[m["role"]]
        if text:
            out.append(("message", actor))
        out += [("tool_call", actor)] * len(calls)
    return out


def _shape(steps: list[TraceStep]) -> list[tuple[Any, ...]]:
    """What two dialects of one conversation must agree on (tool-call text aside: OpenAI writes
    arguments as text, Anthropic and LangChain as objects)."""
    return [
        (
            s.actor,
            s.actor_kind,
            s.kind,
            None if s.kind is StepKind.tool_call else s.content,
            s.tool,
            s.refs,
        )
        for s in steps
    ]


# -- τ-bench: every run, counts from the raw JSON and by hand --------------------------------------


def test_all_88_taubench_runs_import_with_counts_from_the_raw_json():
    assert len(RUN_FILES) == 88
    total = 0
    for path in RUN_FILES:
        assert detect(path)[0] == "openai-chat", path
        messages = json.loads(path.read_text())["messages"]
        [steps] = _steps(path)
        assert [(s.kind.value, s.actor) for s in steps] == _expected(messages), path.name
        by_id = {s.step_id: s for s in steps}
        for s in steps:
            assert s.recipients is None and s.content != "None"
            if s.kind is StepKind.tool_result:
                call = by_id[s.refs.reply_to]
                assert call.kind is StepKind.tool_call and call.tool.call_id == s.refs.call_id
                assert call.tool.name == s.actor == s.tool.name and s.actor_kind is ActorKind.tool
        total += len(steps)
    # 2,342 messages; 48 assistant messages hold text beside their call: 2,342 + 48
    assert total == 2390


def test_hand_counted_runs():
    # airline-task000-trial0.json, read message by message: 32 messages, none with text beside a
    # call, so 32 steps: 1 system, 8 user (messages 1 3 5 11 15 19 27 31), 7 assistant texts (2 4 10
    # 14 18 26 30), 8 calls (6 8 12 16 20 22 24 28) and their 8 results. Ids are reused: message 12
    # reuses message 8's call id and message 16 reuses message 6's; each result answers the latest.
    [steps] = _steps(RUNS / "airline-task000-trial0.json")
    kinds = [s.kind.value for s in steps]
    assert len(steps) == 32
    assert (kinds.count("tool_call"), kinds.count("tool_result")) == (8, 8)
    assert [s.actor for s in steps].count("user") == 8
    assert steps[13].refs.reply_to == "s12" and steps[17].refs.reply_to == "s16"
    assert steps[23].actor == "think" and steps[23].content == ""  # the 'think' tool answers nothing
    # airline-task035-trial3.json: 8 messages; message 6 writes text and calls
    # transfer_to_human_agents, so it is two steps (text first): 9 steps.
    [steps] = _steps(RUNS / "airline-task035-trial3.json")
    assert [(s.kind.value, s.actor) for s in steps][5:] == [
        ("message", "user"),
        ("message", "assistant"),
        ("tool_call", "assistant"),
        ("tool_result", "transfer_to_human_agents"),
    ]
    assert len(steps) == 9 and steps[8].refs.reply_to == "s7" and steps[8].content == "Transfer successful"


def test_naming_and_header_follow_the_log():
    [trace] = open_traces(RUNS / "airline-task000-trial0.json")
    steps = list(trace.steps())
    assert (steps[0].actor, steps[0].actor_kind) == ("system", ActorKind.system)
    assert (steps[1].actor, steps[1].actor_kind) == ("user", ActorKind.human)
    assert (steps[2].actor, steps[2].actor_kind) == ("assistant", ActorKind.agent)
    call = steps[6]
    assert call.tool.arguments == {"user_id": "mia_li_3668"} and call.content == '{"user_id":"mia_li_3668"}'
    header = trace.header
    assert header.task is None and "outcome" not in header.metadata  # the run file holds no verdict
    again = next(iter(open_traces(RUNS / "airline-task000-trial0.json")))
    assert header.trace_id == again.header.trace_id and header.trace_id.startswith("openai-chat-")


def test_python_literal_tool_calls_and_none_text_import_to_the_same_steps(tmp_path):
    """The exporter quirk: ``tool_calls`` written as ``str(list)`` and ``content`` as ``'None'``."""
    path = RUNS / "airline-task000-trial0.json"
    doc = json.loads(path.read_text())
    for m in doc["messages"]:
        if m.get("tool_calls"):
            m["tool_calls"] = str(m["tool_calls"])
            m["content"] = str(m["content"])
    quirky = _write(tmp_path, "quirk.json", doc)
    assert "\"[{'function': {'arguments': '{" in quirky.read_text()
    [original], [read] = _steps(path), _steps(quirky)
    assert _shape(read) == _shape(original)
    assert [s.content for s in read] == [s.content for s in original]
    assert all(s.raw.get("content") == "None" for s in read if s.kind is StepKind.tool_call)


def test_tau_bench_trajectory_list_one_trace_per_run_with_outcomes(tmp_path):
    """τ-bench's own ``historical_trajectories`` layout, laid out from the 88 runs and outcomes.csv;
    the file is > 64 KiB, so detection reads only its head."""
    rows = list(csv.DictReader(OUTCOMES.open()))
    runs = [
        {
            "task_id": int(r["task_id"]),
            "reward": float(r["reward"]),
            "info": {"file": r["file"], "trial": int(r["trial"])},
            "traj": json.loads((RUNS / r["file"]).read_text())["messages"],
        }
        for r in rows
    ]
    path = _write(tmp_path, "gpt-4o-airline.json", runs)
    assert path.stat().st_size > 64 * 1024
    assert detect(path)[0] == "openai-chat"
    traces = list(open_traces(path))
    assert len(traces) == 88 and len({t.header.trace_id for t in traces}) == 88
    for row, trace in zip(rows, traces, strict=True):
        outcome = trace.header.metadata["outcome"]
        assert outcome == {"value": row["outcome"], "source": "reward", "detail": float(row["reward"])}
        assert trace.header.framework == "tau-bench" and trace.header.metadata["fields"]["task_id"] == int(
            row["task_id"]
        )
        assert trace.labels.labels["info"]["file"] == row["file"]
        assert [w.what for w in trace.header.withheld] == ["grading:info"]
        assert all(row["file"] not in json.dumps(s.raw) for s in trace.steps())
    assert sum(t["value"] == "succeeded" for t in (tr.header.metadata["outcome"] for tr in traces)) == 31


def test_tool_results_without_a_name_are_acted_by_the_call_they_answer(tmp_path):
    path = RUNS / "airline-task000-trial0.json"
    doc = json.loads(path.read_text())
    for m in doc["messages"]:
        m.pop("name", None)
    assert _shape(_steps(_write(tmp_path, "unnamed.json", doc))[0]) == _shape(_steps(path)[0])


def test_legacy_function_calls_developer_role_and_image_parts(tmp_path):
    """The same real conversation in the pre-tools API: ``function_call`` on the assistant and
    ``function`` messages (no call ids: a result answers the last call of its function), the system
    prompt as ``developer``, and a user turn as content parts with an image."""
    path = REAL / "mistral-common" / "get_weather_full.json"
    doc = json.loads(path.read_text())
    legacy = []
    for m in doc["messages"]:
        m = dict(m)
        if m.get("tool_calls"):
            m["function_call"] = m.pop("tool_calls")[0]["function"]
        elif m["role"] == "tool":
            m = {"role": "function", "name": m["name"], "content": m["content"]}
        elif m["role"] == "system":
            m["role"] = "developer"
        legacy.append(m)
    legacy[2]["content"] = [
        {"type": "text", "text": legacy[2]["content"]},
        {"type": "image_url", "image_url": {"url": "https://example.com/sky.png"}},
    ]
    steps = _steps(_write(tmp_path, "legacy.json", {"messages": legacy}))[0]
    original = _steps(path)[0]
    assert [(s.actor, s.kind, s.content) for s in steps] == [(s.actor, s.kind, s.content) for s in original]
    assert steps[0].raw["role"] == "developer" and steps[0].actor_kind is ActorKind.system
    assert steps[2].raw["parts_omitted"] == [{"part": 1, "type": "image_url"}] and steps[2].raw["part"] == 0
    calls = [s for s in steps if s.kind is StepKind.tool_call]
    results = [s for s in steps if s.kind is StepKind.tool_result]
    assert all(c.tool.call_id is None for c in calls)
    assert [r.refs.reply_to for r in results] == [c.step_id for c in calls]
    assert calls[1].tool.arguments == {"location": "Paris, France", "format": "celsius", "num_days": 5}


# -- other projects' files ---------------------------------------------------------------------------


def test_mistral_parallel_calls_share_one_id_and_pair_in_order():
    [steps] = _steps(MISTRAL)
    assert [s.kind.value for s in steps].count("tool_call") == 3
    calls = [s for s in steps if s.kind is StepKind.tool_call]
    results = [s for s in steps if s.kind is StepKind.tool_result]
    assert {c.tool.call_id for c in calls} == {"123456789"}
    assert [r.refs.reply_to for r in results] == [c.step_id for c in calls]
    assert results[2].content == "Email sent to finance2@company.com"
    assert calls[2].tool.arguments["to"] == "finance2@company.com."
    [trace] = open_traces(MISTRAL)
    assert trace.header.metadata["fields"]["tools"][0]["function"]["name"] == "send_email"


def test_mistral_runs_counted_by_hand():
    """parallel_calls.json, counted by hand from its 8 messages: the user's request, one call and
    its result, the answer, a second request, two calls in one message and their two results."""
    [steps] = _steps(MISTRAL)
    assert [(s.kind.value, s.actor, s.actor_kind.value) for s in steps] == [
        ("message", "user", "human"),
        ("tool_call", "assistant", "agent"),
        ("tool_result", "send_email", "tool"),
        ("message", "assistant", "agent"),
        ("message", "user", "human"),
        ("tool_call", "assistant", "agent"),
        ("tool_call", "assistant", "agent"),
        ("tool_result", "send_email", "tool"),
        ("tool_result", "send_email", "tool"),
    ]
    [weather] = _steps(REAL / "mistral-common" / "get_weather_full.json")
    assert len(weather) == 13  # 13 messages by hand (two system prompts), one step each


def test_a_bare_message_list_in_a_json_file_is_the_same_run(tmp_path):
    messages = json.loads(MISTRAL.read_text())["messages"]
    bare = _write(tmp_path, "bare.json", messages)
    assert detect(bare)[0] == "openai-chat"
    assert [(s.kind, s.actor, s.content) for s in _steps(bare)[0]] == [
        (s.kind, s.actor, s.content) for s in _steps(MISTRAL)[0]
    ]


def test_anthropic_request_from_litellm():
    assert detect(LITELLM)[0] == "anthropic-messages"
    [trace] = open_traces(LITELLM)
    steps = list(trace.steps())
    doc = json.loads(LITELLM.read_text())
    assert [s.content for s in steps[:3]] == [b["text"] for b in doc["system"]]
    assert all(s.actor == "system" and s.raw.get("field", "system") == "system" for s in steps[:3])
    user = steps[3:]
    assert [s.content for s in user] == [b["text"] for b in doc["messages"][0]["content"]]
    assert [s.raw.get("part") for s in user] == list(range(8))
    assert user[-1].raw["cache_control"] == {"type": "ephemeral"}
    assert trace.header.metadata["fields"]["model"] == "claude-sonnet-4-5"


def _as_anthropic(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """An OpenAI conversation as Anthropic Messages: calls as ``tool_use`` blocks, results as
    ``tool_result`` blocks in the next user turn."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "input": json.loads(c["function"]["arguments"]),
                }
                for c in m.get("tool_calls") or []
            ]
            out.append({"role": "assistant", "content": blocks})
        elif m["role"] == "user":
            out.append({"role": "user", "content": m["content"]})
    return {"system": system[0], "messages": out}


@pytest.mark.parametrize("name", ["airline-task000-trial0.json", "airline-task033-trial0.json"])
def test_anthropic_blocks_give_the_openai_steps(tmp_path, name):
    doc = json.loads((RUNS / name).read_text())
    path = _write(tmp_path, "anthropic.json", _as_anthropic(doc["messages"]))
    assert detect(path)[0] == "anthropic-messages"
    [anthropic], [openai] = _steps(path), _steps(RUNS / name)
    assert _shape(anthropic) == _shape(openai)


def test_anthropic_error_flag_thinking_and_images(tmp_path):
    doc = {
        "system": "You may read files.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                    },
                    {"type": "text", "text": "What does the log say?"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "I should read the log first.",
                        "signature": "EqQBCgIYAhIM",
                    },
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                    {
                        "type": "tool_use",
                        "id": "toolu_01A",
                        "name": "read_file",
                        "input": {"path": "app.log"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01A",
                        "content": "No such file",
                        "is_error": True,
                    }
                ],
            },
        ],
    }
    steps = _steps(_write(tmp_path, "a.json", doc))[0]
    assert [s.kind.value for s in steps] == ["message", "message", "message", "tool_call", "tool_result"]
    assert steps[1].raw["parts_omitted"] == [{"part": 0, "type": "image"}]
    assert steps[2].content == "I should read the log first." and steps[2].raw["block"] == "thinking"
    assert steps[2].raw["parts_omitted"] == [{"part": 1, "type": "redacted_thinking"}]
    assert steps[2].raw["signature"] == "EqQBCgIYAhIM"
    result = steps[4]
    assert (result.actor, result.raw["status"], result.refs.reply_to) == ("read_file", "error", "s3")


# -- LangChain / LangGraph ---------------------------------------------------------------------------


def _langchain_forms(messages: list[dict[str, Any]]) -> dict[str, Any]:
    core = pytest.importorskip("langchain_core")
    from langchain_core.load import dumpd
    from langchain_core.messages import convert_to_messages, messages_to_dict

    assert core.__version__
    lc = convert_to_messages(messages)
    as_dicts = messages_to_dict(lc)
    return {
        "messages_to_dict": as_dicts,
        "lc_constructor": {"messages": dumpd(lc)},
        "plain": [{**d["data"], "type": d["type"]} for d in as_dicts],
        "langgraph_values": {"values": {"messages": as_dicts}},
    }


@pytest.mark.parametrize("form", ["messages_to_dict", "lc_constructor", "plain", "langgraph_values"])
def test_langchain_serialisations_of_a_real_run_give_the_openai_steps(tmp_path, form):
    path = RUNS / "airline-task000-trial0.json"
    dumped = _langchain_forms(json.loads(path.read_text())["messages"])[form]
    target = _write(tmp_path, f"{form}.json", dumped)
    assert detect(target)[0] == "langchain-messages"
    [trace] = open_traces(target)
    assert trace.header.framework == ("langgraph" if form == "langgraph_values" else "langchain")
    steps = list(trace.steps())
    assert _shape(steps) == _shape(_steps(path)[0])
    expected_form = (
        "plain" if form == "plain" else "lc_constructor" if form == "lc_constructor" else "messages_to_dict"
    )
    assert steps[0].raw["langchain"] == expected_form


def test_langchain_tool_message_status_is_the_result_status(tmp_path):
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, ToolMessage, messages_to_dict

    doc = json.loads(MISTRAL.read_text())["messages"]
    call = doc[1]["tool_calls"][0]
    msgs = [
        AIMessage(content="", tool_calls=[{"name": "send_email", "args": {}, "id": call["id"]}]),
        ToolMessage(content=doc[2]["content"], tool_call_id=call["id"], name="send_email", status="error"),
    ]
    steps = _steps(_write(tmp_path, "lc.json", messages_to_dict(msgs)))[0]
    assert steps[1].raw["status"] == "error" and steps[1].refs.reply_to == "s0"


def test_committed_langgraph_state():
    [steps] = _steps(LANGGRAPH)
    assert _shape(steps) == _shape(_steps(MISTRAL)[0])


# -- JSONL -------------------------------------------------------------------------------------------


def test_jsonl_from_nemo_one_trace_per_line():
    assert detect(NEMO)[0] == "chat-jsonl"
    traces = list(open_traces(NEMO))
    lines = [json.loads(x) for x in NEMO.read_text().splitlines()]
    assert [t.header.trace_id.rsplit("-", 1)[1] for t in traces] == ["L1", "L2"]
    assert [len(list(t.steps())) for t in traces] == [len(x["messages"]) for x in lines]


def test_jsonl_runs_and_bare_lists_and_a_bad_line(tmp_path):
    runs = [json.loads(p.read_text()) for p in RUN_FILES[:3]]
    path = tmp_path / "runs.jsonl"
    path.write_text(
        "\n".join([json.dumps(runs[0]), json.dumps(runs[1]["messages"]), "", json.dumps(runs[2])]) + "\n"
    )
    assert detect(path)[0] == "chat-jsonl"
    got = [len(s) for s in _steps(path)]
    assert got == [len(_expected(r["messages"])) for r in runs]
    path.write_text(path.read_text() + '{"messages": [{"role": "user", "content": "cut off\n')
    with pytest.raises(InputError, match=r"line 5") as info:
        _steps(path)
    assert str(path) in str(info.value)


# -- malformed input ---------------------------------------------------------------------------------


def test_tool_calls_string_that_is_no_literal_names_file_message_and_field(tmp_path):
    doc = json.loads((RUNS / "airline-task000-trial0.json").read_text())
    doc["messages"][6]["tool_calls"] = "[{'function': {'arguments': '{}', 'name': "
    path = _write(tmp_path, "bad.json", doc)
    with pytest.raises(InputError) as info:
        _steps(path)
    assert str(path) in str(info.value) and "field 'messages[6].tool_calls'" in str(info.value)


def test_message_without_role_names_file_message_and_field(tmp_path):
    doc = json.loads((RUNS / "airline-task000-trial0.json").read_text())
    del doc["messages"][3]["role"]
    path = _write(tmp_path, "bad.json", doc)
    with pytest.raises(InputError) as info:
        _steps(path, "openai-chat")
    assert str(path) in str(info.value) and "field 'messages[3].role'" in str(info.value)


def test_appending_a_run_twice_appends_nothing(sqlite_store):
    first = ingest_path(sqlite_store, RUNS / "airline-task035-trial3.json")
    again = ingest_path(sqlite_store, RUNS / "airline-task035-trial3.json")
    assert first[0].steps == 9 and again[0].appended == 0


# -- the CLI -----------------------------------------------------------------------------------------


def test_review_of_a_taubench_run_writes_a_report_that_validates(tmp_path):
    run_file = RUNS / "airline-task000-trial0.json"
    out = tmp_path / "report.json"
    proc = run(["review", str(run_file), "-o", str(out)], tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(out.read_text())
    [trace] = open_traces(run_file)
    assert report["trace_id"] == trace.header.trace_id
    check = run(["validate", str(out), "--trace", str(run_file), "--json"], tmp_path)
    assert check.returncode == 0, check.stdout
    assert json.loads(check.stdout)["ok"] is True


# -- fuzzing: mutations of a real run ----------------------------------------------------------------

BASE = json.loads((RUNS / "airline-task035-trial3.json").read_text())
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from(["", "None", "x", "[", "[{'a': 1}]", "user", "tool"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["role", "content", "type", "text", "name", "id", "function", "arguments"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
FIELDS = ["role", "content", "tool_calls", "name", "tool_call_id", "function_call", "type", "data"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, len(BASE["messages"]) - 1),
            st.sampled_from(FIELDS),
            st.one_of(st.just(KeyError), values),
        ),
        min_size=1,
        max_size=4,
    ),
    fmt=st.sampled_from(["auto", "openai-chat", "anthropic-messages", "langchain-messages", "chat-jsonl"]),
)
def test_mutated_runs_give_a_trace_or_a_clear_error(edits, fmt):
    doc = json.loads(json.dumps(BASE))
    for n, key, value in edits:
        if value is KeyError:
            doc["messages"][n].pop(key, None)
        else:
            doc["messages"][n][key] = value
    with tempfile.TemporaryDirectory() as d:
        path = _write(Path(d), "run.json", doc)
        try:
            for trace in open_traces(path, fmt):
                trace.scan()
                assert sum(1 for _ in trace.steps()) == trace.step_count
        except InputError as exc:
            assert str(path) in exc.one_line()
