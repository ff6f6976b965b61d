"""Spans that arrive over time, gathered in the event store until their trace is complete.

OpenTelemetry exports a trace's spans as they end: over seconds or minutes, in several batches,
from several services. Nothing waits in memory for the rest:

- **Every span is stored on arrival**: one ``SpanReceived`` event per span in the stream
  ``spans-{otel trace id}``, its idempotency key ``span:{trace id}:{span id}``, so a retried export
  or a re-delivered Kafka record stores nothing twice. A span id sent again with other content is
  refused (``Received.refused``, what OTLP's partial success reports): the first content stays.
  With redaction on, the two are compared redacted, their placeholders' numbers aside (a trace's
  numbering restarts after its completion), so a change only inside a redacted value is no change.
  A batch's spans go in one transaction, which concurrent batches share (``ingest.group_commit``:
  one writer, one fsync, each caller answered once its spans are committed); the transaction also
  appends one ``SpanTracesOpened`` to the stream ``span-traces`` naming the traces whose first span
  it stored, so that a restart finds every trace without reading spans. With redaction on, spans
  are redacted before they are stored (``ingest.span_redact``).
- **A trace is complete** when its root span (no parent) has ended and no span of it arrived for
  ``idle_s``, or when a flush asks for it. A trace whose root never comes (it ended in a service
  that does not export here) is completed after ``rootless_s`` of silence. The store's clock
  decides (each event's ``recorded_at``), so a trace that another process still feeds stays open.
- **Completion** appends ``SpanTraceCompleted`` (revision ``n``, the stream version it covers)
  under the store's lock, then rebuilds one OTLP JSON document from the stored spans and imports
  it with the span importers as a file would be (``auditor ingest``: GenAI, OpenInference, Vercel
  AI …), stores the trace and its ``TraceClosed``, hands it on (``Sink``: the audit workers' notice,
  or an audit in-process) and records ``SpanTraceAssembled`` (or ``SpanTraceRejected`` with the
  importer's reason, e.g. spans without any GenAI content).
- **Late spans** (arriving after a completion) are stored like any other and make the trace due
  again; its next revision holds every span so far and is stored as a NEW trace, id
  ``{importer's id}-r{n}`` (``otel-4bf9…-r2``), with ``metadata.span_revision`` = n and
  ``metadata.revises`` = the previous revision's id. A report is never replaced or merged: each
  revision gets its own. An id held by another trace (one ``auditor ingest`` stored from a file
  of the same spans, say) is never replaced or merged: the revision goes to the next free id of
  that sequence (``otel-4bf9…-r2``, ``metadata.revises`` naming the held one), so it is stored and
  audited, and the revisions after it follow on.
- **Restart-safe**: ``recover()`` rebuilds the open traces and finishes any completion that a crash
  interrupted from the store alone, reading the bookkeeping events of every trace and the spans of
  the open ones only; every step is idempotent (the trace's digest, the close's key, the audit's
  marker).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from auditor.core.errors import AuditorError, InputError, StoreError, TraceConflictError
from auditor.core.store import EncodedEvent, EventStore, Reader, Transaction
from auditor.core.store.hashing import compact_json
from ingest.group_commit import GroupCommit
from ingest.otlp_request import ReceivedSpan, essence, otlp_document
from ingest.redact import _PLACED
from ingest.span_redact import SpanRedaction
from ingest.spans import SpanDocument
from schemas.events import NewEvent, TraceClosed, trace_stream
from schemas.trace import LabelsRecord, Trace, TraceHeader, TraceStep

log = logging.getLogger("auditor.spans")

OPENED = "SpanTracesOpened"  # in OPENED_STREAM: the traces whose first span a transaction stored
RECEIVED = "SpanReceived"
COMPLETED = "SpanTraceCompleted"
ASSEMBLED = "SpanTraceAssembled"
REJECTED = "SpanTraceRejected"
PREFIX = "spans-"
OPENED_STREAM = "span-traces"
_CHUNK = 500
_SHIFTS = 100  # ids tried past a revision's own when other traces hold them (see the docstring)


def _content(payload: dict[str, Any], redacted: bool = False) -> Any:
    """What tells a span sent again from a span id reused for other content (``essence``); of a
    redacted span, with every placeholder's number dropped, since a trace's numbering starts again
    after its completion."""
    if redacted:
        payload = json.loads(_PLACED.sub(lambda m: f"[REDACTED_{m.group(1)}]", compact_json(payload)))
    return essence(payload)


def spans_stream(otel_trace_id: str) -> str:
    return f"{PREFIX}{otel_trace_id}"


def revision_id(base: str, revision: int) -> str:
    """The stored trace id of a revision: the importer's id, suffixed from the second on."""
    return base if revision == 1 else f"{base}-r{revision}"


