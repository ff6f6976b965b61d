"""Redaction of OTLP spans before span assembly stores them (a server or consumer that redacts).

Every string of a span that will be stored is redacted with the same patterns as every other
record (``ingest.redact``): names, attribute keys and values, events, links, status, trace state,
scope, resource, and any field OTLP does not define. Only the values of a few structural fields
(``STRUCTURAL``: ids, times, kinds, counts, typed numbers) are kept, and only while they have the
shape OTLP gives them (a number, hex or decimal digits), so the spans still group, order and
import. A string value that holds a JSON object or array (GenAI's ``gen_ai.input.messages``,
OpenInference's ``input.value``) is redacted as the decoded value and written back as JSON, so
that a placeholder can never break its quoting and no escape can hide a secret.

Placeholders are numbered per trace. The spans of one trace arrive over many batches, so each open
trace keeps one :class:`~ingest.redact.Redactor` in memory (a value gets one placeholder across all
its spans) until the trace completes; the mapping is never stored. A trace met with spans already
stored (after a restart, or a late span after its completion) numbers new placeholders after the
stored ones, so two values never share a placeholder; a value seen before gets a new one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ingest.otlp_request import ReceivedSpan
from ingest.redact import Redactor, names_secret


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
            span, span=_value(r, span.span), resource=_value(r, span.resource), scope=_value(r, span.scope)
        )

    def forget(self, trace_id: str) -> None:
        self._open.pop(trace_id, None)


STRUCTURAL = {
    *("traceId", "spanId", "parentSpanId", "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano"),
    *("kind", "flags", "code", "droppedAttributesCount", "droppedEventsCount", "droppedLinksCount"),
    *("intValue", "doubleValue", "boolValue"),
}
_SHAPED = re.compile(r"-?[0-9A-Fa-f]*|NaN|-?Infinity")  # ids in hex, 64-bit numbers in decimal


def _value(r: Redactor, value: Any, key: str | None = None) -> Any:
    """A span's JSON value with every string redacted but a structural field's, object keys too."""
    if key in STRUCTURAL and (
        isinstance(value, int | float | bool) or (isinstance(value, str) and _SHAPED.fullmatch(value))
    ):
        return value
    if isinstance(value, str):
        return r.text(value)
    if isinstance(value, list):
        return [_value(r, v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {r.text(k): _value(r, v, k) for k, v in value.items()}
    named, inner = value.get("key"), value.get("value")
    if isinstance(named, str) and isinstance(inner, dict) and names_secret(named):  # an OTLP KeyValue
        out["value"] = {k: r.keyed(named, v) if k == "stringValue" else v for k, v in out["value"].items()}
    return out
