"""The wire format of the steps topic: canonical lines, or whole sources in any importer's format.

A record's ``format`` header says how to read its value.

- **Absent or ``canonical``**: one line of a canonical JSONL file, keyed by trace id (so a trace's
  records share one partition and keep their order): a header (``{"record": "header", …}``), a step
  (``{"record": "step", …}``, the default), or an end record (``{"record": "end"}``) that closes
  the trace. This is what ``StepPublisher`` sends.
- **An importer's name** (``ingest.names()``: ``otel-genai``, ``openinference``, ``whowhen``,
  ``mad``, ``magentic-one`` …) **or ``auto``** (detected as ``auditor ingest`` does): a *document*,
  the bytes of one whole source as that importer reads it from a file. Importers parse sources, not
  lines: the span importers order and link all of a trace's spans, the raw-log parsers number steps
  over the whole log. So what streams per record in those formats is a source that holds whole
  traces: an OTLP export of finished traces (the collector's ``groupbytrace`` processor groups
  them), one Who&When record, one framework log. The consumer validates it as ``auditor ingest``
  would and stores every trace in it, closed (reason ``document``). The trace ids are the
  importer's; the key only places the record on a partition and may be empty. An optional ``name``
  header is the source's file name, which some importers use for ids and ``source`` (default: the
  key). Sidecar labels stay behind, as with ``auditor stream produce``.

- **OpenTelemetry spans, as the collector's Kafka exporter writes them** (no header, or the header
  ``otlp_proto`` / ``otlp_json``): an ``ExportTraceServiceRequest`` in the exporter's default
  ``otlp_proto`` encoding or in ``otlp_json``, detected from the value. Its spans may belong to
  traces that are still running and continue in later records (no ``groupbytrace`` needed): they
  go to span assembly (``ingest.span_assembly``), which stores each span at once and completes
  the trace when its root has ended and it has gone silent. The key (the exporter's trace id when
  it partitions by trace) only places the record. An ``otlp_json`` value is read as OTLP/HTTP reads
  a JSON body: a key repeated in one object refuses the record, a double may be NaN or infinite.

Anything else is a dead letter with a reason.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import from_json

from auditor.core.errors import InputError
from ingest.otlp_request import DecodedRequest, ReceivedSpan, decode_json_document, decode_protobuf
from ingest.strictjson import TOO_DEEP, keyed_object
from schemas.trace import TraceHeader, TraceStep

FORMAT_HEADER = "format"
NAME_HEADER = "name"
CANONICAL = "canonical"
OTLP_PROTO = "otlp_proto"
OTLP_JSON = "otlp_json"
DEFAULT_MAX_RECORD_BYTES = 512 * 1024

_validate_step = TraceStep.__pydantic_validator__.validate_json


class EndRecord(BaseModel):
    """The explicit end of a trace: the consumer closes it and the audit workers take it from there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: str = "end"
    trace_id: str | None = None
    reason: str = "end_record"


class DeadKind(StrEnum):
    """Why a record could not be ingested; the dead-letter topic carries it as a header."""

    malformed = "malformed"
    oversized = "oversized"
    wrong_schema = "wrong_schema"
    conflict = "conflict"  # a document's trace, or a span's id, is already stored with other content


@dataclass(frozen=True)
class Document:
    """A whole source in an importer's format, validated: every trace it holds, complete."""

    importer: str
    traces: tuple[tuple[TraceHeader, tuple[TraceStep, ...]], ...]


@dataclass(frozen=True)
class SpanBatch:
    """The spans of one OTLP record, for span assembly; ``rejected`` spans had no usable ids."""

    encoding: str  # otlp_proto or otlp_json
    spans: tuple[ReceivedSpan, ...]
    rejected: int = 0
    first_error: str | None = None


@dataclass(frozen=True)
class Parsed:
    """A record that passed: its trace (the key; None for a keyless document) and its content."""

    trace_id: str | None
    item: TraceHeader | TraceStep | EndRecord | Document | SpanBatch


@dataclass(frozen=True)
class Rejected:
    """A record that failed, with a one-line reason naming the field where there is one."""

    kind: DeadKind
    reason: str


class _SchemaMismatch(ValueError):
    """A record that is valid JSON but breaks the contract beyond what pydantic checks."""


