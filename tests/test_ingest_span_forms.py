"""The span forms real exports write, each imported: span record shapes, OpenInference attribute
files with multi-part message contents, TRAIL trace documents, the older GenAI message forms,
Vercel AI SDK telemetry, and the error a span file with no content gives.

Real files (tests/fixtures/real, see SOURCES.md): OpenInference's openinference-genai fixtures,
one model call written three ways (OpenInference attributes with ``message.contents``, current
GenAI, deprecated GenAI ``gen_ai.prompt`` / ``gen_ai.completion`` JSON strings); a Vercel AI SDK
6.0.68 capture that OpenInference ships; and the spans the AI SDK 6.0.326's own telemetry emitted
here for a tool-using ``generateText`` run and a ``streamText`` run (record_spans.mjs beside them;
the language model is the SDK's mock). TRAIL's traces embed gated GAIA data and no public
repository holds one, so ``tests/fixtures/ingest/trail_gaia.json`` is hand-written to TRAIL's
wire format. Other shapes are derived in the tests from these files, never invented whole.

Step counts verified by hand against the files: the Paris weather call gives 5 steps in each of
its three forms (user question; the assistant's earlier text and its get_weather call; the tool's
answer; the model's reply); the recorded refund run gives 8 (system prompt, user request, the
model's text and lookupOrder call, its result, the issueRefund call, its failed result, the
model's answer); the TRAIL trace gives 8 (the task to CodeAgent.run, three model outputs, three
tool results, the agent's answer).
"""

from __future__ import annotations

import contextlib
import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.core.errors import InputError
from ingest import ingest_path, open_traces
from ingest.registry import detect
from schemas.trace import ActorKind, StepKind, TraceStep
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real"
FIX = REPO / "tests" / "fixtures" / "ingest"
PARIS = {
    "openinference": REAL / "openinference-genai" / "openinference_client_span_tool_calls.json",
    "otel-genai": REAL / "openinference-genai" / "otel_genai_client_span_tool_calls.json",
    "otel-genai-deprecated": REAL
    / "openinference-genai"
    / "otel_genai_deprecated_client_span_tool_calls.json",
}
VERCEL_RUN = REAL / "vercel-ai" / "ai_sdk_tool_run.json"
VERCEL_CAPTURE = REAL / "vercel-ai" / "ai-generateText.json"
TRAIL = FIX / "trail_gaia.json"
FILES = {
    **{
        f"paris:{k}": (p, "openinference" if k == "openinference" else "otel-genai") for k, p in PARIS.items()
    },
    "oi-output-value": (
        REAL / "openinference-genai" / "openinference_client_span_input_output_only.json",
        "openinference",
    ),
    "vercel-run": (VERCEL_RUN, "vercel-ai"),
    "vercel-capture": (VERCEL_CAPTURE, "vercel-ai"),
    "trail": (TRAIL, "trail"),
}


def traces(path: Path, fmt: str = "auto") -> list[tuple[dict, list[TraceStep]]]:
    return [(t.header.model_dump(mode="json"), list(t.steps())) for t in open_traces(path, fmt)]


def shape(steps: list[TraceStep]) -> list[tuple[str, ActorKind, StepKind, str]]:
    return [(s.actor, s.actor_kind, s.kind, s.content) for s in steps]


def strings(value: Any, out: set[str]) -> set[str]:
    """Every string in a JSON value, JSON held in strings decoded too (also re-serialised, as a
    step may hold a decoded JSON value written back)."""
    if isinstance(value, str):
        out.add(value)
        if value[:1] in "[{":
            with contextlib.suppress(json.JSONDecodeError):
                strings(json.loads(value), out)
    elif isinstance(value, dict | list):
        out.add(json.dumps(value, ensure_ascii=False))
        for v in value.values() if isinstance(value, dict) else value:
            strings(v, out)
    return out


# -- conformance on every new file ------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(FILES))
def test_detected_reimported_the_same_and_verbatim(key):
    path, fmt = FILES[key]
    assert detect(path)[0] == fmt
    first = [(h, [s.model_dump(mode="json") for s in steps]) for h, steps in traces(path)]
    assert first and first == [(h, [s.model_dump(mode="json") for s in steps]) for h, steps in traces(path)]
    source = strings(json.loads(path.read_text(encoding="utf-8")), set())
    whole = path.read_text(encoding="utf-8")
    for _, steps in traces(path):
        assert [s.index for s in steps] == list(range(len(steps)))
        for step in steps:
            assert not step.content or step.content in source, (key, step.step_id, step.content[:80])
            for recipient in step.recipients or []:
                assert recipient in whole


