"""Writing a consumed batch into the event store: every trace of the batch in ONE transaction.

The consumer commits Kafka offsets only after this transaction commits. Every event carries an
idempotency key derived from the trace (the same keys ``auditor.traces.append_trace`` uses), so a
batch re-delivered after a crash, or a trace that also arrived from a file, appends nothing twice.
The Kafka coordinates of each record travel in the event's metadata.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from auditor.store import EventStore
from ingest.stream_records import EndRecord
from schemas.events import NewEvent, RecordedEvent, StepRecorded, TraceClosed, TraceStarted, trace_stream
from schemas.trace import TraceHeader, TraceStep


@dataclass(frozen=True)
class Coords:
    """Where a record came from: the provenance stored with the event it became."""

    topic: str
    partition: int
    offset: int

    def metadata(self) -> dict[str, object]:
        return {"source": "kafka", "topic": self.topic, "partition": self.partition, "offset": self.offset}


@dataclass(frozen=True)
class ClosedTrace:
    """A trace that this batch (or the idle timer) closed: what the audit workers are told."""

    trace_id: str
    step_count: int
    reason: str


@dataclass
class TraceBatch:
    """One trace's records from one batch, in partition order."""

    trace_id: str
    items: list[tuple[TraceHeader | TraceStep | EndRecord, Coords]] = field(default_factory=list)


def _started(header: TraceHeader, coords: Coords | None) -> NewEvent:
    return NewEvent(
        type="TraceStarted",
        payload=TraceStarted(header=header).model_dump(mode="json"),
        metadata=coords.metadata() if coords else {},
        idempotency_key=f"trace:{header.trace_id}:header",
    )


def _step(trace_id: str, step: TraceStep, coords: Coords) -> NewEvent:
    return NewEvent(
        type="StepRecorded",
        payload=StepRecorded(trace_id=trace_id, step=step).model_dump(mode="json"),
        metadata=coords.metadata(),
        idempotency_key=f"trace:{trace_id}:step:{step.step_id}",
    )


def _closed(trace_id: str, step_count: int, reason: str, coords: Coords | None) -> NewEvent:
    return NewEvent(
        type="TraceClosed",
        payload=TraceClosed(trace_id=trace_id, step_count=step_count, reason=reason).model_dump(mode="json"),
        metadata=coords.metadata() if coords else {},
        idempotency_key=f"trace:{trace_id}:closed",
    )


def _sql(store: EventStore, query: str) -> str:
    return query.replace("?", "%s") if store.dialect == "postgresql" else query


def _version(store: EventStore, cur: Any, stream: str) -> int:
    cur.execute(
        _sql(store, "SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream_id = ?"), (stream,)
    )
    return int(cur.fetchone()[0])


def _step_count(store: EventStore, cur: Any, stream: str) -> int:
    query = "SELECT COUNT(*) FROM events WHERE stream_id = ? AND type = 'StepRecorded'"
    cur.execute(_sql(store, query), (stream,))
    return int(cur.fetchone()[0])


@contextmanager
def _transaction(store: EventStore) -> Iterator[Any]:
    """One driver-level write transaction over many streams.

    The store's public ``append`` is one transaction per stream; a consumed batch spans many
    traces, so the batch writer drives the store's in-transaction append on one cursor (the
    lead is asked for a public multi-stream append to replace this).
    """
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        if store.dialect == "sqlite":
            cur.execute("BEGIN IMMEDIATE")
        yield cur
        raw.commit()
    except BaseException:
        raw.rollback()
        raise
    finally:
        raw.close()


def _append(
    store: EventStore, cur: Any, stream: str, batch: Sequence[NewEvent], look_up_keys: bool
) -> list[RecordedEvent]:
    return store._append_in(cur, stream, batch, None, look_up_keys) if batch else []


