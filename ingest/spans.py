"""Spans from OpenTelemetry exports, normalised for the span-based importers (GenAI, OpenInference,
Vercel AI SDK, TRAIL).

The shapes read: OTLP JSON (``resourceSpans → scopeSpans → spans``, one request per file or one per
line as the collector's file exporter writes them); span records, one per line or in a JSON array,
whose identity is written the way real exports write it (Phoenix's ``context.trace_id`` /
``context.span_id`` / ``parent_id``, ``trace_id`` / ``span_id`` / ``parent_span_id``,
``traceId`` / ``spanId`` / ``parentSpanId``, the OTel JS SDK's ``spanContext``), with
``attributes`` (or ``span_attributes``) flat, nested or as OTLP key-value lists; a bare attribute
object (an OpenInference or GenAI fixture: nothing but attribute keys), read as one span of its own
trace; and a trace document whose ``spans`` nest their children in ``child_spans`` (TRAIL).

Memory stays flat in file size: a single OTLP document is walked one span at a time, JSON lines
are read one line at a time, and the grouping by trace (``SpanGroups``) moves to a temporary
SQLite file once it holds more than ``SPILL_AT`` spans.

Span assembly's completed traces are OTLP documents built in memory (``SpanDocument``): they are
read from the decoded document as the same text in a file would be, never written out first.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from auditor.core.errors import InputError
from auditor.core.json_text import json_value
from ingest.base import text_digest
from ingest.jsonstream import JsonReader
from ingest.textlines import file_lines

T = TypeVar("T")
SPILL_AT = 10_000  # spans (and resources) held in memory before the grouping spills to SQLite
_INT64 = 1 << 63
_HINT = "expected OTLP JSON or span records"


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
    status: str | None = None  # "ok" or "error" as the span states it; None when unset
    status_message: str | None = None
    kind: str | None = None  # the record's own span kind (Phoenix's "LLM", TRAIL's "Internal" …)
    logs: list[Any] = field(default_factory=list)  # TRAIL's harness logs, never a step's raw


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
    return {
        _text(a["key"], "an attribute's key"): any_value(a.get("value"))
        for a in items or []
        if isinstance(a, dict) and "key" in a
    }


def _text(value: Any, what: str) -> str:
    """A value the span model holds as text (an attribute's key, an event's name, a parent's id):
    anything else is the record's mistake, refused with where it is (the callers' handlers)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} is {type(value).__name__}, not text")
    return value