@dataclass(frozen=True)
class AssemblySettings:
    """``idle_s``: silence after the root span's end before a trace is complete; ``rootless_s``:
    silence after which a trace without a root span is completed anyway; ``tick_s``: how often
    open traces are checked."""

    idle_s: float = 30.0
    rootless_s: float = 600.0
    tick_s: float = 0.25

    @classmethod
    def from_env(cls) -> AssemblySettings:
        """From ``AUDITOR_SPAN_IDLE_S`` and ``AUDITOR_SPAN_ROOTLESS_S`` (seconds), else the defaults.
        The tick is at most a quarter second: a trace waits for the next tick after its idle time,
        and the check costs a pass over the open traces in memory."""
        idle = float(os.environ.get("AUDITOR_SPAN_IDLE_S", cls.idle_s))
        rootless = float(os.environ.get("AUDITOR_SPAN_ROOTLESS_S", max(cls.rootless_s, idle)))
        return cls(idle, rootless, min(max(idle / 8, 0.05), 0.25))


@dataclass(frozen=True)
class AssembledTrace:
    """A completed revision, stored as a closed trace: what the sink audits or announces.
    ``trace`` is the trace as this assembly stored it, for an audit in this process (no reload);
    None when the store held it already (a recovery, a file of the same spans): the store's is
    the one to audit."""

    trace_id: str
    otel_trace_id: str
    revision: int
    step_count: int
    reason: str  # idle, rootless or flush
    trace: Trace | None = field(default=None, compare=False, repr=False)


Sink = Callable[[AssembledTrace], None]