@pytest.mark.parametrize("key", sorted(FILES))
def test_append_twice_appends_nothing_new(key, sqlite_store):
    path, fmt = FILES[key]
    first = ingest_path(sqlite_store, path, fmt)
    events = sum(1 for _ in sqlite_store.read_all())
    again = ingest_path(sqlite_store, path, fmt)
    assert sum(1 for _ in sqlite_store.read_all()) == events
    assert all(s.appended == 0 for s in again)
    assert [s.trace_id for s in first] == [s.trace_id for s in again]


@pytest.mark.parametrize("key", sorted(FILES))
@pytest.mark.parametrize("damage", ["truncated", "nul"])
def test_damaged_input_fails_naming_the_place(key, damage, tmp_path):
    path, fmt = FILES[key]
    data = path.read_bytes()
    bad = tmp_path / path.name
    bad.write_bytes(data[: len(data) // 2] if damage == "truncated" else data[:100] + b"\x00" + data[100:])
    with pytest.raises(InputError, match=r"line \d+|byte \d+") as caught:
        traces(bad, fmt)
    assert str(bad) in str(caught.value)


# -- one model call in three conventions ------------------------------------------------------


def test_one_call_written_three_ways_gives_the_same_five_steps():
    """OpenInference (text in ``message.contents.M.message_content.text``), current GenAI and the
    deprecated GenAI JSON strings describe the same call: the steps agree (the model's name is
    the response model in OpenInference, the request model in GenAI)."""
    got = {}
    for name, path in PARIS.items():
        [(_, steps)] = traces(path)
        got[name] = steps
        assert [(s.actor_kind, s.kind, s.content) for s in steps] == [
            (ActorKind.human, StepKind.message, "Weather in Paris?"),
            (ActorKind.agent, StepKind.message, "Absolutely! Let me check the weather for you."),
            (ActorKind.agent, StepKind.tool_call, steps[2].content),
            (ActorKind.tool, StepKind.tool_result, "rainy, 57°F"),
            (
                ActorKind.agent,
                StepKind.message,
                "The weather in Paris is currently rainy with a temperature of 57°F.",
            ),
        ]
        assert json.loads(steps[2].content) == {"location": "Paris"}
        assert (steps[2].tool.name, steps[2].tool.call_id, steps[2].tool.arguments) == (
            "get_weather",
            "1234",
            {"location": "Paris"},
        )
        assert steps[0].actor == "user" and steps[3].actor == "get_weather"
        assert (steps[3].refs.reply_to, steps[3].refs.call_id) == ("s2", "1234")
    assert got["openinference"][4].actor == "gpt-4-0613" and got["otel-genai"][4].actor == "gpt-4"
    # the input messages stay in raw as well, in their own form
    attrs = got["openinference"][0].raw["attributes"]
    assert attrs["llm.input_messages.0.message.contents.0.message_content.text"] == "Weather in Paris?"


def test_an_llm_span_without_output_messages_gives_its_output_value():
    [(_, steps)] = traces(FILES["oi-output-value"][0])
    assert shape(steps) == [
        (
            "gpt-4-0613",
            ActorKind.agent,
            StepKind.message,
            '{"text":"The weather in Paris is currently rainy with a temperature of 57°F.","finish_reason":"stop"}',
        )
    ]


def test_message_contents_on_output_messages_inside_a_span_record(tmp_path):
    """The multi-part contents in a Phoenix span record, under an agent: the output has text."""
    attrs = json.loads(PARIS["openinference"].read_text(encoding="utf-8"))
    records = [
        {"context": {"trace_id": "t1", "span_id": "a"}, "parent_id": None, "name": "weather_agent",
         "span_kind": "AGENT", "start_time": "2026-01-05T10:00:00+00:00",
         "end_time": "2026-01-05T10:00:09+00:00", "attributes": {"input.value": "Weather in Paris?"}},
        {"context": {"trace_id": "t1", "span_id": "b"}, "parent_id": "a", "name": "chat",
         "start_time": "2026-01-05T10:00:01+00:00", "end_time": "2026-01-05T10:00:02+00:00", "attributes": attrs},
    ]  # fmt: skip
    path = tmp_path / "phoenix.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    [(_, steps)] = traces(path)
    assert shape(steps) == [
        ("user", ActorKind.human, StepKind.message, "Weather in Paris?"),
        ("weather_agent", ActorKind.agent, StepKind.message, steps[1].content),
    ]
    assert steps[1].content == "The weather in Paris is currently rainy with a temperature of 57°F."
    assert steps[0].recipients == ["weather_agent"]  # 'span_kind' AGENT, as Phoenix writes it


def test_phoenix_records_link_a_tool_by_tool_id_and_keep_its_error(tmp_path):
    """Phoenix's REST export: ``span_kind`` beside the attributes, a TOOL span naming the call it
    answers by ``tool.id``, ``status_code`` ERROR."""
    records = [
        {"name": "chat", "context": {"trace_id": "t2", "span_id": "m"}, "parent_id": None, "span_kind": "LLM",
         "start_time": "2026-01-05T10:00:00+00:00", "end_time": "2026-01-05T10:00:01+00:00", "status_code": "OK",
         "attributes": {"llm.model_name": "m1", "llm.input_messages.0.message.role": "user",
                        "llm.input_messages.0.message.content": "List the datasets.",
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call-04",
                        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "list_datasets",
                        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}"}},
        {"name": "list_datasets", "context": {"trace_id": "t2", "span_id": "t"}, "parent_id": None,
         "span_kind": "TOOL", "start_time": "2026-01-05T10:00:02+00:00", "end_time": "2026-01-05T10:00:03+00:00",
         "status_code": "ERROR", "status_message": "permission denied",
         "attributes": {"tool.name": "list_datasets", "tool.id": "call-04", "input.value": "{}"}},
    ]  # fmt: skip
    path = tmp_path / "phoenix.json"
    path.write_text(json.dumps(records))
    assert detect(path)[0] == "openinference"
    [(_, steps)] = traces(path)
    assert shape(steps) == [
        ("user", ActorKind.human, StepKind.message, "List the datasets."),
        ("m1", ActorKind.agent, StepKind.tool_call, "{}"),
        ("list_datasets", ActorKind.tool, StepKind.tool_result, "permission denied"),
    ]
    assert (steps[2].refs.reply_to, steps[2].refs.call_id) == ("s1", "call-04")
    assert steps[2].raw["status"] == "error" and steps[1].raw["status"] == "ok"


# -- span record shapes -------------------------------------------------------------------------


def _reshaped(span: dict[str, Any], form: str) -> dict[str, Any]:
    """A span of the recorded Vercel run (OTel JS shape) written the way another exporter does."""
    ctx, parent = span["spanContext"], span.get("parentSpanId")
    start = span["startTime"][0] * 10**9 + span["startTime"][1]
    end = span["endTime"][0] * 10**9 + span["endTime"][1]
    status = {0: "UNSET", 1: "OK", 2: "ERROR"}[span["status"]["code"]]
    message = span["status"].get("message")
    if form == "phoenix":  # context.*, parent_id, ISO times, status_code
        return {"name": span["name"], "context": {"trace_id": ctx["traceId"], "span_id": ctx["spanId"]},
                "parent_id": parent, "start_time": _iso(start), "end_time": _iso(end),
                "status_code": status, "status_message": message or "", "attributes": span["attributes"]}  # fmt: skip
    if form == "snake":  # trace_id, span_id, parent_span_id, nanosecond ints
        return {"trace_id": ctx["traceId"], "span_id": ctx["spanId"], "parent_span_id": parent,
                "name": span["name"], "start_time": start, "end_time": end,
                "status": {"code": status, "message": message}, "attributes": span["attributes"]}  # fmt: skip
    # camel: traceId, spanId, parentSpanId, OTLP key-value attributes, string nanoseconds
    kv = [{"key": k, "value": _any(v)} for k, v in span["attributes"].items()]
    return {"traceId": ctx["traceId"], "spanId": ctx["spanId"], "parentSpanId": parent or "",
            "name": span["name"], "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "status": {"code": span["status"]["code"], "message": message}, "attributes": kv}  # fmt: skip


def _iso(ns: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ns // 1000 / 1e6, tz=UTC).isoformat()


def _any(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"stringValue": value}


@pytest.mark.parametrize("form", ["phoenix", "snake", "camel"])
@pytest.mark.parametrize("layout", ["jsonl", "array"])
def test_every_record_shape_gives_the_same_steps(form, layout, tmp_path):
    spans = json.loads(VERCEL_RUN.read_text(encoding="utf-8"))
    records = [_reshaped(s, form) for s in spans]
    path = tmp_path / f"spans.{layout}"
    path.write_text("\n".join(json.dumps(r) for r in records) if layout == "jsonl" else json.dumps(records))
    expected = [(h["trace_id"], shape(steps)) for h, steps in traces(VERCEL_RUN)]
    assert [(h["trace_id"], shape(steps)) for h, steps in traces(path, "vercel-ai")] == expected
    if form != "phoenix":  # the Phoenix form keeps microseconds only
        assert [[s.timestamp for s in st] for _, st in traces(path, "vercel-ai")] == [
            [s.timestamp for s in st] for _, st in traces(VERCEL_RUN)
        ]


def test_a_record_without_identity_names_what_it_looked_for(tmp_path):
    path = tmp_path / "spans.jsonl"
    path.write_text(
        json.dumps({"span_id": "a", "name": "chat", "attributes": {"gen_ai.operation.name": "chat"}})
    )
    with pytest.raises(
        InputError, match=r"line 1: not a span record \(no trace id \(context\.trace_id, trace_id"
    ):
        traces(path, "otel-genai")


@pytest.mark.parametrize(
    ("events", "why"), [(["prompt"], "a span event is str"), ("prompt", "a span's events are str")]
)
def test_a_record_whose_events_are_no_objects_is_refused_not_read_without_them(
    tmp_path: Path, events: Any, why: str
) -> None:
    """An OTLP request's events of another type are refused; a span record's were dropped unread,
    and a step that an event carries (a prompt, a completion) was lost without a word."""
    path = tmp_path / "spans.jsonl"
    good = {
        "trace_id": "t1",
        "span_id": "s1",
        "name": "chat",
        "start_time": 1,
        "end_time": 2,
        "attributes": {},
    }
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"span_id": "s2", "events": events}) + "\n")
    with pytest.raises(InputError, match=rf"line 2: not a span record \({why}") as caught:
        traces(path, "otel-genai")
    assert str(path) in str(caught.value)


# -- older GenAI forms ----------------------------------------------------------------------------


def _derived(tmp_path: Path, name: str, attrs: dict[str, Any], events: list[dict] | None = None) -> Path:
    path = tmp_path / f"{name}.jsonl"
    record = {"trace_id": "t-legacy", "span_id": "s1", "name": "openai.chat", "start_time": 1, "end_time": 2,
              "attributes": attrs, "events": events or []}  # fmt: skip
    path.write_text(json.dumps(record))
    return path


def test_older_genai_forms_give_the_steps_of_the_current_one(tmp_path):
    """The deprecated fixture's JSON strings rewritten in the other pre-0.1 forms: indexed
    ``gen_ai.prompt.N.*`` attributes without an operation name (OpenLLMetry writes
    ``llm.request.type``), and ``gen_ai.content.*`` events."""
    attrs = json.loads(PARIS["otel-genai-deprecated"].read_text(encoding="utf-8"))
    [(_, expected)] = traces(PARIS["otel-genai-deprecated"])
    prompt, completion = json.loads(attrs.pop("gen_ai.prompt")), json.loads(attrs.pop("gen_ai.completion"))

    openllmetry = {k: v for k, v in attrs.items() if k != "gen_ai.operation.name"} | {
        "llm.request.type": "chat"
    }
    openllmetry |= {
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": prompt[0]["parts"][0]["content"],
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.content": prompt[1]["parts"][0]["content"],
        "gen_ai.prompt.1.tool_calls.0.id": "1234",
        "gen_ai.prompt.1.tool_calls.0.name": "get_weather",
        "gen_ai.prompt.1.tool_calls.0.arguments": json.dumps(prompt[1]["parts"][1]["arguments"]),
        "gen_ai.prompt.2.role": "tool",
        "gen_ai.prompt.2.content": prompt[2]["parts"][0]["response"],
        "gen_ai.prompt.2.tool_call_id": "1234",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": completion["text"],
    }
    events = [
        {"name": "gen_ai.content.prompt", "attributes": {"gen_ai.prompt": json.dumps(prompt)}},
        {"name": "gen_ai.content.completion", "attributes": {"gen_ai.completion": json.dumps(completion)}},
    ]
    for path in (_derived(tmp_path, "indexed", openllmetry), _derived(tmp_path, "events", attrs, events)):
        assert detect(path)[0] == "otel-genai"
        [(_, steps)] = traces(path)
        assert shape(steps) == shape(expected), path.name


def test_a_plain_text_completion_is_the_models_turn(tmp_path):
    path = _derived(
        tmp_path, "plain", {"gen_ai.request.model": "m", "gen_ai.prompt": "Hi", "gen_ai.completion": "Hello."}
    )
    [(_, steps)] = traces(path)
    assert shape(steps) == [
        ("user", ActorKind.human, StepKind.message, "Hi"),
        ("m", ActorKind.agent, StepKind.message, "Hello."),
    ]


# -- Vercel AI SDK ------------------------------------------------------------------------------


def test_vercel_tool_run_calls_tools_and_keeps_the_failed_refund():
    (header, steps), (shipping_header, shipping) = traces(VERCEL_RUN)
    assert shape(steps) == [
        ("system", ActorKind.system, StepKind.message,
         "You are a support agent. Refunds above 200 USD need a manager's approval."),
        ("user", ActorKind.human, StepKind.message, "Order #88412 arrived damaged. Please refund it."),
        ("support-refund", ActorKind.agent, StepKind.message, "I will look the order up first."),
        ("support-refund", ActorKind.agent, StepKind.tool_call, '{"orderId":"88412"}'),
        ("lookupOrder", ActorKind.tool, StepKind.tool_result, '{"orderId":"88412","total":240,"currency":"USD"}'),
        ("support-refund", ActorKind.agent, StepKind.tool_call, '{"orderId":"88412","amount":240}'),
        ("issueRefund", ActorKind.tool, StepKind.tool_result, "refund above 200 USD needs a manager's approval"),
        ("support-refund", ActorKind.agent, StepKind.message,
         "The refund could not be issued: refunds above 200 USD need a manager."),
    ]  # fmt: skip
    refund = steps[6]
    assert (refund.refs.reply_to, refund.refs.call_id) == ("s5", "call_refund_1")
    assert refund.raw["status"] == "error" and refund.raw["status_message"] == refund.content
    assert "status" not in steps[4].raw  # status code 0: unset
    assert header["metadata"]["function_id"] == "support-refund" and header["metadata"]["spans"] == 6
    # the prompt repeated in every model call is drafted once; the calls keep it in raw
    assert sum(s.content.startswith("You are a support agent") for s in steps) == 1
    assert "ai.prompt.messages" in steps[2].raw["attributes"]
    assert shape(shipping) == [
        ("system", ActorKind.system, StepKind.message, "You answer shipping questions."),
        ("user", ActorKind.human, StepKind.message, "When does order #88413 ship?"),
        ("support-shipping", ActorKind.agent, StepKind.message, "Your order ships on Monday."),
    ]
    assert shipping_header["metadata"]["function_id"] == "support-shipping"


def test_vercel_calls_without_their_model_spans_give_the_answer_themselves():
    """OpenInference's capture holds the ai.generateText spans alone (their model calls went to
    other traces): the prompt and the call's own response text are the steps."""
    (_, first), (_, second) = traces(VERCEL_CAPTURE)
    assert [(s.actor_kind, s.content) for s in first] == [
        (ActorKind.human, "Write a haiku about programming."),
        (ActorKind.agent, "Lines of code align,  \nLogic dances through the night—  \nDreams in data flow."),
    ]
    assert [(s.actor, s.actor_kind, s.content) for s in second] == [
        ("system", ActorKind.system, "You are a helpful assistant."),
        ("user", ActorKind.human, "What is 2 + 2?"),
        ("test-generate-text-messages", ActorKind.agent, "2 + 2 equals 4."),
        ("user", ActorKind.human, "And what is 3 + 3?"),
        ("test-generate-text-messages", ActorKind.agent, "3 + 3 equals 6."),
    ]


# -- TRAIL ---------------------------------------------------------------------------------------


def test_trail_trace_is_its_own_format_and_keeps_the_gold_answer_out_of_the_steps():
    assert detect(TRAIL)[0] == "trail"
    assert detect(FIX / "openinference_spans.jsonl")[0] == "openinference"  # no collision
    [trace] = list(open_traces(TRAIL))
    steps = list(trace.steps())
    assert [(s.actor, s.kind) for s in steps] == [
        ("user", StepKind.message),
        ("CodeAgent.run", StepKind.message),
        ("web_search", StepKind.tool_result),
        ("CodeAgent.run", StepKind.message),
        ("visit_page", StepKind.tool_result),
        ("CodeAgent.run", StepKind.message),
        ("final_answer", StepKind.tool_result),
        ("CodeAgent.run", StepKind.final_output),
    ]
    assert steps[0].actor_kind == ActorKind.human and steps[0].recipients == ["CodeAgent.run"]
    failed = steps[4]
    assert failed.raw["status"] == "error" and failed.content.startswith("HTTPError: 404")
    assert [s.timestamp for s in steps] == sorted(s.timestamp for s in steps)  # ends from 'duration'
    assert trace.header.trace_id == "trail-0035f455b3ff2295167a844f04d85d34"
    [logged] = trace.labels.labels["harness_logs"]
    assert logged["span_name"] == "answer_single_question"
    assert logged["logs"][0]["body"]["function.output"]["true_answer"] == "Paris"
    assert "true_answer" not in "\n".join(s.model_dump_json() for s in steps)
    assert [w.what for w in trace.header.withheld] == ["harness_logs"]
    # the same document read as OpenInference spans: the same steps, without the TRAIL header
    assert [shape(st) for _, st in traces(TRAIL, "openinference")] == [shape(steps)]


def test_trail_nesting_gives_parents_where_a_span_leaves_them_out(tmp_path):
    doc = json.loads(TRAIL.read_text(encoding="utf-8"))

    def strip(span: dict[str, Any]) -> None:
        span.pop("parent_span_id", None)
        span.pop("trace_id", None)
        for child in span.get("child_spans", []):
            strip(child)

    for span in doc["spans"]:
        strip(span)
    path = tmp_path / "trail.json"
    path.write_text(json.dumps(doc))
    assert [shape(s) for _, s in traces(path)] == [shape(s) for _, s in traces(TRAIL)]


# -- no content ---------------------------------------------------------------------------------


def test_a_span_file_without_content_says_what_it_read(tmp_path):
    spans = json.loads(VERCEL_RUN.read_text(encoding="utf-8"))
    bare = copy.deepcopy(spans[:6])  # the refund trace
    for span in bare:
        span["attributes"] = {
            k: v
            for k, v in span["attributes"].items()
            if not k.startswith(("ai.prompt", "ai.response", "ai.toolCall"))
        }
        span["attributes"]["ai.operationId"] = "ai.embed"
    path = tmp_path / "no_content.json"
    path.write_text(json.dumps(bare))
    with pytest.raises(InputError) as caught:
        traces(path, "vercel-ai")
    message = str(caught.value)
    assert str(path) in message
    assert "no steps found: 6 spans read, none with message or tool content (attribute keys seen: " in message
    assert "ai.model.id" in message and "gen_ai.request.model" in message and "ai.prompt" not in message


# -- fuzz ---------------------------------------------------------------------------------------

KEYS = [
    "trace_id", "span_id", "parent_span_id", "traceId", "spanId", "parentSpanId", "context", "spanContext",
    "spans", "child_spans", "span_attributes", "attributes", "span_kind", "name", "span_name", "startTime",
    "start_time", "timestamp", "duration", "status", "status_code", "events", "logs", "key", "value",
    "openinference.span.kind", "llm.output_messages.0.message.contents.0.message_content.text",
    "llm.input_messages.0.message.role", "tool.name", "tool.id", "input.value", "output.value",
    "gen_ai.prompt", "gen_ai.completion", "gen_ai.prompt.0.role", "gen_ai.completion.0.content",
    "gen_ai.operation.name", "gen_ai.output.messages", "parts", "ai.operationId", "ai.prompt",
    "ai.prompt.messages", "ai.response.text", "ai.response.toolCalls", "ai.toolCall.name", "ai.toolCall.id", "ai.toolCall.args", "ai.toolCall.result",
]  # fmt: skip
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(
        [
            "",
            "x",
            "a",
            "LLM",
            "AGENT",
            "TOOL",
            "user",
            "ai.toolCall",
            "ai.generateText",
            "PT1S",
            "[1, 2]",
            '{"prompt": "x"}',
            '[{"role": "user", "content": "x"}]',
            '{"text": "y"}',
            "2025-03-19T16:40:46Z",
        ]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=16,
)
documents = st.one_of(
    values.map(lambda v: json.dumps(v).encode()),
    st.lists(values, max_size=3).map(lambda vs: "\n".join(json.dumps(v) for v in vs).encode()),
)


@pytest.mark.parametrize("fmt", ["trail", "vercel-ai", "openinference", "otel-genai"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=documents)
def test_span_parsers_give_a_trace_or_a_clear_error(fmt, data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "input.json"
        path.write_bytes(data)
        try:
            for trace in open_traces(path, fmt):
                trace.scan()
                assert sum(1 for _ in trace.steps()) == trace.step_count
                _ = trace.labels
        except InputError as exc:
            assert exc.one_line()
