"""OTLP trace export requests (``ExportTraceServiceRequest``) read into spans, one by one.

Both encodings OTLP defines are read: protobuf (decoded by the official ``opentelemetry-proto``
package) and OTLP JSON. Each span comes out in the OTLP JSON form (hex ids, ``AnyValue`` attributes,
times in nanoseconds) that the span importers read (``ingest.spans``), with its resource and
instrumentation scope beside it, so that the spans of one trace can be stored as they arrive and
put back together into one OTLP document later (``ingest.span_assembly``).

A span that cannot be used (no valid trace or span id, a malformed field) is rejected on its own
and counted, the way OTLP's partial success reports it; a body that is not a request at all is an
``InputError``. In OTLP JSON, ids are hex as the specification says; base64 ids (what a generic
protobuf-to-JSON mapping writes) are accepted too, since some exporters send them.

Everything decoded here can be stored: a request that could not be (it would fail the group commit
it shares with other clients' requests) is refused whole, before it is stored. A double that is
not finite (the SDK sends ``set_attribute("s", float("nan"))`` as NaN) is kept as the proto3 JSON
mapping writes it, the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``; in OTLP JSON that
string, the bare words and a literal beyond a double's range (``1e400``) are read as such a double.
A non-finite number anywhere else, a key repeated in one object (JSON readers keep one of its
values), and objects and arrays nested deeper than ``strictjson.MAX_DEPTH`` levels refuse the
request; a time at or beyond 2^63 ns (what no clock writes, and what dates cannot hold) or an
``intValue`` that is no 64-bit integer refuses its span (docs/input.md, "OTLP export requests").

A refusal goes back to the sender, who may log it anywhere: it names the field by its place
(``resourceSpans.0.scopeSpans.0.spans.3``, OTLP's own field names) and never quotes what the
request holds, not a value, not a span's name, not a key OTLP does not define.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from auditor.core.errors import InputError
from ingest.strictjson import MAX_DEPTH, TOO_DEEP, Repeated, dotted, keyed_object

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_INT64 = 1 << 63  # times and intValues: a span's times must be below it (the year 2262)
_INTEGER = re.compile(r"-?[0-9]{1,19}")


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as received: its ids, end time, the OTLP JSON span, its resource and scope."""

    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_id: str | None
    end_ns: int
    span: dict[str, Any]
    resource: dict[str, Any]
    scope: dict[str, Any]

    def payload(self) -> dict[str, Any]:
        """The stored form (the ``SpanReceived`` event's payload): the span as OTLP JSON, whose
        normalised ids and end time are this object's, its resource and its scope."""
        return {"span": self.span, "resource": self.resource, "scope": self.scope}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> ReceivedSpan:
        span = payload["span"]
        return cls(
            span["traceId"],
            span["spanId"],
            span.get("parentSpanId"),
            int(span.get("endTimeUnixNano") or 0),
            span,
            payload.get("resource") or {},
            payload.get("scope") or {},
        )


_READ = {  # what the importers read of a span, its events and links (of ``payload()``)
    "span": ("parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano", "status"),
    "events": ("timeUnixNano", "name", "attributes"),
    "links": ("traceId", "spanId", "attributes"),
}


def essence(payload: dict[str, Any]) -> Any:
    """A stored span's content as both encodings give it, to tell a span sent again from a span
    id reused for other content: the fields the importers read, OTLP's default values (0, "",
    empty) dropped, numbers as text (JSON may write 64-bit numbers either way)."""
    span = payload["span"]
    read = {k: span[k] for k in _READ["span"] if k in span}
    read["attributes"] = span.get("attributes")
    for part in ("events", "links"):
        items = span.get(part)
        read[part] = (
            [{k: e.get(k) for k in _READ[part]} for e in items if isinstance(e, dict)] if items else []
        )
    for link in read["links"]:  # ids as sent in JSON (hex of either case, base64), as decoded in protobuf
        link["traceId"], link["spanId"] = _hex_id(link["traceId"], 16), _hex_id(link["spanId"], 8)
    return _plain({"span": read, "resource": payload.get("resource"), "scope": payload.get("scope")})