@dataclass(frozen=True)
class Received:
    """What a batch of spans did: spans stored now, spans the store already held (as sent again),
    and why each span refused was (its id held with other content); ``refused_spans`` are those
    spans, as given, in the same order (for a caller that reports each where it came from)."""

    stored: int
    duplicates: int
    refused: tuple[str, ...] = ()
    refused_spans: tuple[ReceivedSpan, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class _Batch:
    """One ``receive`` call's spans (by idempotency key), their events' metadata, and the spans it
    repeated with other content (refused before the group commit)."""

    spans: dict[str, ReceivedSpan]
    meta: str
    refused: tuple[ReceivedSpan, ...] = ()


def _repeated(s: ReceivedSpan) -> str:
    return (
        f"span {s.span_id} of trace {s.trace_id} was already received with other content; the first is kept"
    )


def _received(stored: int, duplicates: int, refused: Sequence[ReceivedSpan]) -> Received:
    return Received(stored, duplicates, tuple(_repeated(s) for s in refused), tuple(refused))


@dataclass
class _Open:
    """This process's view of a trace with spans not yet completed (the store has the truth)."""

    last_at: float  # wall-clock time of its last span
    root: bool | None  # its root span has ended; None: not known here (late spans)


@dataclass
class _Stream:
    """One spans stream read under the lock."""

    version: int = 0
    spans: list[tuple[int, ReceivedSpan]] = field(default_factory=list)
    last_span_at: datetime | None = None
    completed: list[tuple[int, int]] = field(default_factory=list)  # (revision, through version)
    finished: set[int] = field(default_factory=set)  # revisions assembled or rejected

    @property
    def pending_spans(self) -> bool:
        through = self.completed[-1][1] if self.completed else 0
        return any(v > through for v, _ in self.spans)

    @property
    def root_ended(self) -> bool:
        return any(s.parent_id is None and s.end_ns > 0 for _, s in self.spans)


def _read_stream(reader: Reader, stream: str) -> _Stream:
    query = "SELECT stream_version, type, payload, recorded_at FROM events WHERE stream_id = ? ORDER BY stream_version"
    out = _Stream()
    for version, kind, payload, recorded_at in reader.execute(query, (stream,)):
        out.version = version
        data = json.loads(payload) if isinstance(payload, str) else payload
        if kind == RECEIVED:
            out.spans.append((version, ReceivedSpan.from_payload(data)))
            out.last_span_at = datetime.fromisoformat(str(recorded_at))
        elif kind == COMPLETED:
            out.completed.append((int(data["revision"]), int(data["through_version"])))
        elif kind in (ASSEMBLED, REJECTED):
            out.finished.add(int(data["revision"]))
    return out


class SpanAssembly:
    """Store spans as they arrive and turn each completed trace into a stored, closed trace.

    ``source`` names where spans come from (``otlp-http``, ``kafka:{topic}``) in the stored
    trace headers; ``sink`` takes each assembled trace (an audit, a notice to the workers);
    ``redaction``, when given, redacts every span before it is stored."""

    def __init__(
        self,
        store: EventStore,
        settings: AssemblySettings,
        source: str,
        sink: Sink,
        redaction: SpanRedaction | None = None,
    ) -> None:
        self.store, self.settings, self.source, self.sink = store, settings, source, sink
        self.redaction = redaction
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()  # the open-trace view; the store serialises the rest
        self._commits: GroupCommit[_Batch, Received] = GroupCommit(self._store)

    @property
    def open_count(self) -> int:
        return len(self._open)

    # -- arrival ---------------------------------------------------------------------------------
    def receive(self, spans: Iterable[ReceivedSpan], provenance: dict[str, Any] | None = None) -> Received:
        """Store every new span of the batch; spans already stored are skipped. Returns once the
        spans are committed (with those of concurrent calls, in one transaction)."""
        unique: dict[str, ReceivedSpan] = {}
        refused = []
        for s in spans:
            first = unique.setdefault(f"span:{s.trace_id}:{s.span_id}", s)
            if first is not s and _content(first.payload()) != _content(s.payload()):
                refused.append(s)
        if not unique:
            return Received(0, 0)
        meta = compact_json({"source": self.source, **(provenance or {})})
        return self._commits.submit(_Batch(unique, meta, tuple(refused)))

    def _store(self, batches: Sequence[_Batch]) -> list[Received]:
        """Append the new spans of ``batches`` in one transaction (the group commit's writer)."""
        dbapi = self.store.engine.dialect.loaded_dbapi
        try:
            with self.store.transaction() as tx:
                held = self._held(tx, list(dict.fromkeys(k for b in batches for k in b.spans)))
                taken: dict[str, ReceivedSpan] = {}  # by a batch before, in this group
                fresh: list[list[tuple[str, ReceivedSpan, str]]] = []
                changed: list[list[ReceivedSpan]] = []
                for b in batches:  # a key in two batches of the group is stored for the first
                    mine = [(k, s, b.meta) for k, s in b.spans.items() if k not in held and k not in taken]
                    changed.append(list(self._changed(tx, b, held, taken)))
                    taken.update((k, s) for k, s, _ in mine)
                    fresh.append(mine)
                events = self._events(tx, [f for mine in fresh for f in mine])
                tx.append_encoded(events)
        except dbapi.Error as exc:
            raise StoreError(f"storing {sum(len(b.spans) for b in batches)} spans failed: {exc}") from exc
        now = time.time()
        with self._lock:
            for mine in fresh:
                for _, s, _ in mine:
                    state = self._open.get(s.trace_id)
                    root = s.parent_id is None and s.end_ns > 0
                    if state is None:
                        self._open[s.trace_id] = _Open(now, True if root else None)
                    else:
                        state.last_at = now
                        state.root = True if root or state.root else state.root
        return [
            _received(len(mine), len(b.spans) - len(mine) - len(no), (*b.refused, *no))
            for b, mine, no in zip(batches, fresh, changed, strict=True)
        ]

    def _changed(
        self, tx: Transaction, batch: _Batch, held: dict[str, Any], taken: dict[str, ReceivedSpan]
    ) -> Iterator[ReceivedSpan]:
        """The spans of ``batch`` refused because their id is stored (``held``: its stored payload)
        or taken by an earlier batch of the group with other content."""
        for key, s in batch.spans.items():
            if key in taken:
                if _content(taken[key].payload()) != _content(s.payload()):
                    yield s
            elif key in held:
                stored = s
                if self.redaction is not None:
                    stored = self.redaction.span(s, partial(self._payloads, tx, spans_stream(s.trace_id)))
                redacted = self.redaction is not None
                if _content(held[key], redacted) != _content(stored.payload(), redacted):
                    yield s

    def _events(self, tx: Transaction, fresh: list[tuple[str, ReceivedSpan, str]]) -> list[EncodedEvent]:
        """The encoded events of the fresh spans, numbered after their streams' stored versions
        (read under the append lock), and one ``SpanTracesOpened`` naming the traces whose first
        span this is: what lets a restart find every trace without reading spans."""
        if not fresh:
            return []
        streams = list(dict.fromkeys(spans_stream(s.trace_id) for _, s, _ in fresh))
        versions = tx.versions([*streams, OPENED_STREAM])
        existing = set(versions)
        opened = [s.removeprefix(PREFIX) for s in streams if s not in existing]
        events = []
        for key, s, meta in fresh:
            stream = spans_stream(s.trace_id)
            if self.redaction is not None:
                stored = partial(self._payloads, tx, stream) if stream in existing else tuple
                s = self.redaction.span(s, stored)
            versions[stream] = versions.get(stream, 0) + 1
            events.append(
                EncodedEvent(stream, versions[stream], RECEIVED, compact_json(s.payload()), meta, key)
            )
        if opened:
            version = versions.get(OPENED_STREAM, 0) + 1
            payload = compact_json({"trace_ids": opened})
            events.append(
                EncodedEvent(
                    OPENED_STREAM, version, OPENED, payload, compact_json({"source": self.source}), None
                )
            )
        return events

    def _payloads(self, tx: Transaction, stream: str) -> list[str]:
        """The stored span payloads of a stream, as text (for redaction's numbering)."""
        rows = tx.execute("SELECT payload FROM events WHERE stream_id = ? AND type = ?", (stream, RECEIVED))
        return [row[0] if isinstance(row[0], str) else json.dumps(row[0]) for row in rows]

    def _held(self, tx: Transaction, keys: list[str]) -> dict[str, Any]:
        """The stored payload of each key the store holds (few: a retry's)."""
        held: dict[str, Any] = {}
        for i in range(0, len(keys), _CHUNK):
            where, params = tx.any_of("idempotency_key", keys[i : i + _CHUNK])
            rows = tx.execute(f"SELECT idempotency_key, payload FROM events WHERE {where}", params)
            held.update((key, json.loads(p) if isinstance(p, str) else p) for key, p in rows)
        return held

    # -- completion ------------------------------------------------------------------------------
    def due(self, now: float | None = None) -> list[str]:
        """Traces this process saw that look complete (the store confirms before completing)."""
        now = time.time() if now is None else now
        s = self.settings
        with self._lock:
            return [
                tid
                for tid, o in self._open.items()
                if (o.root is not False and now - o.last_at >= s.idle_s) or now - o.last_at >= s.rootless_s
            ]

    def tick(self) -> list[AssembledTrace]:
        """Complete every trace that is due; what the store shows still active stays open."""
        done = []
        for tid in self.due():
            done += self.complete(tid)
        return done

    def flush(self, otel_trace_id: str | None = None) -> list[AssembledTrace]:
        """Complete now, whatever the idle time: one trace, or every trace this process has open."""
        with self._lock:
            tids = [otel_trace_id] if otel_trace_id is not None else list(self._open)
        done = []
        for tid in tids:
            done += self.complete(tid, force=True)
        return done

    def complete(self, otel_trace_id: str, force: bool = False) -> list[AssembledTrace]:
        """Complete the trace if the store agrees it is due (or ``force``), then assemble every
        revision of it still unfinished."""
        stream = spans_stream(otel_trace_id)
        with self.store.transaction() as tx:
            state = _read_stream(tx, stream)
            reason = self._reason(state, force)
            if reason is not None:
                revision = len(state.completed) + 1
                event = NewEvent(
                    type=COMPLETED,
                    payload={"revision": revision, "through_version": state.version, "reason": reason},
                    idempotency_key=f"spans:{otel_trace_id}:completed:{revision}",
                )
                tx.append(stream, [event], state.version)
                state.completed.append((revision, state.version))
        if reason is not None and self.redaction is not None:
            self.redaction.forget(otel_trace_id)
        with self._lock:
            if reason is not None or not state.pending_spans:
                self._open.pop(otel_trace_id, None)
            elif otel_trace_id in self._open:  # still active, or no root: wait on the store's clock
                held = self._open[otel_trace_id]
                if state.last_span_at is not None:
                    held.last_at = state.last_span_at.timestamp()
                held.root = state.root_ended
        return self._finish(otel_trace_id, state, reason or "recovered")

    def _reason(self, state: _Stream, force: bool) -> str | None:
        if not state.pending_spans:
            return None
        if force:
            return "flush"
        assert state.last_span_at is not None
        silent = (datetime.now(UTC) - state.last_span_at).total_seconds()
        if state.root_ended and silent >= self.settings.idle_s:
            return "idle"
        if silent >= self.settings.rootless_s:
            return "rootless"
        return None

    def _finish(self, otel_trace_id: str, state: _Stream, reason: str) -> list[AssembledTrace]:
        """Assemble each completed revision not yet assembled (normally the one just completed)."""
        out = []
        for revision, through in state.completed:
            if revision in state.finished:
                continue
            spans = [s for v, s in state.spans if v <= through]
            try:
                assembled = self._assemble(otel_trace_id, revision, spans, reason)
            except StoreError:
                raise  # the store is down: the completion is finished later (recover, next tick)
            except AuditorError as exc:  # the spans are no trace (or every id is held): say why
                self._mark(otel_trace_id, REJECTED, revision, {"reason": exc.one_line()})
                log.warning(
                    "span trace %s revision %d not imported: %s", otel_trace_id, revision, exc.one_line()
                )
                continue
            self.sink(assembled)
            self._mark(
                otel_trace_id,
                ASSEMBLED,
                revision,
                {"trace_id": assembled.trace_id, "steps": assembled.step_count, "reason": reason},
            )
            out.append(assembled)
        return out

    def _mark(self, otel_trace_id: str, kind: str, revision: int, payload: dict[str, Any]) -> None:
        event = NewEvent(
            type=kind,
            payload={"revision": revision, **payload},
            idempotency_key=f"spans:{otel_trace_id}:finished:{revision}",
        )
        self.store.append(spans_stream(otel_trace_id), [event])

    def _assemble(
        self, otel_trace_id: str, revision: int, spans: list[ReceivedSpan], reason: str
    ) -> AssembledTrace:
        """Import the revision's spans with the span importers, store it as a closed trace."""
        from auditor.core.store.traces import TraceDocument, as_stored, write_traces

        imported, steps, labels = self._import(otel_trace_id, spans)
        base = imported.trace_id
        where = f"{self.source} trace {otel_trace_id}"
        for n in range(revision, revision + _SHIFTS):  # the first id no other content holds
            trace_id = revision_id(base, n)
            metadata = {**imported.metadata, "span_revision": revision}
            if n > 1:
                metadata["revises"] = revision_id(base, n - 1)
            header = TraceHeader.model_validate(
                {**imported.model_dump(), "trace_id": trace_id, "source": self.source, "metadata": metadata}
            )
            if labels is not None:
                labels = labels.model_copy(update={"trace_id": trace_id, "source": self.source})
            try:
                [written] = write_traces(self.store, [TraceDocument(header, steps, labels, where)])
                break
            except TraceConflictError:
                continue
        else:
            raise InputError(
                f"the trace ids {revision_id(base, revision)} to {trace_id} are all held by other content",
                path=where,
            )
        closed = TraceClosed(trace_id=trace_id, step_count=len(steps), reason=f"spans_{reason}")
        event = NewEvent(
            type="TraceClosed",
            payload=closed.model_dump(mode="json"),
            idempotency_key=f"trace:{trace_id}:closed",
        )
        self.store.append(trace_stream(trace_id), [event])
        trace = as_stored(header, steps) if written.appended else None
        return AssembledTrace(trace_id, otel_trace_id, revision, len(steps), reason, trace)

    def _import(
        self, otel_trace_id: str, spans: list[ReceivedSpan]
    ) -> tuple[TraceHeader, list[TraceStep], LabelsRecord | None]:
        """(header, steps, labels) of the spans as one OTLP document in memory, read by the
        importer that ``auditor ingest`` would pick for a file of it."""
        from ingest.registry import open_spans

        document = SpanDocument(f"{self.source} trace {otel_trace_id}", otlp_document(spans))
        imported = next(iter(open_spans(document)))
        header = imported.header  # validates every step
        return header, list(imported.steps()), imported.labels

    def warm_up(self) -> None:
        """Import a one-span GenAI trace in memory (nothing is stored): the importers load on
        first use, and the first real trace should not wait for that."""
        tid, sid = "0" * 31 + "1", "0" * 15 + "1"
        said = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "warm-up"}]}])
        span = {
            "traceId": tid,
            "spanId": sid,
            "name": "chat warm-up",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": said}},
            ],
        }
        self._import(tid, [ReceivedSpan(tid, sid, None, 2, span, {"attributes": []}, {})])
        importlib.import_module("auditor.core.store.traces")  # what an assembled trace is stored with

    # -- restart ---------------------------------------------------------------------------------
    def recover(self) -> list[AssembledTrace]:
        """Rebuild the open traces from the store and finish what a crash interrupted (a
        completion without its assembly). Returns the revisions assembled now.

        Spans are read for the open traces only: the bookkeeping events (the traces opened, one
        event per transaction; completed, assembled, rejected: a few per trace) and each trace's
        stream version show which traces hold spans after their last completion, since versions
        are dense."""
        books = _books(self.store)
        with self.store.reading() as reader:
            for tid in _unbooked_traces(reader):
                books.setdefault(tid, _Book())
            versions = reader.versions([spans_stream(t) for t in books])
            open_streams: dict[str, _Stream] = {}
            for tid, book in books.items():
                marks_after = sum(1 for v in book.marks if v > book.through)
                if versions.get(spans_stream(tid), 0) - book.through > marks_after:
                    open_streams[tid] = _read_stream(reader, spans_stream(tid))
        with self._lock:
            for tid, state in open_streams.items():
                at = state.last_span_at.timestamp() if state.last_span_at is not None else time.time()
                self._open[tid] = _Open(at, state.root_ended)
        done = []
        for tid, book in books.items():
            if book.completed - book.finished:
                try:
                    done += self.complete(tid)
                except Exception:  # one trace's failure must not keep the others from recovery
                    log.exception("span trace %s: finishing its completion failed; retried on restart", tid)
        return done


