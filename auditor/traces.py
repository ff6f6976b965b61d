"""Traces in the event store: append one idempotently, load it back, list them through a projection.

A trace lives in stream ``trace-{id}``: one ``TraceStarted`` then one ``StepRecorded`` per step.
Sidecar labels go to ``labels-{id}``, a stream no audit reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, delete, select
from sqlalchemy.engine import Connection

from auditor.errors import NotFoundError
from auditor.store import EventStore, catch_up
from auditor.store.hashing import canonical_json
from schemas.events import (
    LabelsRecorded,
    NewEvent,
    RecordedEvent,
    StepRecorded,
    TraceStarted,
    labels_stream,
    trace_stream,
)
from schemas.trace import LabelsRecord, Trace, TraceHeader, TraceStep

_BATCH = 500


@dataclass(frozen=True)
class AppendSummary:
    trace_id: str
    steps: int
    appended: int
    already_present: int


def _step_event(trace_id: str, step: TraceStep) -> NewEvent:
    payload = StepRecorded(trace_id=trace_id, step=step).model_dump(mode="json", exclude_defaults=False)
    return NewEvent(
        type="StepRecorded", payload=payload, idempotency_key=f"trace:{trace_id}:step:{step.step_id}"
    )


def append_trace(
    store: EventStore, header: TraceHeader, steps: Iterable[TraceStep], labels: LabelsRecord | None = None
) -> AppendSummary:
    """Append a trace in batches; re-appending the same trace appends nothing new.

    The caller validates the whole input before calling (nothing partial for bad input); batches
    here only bound memory for huge traces.
    """
    tid = header.trace_id
    stream = trace_stream(tid)
    before = store.stream_version(stream)
    started, held = _held(store, stream) if before else (False, set())
    if not started:
        start = NewEvent(
            type="TraceStarted",
            payload=TraceStarted(header=header).model_dump(mode="json"),
            idempotency_key=f"trace:{tid}:header",
        )
        store.append(stream, [start])
    total = 0
    batch: list[NewEvent] = []
    for step in steps:
        total += 1
        if step.step_id in held:
            continue
        batch.append(_step_event(tid, step))
        if len(batch) >= _BATCH:
            store.append(stream, batch)
            batch = []
    if batch:
        store.append(stream, batch)
    appended = store.stream_version(stream) - before
    if labels is not None:
        store.append(
            labels_stream(tid),
            [
                NewEvent(
                    type="LabelsRecorded",
                    payload=LabelsRecorded(labels=labels).model_dump(mode="json"),
                    idempotency_key=f"labels:{tid}:{_digest(labels.model_dump(mode='json'))}",
                )
            ],
        )
    return AppendSummary(tid, total, appended, total + 1 - appended)


def _held(store: EventStore, stream: str) -> tuple[bool, set[str]]:
    """What a stored trace already holds, whoever appended it (a file import keys steps by id, the
    Kafka consumer by offset): its header, and its step ids, so neither path stores a step twice."""
    started, held = False, set()
    for ev in store.read_stream(stream):
        if ev.type == "TraceStarted":
            started = True
        elif ev.type == "StepRecorded":
            held.add(ev.payload["step"]["step_id"])
    return started, held


def _digest(value: object) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16]


def iter_trace_events(store: EventStore, trace_id: str) -> Iterator[RecordedEvent]:
    yield from store.read_stream(trace_stream(trace_id))


def load_trace(store: EventStore, trace_id: str) -> Trace:
    """Rebuild a trace from its stream (a projection computed on demand)."""
    header: TraceHeader | None = None
    steps: list[TraceStep] = []
    for ev in iter_trace_events(store, trace_id):
        if ev.type == "TraceStarted":
            header = TraceHeader.model_validate(ev.payload["header"])
        elif ev.type == "StepRecorded":
            steps.append(TraceStep.model_validate(ev.payload["step"]))
    if header is None:
        raise NotFoundError(f"no trace with id '{trace_id}' in the store", hint="run 'auditor traces list'")
    steps.sort(key=lambda s: s.index)
    return Trace(header=header, steps=steps)


def load_labels(store: EventStore, trace_id: str) -> LabelsRecord | None:
    """The sidecar labels of a trace, for evaluation harnesses only (never for an audit)."""
    record = None
    for ev in store.read_stream(labels_stream(trace_id)):
        record = LabelsRecord.model_validate(ev.payload["labels"])
    return record


def trace_digest(trace: Trace) -> str:
    """sha256 over the canonical header and steps: a report names exactly what it audited."""
    h = hashlib.sha256()
    h.update(canonical_json(trace.header.model_dump(mode="json")).encode())
    for s in trace.steps:
        h.update(b"\n")
        h.update(canonical_json(s.model_dump(mode="json")).encode())
    return "sha256:" + h.hexdigest()


# -- the traces list projection ------------------------------------------------------------------

_meta = MetaData()
traces_view = Table(
    "view_traces",
    _meta,
    Column("trace_id", String(512), primary_key=True),
    Column("source", Text),
    Column("framework", String(200)),
    Column("task", Text),
    Column("steps", Integer, nullable=False),
    Column("participants", Text, nullable=False),
    Column("first_position", Integer, nullable=False),
)


@dataclass(frozen=True)
class TraceSummary:
    trace_id: str
    source: str | None
    framework: str | None
    task: str | None
    steps: int
    participants: list[str]


class TracesProjection:
    """One row per trace: counts and participants, for `auditor traces list`."""

    name = "traces"
    event_types = ("TraceStarted", "StepRecorded")

    def create(self, conn: Connection) -> None:
        _meta.create_all(conn)

    def reset(self, conn: Connection) -> None:
        conn.execute(delete(traces_view))

    def apply(self, conn: Connection, events: Iterable[RecordedEvent]) -> None:
        rows: dict[str, dict] = {}

        def row(tid: str) -> dict | None:
            if tid not in rows:
                found = (
                    conn.execute(select(traces_view).where(traces_view.c.trace_id == tid)).mappings().first()
                )
                if found is None:
                    return None
                rows[tid] = {**found, "participants": json.loads(found["participants"]), "_new": False}
            return rows[tid]

        for ev in events:
            if ev.type == "TraceStarted":
                h = ev.payload["header"]
                tid = h["trace_id"]
                if row(tid) is None:
                    rows[tid] = {
                        "trace_id": tid,
                        "source": h.get("source"),
                        "framework": h.get("framework"),
                        "task": (h.get("task") or "")[:500] or None,
                        "steps": 0,
                        "participants": [],
                        "first_position": ev.global_position,
                        "_new": True,
                    }
            else:
                r = row(ev.payload["trace_id"])
                if r is None:
                    continue
                r["steps"] += 1
                actor = ev.payload["step"]["actor"]
                if actor not in r["participants"]:
                    r["participants"].append(actor)
        for r in rows.values():
            values = {k: v for k, v in r.items() if k != "_new"}
            values["participants"] = json.dumps(values["participants"])
            if r["_new"]:
                conn.execute(traces_view.insert().values(**values))
            else:
                conn.execute(
                    traces_view.update().where(traces_view.c.trace_id == r["trace_id"]).values(**values)
                )


def list_traces(store: EventStore) -> list[TraceSummary]:
    projection = TracesProjection()
    catch_up(store, projection)
    with store.engine.connect() as conn:
        rows = conn.execute(select(traces_view).order_by(traces_view.c.first_position)).mappings().all()
    return [
        TraceSummary(
            r["trace_id"], r["source"], r["framework"], r["task"], r["steps"], json.loads(r["participants"])
        )
        for r in rows
    ]
