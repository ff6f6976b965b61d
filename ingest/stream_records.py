"""The wire format of the steps topic: one Kafka record per canonical trace line, keyed by trace id.

A record's key is the trace id (so a trace's records share one partition and keep their order); its
value is one JSON object, the same as one line of a canonical JSONL file: a header
(``{"record": "header", …}``), a step (``{"record": "step", …}``, the default), or an end record
(``{"record": "end"}``) that closes the trace. Anything else is a dead letter with a reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from schemas.trace import TraceHeader, TraceStep

FORMAT_HEADER = "format"
DEFAULT_MAX_RECORD_BYTES = 512 * 1024


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


@dataclass(frozen=True)
class Parsed:
    """A record that passed: its trace and its canonical content."""

    trace_id: str
    item: TraceHeader | TraceStep | EndRecord


@dataclass(frozen=True)
class Rejected:
    """A record that failed, with a one-line reason naming the field where there is one."""

    kind: DeadKind
    reason: str


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


class _SchemaMismatch(ValueError):
    """A record that is valid JSON but breaks the contract beyond what pydantic checks."""


# Record formats by the value of the record's ``format`` header; canonical lines are the default.
FORMATS: dict[str, Callable[[str, dict[str, Any]], TraceHeader | TraceStep | EndRecord]] = {
    "canonical": _canonical
}


def parse_record(
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]] | None = None,
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> Parsed | Rejected:
    """Decode and validate one record; never raises for bad input, returns the reason instead."""
    size = len(value or b"")
    if size > max_bytes:
        return Rejected(DeadKind.oversized, f"record is {size} bytes, the limit is {max_bytes}")
    if not key:
        return Rejected(DeadKind.malformed, "record has no key: the key must be the trace id")
    try:
        trace_id = key.decode("utf-8")
        text = (value or b"").decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(DeadKind.malformed, f"not UTF-8 at byte {exc.start}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Rejected(DeadKind.malformed, f"malformed JSON: {exc.msg} (column {exc.colno})")
    if not isinstance(data, dict):
        return Rejected(DeadKind.malformed, f"expected a JSON object, found {type(data).__name__}")
    fmt = dict(headers or ()).get(FORMAT_HEADER, b"canonical").decode("utf-8", "replace")
    if fmt not in FORMATS:
        return Rejected(DeadKind.wrong_schema, f"unknown record format {fmt!r}; known: {', '.join(FORMATS)}")
    try:
        return Parsed(trace_id, FORMATS[fmt](trace_id, data))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "record"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return Rejected(DeadKind.wrong_schema, f"field '{field}': {first['msg']}{more}")
    except _SchemaMismatch as exc:
        return Rejected(DeadKind.wrong_schema, str(exc))


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
