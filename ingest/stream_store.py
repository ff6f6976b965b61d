"""Writing a consumed batch into the event store: every trace of the batch in ONE transaction.

The consumer commits Kafka offsets only after this transaction commits. Idempotency has two layers.

- **A record's Kafka coordinates are its idempotency key.** Each event a record becomes is keyed
  ``kafka:{topic}/{partition}/{offset}`` (``#start`` is the TraceStarted that a trace's first record
  implies, ``#n`` the n-th event of a document). A batch re-delivered after a crash before the
  commit, a broker restart or a rebalance has the same coordinates, and the store's unique key
  refuses to store any of its records twice, whatever else happened to the trace.
- **Step ids still deduplicate.** Coordinates cannot see one step published twice at two offsets:
  ``auditor stream produce`` re-run after a failed backfill, a publisher retrying a send whose ack
  it missed, a trace that also came in through ``auditor ingest``. Each would store the step again
  and the audit would see it twice. So a step whose id the trace already holds is skipped, a header
  for a trace already started adds nothing, and an end record for a closed trace only announces it
  again. A document whose trace is stored with other steps is refused, not merged.

That second layer reads each trace's state (stream version, step ids, closed or not) under the
table lock, so it sees re-deliveries too and the key is the backstop. The consumer caches the state
of its open traces between batches and re-reads a trace only when its stream version moved (another
writer: a consumer before a rebalance, an idle close, a file import), so a batch costs a handful of
round trips whatever its number of traces: lock, versions, one insert of every event, commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple

from auditor.core.store import EncodedEvent, EventStore, Transaction
from ingest.stream_records import DeadKind, Document, EndRecord, Rejected
from schemas.events import NewEvent, TraceClosed, TraceStarted, trace_stream
from schemas.trace import TraceHeader, TraceStep

_CHUNK = 500  # streams per lookup statement
_step_json = TraceStep.__pydantic_serializer__.to_json  # model_dump_json's wrapper costs more than the dump


@lru_cache(maxsize=256)
def _json_text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


class Coords(NamedTuple):
    """Where a record came from: its events' idempotency key and the provenance in their metadata."""

    topic: str
    partition: int
    offset: int

    def key(self, suffix: str = "") -> str:
        return f"kafka:{self.topic}/{self.partition}/{self.offset}{suffix}"

    def metadata_json(self) -> str:
        return (
            f'{{"source":"kafka","topic":{_json_text(self.topic)},'
            f'"partition":{self.partition},"offset":{self.offset}}}'
        )


@dataclass(frozen=True)
class ClosedTrace:
    """A trace that this batch (or the idle timer) closed: what the audit workers are told."""

    trace_id: str
    step_count: int
    reason: str


@dataclass(frozen=True)
class DocumentTrace:
    """One trace of a document record; ``first`` numbers its events within the document."""

    header: TraceHeader
    steps: tuple[TraceStep, ...]
    first: int


Item = TraceHeader | TraceStep | EndRecord | DocumentTrace


@dataclass
class TraceBatch:
    """One trace's records from one batch, in partition order."""

    trace_id: str
    items: list[tuple[Item, Coords]] = field(default_factory=list)


@dataclass
class TraceState:
    """What the store holds of one trace, as far as the batch writer needs it."""

    version: int = 0  # the stream's version; 0: nothing stored
    step_ids: set[str] = field(default_factory=set)
    closed_steps: int | None = None  # the step count its TraceClosed announced; None while open


@dataclass(frozen=True)
class BatchResult:
    """What a stored batch did: traces closed (to announce) and document records refused."""

    closed: list[ClosedTrace]
    rejected: list[tuple[Coords, Rejected]]