def _canonical(trace_id: str, value: dict[str, Any]) -> TraceHeader | TraceStep | EndRecord:
    kind = value.get("record", "step")
    if kind == "header":
        header = TraceHeader.model_validate(value)
        if header.trace_id != trace_id:
            raise _SchemaMismatch(f"field 'trace_id': header says '{header.trace_id}', key says '{trace_id}'")
        return header
    if kind == "end":
        end = EndRecord.model_validate(value)
        if end.trace_id not in (None, trace_id):
            raise _SchemaMismatch(
                f"field 'trace_id': end record says '{end.trace_id}', key says '{trace_id}'"
            )
        return end
    if kind == "step":
        return TraceStep.model_validate(value)
    raise _SchemaMismatch(f"field 'record': unknown record kind {kind!r} (header, step or end)")


def _header(headers: list[tuple[str, bytes]] | None, name: str) -> str | None:
    for k, v in headers or ():
        if k == name:
            return v.decode("utf-8", "replace")
    return None


def _schema_error(exc: ValidationError) -> Rejected:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "record"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return Rejected(DeadKind.wrong_schema, f"field '{field}': {first['msg']}{more}")


def parse_record(
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]] | None = None,
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> Parsed | Rejected:
    """Decode and validate one record; never raises for bad input, returns the reason instead."""
    value = value or b""
    if len(value) > max_bytes:
        return Rejected(DeadKind.oversized, f"record is {len(value)} bytes, the limit is {max_bytes}")
    fmt = _header(headers, FORMAT_HEADER) or CANONICAL
    if fmt in (OTLP_PROTO, OTLP_JSON):
        return _parse_spans(value, fmt)
    if fmt != CANONICAL:
        return _parse_document(key, value, fmt, _header(headers, NAME_HEADER))
    if _header(headers, FORMAT_HEADER) is None:
        spans = _detect_spans(value)
        if spans is not None:
            return spans
    if not key:
        return Rejected(DeadKind.malformed, "record has no key: the key must be the trace id")
    try:
        trace_id = key.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(DeadKind.malformed, f"key is not UTF-8 at byte {exc.start}")
    # Fast path, the common record: pydantic parses and validates a step in one pass. NaN and
    # Infinity are not JSON, but pydantic's parser takes them; the careful path refuses them.
    if b"NaN" not in value and b"Infinity" not in value:
        try:
            return Parsed(trace_id, _validate_step(value))
        except ValidationError:
            pass  # a header, an end record or a bad record: the careful path says which
    try:
        value.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(DeadKind.malformed, f"not UTF-8 at byte {exc.start}")
    try:
        data = from_json(value, allow_inf_nan=False)
    except ValueError as exc:
        return Rejected(DeadKind.malformed, f"malformed JSON: {exc}")
    if not isinstance(data, dict):
        return Rejected(DeadKind.malformed, f"expected a JSON object, found {type(data).__name__}")
    try:
        return Parsed(trace_id, _canonical(trace_id, data))
    except ValidationError as exc:
        return _schema_error(exc)
    except _SchemaMismatch as exc:
        return Rejected(DeadKind.wrong_schema, str(exc))


def _span_batch(decoded: DecodedRequest, encoding: str) -> Parsed | Rejected:
    if not decoded.spans:
        why = decoded.first_error or "the request holds no span"
        return Rejected(DeadKind.wrong_schema, f"{encoding}: {why}")
    return Parsed(None, SpanBatch(encoding, tuple(decoded.spans), decoded.rejected, decoded.first_error))


def _otlp_json(value: bytes) -> Any:
    """A record's JSON read as OTLP/HTTP reads a JSON body (``otlp_request.decode_json``): a key
    repeated in one object is marked, for ``decode_json_document`` to refuse, and a double's NaN
    or Infinity is kept; ValueError for what is not JSON."""
    try:
        return json.loads(value, object_pairs_hook=keyed_object)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