_DEFAULTS = (None, "", 0, False, [], {})


def _plain(value: Any) -> Any:
    """``value`` without OTLP's default values at any depth (protobuf does not send them), its
    numbers as text."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if v not in _DEFAULTS and (plain := _plain(v)) not in _DEFAULTS:
                out[k] = plain
        return out
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


@dataclass
class DecodedRequest:
    """The usable spans of a request, and how many were rejected (with the first reason)."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    rejected: int = 0
    first_error: str | None = None

    def reject(self, why: str) -> None:
        self.rejected += 1
        if self.first_error is None:
            self.first_error = why


# -- protobuf ------------------------------------------------------------------------------------
def _double(value: float) -> float | str:
    """A double as OTLP JSON holds it: a number, or (not finite) proto3's ``"NaN"``/``"Infinity"``."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _any_value(v: Any) -> dict[str, Any]:
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return {"stringValue": v.string_value}
    if kind == "bool_value":
        return {"boolValue": v.bool_value}
    if kind == "int_value":
        return {"intValue": str(v.int_value)}
    if kind == "double_value":
        return {"doubleValue": _double(v.double_value)}
    if kind == "array_value":
        return {"arrayValue": {"values": [_any_value(x) for x in v.array_value.values]}}
    if kind == "kvlist_value":
        return {"kvlistValue": {"values": _key_values(v.kvlist_value.values)}}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(v.bytes_value).decode()}
    return {}


def _key_values(items: Any) -> list[dict[str, Any]]:
    out = []
    for kv in items:  # most values are strings: read them without the generic dispatch
        value = kv.value
        if value.WhichOneof("value") == "string_value":
            out.append({"key": kv.key, "value": {"stringValue": value.string_value}})
        else:
            out.append({"key": kv.key, "value": _any_value(value)})
    return out


def _proto_span(sp: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": sp.trace_id.hex(),
        "spanId": sp.span_id.hex(),
        "name": sp.name,
        "kind": sp.kind,
        "startTimeUnixNano": str(sp.start_time_unix_nano),
        "endTimeUnixNano": str(sp.end_time_unix_nano),
        "attributes": _key_values(sp.attributes),
    }
    if sp.parent_span_id:
        out["parentSpanId"] = sp.parent_span_id.hex()
    if sp.trace_state:
        out["traceState"] = sp.trace_state
    if sp.events:
        out["events"] = [
            {"timeUnixNano": str(e.time_unix_nano), "name": e.name, "attributes": _key_values(e.attributes)}
            for e in sp.events
        ]
    if sp.links:
        out["links"] = [
            {
                "traceId": ln.trace_id.hex(),
                "spanId": ln.span_id.hex(),
                "attributes": _key_values(ln.attributes),
            }
            for ln in sp.links
        ]
    if sp.HasField("status"):
        out["status"] = {
            "code": sp.status.code,
            **({"message": sp.status.message} if sp.status.message else {}),
        }
    return out


def decode_protobuf(body: bytes, where: str = "request body") -> DecodedRequest:
    """Spans of a protobuf ``ExportTraceServiceRequest``."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise InputError(
            f"not a protobuf ExportTraceServiceRequest ({exc})",
            path=where,
            hint="send OTLP protobuf with Content-Type application/x-protobuf",
        ) from exc
    out = DecodedRequest()
    for i, rs in enumerate(request.resource_spans):
        resource = {"attributes": _key_values(rs.resource.attributes)}
        for j, ss in enumerate(rs.scope_spans):
            scope = {"name": ss.scope.name, "version": ss.scope.version}
            for k, sp in enumerate(ss.spans):
                label = _place(i, j, k)
                trace_id, span_id = sp.trace_id.hex(), sp.span_id.hex()
                times = (
                    sp.start_time_unix_nano,
                    sp.end_time_unix_nano,
                    *(e.time_unix_nano for e in sp.events),
                )
                if len(trace_id) != 32 or trace_id == _ZERO_TRACE:
                    out.reject(f"{label}: traceId must be 16 bytes, not all zero")
                elif len(span_id) != 16 or span_id == _ZERO_SPAN:
                    out.reject(f"{label}: spanId must be 8 bytes, not all zero")
                elif max(times) >= _INT64:
                    out.reject(f"{label}: {_LATE}")
                else:
                    parent = sp.parent_span_id.hex() or None
                    span = _proto_span(sp)
                    out.spans.append(
                        ReceivedSpan(trace_id, span_id, parent, sp.end_time_unix_nano, span, resource, scope)
                    )
    return out