@dataclass
class _Book:
    """One spans stream's bookkeeping: the versions of its non-span events, the stream version
    its last completion covers, and the revisions completed and finished."""

    marks: list[int] = field(default_factory=list)
    through: int = 0
    completed: set[int] = field(default_factory=set)
    finished: set[int] = field(default_factory=set)


def _books(store: EventStore) -> dict[str, _Book]:
    """The bookkeeping of every span trace, from the few events that are not spans."""
    books: dict[str, _Book] = {}
    for stream, version, kind, payload in store.scan(
        "SELECT stream_id, stream_version, type, payload FROM events WHERE type IN (?, ?, ?, ?)",
        (OPENED, COMPLETED, ASSEMBLED, REJECTED),
    ):
        data = json.loads(payload) if isinstance(payload, str) else payload
        if kind == OPENED:
            for tid in data["trace_ids"]:
                books.setdefault(tid, _Book())
            continue
        book = books.setdefault(stream.removeprefix(PREFIX), _Book())
        book.marks.append(version)
        if kind == COMPLETED:
            book.through = max(book.through, int(data["through_version"]))
            book.completed.add(int(data["revision"]))
        else:
            book.finished.add(int(data["revision"]))
    return books


def _unbooked_traces(reader: Reader) -> list[str]:
    """Span traces that no ``SpanTracesOpened`` names: those whose spans were stored before the
    store's first such event (a store written before that stream existed). Found by reading the
    stream ids of the spans before it, a part of the store that no later write grows; nothing is
    read when the store's first span comes after it (or the store holds no span)."""
    first = "SELECT global_position FROM events WHERE {} ORDER BY global_position LIMIT 1"
    opened = next(iter(reader.execute(first.format("stream_id = ?"), (OPENED_STREAM,))), None)
    span = next(iter(reader.execute(first.format("type = ?"), (RECEIVED,))), None)
    if span is None or (opened is not None and span[0] > opened[0]):
        return []
    spans = "SELECT DISTINCT stream_id FROM events WHERE type = ?"
    if opened is None:
        rows = reader.execute(spans, (RECEIVED,))
    else:
        rows = reader.execute(spans + " AND global_position < ?", (RECEIVED, opened[0]))
    return [row[0].removeprefix(PREFIX) for row in rows]
