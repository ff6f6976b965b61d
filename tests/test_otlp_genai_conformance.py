"""GenAI semantic-convention spans as current instrumentations write them (issue 33 item 4): the
agent's ``gen_ai.system_instructions``, model calls whose ``gen_ai.input.messages`` carry the
user's turns and earlier tool results, ``gen_ai.output.messages`` with text and tool_call parts,
one call answered by an ``execute_tool`` span and one only by the next call's tool_call_response
part (a model-client instrumentation traces no tool).

The same spans, recorded once by the OpenTelemetry SDK, go three ways: the SDK's OTLP exporter
to a real ``auditor serve`` process; the SDK's console exporter into a JSON-lines file; the SDK's
OTLP encoder into an OTLP JSON file (what a collector's file exporter writes). ``auditor ingest``
reads each file. All three stored traces have the same steps, field by field, and those steps
are the conversation: nothing the spans say is left only in raw attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from tests.cli_helpers import run
from tests.otel_toy_agent import json_body, provider
from tests.serve_support import serving

pytestmark = pytest.mark.slow  # a server process

MODEL = "gpt-4.1-mini"
SYSTEM = "You are the billing agent. Refunds above 100 EUR need a manager's approval."
ASK = "Invoice INV-7 was charged twice, please refund the 140 EUR duplicate."
FOLLOW_UP = "Can you not just do it now?"


def _msg(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def _response(call_id: str, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


def _chat(tracer: Any, inputs: list[dict], outputs: list[dict]) -> None:
    with tracer.start_as_current_span(f"chat {MODEL}") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.provider.name", "openai")
        span.set_attribute("gen_ai.request.model", MODEL)
        span.set_attribute("gen_ai.system_instructions", json.dumps([_text(SYSTEM)]))
        span.set_attribute("gen_ai.input.messages", json.dumps(inputs))
        span.set_attribute("gen_ai.output.messages", json.dumps(outputs))
        span.set_attribute("gen_ai.usage.input_tokens", 120)


def run_billing_agent(tp: Any) -> str:
    """One run of an agent instrumented with the current conventions; its trace id (hex)."""
    tracer = tp.get_tracer("billing-agent", "2.0")
    lookup = _call("call_a", "lookup_invoice", {"invoice": "INV-7"})
    policy = _call("call_b", "get_refund_policy", {"amount_eur": 140})
    invoice = {"invoice": "INV-7", "charges": [140, 140], "status": "paid"}
    rule = "Refunds above 100 EUR need a manager's approval."
    answer = "The duplicate charge is confirmed; a manager must approve the 140 EUR refund first."
    refusal = "I cannot refund it before a manager approves it; I have asked for that approval."
    with tracer.start_as_current_span("invoke_agent billing_agent") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "billing_agent")
        root.set_attribute("gen_ai.system_instructions", json.dumps([_text(SYSTEM)]))
        first = [_msg("user", _text(ASK))]
        said = _msg("assistant", _text("Let me check the invoice and the refund rules."), lookup, policy)
        _chat(tracer, first, [said])
        with tracer.start_as_current_span("execute_tool lookup_invoice") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "lookup_invoice")
            tool.set_attribute("gen_ai.tool.call.id", "call_a")
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"invoice": "INV-7"}))
            tool.set_attribute("gen_ai.tool.call.result", json.dumps(invoice))
        second = [
            *first,
            said,
            _msg("tool", _response("call_a", invoice)),
            _msg("tool", _response("call_b", rule)),
        ]
        _chat(tracer, second, [_msg("assistant", _text(answer))])
        third = [*second, _msg("assistant", _text(answer)), _msg("user", _text(FOLLOW_UP))]
        _chat(tracer, third, [_msg("assistant", _text(refusal))])
        root.set_attribute("gen_ai.output.messages", json.dumps([_msg("assistant", _text(refusal))]))
        return format(root.get_span_context().trace_id, "032x")


def _stored_steps(folder: Path, trace_id: str) -> list[dict[str, Any]]:
    shown = run(["traces", "show", trace_id, "--json"], folder)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["steps"]


def _ingested(folder: Path, path: Path) -> list[dict[str, Any]]:
    folder.mkdir()
    done = run(["ingest", str(path), "--json"], folder)
    assert done.returncode == 0, done.stderr
    return _stored_steps(folder, json.loads(done.stdout)["trace_id"])


def test_the_console_exporters_ids_are_the_otlp_ids(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    path = tmp_path / "console-spans.jsonl"
    with path.open("w") as out:
        tp = provider(
            SimpleSpanProcessor(
                ConsoleSpanExporter(out=out, formatter=lambda s: s.to_json(indent=None) + "\n")
            )
        )
        tid = run_billing_agent(tp)
        tp.shutdown()
    done = run(["ingest", str(path), "--json"], tmp_path)
    assert json.loads(done.stdout)["trace_id"] == f"otel-{tid}"


def test_sdk_spans_become_the_same_steps_over_otlp_and_from_files(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from auditor.core.store import open_store
    from auditor.surfaces.server.tokens import create_token

    served = tmp_path / "served"
    served.mkdir()
    url = f"sqlite:///{served / 'auditor.db'}"
    store = open_store(url)
    token = create_token(store, "agent", ["ingest"])[0]
    store.close()
    memory = InMemorySpanExporter()
    console_file = tmp_path / "console-spans.jsonl"
    with serving(url, tmp_path) as origin, console_file.open("w") as out:
        auth = {"Authorization": f"Bearer {token}"}
        exporter = OTLPSpanExporter(endpoint=f"{origin}/v1/traces", headers=auth)
        console = ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None) + "\n")
        processors = [SimpleSpanProcessor(e) for e in (exporter, console, memory)]
        tp = provider(processors[0], service="billing-service")
        for p in processors[1:]:
            tp.add_span_processor(p)
        tid = run_billing_agent(tp)
        tp.shutdown()
        flushed = httpx.post(f"{origin}/api/otlp/flush", params={"trace_id": tid}, headers=auth, timeout=60)
        assert flushed.status_code == 200, flushed.text
        [done] = flushed.json()["assembled"]
        received = _stored_steps(served, done["trace_id"])
    otlp_file = tmp_path / "spans.otlp.json"
    otlp_file.write_bytes(json_body(list(memory.get_finished_spans())))

    assert _ingested(tmp_path / "from-otlp-json", otlp_file) == received
    assert _ingested(tmp_path / "from-console", console_file) == received

    shape = [(s["actor"], s["actor_kind"], s["kind"]) for s in received]
    assert shape == [
        ("system", "system", "message"),  # the agent's instructions, once (every call repeats them)
        ("user", "human", "message"),  # the first call's input
        ("billing_agent", "agent", "message"),
        ("billing_agent", "agent", "tool_call"),
        ("billing_agent", "agent", "tool_call"),
        ("lookup_invoice", "tool", "tool_result"),  # from the execute_tool span
        ("get_refund_policy", "tool", "tool_result"),  # only the second call's input shows it
        ("billing_agent", "agent", "message"),
        ("user", "human", "message"),  # the third call's new user turn
        ("billing_agent", "agent", "message"),
        ("billing_agent", "agent", "final_output"),
    ]
    by_kind = {(s["actor"], s["kind"]): s for s in received}
    assert received[0]["content"] == SYSTEM and received[0]["recipients"] == ["billing_agent"]
    assert received[1]["content"] == ASK and received[8]["content"] == FOLLOW_UP
    calls = [s for s in received if s["kind"] == "tool_call"]
    assert [c["tool"]["arguments"] for c in calls] == [{"invoice": "INV-7"}, {"amount_eur": 140}]
    answer = by_kind[("get_refund_policy", "tool_result")]
    assert answer["refs"]["reply_to"] == calls[1]["step_id"] and answer["tool"]["call_id"] == "call_b"
    assert by_kind[("lookup_invoice", "tool_result")]["refs"]["reply_to"] == calls[0]["step_id"]


@pytest.mark.parametrize(
    "written",
    [
        json.dumps([_text(SYSTEM)]),  # the current conventions: a list of parts
        SYSTEM,  # plain text
        json.dumps({"role": "system", "message": _text(SYSTEM)}),  # the first published form
        json.dumps([{"role": "system", "content": SYSTEM}]),  # as some instrumentations write it
    ],
    ids=["parts", "text", "role-message", "role-content"],
)
def test_system_instructions_in_each_written_form_are_the_system_step(tmp_path: Path, written: str) -> None:
    from ingest import open_traces

    record = {
        "trace_id": "c" * 32,
        "span_id": "d" * 16,
        "name": f"chat {MODEL}",
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": MODEL,
            "gen_ai.system_instructions": written,
            "gen_ai.input.messages": json.dumps([_msg("user", _text(ASK))]),
            "gen_ai.output.messages": json.dumps([_msg("assistant", _text("On it."))]),
        },
    }
    path = tmp_path / "span.jsonl"
    path.write_text(json.dumps(record) + "\n")
    [trace] = list(open_traces(path))
    steps = [(s.actor, s.actor_kind.value, s.content) for s in trace.steps()]
    assert steps == [("system", "system", SYSTEM), ("user", "human", ASK), (MODEL, "agent", "On it.")]
