"""OpenTelemetry GenAI spans (OTLP JSON or span records, see ingest.spans): one trace per trace id.

Messages are read in both attribute generations: the current JSON strings
``gen_ai.input.messages`` / ``gen_ai.output.messages`` (``role`` + ``parts`` of type text, tool_call,
tool_call_response) with ``gen_ai.system_instructions`` (a list of text parts; an older
``{role, message}`` object, a list of messages or plain text are read too), and the pre-0.1 forms
of ingest.genai_legacy. Steps:

- ``invoke_agent``: its system instructions (a system step addressed to the agent); its input, the
  invoker's message to the agent (recipient: the agent, named by the span); its output, the
  agent's answer (recipient: the invoking agent, when there is one);
- model calls (``chat`` …, or a span with no operation name that carries messages, as OpenLLMetry
  writes them): the system instructions and input messages not yet seen become steps as
  ingest.span_history says (the first call's whole conversation, then new user and system turns;
  what an ``invoke_agent`` span already gave counts as seen), then each output message by the
  acting agent (nearest ``gen_ai.agent.name``, else the model), tool_call parts as structured tool
  calls. A tool_call_response part in a later call's input is a tool result step where no
  ``execute_tool`` span answers that call (instrumentations that trace model calls only). The
  input stays in ``raw`` as well (it repeats context). The first step of every span keeps the
  span's unmapped attributes and events in ``raw``;
- ``execute_tool``: the tool's result (``gen_ai.tool.*``), linked by call id; a call not already
  seen in a model output is emitted first;
- ``gen_ai.transfer.target.name``: a handoff to that agent.

A span's status, where set, goes to the ``raw`` of each of its steps (``status``: ok or error,
``status_message``), as the detectors read tool results; a failed tool that returned nothing has
its status message as the result's content.

``gen_ai.evaluation.result`` events are judgements about the run: they go to the labels record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingest.base import Facts, ImportedTrace, StepBuilder, head_text
from ingest.frameworks.common import pack_raw
from ingest.genai_legacy import legacy_messages
from ingest.jsonstream import top_level_kind
from ingest.span_history import Call, History, Message, is_tool_result, message_drafts
from ingest.spans import Span, SpanDocument, decoded, read_spans, require_steps
from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceHeader, TraceStep, WithheldItem

EVAL_RULE = "otel.evaluation: gen_ai.evaluation.result events (judgements about the run)"
_MAPPED = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "gen_ai.output.messages",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.transfer.target.name",
    }
)
# A JSON key (not text inside a string) that only GenAI spans carry.
_GENAI_KEY = re.compile(
    r'(?<!\\)"gen_ai\.(?:operation\.name|prompt|completion|input\.messages|output\.messages)[^"]*"\s*:'
)
_EVENTS_MAPPED = frozenset({"gen_ai.evaluation.result", "gen_ai.content.prompt", "gen_ai.content.completion"})


def iso(ns: int) -> str | None:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat() if ns else None


def span_base(span: Span, **raw: Any) -> dict[str, Any]:
    """What every step drawn from ``span`` carries: its time, and in ``raw`` the span's identity,
    status and ``raw`` (what the importer maps from it besides)."""
    return {
        "timestamp": iso(span.start),
        "raw": pack_raw(
            span_id=span.span_id,
            span_name=span.name,
            **raw,
            status=span.status,
            status_message=span.status_message,
        ),
    }


def messages(span: Span, direction: str) -> list[dict[str, Any]]:
    """Messages of a span in the current ``role``/``parts`` shape, whichever generation wrote them."""
    current = decoded(span.attrs.get(f"gen_ai.{direction}.messages"))
    if isinstance(current, list):
        return [m for m in current if isinstance(m, dict)]
    return legacy_messages(span, direction)


def system_messages(span: Span) -> list[dict[str, Any]]:
    """``gen_ai.system_instructions`` as one system message in the ``role``/``parts`` shape, or []."""
    raw = span.attrs.get("gen_ai.system_instructions")
    value = decoded(raw)
    if isinstance(raw, str) and not isinstance(value, list | dict | str):
        value = raw  # plain text that happens to parse as a JSON number or literal
    items = value if isinstance(value, list) else [value]
    parts: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str) and item:
            parts.append({"type": "text", "content": item})
        elif isinstance(item, dict) and isinstance(item.get("message"), dict):  # {role, message}
            parts.append(item["message"])
        elif isinstance(item, dict) and "parts" in item:  # a whole message
            parts.extend(parts_of(item))
        elif isinstance(item, dict) and "type" in item:  # a part, as the conventions write them
            parts.append(item)
        elif isinstance(item, dict) and isinstance(item.get("content"), str):  # {role, content}
            parts.append({"type": "text", "content": item["content"]})
    texts = [p for p in parts if p.get("type") == "text" and str(p.get("content") or "")]
    return [{"role": "system", "parts": texts}] if texts else []


def parts_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message's parts that are objects (what else a malformed export puts there is skipped)."""
    parts = message.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def to_messages(m: dict[str, Any]) -> list[Message]:
    """A ``role``/``parts`` message as span_history messages (one per tool response it holds)."""
    parts = parts_of(m)
    responses = [p for p in parts if p.get("type") == "tool_call_response"]
    if responses:
        return [
            Message(
                role="tool",
                text=r["response"] if isinstance(r.get("response"), str) else json.dumps(r.get("response")),
                call_id=str(r["id"]) if r.get("id") is not None else None,
            )
            for r in responses
        ]
    calls = [
        Call(
            id=str(p["id"]) if p.get("id") is not None else None,
            name=str(p.get("name")),
            arguments=p.get("arguments"),
        )
        for p in parts
        if p.get("type") == "tool_call"
    ]
    return [Message(role=m.get("role"), text=text_of(m), calls=calls)]


