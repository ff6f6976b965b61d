"""The shipped failed airline run (examples/incidents/airline-task041-trial0.json) replayed as an
agent instrumented with the OpenTelemetry SDK would emit it: one ``chat`` span per model turn (the
conversation so far as ``gen_ai.input.messages``, the model's answer and tool calls as
``gen_ai.output.messages``), one ``execute_tool`` span per tool call (arguments and result), under
a root span of the conversation. The messages are the file's own, verbatim; only the envelope is
OpenTelemetry's. The customer's closing message, which no model call followed, is the input of a
last model call that answered nothing.

Used to check that the always-on paths (OTLP over HTTP, a Kafka collector) audit this run as
``auditor review`` audits the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
AIRLINE_RUN = REPO / "examples" / "incidents" / "airline-task041-trial0.json"
AIRLINE_POLICY = REPO / "examples" / "policies" / "airline.yaml"
MODEL = "gpt-4o"


def _parts(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message in the GenAI ``role``/``parts`` shape."""
    parts: list[dict[str, Any]] = []
    if message.get("content"):
        parts.append({"type": "text", "content": message["content"]})
    for call in message.get("tool_calls") or []:
        fn = call["function"]
        parts.append(
            {"type": "tool_call", "id": call["id"], "name": fn["name"], "arguments": fn["arguments"]}
        )
    if message["role"] == "tool":
        parts = [
            {"type": "tool_call_response", "id": message["tool_call_id"], "response": message["content"]}
        ]
    return {"role": message["role"], "parts": parts}


def run_airline_agent(tp: Any, service: str = "airline-support") -> str:
    """Emit the run's spans through ``tp`` (a tracer provider); returns the trace id (32 hex)."""
    messages = json.loads(AIRLINE_RUN.read_text(encoding="utf-8"))["messages"]
    tracer = tp.get_tracer(service, "1.0")
    calls: dict[str, dict[str, Any]] = {}
    with tracer.start_as_current_span("conversation") as root:
        for n, message in enumerate(messages):
            if message["role"] == "assistant":
                with tracer.start_as_current_span(f"chat {MODEL}") as chat:
                    chat.set_attribute("gen_ai.operation.name", "chat")
                    chat.set_attribute("gen_ai.request.model", MODEL)
                    chat.set_attribute("gen_ai.input.messages", json.dumps([_parts(m) for m in messages[:n]]))
                    chat.set_attribute("gen_ai.output.messages", json.dumps([_parts(message)]))
                calls.update({c["id"]: c["function"] for c in message.get("tool_calls") or []})
            elif message["role"] == "tool":
                fn = calls[message["tool_call_id"]]
                with tracer.start_as_current_span(f"execute_tool {fn['name']}") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", fn["name"])
                    tool.set_attribute("gen_ai.tool.call.id", message["tool_call_id"])
                    tool.set_attribute("gen_ai.tool.call.arguments", fn["arguments"])
                    tool.set_attribute("gen_ai.tool.call.result", message["content"])
        if messages[-1]["role"] == "user":
            with tracer.start_as_current_span(f"chat {MODEL}") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.request.model", MODEL)
                chat.set_attribute("gen_ai.input.messages", json.dumps([_parts(m) for m in messages]))
        return format(root.get_span_context().trace_id, "032x")


def comparable(report: dict[str, Any]) -> list[dict[str, Any]]:
    """A report's findings without what names the source rather than the run: ids (finding, step,
    edge, trace) and participant names (the file says ``assistant``, the spans name the model).
    What remains — detector, rule, class, disposition, severity, title, mechanism's rule, every
    quote — must be equal wherever the run came from."""
    keep = ("detector", "policy_rule", "risk_class", "disposition", "severity", "failure_mode", "title")
    return sorted(
        (
            {k: f.get(k) for k in keep} | {"quotes": sorted(u["quote"] for u in f["evidence"])}
            for f in report["findings"]
        ),
        key=lambda f: json.dumps(f, sort_keys=True),
    )
