"""Spans from OpenTelemetry exports, normalised for the span-based importers (GenAI, OpenInference).

Two shapes are read: OTLP JSON (``resourceSpans → scopeSpans → spans``, one request per file or
one per line as the collector's file exporter writes them) and Phoenix-style span records, one per
line (``context.trace_id``, ``parent_id``, ``attributes`` as a flat or nested dict). Spans are
grouped by trace id and ordered by start time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from auditor.errors import InputError
from ingest.jsonstream import JsonReader
from ingest.textlines import file_lines


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    attrs: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)


def any_value(value: Any) -> Any:
    """An OTLP AnyValue (``{"stringValue": …}``, arrays, kvlists) as a plain Python value."""
    if not isinstance(value, dict) or not value:
        return value
    key, inner = next(iter(value.items()))
    if key == "arrayValue":
        return [any_value(v) for v in (inner or {}).get("values", [])]
    if key == "kvlistValue":
        return attributes((inner or {}).get("values", []))
    if key == "intValue":
        return int(inner)
    return inner


def attributes(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):  # already a mapping (Phoenix); flatten nested dicts to dotted keys
        return _flatten(items)
    return {a["key"]: any_value(a.get("value")) for a in items or [] if isinstance(a, dict) and "key" in a}


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                out.update(_flatten(x, f"{key}.{i}."))
        else:
            out[key] = v
    return out


def _otlp_spans(request: dict[str, Any]) -> Iterator[Span]:
    for rs in request.get("resourceSpans") or []:
        resource = attributes((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
            for sp in ss.get("spans") or []:
                yield Span(
                    trace_id=str(sp["traceId"]),
                    span_id=str(sp["spanId"]),
                    parent_id=sp.get("parentSpanId") or None,
                    name=str(sp.get("name", "")),
                    start=int(sp.get("startTimeUnixNano") or 0),
                    attrs={**attributes(sp.get("attributes")), "_end": int(sp.get("endTimeUnixNano") or 0)},
                    events=[
                        {
                            "name": e.get("name"),
                            "time": e.get("timeUnixNano"),
                            "attrs": attributes(e.get("attributes")),
                        }
                        for e in sp.get("events") or []
                    ],
                    resource=resource,
                )


def _phoenix_span(rec: dict[str, Any]) -> Span:
    ctx = rec.get("context") or {}
    return Span(
        trace_id=str(ctx["trace_id"]),
        span_id=str(ctx["span_id"]),
        parent_id=rec.get("parent_id") or None,
        name=str(rec.get("name", "")),
        start=_start(rec.get("start_time")),
        attrs={**attributes(rec.get("attributes") or {}), "_end": _start(rec.get("end_time"))},
        events=[
            {"name": e.get("name"), "attrs": attributes(e.get("attributes") or {})}
            for e in rec.get("events") or []
        ],
    )


def _start(value: Any) -> int:
    """Start time in nanoseconds from an int or an ISO 8601 string (0 when absent or unreadable)."""
    if isinstance(value, int | float):
        return int(value)
    if value is None:
        return 0
    text = str(value)
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) for a JSON-lines file, or (1, document) for a single JSON document."""
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        first = reader.value()
        rest = reader.peek()
    if not rest:
        yield 1, first
        return
    for n, line in enumerate(file_lines(path), start=1):
        if line.strip():
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"malformed JSON: {exc.msg}", path=str(path), line=n, hint="one JSON record per line"
                ) from exc


def read_spans(path: Path) -> dict[str, list[Span]]:
    """All spans of a file grouped by trace id, each group ordered by start time."""
    traces: dict[str, list[Span]] = {}
    for n, rec in _records(path):
        if not isinstance(rec, dict):
            raise InputError("expected a JSON object", path=str(path), line=n)
        try:
            spans = list(_otlp_spans(rec)) if "resourceSpans" in rec else [_phoenix_span(rec)]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(
                f"not a span record ({exc!r})",
                path=str(path),
                line=n,
                hint="expected OTLP JSON or span records",
            ) from exc
        for span in spans:
            traces.setdefault(span.trace_id, []).append(span)
    for spans in traces.values():
        spans.sort(key=lambda s: (s.start, s.span_id))
    return traces