def failure_text(span: Span) -> str:
    """What a tool span that returned nothing says: its error status message, if it failed."""
    return (span.status_message or "") if span.status == "error" else ""


def text_of(message: dict[str, Any]) -> str:
    texts = [str(p.get("content", "")) for p in parts_of(message) if p.get("type") == "text"]
    return "\n".join(texts) if texts else str(message.get("content") or "")


Drafts = Callable[[Span], Iterator[tuple[bool, dict[str, Any]]]]


def unmapped(span: Span, mapped: Callable[[str], bool], events_mapped: frozenset[str]) -> dict[str, Any]:
    """What of a span no step field holds: attributes for which ``mapped`` is false, and events
    other than ``events_mapped``. Kept in ``raw`` so that nothing of the source is lost."""
    return pack_raw(
        attributes={k: v for k, v in span.attrs.items() if not k.startswith("_") and not mapped(k)},
        events=[e for e in span.events if e.get("name") not in events_mapped],
    )


def place_and_number(
    spans: list[Span], drafts_of: Drafts, b: StepBuilder, rest_of: Callable[[Span], dict[str, Any]]
) -> Iterator[TraceStep]:
    """Order span drafts in time (``True`` = at the span's end, e.g. an agent's answer, which is
    also stamped with the end time), then number them. A draft's ``_call`` registers a call id;
    ``_link`` refers a result back to it. ``rest_of`` gives what of a span goes to the ``raw`` of
    its first step."""
    drafts: list[tuple[int, int, dict[str, Any]]] = []
    for span in spans:
        for n, (at_end, fields) in enumerate(drafts_of(span)):
            end = int(span.attrs.get("_end") or 0)
            when = end if at_end else 0
            if at_end and end:
                fields["timestamp"] = iso(end)
            if n == 0:
                fields["raw"] = {**fields.get("raw", {}), **rest_of(span)}
            drafts.append((when or span.start, len(drafts), fields))
    drafts.sort(key=lambda d: (d[0], d[1]))
    calls: dict[str, str] = {}
    for _, _, fields in drafts:
        link, call = fields.pop("_link", None), fields.pop("_call", None)
        if link is not None:
            fields["refs"] = StepRefs(reply_to=calls.get(link), call_id=link)
        step = b.add(**fields)
        if call is not None:
            calls[call] = step.step_id
        yield step