def _events(items: Any, time_keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """A span's events (a list of objects, each named by text or not at all) as the span holds them."""
    if not isinstance(items, list):
        raise TypeError(f"a span's events are {type(items).__name__}, not a list")
    out = []
    for e in items:
        if not isinstance(e, dict):
            raise TypeError(f"a span event is {type(e).__name__}, not an object")
        name = e.get("name")
        out.append(
            {
                "name": None if name is None else _text(name, "an event's name"),
                "time": next((e[k] for k in time_keys if e.get(k) is not None), None),
                "attrs": attributes(e.get("attributes") or {}),
            }
        )
    return out


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


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.0.role``, ``prefix.0.content`` … (a list flattened into attribute keys) as a list
    of dicts, in index order."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix + "."):
            head, _, rest = key[len(prefix) + 1 :].partition(".")
            if head.isdigit() and rest:
                rows.setdefault(int(head), {})[rest] = value
    return [rows[i] for i in sorted(rows)]


def decoded(value: Any) -> Any:
    """An attribute that may hold JSON as a string, decoded; any other value as it is."""
    return json_value(value, default=value) if isinstance(value, str) else value


_STATUS = {
    "2": "error",
    "STATUS_CODE_ERROR": "error",
    "ERROR": "error",
    "1": "ok",
    "STATUS_CODE_OK": "ok",
    "OK": "ok",
}


def status_of(code: Any, message: Any) -> tuple[str | None, str | None]:
    """("ok" | "error" | None, message) from an OTLP status code (number or enum name) or a
    Phoenix ``status_code``; an unset status is None."""
    return _STATUS.get(str(code).upper()), (str(message) if message not in (None, "") else None)


def _otlp_span(sp: dict[str, Any], resource: dict[str, Any]) -> Span:
    stated = sp.get("status")
    stated = stated if isinstance(stated, dict) else {}
    status, message = status_of(stated.get("code"), stated.get("message"))
    return Span(
        trace_id=str(sp["traceId"]),
        span_id=str(sp["spanId"]),
        parent_id=_text(sp["parentSpanId"], "parentSpanId") if sp.get("parentSpanId") else None,
        name=str(sp.get("name", "")),
        start=int(sp.get("startTimeUnixNano") or 0),
        attrs={**attributes(sp.get("attributes")), "_end": int(sp.get("endTimeUnixNano") or 0)},
        events=_events(sp.get("events") or [], ("timeUnixNano",)),
        resource=resource,
        status=status,
        status_message=message,
    )


def _otlp_spans(request: dict[str, Any]) -> Iterator[Span]:
    """The spans of one decoded OTLP request (a JSON line)."""
    for rs in request.get("resourceSpans") or []:
        resource = attributes((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
            for sp in ss.get("spans") or []:
                yield _otlp_span(sp, resource)


# Where each field of a span record is written, in the order they are tried.
_TRACE_ID = (
    ("context", "trace_id"),
    ("trace_id",),
    ("traceId",),
    ("spanContext", "traceId"),
    ("context", "traceId"),
)
_SPAN_ID = (
    ("context", "span_id"),
    ("span_id",),
    ("spanId",),
    ("spanContext", "spanId"),
    ("context", "spanId"),
)
_PARENT_ID = (
    ("parent_id",),
    ("parent_span_id",),
    ("parentSpanId",),
    ("parentId",),
    ("parentSpanContext", "spanId"),
)
_START = (("start_time",), ("startTime",), ("startTimeUnixNano",), ("timestamp",))
_END = (("end_time",), ("endTime",), ("endTimeUnixNano",))
_RECORD_KEYS = frozenset(
    {
        "context",
        "trace_id",
        "traceId",
        "spanContext",
        "span_id",
        "spanId",
        "attributes",
        "span_attributes",
        "name",
    }
)


def _at(rec: dict[str, Any], paths: tuple[tuple[str, ...], ...]) -> Any:
    """The first value present (not None, not "") at one of ``paths``."""
    for path in paths:
        value: Any = rec
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value not in (None, ""):
            return value
    return None


def _id(rec: dict[str, Any], paths: tuple[tuple[str, ...], ...], what: str) -> str:
    value = _at(rec, paths)
    if value is None:
        tried = ", ".join(".".join(p) for p in paths)
        raise KeyError(f"no {what} ({tried})")
    return _bare(value)


_HEX_PREFIXED = re.compile(r"0x[0-9a-fA-F]+")


def _bare(value: Any) -> str:
    """An id as OTLP writes it: the SDK's console exporter prefixes trace and span ids with
    ``0x``, and the same run read from that file must be the trace OTLP delivered."""
    text = str(value)
    return text[2:] if _HEX_PREFIXED.fullmatch(text) else text


def is_attribute_record(rec: dict[str, Any]) -> bool:
    """Whether a record is nothing but span attributes (no identity, no ``attributes`` key), as
    OpenInference's and GenAI's own test fixtures write one span."""
    return bool(rec) and not _RECORD_KEYS & rec.keys() and any("." in k for k in rec)


def _record_span(
    rec: dict[str, Any], line: int, trace_id: str | None = None, parent_id: str | None = None
) -> Span:
    """One span record in any of the shapes real exports write (see the module's docstring).
    ``trace_id`` and ``parent_id`` come from an enclosing TRAIL document or span, where the record
    itself leaves them out."""
    if is_attribute_record(rec):
        digest = text_digest(json.dumps(rec, sort_keys=True, default=str))[:32]
        return Span(
            trace_id=f"attrs-{digest}",
            span_id=f"line-{line}",
            parent_id=None,
            name="",
            start=0,
            attrs=dict(attributes(rec)),
        )
    stated = rec.get("status")
    code, message = (
        (stated.get("code"), stated.get("message")) if isinstance(stated, dict) else (stated, None)
    )
    status, status_message = status_of(rec.get("status_code", code), rec.get("status_message", message))
    resource = rec.get("resource")
    kind = rec.get("span_kind", rec.get("kind"))
    return Span(
        trace_id=_bare(_at(rec, _TRACE_ID) or trace_id or _id(rec, _TRACE_ID, "trace id")),
        span_id=_id(rec, _SPAN_ID, "span id"),
        parent_id=_bare(_at(rec, _PARENT_ID) or parent_id or "") or None,
        name=str(rec.get("name") or rec.get("span_name") or ""),
        start=_start(_at(rec, _START)),
        attrs={
            **attributes(rec.get("attributes") or rec.get("span_attributes") or {}),
            "_end": _start(_at(rec, _END)) or _after(_start(_at(rec, _START)), rec.get("duration")),
        },
        events=_events(rec.get("events") or [], ("time", "timestamp", "timeUnixNano")),
        resource=attributes(
            rec.get("resource_attributes")
            or (resource.get("attributes") if isinstance(resource, dict) else None)
            or {}
        ),
        status=status,
        status_message=status_message,
        kind=str(kind) if kind not in (None, "") else None,
        logs=list(rec.get("logs") or []),
    )


def _tree_spans(doc: dict[str, Any], line: int) -> Iterator[Span]:
    """The spans of a TRAIL trace document: ``spans`` whose children nest in ``child_spans``, each
    child's parent the span that holds it (unless it names its own)."""
    trace_id = _at(doc, _TRACE_ID)
    stack: list[tuple[Any, str | None]] = [(s, None) for s in reversed(doc.get("spans") or [])]
    while stack:
        rec, parent = stack.pop()
        if not isinstance(rec, dict):
            raise TypeError(f"a span is a JSON object, not {type(rec).__name__}")
        span = _record_span(rec, line, str(trace_id) if trace_id is not None else None, parent)
        yield span
        children = rec.get("child_spans") or []
        if not isinstance(children, list):
            raise TypeError("child_spans is not a list")
        stack.extend((c, span.span_id) for c in reversed(children))


def _start(value: Any) -> int:
    """A time in nanoseconds from an int, an OTel JS ``[seconds, nanoseconds]`` pair, a string of
    digits or an ISO 8601 string (0 when absent or unreadable)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value):
        return value[0] * 1_000_000_000 + value[1]
    if value is None:
        return 0
    text = str(value)
    if text.isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0


_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def _after(start: int, duration: Any) -> int:
    """The end of a span written as start + ISO 8601 duration (TRAIL's ``PT24.688187S``); 0 when
    either is missing or unreadable."""
    match = _DURATION.fullmatch(duration) if isinstance(duration, str) and start else None
    if match is None or not any(match.groups()):
        return 0
    days, hours, minutes, seconds = (float(g or 0) for g in match.groups())
    return start + round((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1e9)


class SpanGroups:
    """Spans grouped by trace id: iterated trace by trace in first-seen order, each trace's spans
    ordered by (start, span_id), arrival breaking ties. Up to ``limit`` spans are held in memory;
    beyond that they go to a temporary SQLite file (deleted on ``close``), so a file's size never
    decides the memory used, only its largest trace does.

    A span may name its resource by id (``resource()``), filled in later with ``set_resource``:
    a streamed OTLP document may write ``resource`` after the spans it describes."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = SPILL_AT if limit is None else limit
        self._traces: dict[str, list[tuple[Span, int | None]]] = {}
        self._resources: dict[int, dict[str, Any]] = {}
        self._held = 0
        self._next_resource = 0
        self._db: sqlite3.Connection | None = None
        self._file: str | None = None

    def __enter__(self) -> SpanGroups:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- filling ---------------------------------------------------------------------------------
    def resource(self) -> int:
        """A new resource id for the spans that follow; its attributes come with ``set_resource``."""
        rid = self._next_resource
        self._next_resource += 1
        if self._db is None:
            self._held += 1
        self.set_resource(rid, {})
        return rid

    def set_resource(self, rid: int, attrs: dict[str, Any]) -> None:
        if self._db is not None:
            self._db.execute("INSERT OR REPLACE INTO resources VALUES (?, ?)", (rid, pickle.dumps(attrs)))
            return
        self._resources[rid] = attrs
        self._spill_if_full()

    def add(self, span: Span, rid: int | None = None) -> None:
        """Add a span (of resource ``rid`` when given); ValueError for a start time SQLite cannot
        order (so that the outcome never depends on whether the grouping spilled), or an end time
        beyond what a date holds (the importers date every step by it)."""
        for what, at in (("start", span.start), ("end", span.attrs.get("_end") or 0)):
            if not -_INT64 <= at < _INT64:
                raise ValueError(f"{what} time {at} is out of range (nanoseconds below 2^63)")
        self._traces.setdefault(span.trace_id, []).append((span, rid))
        self._held += 1
        self._spill_if_full()

    def _spill_if_full(self) -> None:
        if self._held >= self.limit:
            self._flush()

    def _flush(self) -> None:
        """Move what memory holds to the SQLite file (created on the first flush)."""
        db = self._db if self._db is not None else self._open_db()
        db.executemany("INSERT OR IGNORE INTO traces(trace_id) VALUES (?)", ((t,) for t in self._traces))
        db.executemany(
            "INSERT INTO spans SELECT trace_no, ?, ?, ?, ? FROM traces WHERE trace_id = ?",
            (
                (span.start, span.span_id, rid, pickle.dumps(span), tid)
                for tid, spans in self._traces.items()
                for span, rid in spans
            ),
        )
        db.executemany(
            "INSERT OR REPLACE INTO resources VALUES (?, ?)",
            ((rid, pickle.dumps(attrs)) for rid, attrs in self._resources.items()),
        )
        self._traces, self._resources, self._held = {}, {}, 0

    def _open_db(self) -> sqlite3.Connection:
        # The file is private to this process (mkstemp) and deleted on close: pickle is safe here
        # and keeps every value exactly as it was decoded.
        fd, self._file = tempfile.mkstemp(prefix="auditor-spans-", suffix=".sqlite")
        os.close(fd)
        db = sqlite3.connect(self._file, isolation_level=None)
        db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-8000;"
            "CREATE TABLE traces (trace_no INTEGER PRIMARY KEY, trace_id TEXT UNIQUE);"
            "CREATE TABLE spans (trace_no INTEGER, start INTEGER, span_id TEXT, rid INTEGER, data BLOB);"
            "CREATE TABLE resources (rid INTEGER PRIMARY KEY, data BLOB);"
            "BEGIN;"
        )
        self._db = db
        return db

    # -- reading ---------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[str, list[Span]]]:
        """(trace id, spans) for each trace; call once, after the last ``add``."""
        if self._db is None:
            traces, self._traces = self._traces, {}
            for tid, pairs in traces.items():
                pairs.sort(key=lambda p: (p[0].start, p[0].span_id))
                yield tid, [self._placed(span, rid, self._resources.get) for span, rid in pairs]
            return
        self._flush()
        yield from self._spilled(self._db)

    def _spilled(self, db: sqlite3.Connection) -> Iterator[tuple[str, list[Span]]]:
        db.execute("CREATE INDEX spans_order ON spans(trace_no, start, span_id)")
        rows = db.execute(
            "SELECT t.trace_id, s.rid, s.data FROM spans s JOIN traces t USING (trace_no) "
            "ORDER BY s.trace_no, s.start, s.span_id, s.rowid"
        )
        current: str | None = None
        spans: list[Span] = []
        resources: dict[int, dict[str, Any]] = {}  # of the current trace

        def resource(rid: int) -> dict[str, Any] | None:
            if rid not in resources:
                row = db.execute("SELECT data FROM resources WHERE rid = ?", (rid,)).fetchone()
                resources[rid] = pickle.loads(row[0]) if row else {}
            return resources[rid]

        for tid, rid, data in rows:
            if tid != current:
                if current is not None:
                    yield current, spans
                current, spans = tid, []
                resources.clear()
            spans.append(self._placed(pickle.loads(data), rid, resource))
        if current is not None:
            yield current, spans

    @staticmethod
    def _placed(span: Span, rid: int | None, resource: Callable[[int], dict[str, Any] | None]) -> Span:
        if rid is not None:
            span.resource = resource(rid) or {}
        return span

    def close(self) -> None:
        """Drop what is held and delete the temporary file, if there is one."""
        self._traces, self._resources = {}, {}
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._file is not None:
            Path(self._file).unlink(missing_ok=True)
            self._file = None


@dataclass(frozen=True)
class SpanDocument:
    """An OTLP JSON document held in memory (span assembly builds one per completed trace), read as
    a file of its JSON text would be. ``name`` stands where a file's path would: in the headers the
    importers write and in their errors."""

    name: str
    document: dict[str, Any]

    def __str__(self) -> str:
        return self.name

    def head(self, size: int) -> bytes:
        """The first ``size`` bytes of its JSON text, as format detection reads a file's head."""
        return json.dumps(self.document, ensure_ascii=False).encode("utf-8")[:size]


def _not_spans(
    exc: Exception, path: Path | SpanDocument, line: int | None, offset: int | None = None
) -> InputError:
    why = str(exc.args[0]) if exc.args else type(exc).__name__  # the reason, not the exception's repr
    return InputError(f"not a span record ({why})", path=str(path), line=line, offset=offset, hint=_HINT)


_OPENERS = {"{": "object", "[": "array"}


def _opens(reader: JsonReader, opener: str) -> bool:
    """Whether a JSON object ('{') or array ('[') starts here; a null is read and skipped (as an
    absent field), anything else is an error."""
    if reader.peek() == opener:
        return True
    found = reader.value()
    if found is not None:
        raise reader.error(
            f"expected a JSON {_OPENERS[opener]}, found {type(found).__name__}", reader.value_start
        )
    return False


def _stream_resource_spans(reader: JsonReader, groups: SpanGroups, path: Path) -> None:
    """Walk a ``resourceSpans`` array one span at a time (a resource may follow its spans).
    ``scopeSpans`` and the legacy ``instrumentationLibrarySpans``: the first that holds spans."""
    if not _opens(reader, "["):
        return
    for _ in reader.elements():
        if not _opens(reader, "{"):
            continue
        rid = groups.resource()
        scoped = False
        for key in reader.members():
            if key == "resource":
                resource = reader.value()
                try:
                    groups.set_resource(rid, attributes((resource or {}).get("attributes")))
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    line, offset = reader.where(reader.value_start)
                    raise _not_spans(exc, path, line, offset) from exc
            elif key in ("scopeSpans", "instrumentationLibrarySpans") and not scoped:
                scoped = _stream_scopes(reader, groups, rid, path)


def _stream_scopes(reader: JsonReader, groups: SpanGroups, rid: int, path: Path) -> bool:
    """Walk one ``scopeSpans`` array; True when it held a span."""
    found = False
    if not _opens(reader, "["):
        return found
    for _ in reader.elements():
        if not _opens(reader, "{"):
            continue
        for key in reader.members():
            if key != "spans" or not _opens(reader, "["):
                continue
            for _ in reader.elements():
                sp = reader.value()
                try:
                    if not isinstance(sp, dict):
                        raise TypeError(f"a span is a JSON object, not {type(sp).__name__}")
                    groups.add(_otlp_span(sp, {}), rid)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    line, offset = reader.where(reader.value_start)
                    raise _not_spans(exc, path, line, offset) from exc
                found = True
    return found


def _add_record(rec: Any, groups: SpanGroups, path: Path | SpanDocument, line: int) -> None:
    """One decoded record: an OTLP request, a TRAIL trace document or a span record."""
    if not isinstance(rec, dict):
        raise InputError("expected a JSON object", path=str(path), line=line)
    try:
        if "resourceSpans" in rec:
            for span in _otlp_spans(rec):
                groups.add(span)
        elif isinstance(rec.get("spans"), list) and "span_id" not in rec:
            for span in _tree_spans(rec, line):
                groups.add(span)
        else:
            groups.add(_record_span(rec, line))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _not_spans(exc, path, line) from exc


def _collect(path: Path, groups: SpanGroups) -> None:
    """Every span of the file into ``groups``. The first record is walked incrementally (a single
    OTLP document may be the whole file); what follows it, if anything, is JSON lines."""
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        first = reader.peek()
        if first == "[":
            _collect_array(reader, groups, path)
            return
        if first != "{":
            raise reader.error(
                "expected a JSON object or array" if first else "input ends where a value was expected",
                hint="the file looks truncated" if not first else _HINT,
            )
        record: dict[str, Any] = {}
        otlp = False
        for key in reader.members():
            if key == "resourceSpans":
                otlp = True
                _stream_resource_spans(reader, groups, path)
            else:
                record[key] = reader.value()
        if not otlp:
            _add_record(record, groups, path, 1)
        ended = reader.where()[0]
        if not reader.peek():
            return
        following = reader.where()[0]
        if following == ended:
            raise reader.error("malformed JSON: extra data after the record", hint="one JSON record per line")
    for n, line in enumerate(file_lines(path), start=1):
        if n < following or not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"malformed JSON: {exc.msg}", path=str(path), line=n, hint="one JSON record per line"
            ) from exc
        _add_record(rec, groups, path, n)


def _collect_array(reader: JsonReader, groups: SpanGroups, path: Path) -> None:
    """A JSON array of records (span records, OTLP requests), one element at a time."""
    for _ in reader.elements():
        rec = reader.value()
        _add_record(rec, groups, path, reader.where(reader.value_start)[0])
    reader.end()


def no_content(spans: list[Span], where: str) -> InputError:
    """The error for a trace whose spans gave no step: how many were read and what they carried,
    so that a form this importer does not read can be named."""
    keys = sorted({k for s in spans for k in s.attrs if not k.startswith("_")})
    shown = ", ".join(keys[:40]) + (f" … and {len(keys) - 40} more" if len(keys) > 40 else "")
    return InputError(
        f"no steps found: {len(spans)} span{'s' if len(spans) != 1 else ''} read, none with message or "
        f"tool content (attribute keys seen: {shown or 'none'})",
        path=where,
        hint="is this the right --format?",
    )


def require_steps(steps: Iterator[T], spans: list[Span], where: str) -> Iterator[T]:
    """``steps`` as they come; at their end, if there were none, the ``no_content`` error."""
    found = False
    for step in steps:
        found = True
        yield step
    if not found:
        raise no_content(spans, where)


def read_spans(source: Path | SpanDocument, spill_at: int | None = None) -> Iterator[tuple[str, list[Span]]]:
    """(trace id, spans) for every trace of a file (or a document in memory), in first-seen order,
    each trace's spans ordered by start time. The whole source is read (and every error in a
    record raised) before the first trace comes; a trace whose spans' parent links form a cycle
    is refused when it comes (a cycle shows only once all of a trace's spans are in)."""
    with SpanGroups(spill_at) as groups:
        if isinstance(source, SpanDocument):
            _add_record(source.document, groups, source, 1)
        else:
            _collect(source, groups)
        for trace_id, spans in groups:
            if cycle := parent_cycle(spans):
                raise InputError(
                    f"trace {trace_id[:40]}: its spans' parents form a cycle ({' → '.join(c[:20] for c in cycle[:6])})",
                    path=str(source),
                    field="parentSpanId",
                    hint="each span's parent must be another span of the trace, never one of its own descendants",
                )
            yield trace_id, spans


def parent_cycle(spans: list[Span]) -> list[str] | None:
    """The span ids of a cycle of parent links (the first closes it), or None. The importers walk
    a span's parents to find its agent, which a cycle would never end."""
    by_id = {s.span_id: s for s in spans}
    done: set[str] = set()
    for span in spans:
        path: list[str] = []
        on_path: set[str] = set()
        current: Span | None = span
        while current is not None and current.span_id not in done:
            if current.span_id in on_path:
                return [*path[path.index(current.span_id) :], current.span_id]
            on_path.add(current.span_id)
            path.append(current.span_id)
            current = by_id.get(current.parent_id or "")
        done.update(path)
    return None