def _parse_spans(value: bytes, encoding: str) -> Parsed | Rejected:
    """A record the header says is an OTLP trace export in ``encoding``."""
    try:
        if encoding == OTLP_PROTO:
            return _span_batch(decode_protobuf(value, "record"), encoding)
        return _span_batch(decode_json_document(_otlp_json(value), "record"), encoding)
    except InputError as exc:
        return Rejected(DeadKind.wrong_schema, f"{encoding}: {exc.one_line()}")
    except ValueError as exc:
        return Rejected(DeadKind.malformed, f"{encoding}: malformed JSON: {exc}")


def _detect_spans(value: bytes) -> Parsed | Rejected | None:
    """An OTLP trace export without a header, as the collector's Kafka exporter sends it: JSON
    whose top level holds ``resourceSpans`` (otlp_json), or bytes that are not JSON and parse as a
    protobuf request with at least one span (otlp_proto); None for anything else."""
    start = value.lstrip()[:1]
    if start == b"{":
        if b'"resourceSpans"' not in value:
            return None
        try:
            data = _otlp_json(value)
        except ValueError:
            return None
        if not isinstance(data, dict) or "resourceSpans" not in data:
            return None
        try:
            return _span_batch(decode_json_document(data, "record"), OTLP_JSON)
        except InputError as exc:
            return Rejected(DeadKind.wrong_schema, f"{OTLP_JSON}: {exc.one_line()}")
    if not value or start == b"[":
        return None
    try:
        decoded = decode_protobuf(value, "record")
    except InputError:
        return None
    if not decoded.spans:
        return None  # bytes that parse as protobuf by chance hold no valid span: not this format
    return _span_batch(decoded, OTLP_PROTO)


def _file_name(name: str | None, key: bytes | None) -> str:
    """A safe file name for the source: its ``name`` header, else the key, else ``record``."""
    raw = name if name is not None else (key or b"").decode("utf-8", "replace")
    safe = re.sub(r"[/\\\x00]", "_", raw).encode()[-200:].decode("utf-8", "ignore")  # a name is ≤ 255 bytes
    return safe if safe not in ("", ".", "..") else "record"


def _parse_document(key: bytes | None, value: bytes, fmt: str, name: str | None) -> Parsed | Rejected:
    """Import one whole source with the importer the ``format`` header names, as from a file."""
    from ingest.pipeline import choose
    from ingest.registry import names, open_traces

    if fmt != "auto" and fmt not in names():
        known = ", ".join(dict.fromkeys([CANONICAL, "auto", *names()]))
        return Rejected(DeadKind.wrong_schema, f"unknown record format {fmt!r}; known: {known}")
    file_name = _file_name(name, key)
    with tempfile.TemporaryDirectory(prefix="auditor-record-") as tmp:
        path = Path(tmp) / file_name
        where = str(path)
        path.write_bytes(value)
        try:
            importer = choose(path, fmt)[0]
            traces = []
            for imported in open_traces(path, importer):
                header = imported.header  # validates every step (ids, order) and completes the header
                if header.source and where in header.source:
                    header = header.model_copy(update={"source": header.source.replace(where, file_name)})
                traces.append((header, tuple(imported.steps())))
        except InputError as exc:
            return Rejected(DeadKind.wrong_schema, f"{fmt}: {exc.one_line().replace(where, file_name)}")
        except Exception as exc:  # an importer bug must not stall the partition on one record
            reason = f"{fmt}: the {fmt} importer failed ({type(exc).__name__}: {exc})"
            return Rejected(DeadKind.wrong_schema, reason.replace(where, file_name))
    if not traces:
        return Rejected(DeadKind.wrong_schema, f"{fmt}: the {importer} document holds no trace")
    return Parsed(key.decode("utf-8", "replace") if key else None, Document(importer, tuple(traces)))


def encode(item: TraceHeader | TraceStep | EndRecord) -> bytes:
    """The record value for one canonical item (what StepPublisher sends)."""
    return item.model_dump_json(exclude_none=True).encode("utf-8")


def dead_letter_headers(rejected: Rejected, topic: str, partition: int, offset: int, size: int) -> list:
    """Headers that say why and where from: the dead letter keeps the original key and (bounded) value."""
    return [
        ("dlq.kind", rejected.kind.value.encode()),
        ("dlq.reason", rejected.reason.encode("utf-8")),
        ("dlq.source", f"{topic}/{partition}/{offset}".encode()),
        ("dlq.size", str(size).encode()),
    ]