class OTelGenAIImporter:
    name = "otel-genai"
    description = "OpenTelemetry GenAI spans (OTLP JSON), one trace per trace id"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if '"resourceSpans"' in text and "gen_ai." in text:
            return "OTLP JSON ('resourceSpans') with gen_ai.* attributes"
        if top_level_kind(head) and _GENAI_KEY.search(text):
            return "span records (or a span's attributes) with gen_ai.* message or operation keys"
        return None

    def open(self, path: Path | SpanDocument) -> Iterator[ImportedTrace]:
        for trace_id, spans in read_spans(path):
            yield self._trace(path, trace_id, spans)

    def _trace(self, path: Path | SpanDocument, trace_id: str, spans: list[Span]) -> ImportedTrace:
        evals = [
            {"span_id": s.span_id, **e["attrs"]}
            for s in spans
            for e in s.events
            if e.get("name") == "gen_ai.evaluation.result"
        ]
        conv = next(
            (s.attrs["gen_ai.conversation.id"] for s in spans if "gen_ai.conversation.id" in s.attrs), None
        )
        service = next(
            (s.resource.get("service.name") for s in spans if s.resource.get("service.name")), None
        )
        header = TraceHeader(
            trace_id=f"otel-{trace_id}",
            source=str(path),
            framework=service,
            metadata=pack_raw(otel_trace_id=trace_id, conversation_id=conv, spans=len(spans)),
            withheld=[
                WithheldItem(
                    what="evaluation_results", where="span events 'gen_ai.evaluation.result'", rule=EVAL_RULE
                )
            ]
            if evals
            else [],
        )
        return ImportedTrace(
            importer=self.name,
            header=header,
            steps=lambda facts: self._steps(spans, facts, StepBuilder(str(path))),
            labels={"evaluations": evals} if evals else None,
        )

    def _steps(self, spans: list[Span], facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        history = History()
        answered = {  # tool calls whose result an execute_tool span gives
            str(s.attrs["gen_ai.tool.call.id"])
            for s in spans
            if s.attrs.get("gen_ai.tool.call.id") is not None
            and (s.attrs.get("gen_ai.operation.name") == "execute_tool" or "gen_ai.tool.name" in s.attrs)
        }
        steps = place_and_number(
            spans, lambda span: self._span_drafts(span, spans, facts, history, answered), b, self._rest
        )
        return require_steps(steps, spans, b.where)

    @staticmethod
    def _rest(span: Span) -> dict[str, Any]:
        """Unmapped attributes: a model call's input messages, usage, model names, ids …"""
        op = span.attrs.get("gen_ai.operation.name")
        inputs_mapped = op == "invoke_agent"  # an agent's input is its invoker's message step
        return unmapped(
            span,
            lambda k: (
                k in _MAPPED
                or k == "gen_ai.completion"
                or k.startswith("gen_ai.completion.")
                or (
                    inputs_mapped
                    and (
                        k in ("gen_ai.input.messages", "gen_ai.system_instructions")
                        or k.startswith("gen_ai.prompt.")
                    )
                )
            ),
            _EVENTS_MAPPED if inputs_mapped else _EVENTS_MAPPED - {"gen_ai.content.prompt"},
        )

    def _span_drafts(
        self, span: Span, spans: list[Span], facts: Facts, history: History, answered: set[str]
    ) -> Iterator[tuple[bool, dict[str, Any]]]:
        by_id = {s.span_id: s for s in spans}

        def agent_of(s: Span | None) -> str | None:
            while s is not None:
                if s.attrs.get("gen_ai.agent.name"):
                    return str(s.attrs["gen_ai.agent.name"])
                s = by_id.get(s.parent_id or "")
            return None

        op = span.attrs.get("gen_ai.operation.name")
        if op is None and (messages(span, "output") or messages(span, "input")):
            op = str(span.attrs.get("llm.request.type") or "chat")  # OpenLLMetry names no operation
        agent = agent_of(span)
        parent_agent = agent_of(by_id.get(span.parent_id or ""))
        base = span_base(span, operation=op)
        if op == "invoke_agent":
            system, given = system_messages(span), messages(span, "input")
            for m in system:
                yield (
                    False,
                    {
                        **base,
                        "actor": "system",
                        "actor_kind": ActorKind.system,
                        "recipients": [agent] if agent else None,
                        "content": text_of(m),
                    },
                )
            history.note([n for m in [*system, *given] for n in to_messages(m)])
            for m in given:
                role = m.get("role")
                yield (
                    False,
                    {
                        **base,
                        "actor": parent_agent or str(role or "user"),
                        "actor_kind": ActorKind.agent
                        if parent_agent
                        else ActorKind.human
                        if role == "user"
                        else ActorKind.system,
                        "recipients": [agent] if agent else None,
                        "kind": StepKind.handoff if parent_agent else StepKind.message,
                        "content": text_of(m),
                    },
                )
            for m in messages(span, "output"):
                yield (
                    True,
                    {
                        **base,
                        "actor": agent or "agent",
                        "recipients": [parent_agent] if parent_agent else None,
                        "kind": StepKind.message if parent_agent else StepKind.final_output,
                        "content": text_of(m),
                    },
                )
        elif op == "execute_tool" or "gen_ai.tool.name" in span.attrs:
            name = str(span.attrs.get("gen_ai.tool.name") or span.name)
            call_id = span.attrs.get("gen_ai.tool.call.id")
            key = str(call_id) if call_id is not None else f"span:{span.span_id}"
            args = decoded(span.attrs.get("gen_ai.tool.call.arguments"))
            announced = any(self._declares(s, key) for s in spans if s is not span)
            if not announced:
                yield (
                    False,
                    {
                        **base,
                        "actor": agent or "agent",
                        "kind": StepKind.tool_call,
                        "_call": key,
                        "content": args
                        if isinstance(args, str)
                        else json.dumps(args)
                        if args is not None
                        else "",
                        "tool": ToolInfo(
                            name=name,
                            arguments=args if isinstance(args, dict | str) else None,
                            call_id=call_id,
                        ),
                    },
                )
            result = span.attrs.get("gen_ai.tool.call.result")
            yield (
                True,
                {
                    **base,
                    "actor": name,
                    "actor_kind": ActorKind.tool,
                    "kind": StepKind.tool_result,
                    "_link": key,
                    "content": result
                    if isinstance(result, str)
                    else json.dumps(result)
                    if result is not None
                    else failure_text(span),
                    "tool": ToolInfo(name=name, call_id=call_id),
                },
            )
        elif op is not None:
            outputs = messages(span, "output")
            if not outputs:
                facts.count(f"span_without_content:{op}")
            actor = agent or str(span.attrs.get("gen_ai.request.model") or "model")
            inputs = [n for m in [*system_messages(span), *messages(span, "input")] for n in to_messages(m)]
            for draft in history.drafts(inputs, actor, base):
                if draft.get("kind") is StepKind.tool_result:
                    answered.add(str(draft.get("_link")))
                yield False, draft
            for m in inputs:  # a result only a later call's input shows: no tool span gave it
                if is_tool_result(m) and m.call_id and m.call_id not in answered:
                    answered.add(m.call_id)
                    yield from ((False, d) for d in message_drafts(m, actor, base, history.tool_names))
            said = [n for m in outputs for n in to_messages(m)]
            yield from ((True, d) for d in history.outputs(said, actor, base))
        else:
            facts.count("non_genai_span")
        target = span.attrs.get("gen_ai.transfer.target.name")
        if target:
            yield (
                False,
                {
                    **base,
                    "actor": agent or "agent",
                    "recipients": [str(target)],
                    "kind": StepKind.handoff,
                    "raw": {**base["raw"], "transfer_target": str(target)},
                },
            )

    @staticmethod
    def _declares(span: Span, key: str) -> bool:
        """Whether a model span's output already holds the tool call with this id."""
        return (
            any(
                str(p.get("id")) == key
                for m in messages(span, "output")
                for p in parts_of(m)
                if p.get("type") == "tool_call"
            )
            if span.attrs.get("gen_ai.operation.name") not in (None, "execute_tool", "invoke_agent")
            else False
        )


IMPORTER = OTelGenAIImporter()