def _write_trace(
    store: EventStore, cur: Any, tb: TraceBatch, source: str, known: bool, look: bool
) -> list[ClosedTrace]:
    """Append one trace's records of the batch.

    On the insert-only attempt (``look`` False) every event is new, so an end record's step count is
    the steps already stored plus those pending, and the TraceClosed event rides in the same append.
    With the key lookup some records may already be stored, so the count is taken after appending.
    """
    stream = trace_stream(tb.trace_id)
    first, first_coords = tb.items[0]
    pending: list[NewEvent] = []
    if not known:  # the key makes a repeated TraceStarted a no-op; skipping it keeps batches insert-only
        header = first if isinstance(first, TraceHeader) else TraceHeader(trace_id=tb.trace_id, source=source)
        pending.append(_started(header, first_coords))
    empty_before = not known and not look  # an insert-only TraceStarted proves the stream was empty
    flushed = 0
    closed: list[ClosedTrace] = []
    for item, coords in tb.items:
        if isinstance(item, TraceStep):
            pending.append(_step(tb.trace_id, item, coords))
        elif isinstance(item, EndRecord):
            steps_pending = sum(1 for e in pending if e.type == "StepRecorded")
            if look:
                _append(store, cur, stream, pending, look)
                pending = []
                count = _step_count(store, cur, stream)
            else:
                count = (flushed if empty_before else _step_count(store, cur, stream)) + steps_pending
            pending.append(_closed(tb.trace_id, count, item.reason, coords))
            _append(store, cur, stream, pending, look)
            flushed, pending = count, []
            closed.append(ClosedTrace(tb.trace_id, count, item.reason))
        # a header after the first record is already covered by the TraceStarted key
    _append(store, cur, stream, pending, look)
    return closed


def write_batch(
    store: EventStore, traces: Iterable[TraceBatch], source: str, known: Container[str] = ()
) -> list[ClosedTrace]:
    """Append all traces' records in one transaction; returns the traces that end records closed.

    ``known`` names traces already started in the store. The first attempt inserts without looking
    idempotency keys up (the common case: everything is new); a re-delivered record trips the
    unique key, and the whole batch is redone with the lookup, which skips what is stored.
    """
    traces = [tb for tb in traces if tb.items]
    integrity = store.engine.dialect.loaded_dbapi.IntegrityError
    for look in (False, True):
        try:
            with _transaction(store) as cur:
                closed: list[ClosedTrace] = []
                for tb in traces:
                    closed.extend(_write_trace(store, cur, tb, source, tb.trace_id in known, look))
                return closed
        except integrity:
            if look:
                raise
    raise AssertionError("unreachable")


class IdleCheck(StrEnum):
    closed = "closed"
    already_closed = "already_closed"
    active = "active"
    missing = "missing"


def close_idle(store: EventStore, trace_id: str, idle_s: float) -> tuple[IdleCheck, ClosedTrace | None]:
    """Close a trace whose last stored event is older than ``idle_s``. The store is the clock's
    truth, so a trace that another consumer is still feeding is left open."""
    stream = trace_stream(trace_id)
    with _transaction(store) as cur:
        version = _version(store, cur, stream)
        if version == 0:
            return IdleCheck.missing, None
        cur.execute(
            _sql(store, "SELECT type, recorded_at FROM events WHERE stream_id = ? AND stream_version = ?"),
            (stream, version),
        )
        last_type, recorded_at = cur.fetchone()
        if last_type == "TraceClosed":
            return IdleCheck.already_closed, None
        age = (datetime.now(UTC) - datetime.fromisoformat(recorded_at)).total_seconds()
        if age < idle_s:
            return IdleCheck.active, None
        count = _step_count(store, cur, stream)
        _append(store, cur, stream, [_closed(trace_id, count, "idle", None)], True)
    return IdleCheck.closed, ClosedTrace(trace_id, count, "idle")


def open_traces(store: EventStore, topic: str) -> list[str]:
    """Traces this topic started and nobody closed, so that a restarted consumer resumes their idle
    timers (traces imported from files are never closed by a consumer)."""
    started: dict[str, None] = {}
    for ev in store.read_all(types=["TraceStarted", "TraceClosed"]):
        tid = ev.stream_id.removeprefix("trace-")
        if ev.type == "TraceStarted":
            if ev.metadata.get("source") == "kafka" and ev.metadata.get("topic") == topic:
                started[tid] = None
        else:
            started.pop(tid, None)
    return list(started)


def group_by_trace(items: Iterable[tuple[str, object, Coords]]) -> Mapping[str, TraceBatch]:
    """Group parsed records by trace, keeping each trace's partition order."""
    out: dict[str, TraceBatch] = {}
    for trace_id, item, coords in items:
        out.setdefault(trace_id, TraceBatch(trace_id)).items.append((item, coords))  # type: ignore[arg-type]
    return out
