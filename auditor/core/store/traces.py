"""Traces in the event store: store whole traces, load one back, list them through a projection.

A trace lives in stream ``trace-{id}``: one ``TraceStarted`` then one ``StepRecorded`` per step.
Sidecar labels go to ``labels-{id}``, a stream no audit reads.

One trace id has one history. A document for a stored trace is compared by its content digest
(:class:`ContentHash`): the same content appends nothing; other content is refused
(:class:`TraceConflictError`, naming both digests), never merged. The one exception is the
stream's own rule for open traces: a trace the Kafka consumer started and has not closed is still
arriving, so a document whose first steps are exactly the stored ones completes it. The documents
of one input are written in one transaction: all their events or none.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json
from sqlalchemy import Column, Integer, MetaData, String, Table, Text, delete, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from auditor.core.errors import InputError, NotFoundError, StoreError, TraceConflictError
from auditor.core.lean import LeanSteps
from auditor.core.store import EventStore, Transaction, catch_up
from auditor.core.store.hashing import canonical_json
from auditor.core.store.tables import clip
from schemas.events import (
    LabelsRecorded,
    NewEvent,
    RecordedEvent,
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


# What an importer notes about its reading rather than about the run: which records it skipped
# (header metadata) and which content it set aside, where and by which rule (``withheld``).
_NOTES = frozenset({"skipped_records"})


class ContentHash:
    """A trace's content digest: the run, not the reading of it. Its header less ``source`` (where
    a copy was read from is not content: the same file by another path, or uploaded, is the same
    trace) and less the importer's notes (``withheld``, ``metadata.skipped_records``: an Inspect
    log read from its ``.eval`` archive and from its ``.json`` conversion names different places
    for the same grading fields), then every step in order, each as the JSON text the store
    writes. The stored trace is hashed the same way from its events, so a digest is never stored
    and traces stored before this rule still compare. Hashing also proves each value storable:
    text the store cannot write (a lone surrogate) is an InputError naming its field, raised
    before its event is written, so that the transaction stores nothing."""

    def __init__(self, header: dict[str, Any], where: str) -> None:
        self.where = where
        self._h = hashlib.sha256(_storable(_run_of(header), where, "the trace header"))
        self.count = 0

    def step(self, step: dict[str, Any]) -> None:
        """Add one step (its JSON form, as stored)."""
        self._h.update(b"\n")
        self._h.update(_storable(step, self.where, _step_name(step)))
        self.count += 1

    def digest(self) -> str:
        return "sha256:" + self._h.hexdigest()


def _storable(value: Any, where: str, what: str) -> bytes:
    """The JSON text the store writes for a value (its encoder, keys in the models' order on both
    sides of a comparison), or an InputError naming the field it cannot write."""
    try:
        return to_json(value)
    except (PydanticSerializationError, UnicodeEncodeError, ValueError) as exc:
        raise _unstorable(value, exc, where, what) from None


def _json_form(model: BaseModel, where: str, what: str) -> dict[str, Any]:
    """A model's JSON form, or an InputError naming the field that has none (a dict key with a
    lone surrogate fails here already)."""
    try:
        return model.model_dump(mode="json")
    except (UnicodeEncodeError, PydanticSerializationError, ValueError) as exc:
        raise _unstorable(model.model_dump(), exc, where, what) from None


def _unstorable(value: Any, exc: Exception, where: str, what: str) -> InputError:
    problem = (
        "holds text that is not Unicode (a lone surrogate such as \\ud800)"
        if "surrogate" in str(exc)
        else f"holds a value JSON cannot carry ({exc})"
    )
    return InputError(f"{what} {problem}; it cannot be stored", path=where, field=_unstorable_field(value))


def _step_name(step: TraceStep | dict[str, Any]) -> str:
    sid, index = (
        (step.step_id, step.index)
        if isinstance(step, TraceStep)
        else (step.get("step_id"), step.get("index"))
    )
    return f"step '{str(sid).encode('utf-8', 'backslashreplace').decode()}' (index {index})"


def _unstorable_field(value: Any, path: tuple[str, ...] = ()) -> str | None:
    """The dotted path of the first key or value that cannot be written as UTF-8 JSON."""
    if isinstance(value, dict | list):
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in pairs:
            here = (*path, str(key).encode("utf-8", "backslashreplace").decode())
            if not _writes(key) or not _writes(item):
                return _unstorable_field(item, here) if _writes(key) else ".".join(here)
        return None
    return ".".join(path) or None


def _writes(value: Any) -> bool:
    try:
        to_json(value)
    except (PydanticSerializationError, UnicodeEncodeError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class TraceDocument:
    """One whole trace to store; ``steps`` is one pass over its steps, ``where`` names the input."""

    header: TraceHeader
    steps: Iterable[TraceStep]
    labels: LabelsRecord | None
    where: str


@dataclass(frozen=True)
class _Stored:
    """What the store holds of a trace: its content digest and step count, and whether the Kafka
    consumer is still streaming it (started by it, not closed)."""

    digest: str
    steps: int
    streaming: bool


def write_traces(
    store: EventStore, documents: Iterable[TraceDocument], before_commit: Callable[[], None] | None = None
) -> list[AppendSummary]:
    """Store whole traces in ONE transaction under the store's append lock: every event of every
    document, or none (text the store cannot hold, a conflict, a crash, or ``before_commit``
    raising because the source changed while it was read)."""
    summaries: list[AppendSummary] = []
    written: dict[str, _Stored] = {}  # what this transaction holds: a trace twice in one input
    dbapi = store.engine.dialect.loaded_dbapi
    try:
        with store.transaction() as tx:
            for doc in documents:
                summaries.append(_write(store, tx, doc, written))
            if before_commit is not None:
                before_commit()
    except (DBAPIError, dbapi.Error) as exc:
        raise StoreError(f"storing traces failed: {exc}") from exc
    return summaries


def append_trace(
    store: EventStore, header: TraceHeader, steps: Iterable[TraceStep], labels: LabelsRecord | None = None
) -> AppendSummary:
    """Store one trace (world episodes, benchmarks, tests) in one transaction; the same trace
    again appends nothing."""
    return write_traces(store, [TraceDocument(header, steps, labels, header.source or header.trace_id)])[0]


def _write(
    store: EventStore, tx: Transaction, doc: TraceDocument, written: dict[str, _Stored]
) -> AppendSummary:
    """Hash the document's steps as they are read, appending them when the trace is new (or the
    rest of a streamed trace whose stored steps are its first); a stored trace must hash alike."""
    tid = doc.header.trace_id
    stream = trace_stream(tid)
    hasher = ContentHash(_json_form(doc.header, doc.where, "the trace header"), doc.where)  # the id too
    stored = written.get(tid) or _stored(store, stream)
    keep = stored.steps if stored is not None and stored.streaming else None  # a completion repeats these
    batch: list[NewEvent] | None = None  # None: nothing may be appended, only compared
    if stored is None:
        start = TraceStarted(header=doc.header).model_dump(mode="json")
        batch = [NewEvent(type="TraceStarted", payload=start, idempotency_key=f"trace:{tid}:header")]
    elif keep is not None:
        if keep == 0 and hasher.digest() != stored.digest:  # a streamed header, no steps yet
            raise _conflict(doc, stored.digest, hasher.digest())
        batch = []
    appended = 0
    for step in doc.steps:
        payload = {
            "type": "StepRecorded",
            "trace_id": tid,
            "step": _json_form(step, doc.where, _step_name(step)),
        }
        hasher.step(payload["step"])
        if keep is not None and hasher.count <= keep:
            if hasher.count == keep and hasher.digest() != stored.digest:  # type: ignore[union-attr]
                raise _conflict(doc, stored.digest, hasher.digest())  # type: ignore[union-attr]
        elif batch is not None:
            key = f"trace:{tid}:step:{step.step_id}"
            batch.append(NewEvent(type="StepRecorded", payload=payload, idempotency_key=key))
            if len(batch) >= _BATCH:
                appended += len(tx.append(stream, batch, look_up_keys=False))
                batch = []
    if batch:
        appended += len(tx.append(stream, batch, look_up_keys=False))
    digest = hasher.digest()
    if stored is not None and appended == 0 and digest != stored.digest:
        raise _conflict(doc, stored.digest, digest)
    if doc.labels is not None:
        _append_labels(store, tx, doc)
    written[tid] = _Stored(digest, hasher.count, streaming=False)
    return AppendSummary(tid, hasher.count, appended, hasher.count + 1 - appended)


def _append_labels(store: EventStore, tx: Transaction, doc: TraceDocument) -> None:
    """Append the sidecar labels unless the latest stored ones say the same (their ``source``
    aside, as for the trace: the same file by another path adds nothing)."""
    assert doc.labels is not None
    tid = doc.header.trace_id
    labels = _json_form(doc.labels, doc.where, "the labels")
    _storable(labels, doc.where, "the labels")
    held = load_labels(store, tid)
    if held is not None and _less_source(held.model_dump(mode="json")) == _less_source(labels):
        return
    event = NewEvent(
        type="LabelsRecorded",
        payload=LabelsRecorded(labels=doc.labels).model_dump(mode="json"),
        idempotency_key=f"labels:{tid}:{_digest(labels)}",
    )
    tx.append(labels_stream(tid), [event])


def _less_source(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "source"}


def _run_of(header: dict[str, Any]) -> dict[str, Any]:
    """A header's part that describes the run: less ``source`` and the importer's notes."""
    run = {k: v for k, v in header.items() if k not in ("source", "withheld")}
    if isinstance(run.get("metadata"), dict) and _NOTES & run["metadata"].keys():
        run["metadata"] = {k: v for k, v in run["metadata"].items() if k not in _NOTES}
    return run


def _stored(store: EventStore, stream: str) -> _Stored | None:
    """The stored trace, read on another connection: the caller holds the append lock, so what is
    committed is current."""
    hasher: ContentHash | None = None
    kafka = closed = False
    for ev in store.read_stream(stream):
        if ev.type == "TraceStarted":
            hasher = ContentHash(ev.payload["header"], stream)
            kafka = ev.metadata.get("source") == "kafka"
        elif ev.type == "StepRecorded":
            hasher = hasher or ContentHash({}, stream)
            hasher.step(ev.payload["step"])
        elif ev.type == "TraceClosed":
            closed = True
    if hasher is None:
        return None
    return _Stored(hasher.digest(), hasher.count, kafka and not closed)


def _conflict(doc: TraceDocument, stored: str, incoming: str) -> TraceConflictError:
    return TraceConflictError(
        f"{doc.where}: trace '{doc.header.trace_id}' is already stored with other content "
        f"(stored {stored}; this input {incoming}); a stored trace is never replaced or merged",
        hint="audit the stored trace by its id, or store this input under a new id with --trace-id",
    )


def _digest(value: object) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16]


def iter_trace_events(store: EventStore, trace_id: str) -> Iterator[RecordedEvent]:
    yield from store.read_stream(trace_stream(trace_id))


def load_trace(store: EventStore, trace_id: str) -> Trace:
    """Rebuild a trace from its stream (a projection computed on demand), its steps held lean
    (auditor.core.lean): an audit holds every step of the trace at once."""
    header: TraceHeader | None = None
    steps: list[TraceStep] = []
    lean = LeanSteps()
    for ev in iter_trace_events(store, trace_id):
        if ev.type == "TraceStarted":
            header = TraceHeader.model_validate(ev.payload["header"])
        elif ev.type == "StepRecorded":
            steps.append(lean.step(ev.payload["step"]))
    if header is None:
        raise NotFoundError(f"no trace with id '{trace_id}' in the store", hint="run 'auditor traces list'")
    steps.sort(key=lambda s: s.index)
    return Trace(header=header, steps=steps)


def as_stored(header: TraceHeader, steps: Iterable[TraceStep]) -> Trace:
    """The trace ``load_trace`` rebuilds once ``write_traces`` has stored these models, made
    without reading the store: each part goes through the JSON form its event holds, so what that
    form changes (a tuple, a non-finite number) changes here alike."""
    lean = LeanSteps()
    return Trace(
        header=TraceHeader.model_validate(header.model_dump(mode="json")),
        steps=[lean.step(s.model_dump(mode="json")) for s in steps],
    )


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
        """Nothing to do: the table comes with the store's schema (store revision 0003), which
        every open holds at head."""

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
                        "framework": clip(h.get("framework"), traces_view.c.framework),
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