def _load(tx: Transaction, streams: Sequence[str]) -> dict[str, TraceState]:
    """Read the state of traces from their streams: versions, step ids, the close."""
    step_id = tx.json_text("payload", "step", "step_id")
    out: dict[str, TraceState] = {}
    for i in range(0, len(streams), _CHUNK):
        where, params = tx.any_of("stream_id", streams[i : i + _CHUNK])
        query = (
            f"SELECT stream_id, stream_version, type, CASE WHEN type = 'StepRecorded' THEN {step_id} END "
            f"FROM events WHERE {where} ORDER BY stream_id, stream_version"
        )
        for stream, version, kind, sid in tx.execute(query, params):
            state = out.setdefault(stream, TraceState())
            state.version = version
            if sid is not None:
                state.step_ids.add(sid)
            elif kind == "TraceClosed" and state.closed_steps is None:
                state.closed_steps = len(state.step_ids)
    return out


def _states(
    tx: Transaction, trace_ids: Sequence[str], cache: Mapping[str, TraceState]
) -> dict[str, TraceState]:
    """Each trace's state under the lock: cached where its stream has not moved, else re-read."""
    streams = [trace_stream(t) for t in trace_ids]
    versions = tx.versions(streams)
    states: dict[str, TraceState] = {}
    stale: list[str] = []
    for tid, stream in zip(trace_ids, streams, strict=True):
        version = versions.get(stream, 0)
        cached = cache.get(tid)
        if cached is not None and cached.version == version:
            states[tid] = cached
        elif version == 0:
            states[tid] = TraceState()
        else:
            stale.append(stream)
    loaded = _load(tx, stale) if stale else {}
    states.update({s.removeprefix("trace-"): loaded[s] for s in stale})
    return states


class _Planner:
    """Turns one trace's records into encoded events against its state (which it advances)."""

    def __init__(self, tb: TraceBatch, state: TraceState, source: str, out: list[EncodedEvent]) -> None:
        self.tid, self.state, self.source, self.out = tb.trace_id, state, source, out
        self.stream = trace_stream(tb.trace_id)
        self._tid_json = json.dumps(tb.trace_id, ensure_ascii=False)

    def emit(self, kind: str, payload_json: str, coords: Coords, suffix: str = "") -> None:
        self.state.version += 1
        meta, key = coords.metadata_json(), coords.key(suffix)
        self.out.append(EncodedEvent(self.stream, self.state.version, kind, payload_json, meta, key))

    def start(self, header: TraceHeader, coords: Coords, suffix: str) -> None:
        self.emit("TraceStarted", TraceStarted(header=header).model_dump_json(), coords, suffix)

    def step(self, step: TraceStep, coords: Coords, suffix: str = "") -> None:
        if step.step_id in self.state.step_ids:
            return  # the same step published again at another offset
        self.state.step_ids.add(step.step_id)
        payload = f'{{"type":"StepRecorded","trace_id":{self._tid_json},"step":{_step_json(step).decode()}}}'
        self.emit("StepRecorded", payload, coords, suffix)

    def close(self, reason: str, coords: Coords, suffix: str = "") -> ClosedTrace:
        """Close the trace, or only announce it again when it is closed already."""
        if self.state.closed_steps is None:
            count = len(self.state.step_ids)
            closed = TraceClosed(trace_id=self.tid, step_count=count, reason=reason)
            self.emit("TraceClosed", closed.model_dump_json(), coords, suffix)
            self.state.closed_steps = count
        return ClosedTrace(self.tid, self.state.closed_steps, reason)

    def record(self, item: Item, coords: Coords) -> ClosedTrace | Rejected | None:
        if isinstance(item, DocumentTrace):
            return self.document(item, coords)
        if self.state.version == 0:  # the first record of the trace starts it
            if isinstance(item, TraceHeader):
                self.start(item, coords, "")
                return None
            self.start(TraceHeader(trace_id=self.tid, source=self.source), coords, "#start")
        if isinstance(item, TraceStep):
            self.step(item, coords)
        elif isinstance(item, EndRecord):
            return self.close(item.reason, coords)
        return None  # a header once the trace is started adds nothing

    def document(self, doc: DocumentTrace, coords: Coords) -> ClosedTrace | Rejected | None:
        """A whole trace: stored and closed if new, a no-op if stored already, else refused."""
        if self.state.version == 0:
            self.start(doc.header, coords, f"#{doc.first}")
            for n, step in enumerate(doc.steps, start=doc.first + 1):
                self.step(step, coords, f"#{n}")
            return self.close("document", coords, f"#{doc.first + len(doc.steps) + 1}")
        if all(s.step_id in self.state.step_ids for s in doc.steps):
            closed = self.state.closed_steps
            return ClosedTrace(self.tid, closed, "document") if closed is not None else None
        return Rejected(
            DeadKind.conflict,
            f"trace '{self.tid}' is already stored with other steps: a document must hold whole "
            "traces, and a stored trace is never merged with another source",
        )


