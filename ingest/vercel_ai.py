"""Vercel AI SDK telemetry spans (``experimental_telemetry``), in any span shape ingest.spans reads.

``ai.operationId`` says what a span is:

- a call (``ai.generateText``, ``ai.streamText``, ``ai.generateObject``, ``ai.streamObject``):
  its ``ai.prompt`` (``system``, ``prompt`` or ``messages``) is the conversation the call was
  given; its answer (``ai.response.text``, ``.object``, ``.toolCalls``) is a step only when the
  trace holds none of its model calls, whose outputs it repeats;
- a model call (``….doGenerate``, ``….doStream``): ``ai.prompt.messages`` is its input,
  ``ai.response.text`` / ``.object`` and each of ``ai.response.toolCalls`` its output;
- ``ai.toolCall``: the result of ``ai.toolCall.name`` (``ai.toolCall.result``), linked to its call
  by ``ai.toolCall.id``; a call no model output announced is drafted first from ``ai.toolCall.args``.

Which input messages are steps, and who each role is, ingest.span_history says. The model's turns
are spoken by ``ai.telemetry.functionId`` (the application's name for the code that called the
model, the nearest the SDK comes to naming an agent), else by ``ai.model.id``. A span's status
goes to its steps' ``raw``; a failed tool with no result has its status message as content.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.base import Facts, ImportedTrace, StepBuilder, head_text
from ingest.frameworks.common import pack_raw
from ingest.otel import failure_text, place_and_number, span_base, unmapped
from ingest.span_history import Call, History, Message, as_text, call_draft
from ingest.spans import Span, SpanDocument, decoded, read_spans, require_steps
from schemas.trace import ActorKind, StepKind, ToolInfo, TraceHeader, TraceStep

CALLS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
TOOL = "ai.toolCall"
_OUTPUT = ("ai.response.text", "ai.response.object", "ai.response.toolCalls")


def operation(span: Span) -> str:
    return str(span.attrs.get("ai.operationId") or span.name.split(" ")[0])


def is_model_call(span: Span) -> bool:
    return operation(span).rsplit(".", 1)[-1] in ("doGenerate", "doStream")


def _content_messages(role: Any, content: Any) -> list[Message]:
    """One prompt message (``content`` a string or a list of parts) as span_history messages: text
    parts joined, ``tool-call`` parts as calls, each ``tool-result`` part a tool message."""
    role = role if isinstance(role, str) else None
    if isinstance(content, str):
        return [Message(role=role, text=content)]
    parts = [p for p in content or [] if isinstance(p, dict)] if isinstance(content, list) else []
    results = [p for p in parts if p.get("type") == "tool-result"]
    if results:
        out = []
        for r in results:
            output = r.get("output", r.get("result"))
            if isinstance(output, dict) and "value" in output:
                output = output["value"]  # {"type": "json" | "text" | "error-text" …, "value": …}
            out.append(
                Message(
                    role="tool", text=as_text(output), call_id=r.get("toolCallId"), name=r.get("toolName")
                )
            )
        return out
    text = "\n".join(
        str(p.get("text")) for p in parts if p.get("type") == "text" and p.get("text") is not None
    )
    calls = [
        Call(id=p.get("toolCallId"), name=str(p.get("toolName")), arguments=p.get("input", p.get("args")))
        for p in parts
        if p.get("type") == "tool-call"
    ]
    return [Message(role=role, text=text, calls=calls)]


def prompt_messages(span: Span) -> list[Message]:
    """The conversation a call or model call was given."""
    value = decoded(span.attrs.get("ai.prompt.messages"))
    if not isinstance(value, list):
        prompt = decoded(span.attrs.get("ai.prompt"))
        if isinstance(prompt, str):
            prompt = {"prompt": prompt}
        if not isinstance(prompt, dict):
            return []
        value = (
            [{"role": "system", "content": prompt["system"]}] if isinstance(prompt.get("system"), str) else []
        )
        if isinstance(prompt.get("prompt"), str):
            value.append({"role": "user", "content": prompt["prompt"]})
        elif isinstance(prompt.get("prompt"), list):
            value.extend(prompt["prompt"])
        if isinstance(prompt.get("messages"), list):
            value.extend(prompt["messages"])
    return [
        n for m in value if isinstance(m, dict) for n in _content_messages(m.get("role"), m.get("content"))
    ]


def response_calls(span: Span) -> list[Call]:
    """``ai.response.toolCalls``: ``toolCallId``, ``toolName`` and ``input`` (``args`` before v5)."""
    value = decoded(span.attrs.get("ai.response.toolCalls"))
    return (
        [
            Call(id=c.get("toolCallId"), name=str(c.get("toolName")), arguments=c.get("input", c.get("args")))
            for c in value
            if isinstance(c, dict)
        ]
        if isinstance(value, list)
        else []
    )


def response_message(span: Span) -> Message | None:
    text = span.attrs.get("ai.response.text")
    if text in (None, ""):
        text = span.attrs.get("ai.response.object")
    calls = response_calls(span)
    if text in (None, "") and not calls:
        return None
    return Message(role="assistant", text=as_text(text), calls=calls)


def _rest(span: Span) -> dict[str, Any]:
    """What no step field holds: usage, settings, provider metadata, model ids …"""
    op = operation(span)
    mapped: tuple[str, ...] = ("ai.operationId",)
    if op == TOOL:
        mapped = (*mapped, "ai.toolCall.")
    elif op in CALLS or is_model_call(span):
        mapped = (*mapped, *_OUTPUT)
    return unmapped(span, lambda k: k.startswith(mapped), frozenset())


class VercelAIImporter:
    name = "vercel-ai"
    description = "Vercel AI SDK telemetry spans (ai.generateText, ai.streamText, ai.toolCall …)"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if '"ai.operationId"' in text and (
            '"ai.prompt' in text or '"ai.toolCall.' in text or "ai.response." in text
        ):
            return "spans with Vercel AI SDK attributes ('ai.operationId', 'ai.prompt' …)"
        return None

    def open(self, path: Path | SpanDocument) -> Iterator[ImportedTrace]:
        for trace_id, spans in read_spans(path):
            function = next(
                (s.attrs["ai.telemetry.functionId"] for s in spans if "ai.telemetry.functionId" in s.attrs),
                None,
            )
            header = TraceHeader(
                trace_id=f"vercel-{trace_id}",
                source=str(path),
                framework=next(
                    (s.resource.get("service.name") for s in spans if s.resource.get("service.name")),
                    "vercel-ai-sdk",
                ),
                metadata=pack_raw(otel_trace_id=trace_id, function_id=function, spans=len(spans)),
            )
            yield ImportedTrace(
                importer=self.name,
                header=header,
                steps=lambda facts, spans=spans: self._steps(spans, facts, StepBuilder(str(path))),
            )

    def _steps(self, spans: list[Span], facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        history = History()
        announced = {c.id for s in spans if is_model_call(s) for c in response_calls(s) if c.id}
        has_model_calls = any(is_model_call(s) for s in spans)

        def actor_of(span: Span) -> str:
            return str(span.attrs.get("ai.telemetry.functionId") or span.attrs.get("ai.model.id") or "model")

        def drafts(span: Span) -> Iterator[tuple[bool, dict[str, Any]]]:
            op = operation(span)
            base = span_base(span, operation=op)
            if op in CALLS or is_model_call(span):
                actor = actor_of(span)
                yield from ((False, d) for d in history.drafts(prompt_messages(span), actor, base))
                said = response_message(span)
                if said is not None and (is_model_call(span) or not has_model_calls):
                    yield from ((True, d) for d in history.outputs([said], actor, base))
            elif op == TOOL:
                name = str(span.attrs.get("ai.toolCall.name") or "tool")
                call_id = span.attrs.get("ai.toolCall.id")
                if (
                    not isinstance(call_id, str) or call_id not in announced
                ):  # a non-text id: the step contract refuses it
                    call = Call(id=call_id, name=name, arguments=span.attrs.get("ai.toolCall.args"))
                    yield False, call_draft(call, actor_of(span), base)
                result = span.attrs.get("ai.toolCall.result")
                yield (
                    True,
                    {
                        **base,
                        "actor": name,
                        "actor_kind": ActorKind.tool,
                        "kind": StepKind.tool_result,
                        "content": as_text(result) if result is not None else failure_text(span),
                        "_link": str(call_id or name),
                        "tool": ToolInfo(name=name, call_id=call_id),
                    },
                )
            else:
                facts.count(f"span:{op}")

        return require_steps(place_and_number(spans, drafts, b, _rest), spans, b.where)


IMPORTER = VercelAIImporter()
