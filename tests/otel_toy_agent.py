"""A small agent instrumented with the OpenTelemetry Python SDK, as production agents are: GenAI
semantic-convention spans (an ``invoke_agent`` root, ``chat`` model calls with their messages, an
``execute_tool`` call), exported by whatever span processor the test gives the tracer provider.

The story: a support agent asked for a refund looks the order up; the order system says the refund
is only *pending approval*, and the agent tells the customer it is approved.
"""

from __future__ import annotations

import json
from typing import Any

MODEL = "gpt-4o-mini"


def _msg(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def provider(processor: Any, service: str = "refund-service") -> Any:
    """A tracer provider of ``service`` that hands every ended span to ``processor``."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(processor)
    return tp


def run_agent(tp: Any, order: str = "A-1042", late_note: bool = False) -> str:
    """Run the toy agent once; returns its trace id (32 hex digits). ``late_note`` adds a span
    that ends after the root (a follow-up the agent logs once the answer is sent)."""
    tracer = tp.get_tracer("toy-agent", "1.0")
    ask = f"Please refund order {order}, it arrived broken."
    with tracer.start_as_current_span("invoke_agent refund_agent") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "refund_agent")
        root.set_attribute("gen_ai.input.messages", json.dumps([_msg("user", _text(ask))]))
        call = {"type": "tool_call", "id": "call_1", "name": "lookup_order", "arguments": {"order": order}}
        with tracer.start_as_current_span(f"chat {MODEL}") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", MODEL)
            chat.set_attribute("gen_ai.input.messages", json.dumps([_msg("user", _text(ask))]))
            chat.set_attribute("gen_ai.output.messages", json.dumps([_msg("assistant", call)]))
        result = {"order": order, "refund": "pending approval", "amount_eur": 42}
        with tracer.start_as_current_span("execute_tool lookup_order") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "lookup_order")
            tool.set_attribute("gen_ai.tool.call.id", "call_1")
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"order": order}))
            tool.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        answer = f"Your refund of 42 EUR for order {order} is approved."
        with tracer.start_as_current_span(f"chat {MODEL}") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", MODEL)
            chat.set_attribute("gen_ai.output.messages", json.dumps([_msg("assistant", _text(answer))]))
        root.set_attribute("gen_ai.output.messages", json.dumps([_msg("assistant", _text(answer))]))
        trace_id = format(root.get_span_context().trace_id, "032x")
        context = root.get_span_context()
    if late_note:
        from opentelemetry import trace

        with tracer.start_as_current_span(
            "chat follow-up", context=trace.set_span_in_context(trace.NonRecordingSpan(context))
        ) as s:
            s.set_attribute("gen_ai.operation.name", "chat")
            s.set_attribute("gen_ai.agent.name", "refund_agent")
            note = f"Follow-up: order {order} refund still awaits approval by finance."
            s.set_attribute("gen_ai.output.messages", json.dumps([_msg("assistant", _text(note))]))
    return trace_id


def encoded_spans(spans: list[Any]) -> bytes:
    """The protobuf ExportTraceServiceRequest the SDK's OTLP exporters send for ``spans``."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans).SerializeToString()


def json_body(spans: list[Any]) -> bytes:
    """The same request in OTLP JSON: the SDK's own encoder builds the message, the protobuf JSON
    mapping writes it, and ids become hex as the OTLP specification asks (the mapping's base64 is
    what the specification rules out for trace and span ids)."""
    import base64

    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    data = MessageToDict(encode_spans(spans), use_integers_for_enums=True)

    def hexed(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("traceId", "spanId", "parentSpanId"):
                if isinstance(node.get(key), str):
                    node[key] = base64.b64decode(node[key]).hex()
            for v in node.values():
                hexed(v)
        elif isinstance(node, list):
            for v in node:
                hexed(v)

    for rs in data.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                hexed(sp)
    return json.dumps(data).encode()
