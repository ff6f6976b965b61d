"""OpenInference spans (Arize Phoenix and its instrumentors), in OTLP JSON or Phoenix span records.

``openinference.span.kind`` says what a span is (or, where the attributes leave it out, the
record's own ``span_kind``, as Phoenix writes it). ``LLM`` spans: each
``llm.output_messages.N.message.*`` is a step by the acting agent (the nearest ``agent.name`` or
``graph.node.id`` up the span tree, else the model name); its text is ``message.content`` or the
text parts ``message.contents.M.message_content.text``, and
``message.tool_calls.M.tool_call.function.{name,arguments}`` and ``tool_call.id`` are structured
calls. An LLM span with no output messages gives its ``output.value`` as written. Input messages
stay in ``raw`` (with every other unmapped attribute, on the span's first step); where no agent
acts, the conversation they hold becomes steps as ingest.span_history says. ``TOOL`` spans:
``tool.name``, ``tool.parameters`` and ``output.value`` make the tool result, linked to its call
by ``tool_call.id`` (or ``tool.id``). ``AGENT`` spans: ``input.value`` is a message to the
agent, ``output.value`` its answer.
``session.id`` is kept in the header. A span's status (``status_code`` / ``status_message``, or
OTLP ``status``) goes to its steps' ``raw`` (``status``: ok or error), and a failed tool with no
output has the message as its content. ``EVALUATOR`` spans are judgements about the run and go to
the labels record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.base import Facts, ImportedTrace, StepBuilder, head_text
from ingest.frameworks.common import pack_raw
from ingest.otel import failure_text, place_and_number, span_base, unmapped
from ingest.span_history import Call, History, Message, arguments_of
from ingest.spans import Span, SpanDocument, indexed, read_spans, require_steps
from schemas.trace import ActorKind, StepKind, ToolInfo, TraceHeader, TraceStep, WithheldItem

KIND = "openinference.span.kind"
EVAL_RULE = "openinference.evaluator: EVALUATOR spans (judgements about the run)"
KINDS = frozenset(
    {
        "LLM",
        "TOOL",
        "AGENT",
        "CHAIN",
        "RETRIEVER",
        "EMBEDDING",
        "RERANKER",
        "GUARDRAIL",
        "EVALUATOR",
        "PROMPT",
    }
)
_PHOENIX_KIND = re.compile(r'"span_kind"\s*:\s*"(?:' + "|".join(sorted(KINDS)) + ')"')
_MAPPED = {
    "LLM": ("llm.output_messages.",),
    "TOOL": ("tool.name", "tool.parameters", "tool_call.id", "tool.id", "output.value"),
    "AGENT": ("input.value", "output.value"),
}


def kind_of(span: Span) -> str | None:
    """The span's OpenInference kind: its attribute, else the record's own ``span_kind``."""
    kind = span.attrs.get(KIND)
    if kind is None and span.kind and span.kind.upper() in KINDS:
        return span.kind.upper()
    return str(kind) if kind is not None else None


def _rest(span: Span) -> dict[str, Any]:
    """What no step field holds (input messages, token counts, model and session ids …)."""
    kind = kind_of(span)
    prefixes = (KIND, *_MAPPED.get(str(kind), ()))
    if kind == "TOOL" and not span.attrs.get("tool.parameters"):
        prefixes = (*prefixes, "input.value")  # then it held the arguments
    if kind == "LLM" and not indexed(span.attrs, "llm.output_messages"):
        prefixes = (*prefixes, "output.value")  # then it held the model's output
    return unmapped(span, lambda k: k.startswith(prefixes), frozenset())


def message_of(row: dict[str, Any]) -> Message:
    """One ``llm.{input,output}_messages.N`` row (its keys below ``message.``) as a Message: text
    from ``message.content`` or the text parts of ``message.contents``."""
    text = row.get("message.content")
    if text in (None, ""):
        parts = indexed(row, "message.contents")
        text = "\n".join(
            str(p["message_content.text"])
            for p in parts
            if p.get("message_content.text") is not None and p.get("message_content.type", "text") == "text"
        )
    calls = [
        Call(
            id=str(c["tool_call.id"]) if c.get("tool_call.id") is not None else None,
            name=str(c.get("tool_call.function.name")),
            arguments=c.get("tool_call.function.arguments"),
        )
        for c in indexed(row, "message.tool_calls")
    ]
    call_id = row.get("message.tool_call_id")
    return Message(
        role=row.get("message.role"),
        text=str(text or ""),
        calls=calls,
        call_id=str(call_id) if call_id is not None else None,
        name=row.get("message.name") if call_id is not None else None,
    )


class OpenInferenceImporter:
    name = "openinference"
    description = "OpenInference spans (Phoenix export or OTLP JSON), one trace per trace id"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if "openinference.span.kind" in text:
            return "spans with 'openinference.span.kind' attributes"
        if _PHOENIX_KIND.search(text):
            return "span records whose 'span_kind' is an OpenInference kind (Phoenix)"
        return None

    prefix = "oi"  # of the trace ids

    def open(self, path: Path | SpanDocument) -> Iterator[ImportedTrace]:
        for trace_id, spans in read_spans(path):
            labels, withheld = self.withheld(spans)
            session = next((s.attrs["session.id"] for s in spans if "session.id" in s.attrs), None)
            header = TraceHeader(
                trace_id=f"{self.prefix}-{trace_id}",
                source=str(path),
                framework=next(
                    (s.resource.get("service.name") for s in spans if s.resource.get("service.name")), None
                ),
                metadata=pack_raw(otel_trace_id=trace_id, session_id=session, spans=len(spans)),
                withheld=withheld,
            )
            yield ImportedTrace(
                importer=self.name,
                header=header,
                steps=lambda facts, spans=spans: self._steps(spans, facts, StepBuilder(str(path))),
                labels=labels or None,
            )

    def withheld(self, spans: list[Span]) -> tuple[dict[str, Any], list[WithheldItem]]:
        """What goes to the labels record instead of the steps: EVALUATOR spans' judgements."""
        evals = [
            pack_raw(
                span_id=s.span_id, name=s.name, **{k: v for k, v in s.attrs.items() if not k.startswith("_")}
            )
            for s in spans
            if kind_of(s) == "EVALUATOR"
        ]
        if not evals:
            return {}, []
        return {"evaluations": evals}, [
            WithheldItem(what="evaluations", where="EVALUATOR spans", rule=EVAL_RULE)
        ]

    def _steps(self, spans: list[Span], facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        by_id = {s.span_id: s for s in spans}

        def agent_of(span: Span | None) -> str | None:
            while span is not None:
                for key in ("agent.name", "graph.node.id"):
                    if span.attrs.get(key):
                        return str(span.attrs[key])
                if kind_of(span) == "AGENT":
                    return span.name
                span = by_id.get(span.parent_id or "")
            return None

        history = History()

        def drafts(span: Span) -> Iterator[tuple[bool, dict[str, Any]]]:
            kind = kind_of(span)
            agent = agent_of(span)
            base = span_base(span, span_kind=kind)
            if kind == "LLM":
                actor = agent or str(span.attrs.get("llm.model_name") or "model")
                if agent is None:
                    inputs = [message_of(r) for r in indexed(span.attrs, "llm.input_messages")]
                    yield from ((False, d) for d in history.drafts(inputs, actor, base))
                outputs = [message_of(r) for r in indexed(span.attrs, "llm.output_messages")]
                if not outputs and span.attrs.get("output.value") not in (None, ""):
                    outputs = [Message(role="assistant", text=str(span.attrs["output.value"]))]
                yield from ((True, d) for d in history.outputs(outputs, actor, base))
            elif kind == "TOOL":
                name = str(span.attrs.get("tool.name") or span.name)
                call_id = span.attrs.get("tool_call.id", span.attrs.get("tool.id"))
                args = arguments_of(span.attrs.get("tool.parameters") or span.attrs.get("input.value"))
                yield (
                    True,
                    {
                        **base,
                        "actor": name,
                        "actor_kind": ActorKind.tool,
                        "kind": StepKind.tool_result,
                        "content": str(span.attrs.get("output.value") or failure_text(span)),
                        "_link": str(call_id or name),
                        "tool": ToolInfo(name=name, arguments=args, call_id=call_id),
                    },
                )
            elif kind == "AGENT":
                parent = agent_of(by_id.get(span.parent_id or ""))
                if span.attrs.get("input.value"):
                    yield (
                        False,
                        {
                            **base,
                            "actor": parent or "user",
                            "actor_kind": ActorKind.agent if parent else ActorKind.human,
                            "recipients": [agent] if agent else None,
                            "kind": StepKind.handoff if parent else StepKind.message,
                            "content": str(span.attrs["input.value"]),
                        },
                    )
                if span.attrs.get("output.value"):
                    yield (
                        True,
                        {
                            **base,
                            "actor": agent or span.name,
                            "recipients": [parent] if parent else None,
                            "kind": StepKind.message if parent else StepKind.final_output,
                            "content": str(span.attrs["output.value"]),
                        },
                    )
            else:
                facts.count(f"span:{kind or 'none'}")

        return require_steps(place_and_number(spans, drafts, b, _rest), spans, b.where)


IMPORTER = OpenInferenceImporter()
