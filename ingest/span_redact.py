"""Redaction of OTLP spans before span assembly stores them (a server or consumer that redacts).

What a person or a model wrote is redacted with the same patterns as every other record
(``ingest.redact``): a span's name, its attribute values, its events' names and attribute values,
its links' attribute values, its status message and its resource's attribute values. Ids, times,
kinds, scopes and attribute keys are structure and stay as they are, so the spans still group,
order and import. A string value that holds a JSON object or array (GenAI's
``gen_ai.input.messages``, OpenInference's ``input.value``) is redacted as the decoded value and
written back as JSON, so that a placeholder can never break its quoting.

Placeholders are numbered per trace. The spans of one trace arrive over many batches, so each open
trace keeps one :class:`~ingest.redact.Redactor` in memory (a value gets one placeholder across all
its spans) until the trace completes; the mapping is never stored. A trace met with spans already
stored (after a restart, or a late span after its completion) numbers new placeholders after the
stored ones, so two values never share a placeholder; a value seen before gets a new one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ingest.otlp_request import ReceivedSpan
from ingest.redact import Redactor


class SpanRedaction:
    """``span`` before storing, ``forget`` when the trace completes."""

    def __init__(self, patterns: dict[str, str] | None = None) -> None:
        self.patterns = dict(patterns or {})
        self._open: dict[str, Redactor] = {}

    def span(self, span: ReceivedSpan, stored: Callable[[], Iterable[str]]) -> ReceivedSpan:
        """The span with its content redacted; ``stored`` gives the stored payloads of its trace
        (read only when this process holds no redactor for it yet)."""
        r = self._open.get(span.trace_id)
        if r is None:
            r = Redactor(self.patterns)
            for text in stored():
                r.number_after(text)
            self._open[span.trace_id] = r
        return replace(
            span,
            span=_span(r, span.span),
            resource={**span.resource, "attributes": _key_values(r, span.resource.get("attributes"))},
        )

    def forget(self, trace_id: str) -> None:
        self._open.pop(trace_id, None)


def _span(r: Redactor, span: dict[str, Any]) -> dict[str, Any]:
    out = {**span, "attributes": _key_values(r, span.get("attributes"))}
    if isinstance(span.get("name"), str):
        out["name"] = _text(r, span["name"])
    if isinstance(span.get("events"), list):
        out["events"] = [
            {
                **e,
                "name": _text(r, e["name"]) if isinstance(e.get("name"), str) else e.get("name"),
                "attributes": _key_values(r, e.get("attributes")),
            }
            for e in span["events"]
        ]
    if isinstance(span.get("links"), list):
        out["links"] = [{**ln, "attributes": _key_values(r, ln.get("attributes"))} for ln in span["links"]]
    status = span.get("status")
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        out["status"] = {**status, "message": _text(r, status["message"])}
    return out


def _key_values(r: Redactor, items: Any) -> Any:
    """OTLP ``[{key, value}]`` with each value redacted (the decoder checked the shape)."""
    if not isinstance(items, list):
        return items
    return [{**kv, "value": _any_value(r, kv.get("value"))} for kv in items]


def _any_value(r: Redactor, value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("stringValue"), str):
        return {**value, "stringValue": _text(r, value["stringValue"])}
    if isinstance(value.get("arrayValue"), dict):
        values = value["arrayValue"].get("values")
        if isinstance(values, list):
            return {**value, "arrayValue": {"values": [_any_value(r, v) for v in values]}}
    if isinstance(value.get("kvlistValue"), dict):
        return {**value, "kvlistValue": {"values": _key_values(r, value["kvlistValue"].get("values"))}}
    return value


def _text(r: Redactor, text: str) -> str:
    """A string redacted; one holding a JSON object or array, redacted value by value."""
    if text[:1] in ("{", "["):
        try:
            decoded = json.loads(text)
        except ValueError:
            return r.text(text)
        redacted = r.value(decoded)
        return text if redacted == decoded else json.dumps(redacted, ensure_ascii=False)
    return r.text(text)