def write_batch(
    store: EventStore,
    traces: Iterable[TraceBatch],
    source: str,
    cache: MutableMapping[str, TraceState] | None = None,
) -> BatchResult:
    """Append all traces' records in one transaction; returns what closed and what was refused.

    ``cache`` keeps trace states between batches (the consumer's); it is checked against the
    store under the lock, and the batch's traces are dropped from it if the transaction fails.
    """
    traces = [tb for tb in traces if tb.items]
    if not traces:  # every record of the batch was a dead letter
        return BatchResult([], [])
    cache = {} if cache is None else cache
    try:
        with store.transaction() as tx:
            states = _states(tx, [tb.trace_id for tb in traces], cache)
            events: list[EncodedEvent] = []
            closed: list[ClosedTrace] = []
            rejected: list[tuple[Coords, Rejected]] = []
            for tb in traces:
                planner = _Planner(tb, states[tb.trace_id], source, events)
                for item, coords in tb.items:
                    outcome = planner.record(item, coords)
                    if isinstance(outcome, ClosedTrace):
                        closed.append(outcome)
                    elif isinstance(outcome, Rejected):
                        rejected.append((coords, outcome))
            tx.append_encoded(events)
    except BaseException:
        for tb in traces:
            cache.pop(tb.trace_id, None)
        raise
    cache.update(states)
    for c in closed:  # a closed trace rarely gets more records: re-read it if it does
        cache.pop(c.trace_id, None)
    return BatchResult(closed, rejected)


class IdleCheck(StrEnum):
    closed = "closed"
    already_closed = "already_closed"
    active = "active"
    missing = "missing"


def close_idle(store: EventStore, trace_id: str, idle_s: float) -> tuple[IdleCheck, ClosedTrace | None]:
    """Close a trace whose last stored event is older than ``idle_s``. The store is the clock's
    truth, so a trace that another consumer is still feeding is left open. An idle close has no
    record behind it, so its key is the trace's own: one close per trace."""
    stream = trace_stream(trace_id)
    with store.transaction() as tx:
        state = _load(tx, [stream]).get(stream)
        if state is None:
            return IdleCheck.missing, None
        if state.closed_steps is not None:
            return IdleCheck.already_closed, None
        [(recorded_at,)] = tx.execute(
            "SELECT recorded_at FROM events WHERE stream_id = ? AND stream_version = ?",
            (stream, state.version),
        )
        age = (datetime.now(UTC) - datetime.fromisoformat(recorded_at)).total_seconds()
        if age < idle_s:
            return IdleCheck.active, None
        count = len(state.step_ids)
        event = NewEvent(
            type="TraceClosed",
            payload=TraceClosed(trace_id=trace_id, step_count=count, reason="idle").model_dump(mode="json"),
            idempotency_key=f"trace:{trace_id}:closed",
        )
        tx.append(stream, [event])
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


def group_by_trace(items: Iterable[tuple[str | None, object, Coords]]) -> Mapping[str, TraceBatch]:
    """Group parsed records by trace, keeping each trace's partition order; a document's traces
    go to their own ids."""
    out: dict[str, TraceBatch] = {}
    for trace_id, item, coords in items:
        if isinstance(item, Document):
            first = 0
            for header, steps in item.traces:
                tb = out.setdefault(header.trace_id, TraceBatch(header.trace_id))
                tb.items.append((DocumentTrace(header, steps, first), coords))
                first += len(steps) + 2  # header, steps, close
        else:
            assert trace_id is not None, "a canonical record is keyed by its trace id"
            out.setdefault(trace_id, TraceBatch(trace_id)).items.append((item, coords))  # type: ignore[arg-type]
    return out