# -- OTLP JSON -----------------------------------------------------------------------------------
def _hex_id(value: Any, size: int) -> str | None:
    """A hex id of ``size`` bytes (hex, or base64 as generic protobuf JSON writes it), lowercase;
    None when absent, empty or invalid."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == 2 * size:
        try:
            return bytes.fromhex(value).hex()
        except ValueError:
            return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == size else None


_SURROGATE = "a text holds a lone surrogate (a JSON escape that UTF-8 cannot hold)"
_LATE = "a time must be below 2^63 nanoseconds (the year 2262)"


def _place(resource: int, scope: int, span: int) -> str:
    """Where a span is in its request: how a refusal names it (never by its name, see above)."""
    return f"resourceSpans.{resource}.scopeSpans.{scope}.spans.{span}"


def _nanos(value: Any, name: str) -> int:
    """A fixed64 time: an integer, or its decimal string (how OTLP JSON writes 64-bit numbers),
    below 2^63."""
    if value is None:
        return 0
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value) if len(value.lstrip("0")) <= 19 else _INT64
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"'{name}' must be an unsigned integer in nanoseconds")
    if value >= _INT64:
        raise ValueError(f"'{name}': {_LATE}")
    return value


def _is_int64(value: Any) -> bool:
    """An ``intValue`` as OTLP JSON writes one: an integer or its decimal string, in 64 bits."""
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64


def _check_attributes(items: Any, where: str) -> None:
    """A list of ``{key, value}`` objects whose ``intValue``s, at any depth of arrays and kvlists,
    are 64-bit integers (the importers read them as numbers)."""
    if items is None:
        return
    if not isinstance(items, list) or not all(
        isinstance(a, dict) and isinstance(a.get("key"), str) for a in items
    ):
        raise ValueError(f"'{where}' must be a list of {{key, value}} objects")
    values = [a.get("value") for a in items]
    while values:
        value = values.pop()
        if not isinstance(value, dict) or "stringValue" in value:  # most are strings
            continue
        if "intValue" in value and not _is_int64(value["intValue"]):
            raise ValueError(f"'{where}' holds an intValue that is not a 64-bit integer")
        array, kvlist = value.get("arrayValue"), value.get("kvlistValue")
        if isinstance(array, dict) and isinstance(array.get("values"), list):
            values += array["values"]
        if isinstance(kvlist, dict) and isinstance(kvlist.get("values"), list):
            values += [kv.get("value") for kv in kvlist["values"] if isinstance(kv, dict)]


def _objects_in(sp: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """A span's list of objects (``events``, ``links``), empty when absent."""
    items = sp.get(name)
    if items is not None and not (isinstance(items, list) and all(isinstance(e, dict) for e in items)):
        raise ValueError(f"'{name}' must be a list of objects")
    return items or []


