"""OpenInference spans (Arize Phoenix and its instrumentors), in OTLP JSON or Phoenix span records.

``openinference.span.kind`` says what a span is. ``LLM`` spans: each
``llm.output_messages.N.message.*`` is a step by the acting agent (the nearest ``agent.name`` or
``graph.node.id`` up the span tree, else the model name), with
``message.tool_calls.M.tool_call.function.{name,arguments}`` and ``tool_call.id`` as structured
calls; input messages stay in ``raw`` (with every other unmapped attribute, on the span's first
step). ``TOOL`` spans: ``tool.name``, ``tool.parameters`` and ``output.value`` make the tool
result. ``AGENT`` spans: ``input.value`` is a message to the agent, ``output.value`` its answer.
``session.id`` is kept in the header. A span's status (``status_code`` / ``status_message``, or
OTLP ``status``) goes to its steps' ``raw`` (``status``: ok or error), and a failed tool with no
output has the message as its content. ``EVALUATOR`` spans are judgements about the run and go to
the labels record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.base import Facts, ImportedTrace, StepBuilder, head_text
from ingest.frameworks.common import pack_raw
from ingest.otel import _indexed, failure_text, place_and_number, span_base, unmapped
from ingest.spans import Span, read_spans
from schemas.trace import ActorKind, StepKind, ToolInfo, TraceHeader, TraceStep, WithheldItem

KIND = "openinference.span.kind"
EVAL_RULE = "openinference.evaluator: EVALUATOR spans (judgements about the run)"
_MAPPED = {
    "LLM": ("llm.output_messages.",),
    "TOOL": ("tool.name", "tool.parameters", "tool_call.id", "output.value"),
    "AGENT": ("input.value", "output.value"),
}


def _rest(span: Span) -> dict[str, Any]:
    """What no step field holds (input messages, token counts, model and session ids …)."""
    prefixes = (KIND, *_MAPPED.get(str(span.attrs.get(KIND)), ()))
    if span.attrs.get(KIND) == "TOOL" and not span.attrs.get("tool.parameters"):
        prefixes = (*prefixes, "input.value")  # then it held the arguments
    return unmapped(span, lambda k: k.startswith(prefixes), frozenset())


def _args(value: Any) -> dict[str, Any] | str | None:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value if isinstance(value, dict) else None


class OpenInferenceImporter:
    name = "openinference"
    description = "OpenInference spans (Phoenix export or OTLP JSON), one trace per trace id"

    def detect(self, path: Path, head: bytes) -> str | None:
        if "openinference.span.kind" in head_text(head) or '"span_kind"' in head_text(head):
            return "spans with 'openinference.span.kind' attributes"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        for trace_id, spans in read_spans(path):
            evals = [
                pack_raw(
                    span_id=s.span_id,
                    name=s.name,
                    **{k: v for k, v in s.attrs.items() if not k.startswith("_")},
                )
                for s in spans
                if s.attrs.get(KIND) == "EVALUATOR"
            ]
            session = next((s.attrs["session.id"] for s in spans if "session.id" in s.attrs), None)
            header = TraceHeader(
                trace_id=f"oi-{trace_id}",
                source=str(path),
                framework=next(
                    (s.resource.get("service.name") for s in spans if s.resource.get("service.name")), None
                ),
                metadata=pack_raw(otel_trace_id=trace_id, session_id=session, spans=len(spans)),
                withheld=[WithheldItem(what="evaluations", where="EVALUATOR spans", rule=EVAL_RULE)]
                if evals
                else [],
            )
            yield ImportedTrace(
                importer=self.name,
                header=header,
                steps=lambda facts, spans=spans: self._steps(spans, facts, StepBuilder(str(path))),
                labels={"evaluations": evals} if evals else None,
            )

    def _steps(self, spans: list[Span], facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        by_id = {s.span_id: s for s in spans}

        def agent_of(span: Span | None) -> str | None:
            while span is not None:
                for key in ("agent.name", "graph.node.id"):
                    if span.attrs.get(key):
                        return str(span.attrs[key])
                if span.attrs.get(KIND) == "AGENT":
                    return span.name
                span = by_id.get(span.parent_id or "")
            return None

        def drafts(span: Span) -> Iterator[tuple[bool, dict[str, Any]]]:
            kind = span.attrs.get(KIND)
            agent = agent_of(span)
            base = span_base(span, span_kind=kind)
            if kind == "LLM":
                actor = agent or str(span.attrs.get("llm.model_name") or "model")
                for row in _indexed(span.attrs, "llm.output_messages"):
                    tool_calls = _indexed(row, "message.tool_calls")
                    if row.get("message.content") or not tool_calls:
                        yield True, {**base, "actor": actor, "content": str(row.get("message.content") or "")}
                    for call in tool_calls:
                        name = str(call.get("tool_call.function.name"))
                        args = call.get("tool_call.function.arguments")
                        yield (
                            True,
                            {
                                **base,
                                "actor": actor,
                                "kind": StepKind.tool_call,
                                "content": str(args or ""),
                                "_call": str(call.get("tool_call.id") or name),
                                "tool": ToolInfo(
                                    name=name, arguments=_args(args), call_id=call.get("tool_call.id")
                                ),
                            },
                        )
            elif kind == "TOOL":
                name = str(span.attrs.get("tool.name") or span.name)
                call_id = span.attrs.get("tool_call.id")
                args = _args(span.attrs.get("tool.parameters") or span.attrs.get("input.value"))
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

        return place_and_number(spans, drafts, b, _rest)


IMPORTER = OpenInferenceImporter()