def _json_span(
    sp: Any, resource: dict[str, Any], scope: dict[str, Any], out: DecodedRequest, label: str
) -> None:
    if not isinstance(sp, dict):
        out.reject(f"{label}: a span must be a JSON object, not {type(sp).__name__}")
        return
    name = sp.get("name")
    trace_id, span_id = _hex_id(sp.get("traceId"), 16), _hex_id(sp.get("spanId"), 8)
    if trace_id is None or trace_id == _ZERO_TRACE:
        out.reject(f"{label}: 'traceId' must be 32 hex digits, not all zero")
        return
    if span_id is None or span_id == _ZERO_SPAN:
        out.reject(f"{label}: 'spanId' must be 16 hex digits, not all zero")
        return
    parent_raw = sp.get("parentSpanId")
    parent = _hex_id(parent_raw, 8)
    if parent_raw not in (None, "") and parent is None:
        out.reject(f"{label}: 'parentSpanId' must be 16 hex digits")
        return
    try:
        if name is not None and not isinstance(name, str):
            raise ValueError("'name' must be a string")
        start = _nanos(sp.get("startTimeUnixNano"), "startTimeUnixNano")
        end = _nanos(sp.get("endTimeUnixNano"), "endTimeUnixNano")
        _check_attributes(sp.get("attributes"), "attributes")
        for e in _objects_in(sp, "events"):
            _nanos(e.get("timeUnixNano"), "events.timeUnixNano")
            _check_attributes(e.get("attributes"), "events.attributes")
        for link in _objects_in(sp, "links"):
            _check_attributes(link.get("attributes"), "links.attributes")
        status = sp.get("status")
        if status is not None and not isinstance(status, dict):
            raise ValueError("'status' must be an object")
        # the text must be storable: JSON escapes can spell lone surrogates, which UTF-8 cannot hold
        json.dumps(sp, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a ValueError too, whose message would quote the text
        out.reject(f"{label}: {_SURROGATE}")
        return
    except ValueError as exc:
        out.reject(f"{label}: {exc}")
        return
    span = {**sp, "traceId": trace_id, "spanId": span_id, "startTimeUnixNano": str(start)}
    span["endTimeUnixNano"] = str(end)
    if parent is None:
        span.pop("parentSpanId", None)
    else:
        span["parentSpanId"] = parent
    out.spans.append(ReceivedSpan(trace_id, span_id, parent, end, span, resource, scope))


def _objects(value: Any, where: str) -> Iterator[dict[str, Any]]:
    if value is None:
        return
    if not isinstance(value, list):
        raise InputError(f"'{where}' must be a JSON array", path="request body", field=where)
    for item in value:
        if not isinstance(item, dict):
            raise InputError(f"'{where}' must hold JSON objects", path="request body", field=where)
        yield item


@cache
def _field_names() -> frozenset[str]:
    """Every field name an OTLP trace request can hold (protobuf's and JSON's spelling, and the
    legacy ``instrumentationLibrary``), read from the protobuf descriptors."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    names = {"instrumentationLibrarySpans", "instrumentationLibrary"}
    todo, seen = [ExportTraceServiceRequest.DESCRIPTOR], set()
    while todo:
        message = todo.pop()
        if message.full_name not in seen:
            seen.add(message.full_name)
            for f in message.fields:
                names.update((f.name, f.json_name))
                if f.message_type is not None:
                    todo.append(f.message_type)
    return frozenset(names)


def _field(path: tuple[str | int, ...]) -> str:
    """A field's path as a refusal writes it: list indexes and OTLP's field names as they are,
    ``(unknown field)`` for a key the request made up (it could be anything, a secret too)."""
    known = _field_names()
    return dotted(tuple(str(k) if isinstance(k, int) or k in known else "(unknown field)" for k in path))


def _storable(data: Any, where: str) -> None:
    """Make a parsed request storable in place, or refuse it: a non-finite ``doubleValue`` becomes
    its proto3 JSON string; another non-finite number, a key repeated in one object, or a nesting
    deeper than ``MAX_DEPTH``, is an ``InputError`` naming the field. Iterative, so no nesting can
    exhaust the stack."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        item, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            raise InputError(TOO_DEEP, path=where, field=_field(path), hint="flatten the attribute values")
        if isinstance(item, Repeated):
            raise InputError(
                "a key appears more than once in one object; JSON readers keep only one of its values",
                path=where,
                field=_field((*path, item.key)),
            )
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, value in pairs:
            if isinstance(value, dict | list):
                stack.append((value, (*path, key)))
            elif isinstance(value, float) and not math.isfinite(value):
                if key != "doubleValue":
                    raise InputError(
                        f"the number {value} is not JSON; only a double ('doubleValue') may be "
                        "NaN or infinite",
                        path=where,
                        field=_field((*path, key)),
                    )
                item[key] = _double(value)


def decode_json_document(data: Any, where: str = "request body") -> DecodedRequest:
    """Spans of an OTLP JSON request already parsed (``{"resourceSpans": [...]}``)."""
    if not isinstance(data, dict) or "resourceSpans" not in data:
        raise InputError(
            "not an OTLP JSON ExportTraceServiceRequest (no 'resourceSpans')",
            path=where,
            field="resourceSpans",
            hint="send OTLP JSON with Content-Type application/json",
        )
    _storable(data, where)
    out = DecodedRequest()
    for i, rs in enumerate(_objects(data.get("resourceSpans"), "resourceSpans")):
        res = rs.get("resource") if isinstance(rs.get("resource"), dict) else {}
        attrs = res.get("attributes")
        resource = {"attributes": attrs if isinstance(attrs, list) else []}
        field = f"resourceSpans.{i}.resource.attributes"
        try:
            _check_attributes(resource["attributes"], "resource.attributes")
            json.dumps(resource, ensure_ascii=False).encode("utf-8")  # lone surrogates: see _json_span
        except UnicodeEncodeError:
            raise InputError(_SURROGATE, path=where, field=field) from None
        except ValueError as exc:
            raise InputError(str(exc), path=where, field=field) from None
        scoped = rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans")
        for j, ss in enumerate(_objects(scoped, "resourceSpans.scopeSpans")):
            sc = ss.get("scope") or ss.get("instrumentationLibrary")
            sc = sc if isinstance(sc, dict) else {}
            scope = {"name": str(sc.get("name") or ""), "version": str(sc.get("version") or "")}
            spans = ss.get("spans")
            if spans is not None and not isinstance(spans, list):
                raise InputError(
                    "'spans' must be a JSON array", path=where, field="resourceSpans.scopeSpans.spans"
                )
            for k, sp in enumerate(spans or []):
                _json_span(sp, resource, scope, out, _place(i, j, k))
    return out


def decode_json(body: bytes, where: str = "request body") -> DecodedRequest:
    """Spans of an OTLP JSON ``ExportTraceServiceRequest``."""
    try:
        data = json.loads(body, object_pairs_hook=keyed_object)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"malformed JSON: {exc}", path=where, hint="send one OTLP JSON request") from exc
    except RecursionError:
        raise InputError(TOO_DEEP, path=where, hint="flatten the attribute values") from None
    return decode_json_document(data, where)


def decode(body: bytes, content_type: str, where: str = "request body") -> DecodedRequest:
    """Spans of a request in either encoding, by its media type (``PROTOBUF`` or ``JSON``)."""
    if content_type == PROTOBUF:
        return decode_protobuf(body, where)
    if content_type == JSON:
        return decode_json(body, where)
    raise InputError(f"unsupported media type '{content_type}'", hint=f"use {PROTOBUF} or {JSON}")


def otlp_document(spans: list[ReceivedSpan]) -> dict[str, Any]:
    """One OTLP JSON document holding ``spans``, grouped by resource and scope as received."""
    groups: dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]]]] = {}
    for s in spans:
        rkey = json.dumps(s.resource, sort_keys=True)
        _, scopes = groups.setdefault(rkey, (s.resource, {}))
        skey = json.dumps(s.scope, sort_keys=True)
        scopes.setdefault(skey, {"scope": s.scope, "spans": []})["spans"].append(s.span)
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": list(scopes.values())}
            for resource, scopes in groups.values()
        ]
    }
