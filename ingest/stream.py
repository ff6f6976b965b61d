"""The Kafka ingestion consumer: steps topic → event store, effectively once.

Each polled batch is validated record by record (canonical lines, or documents in an importer's
format: ``ingest.stream_records``), and redacted when the consumer is asked to
(``ingest.stream_redact``); the good records of all traces are appended in one store
transaction; dead letters and closed-trace notifications are produced and flushed; only then are
the offsets committed. OTLP span records go to span assembly; a record holding a span it refuses
(the span's id received before with other content) is dead-lettered with the reason, as OTLP/HTTP
reports it in partial success, and its other spans are stored. A crash anywhere before the commit re-delivers the batch, and the records'
Kafka coordinates, their idempotency keys, make the re-append a no-op (``ingest.stream_store``).
A batch that fails (store or broker down) is rewound and retried, so consumption resumes where it
stopped once the service is back.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from auditor.core.store import EventStore
from ingest.otlp_request import ReceivedSpan
from ingest.span_assembly import AssembledTrace, AssemblySettings, Received, SpanAssembly
from ingest.span_redact import SpanRedaction
from ingest.stream_loop import BatchLoop, GroupMember, batch_producer, group_consumer, wait_sent
from ingest.stream_metrics import Metrics, loop_metrics
from ingest.stream_publish import StepPublisher, replay_file
from ingest.stream_records import (
    DEFAULT_MAX_RECORD_BYTES,
    DeadKind,
    Document,
    Parsed,
    Rejected,
    SpanBatch,
    dead_letter_headers,
    parse_record,
)
from ingest.stream_redact import StreamRedaction
from ingest.stream_store import (
    ClosedTrace,
    Coords,
    IdleCheck,
    TraceState,
    close_idle,
    group_by_trace,
    open_traces,
    write_batch,
)
from schemas.trace import TraceStep

__all__ = ["ConsumerConfig", "StepPublisher", "StreamConsumer", "consumer_metrics", "replay_file"]


@dataclass(frozen=True)
class ConsumerConfig(GroupMember):
    """Where to read, where to send what cannot be read, and when a silent trace counts as finished
    (the group member's Kafka settings are GroupMember's)."""

    topic: str = "agent-steps"
    group: str = "auditor"
    dead_letter_topic: str = "agent-steps-dlq"
    closed_topic: str = "agent-traces-closed"
    max_batch: int = 2000
    idle_close_s: float = 300.0
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    redact: bool = False  # redact every record before storing (ingest.stream_redact, spans: span_redact)
    redact_patterns: dict[str, str] = field(default_factory=dict)
    # OTLP span records: when a trace counts as complete (AUDITOR_SPAN_IDLE_S, ingest.span_assembly)
    spans: AssemblySettings = field(default_factory=AssemblySettings.from_env)


# Why traces close, as the metric's label: an end record's reason is the producer's free text.
CLOSE_REASONS = ("end_record", "idle", "spans_idle", "spans_rootless", "spans_flush", "spans_recovered")


def consumer_metrics() -> Metrics:
    """The consumer's series (``auditor_ingest_*``), the batch loop's among them."""
    m = loop_metrics(Metrics("auditor_ingest"))
    m.counter("records_total", "Records polled from the steps topic.")
    m.counter("steps_total", "Step records written to the store (re-deliveries included).")
    m.counter("dead_letters_total", "Records sent to the dead-letter topic, by kind.", "kind", list(DeadKind))
    reasons = [*CLOSE_REASONS, "other"]
    m.counter(
        "traces_closed_total", "Traces closed, by reason (other: an end record's own).", "reason", reasons
    )
    m.counter("batches_total", "Batches stored and committed.")
    m.gauge("open_traces", "Traces seen and not yet closed.")
    m.counter("spans_total", "OTLP spans stored (re-deliveries not counted).")
    m.counter(
        "spans_rejected_total",
        "OTLP spans refused inside accepted records (no usable ids, or an id received with other content).",
    )
    return m


class StreamConsumer:
    """One member of the ingestion consumer group."""

    def __init__(self, store: EventStore, config: ConsumerConfig, metrics: Metrics | None = None) -> None:
        self.store, self.config = store, config
        self.metrics = metrics or consumer_metrics()
        self.consumer = group_consumer(
            config.topic,
            config,
            config.group,
            config.max_batch,
            max_partition_fetch_bytes=max(config.max_record_bytes * 2, 1 << 20),
        )
        self.producer = batch_producer(config.bootstrap, max_request_size=4 << 20)
        now = time.monotonic()
        self.open: dict[str, float] = {tid: now for tid in open_traces(store, config.topic)}
        self.states: dict[str, TraceState] = {}  # the batch writer's view of open traces
        self._unsent: list[ClosedTrace] = []  # idle closes stored but not yet announced
        self.redaction = StreamRedaction(store, config.redact_patterns) if config.redact else None
        span_redaction = SpanRedaction(config.redact_patterns) if config.redact else None
        self.spans = SpanAssembly(
            store, config.spans, f"kafka:{config.topic}", self._announce, span_redaction
        )
        scan_every = min(max(config.idle_close_s / 4, 0.2), 5.0, config.spans.tick_s)
        self.loop = BatchLoop(
            self.consumer, self.process, self.metrics, config.poll_ms, config.retry_backoff_s,
            every=(scan_every, self.periodic), stages=(self.store_batch, self.finish_batch),
        )  # fmt: skip

    @property
    def healthy(self) -> bool:
        return self.loop.healthy

    # -- one batch -------------------------------------------------------------------------------
    def process(self, polled: dict[Any, list[Any]]) -> list[ClosedTrace]:
        """Store, dead-letter and notify one polled batch, then commit its offsets."""
        stored = self.store_batch(polled)
        self.finish_batch(polled, stored)
        return stored[1]

    def store_batch(self, polled: dict[Any, list[Any]]) -> tuple[dict[str, Any], list[ClosedTrace], int]:
        """Everything before the commit: validate, append in one transaction, flush dead letters and
        closed-trace notices. Safe to run on the writer thread (no consumer calls)."""
        cfg = self.config
        parsed: list[tuple[str | None, object, Coords]] = []
        documents: dict[Coords, Any] = {}  # the records behind documents, should one be refused
        sends = []
        spans: list[ReceivedSpan] = []
        span_records: dict[int, tuple[Any, SpanBatch]] = {}  # by id(span): its record, should it be refused
        steps = 0
        for records in polled.values():
            for r in records:
                result = parse_record(r.key, r.value, r.headers, cfg.max_record_bytes)
                coords = Coords(r.topic, r.partition, r.offset)
                if isinstance(result, Parsed) and isinstance(result.item, SpanBatch):
                    spans += result.item.spans  # span assembly redacts them, when asked, as it stores
                    span_records.update((id(s), (r, result.item)) for s in result.item.spans)
                    self.metrics.inc("spans_rejected_total", result.item.rejected)
                    continue
                if isinstance(result, Rejected):
                    sends.append(self._dead_letter(r, result))
                    continue
                if self.redaction is not None:
                    result = self.redaction.parsed(result)
                parsed.append((result.trace_id, result.item, coords))
                if isinstance(result.item, TraceStep):
                    steps += 1
                elif isinstance(result.item, Document):
                    documents[coords] = r
                    steps += sum(len(s) for _, s in result.item.traces)
        if spans:  # stored first, in their own transaction: a retried batch finds them stored
            received = self.spans.receive(spans, {"topic": cfg.topic})
            self.metrics.inc("spans_total", received.stored)
            sends += self._refused_spans(received, span_records)
        traces = group_by_trace(parsed)
        written = write_batch(self.store, traces.values(), source=f"kafka:{cfg.topic}", cache=self.states)
        sends += [self._dead_letter(documents[coords], why) for coords, why in written.rejected]
        sends += [self._notify(c) for c in written.closed]
        if self.redaction is not None:
            for c in written.closed:
                self.redaction.forget(c.trace_id)
        wait_sent(self.producer, sends)
        return traces, written.closed, steps

    def _refused_spans(self, received: Received, records: dict[int, tuple[Any, SpanBatch]]) -> list[Any]:
        """Dead-letter each record holding a span that span assembly refused (its id received
        before with other content: what OTLP/HTTP reports in partial success), with the number
        refused and the first reason; the record's other spans are stored."""
        refused: dict[int, tuple[Any, SpanBatch, list[str]]] = {}
        for span, why in zip(received.refused_spans, received.refused, strict=True):
            record, batch = records[id(span)]
            refused.setdefault(id(record), (record, batch, []))[2].append(why)
        sends = []
        for record, batch, reasons in refused.values():
            self.metrics.inc("spans_rejected_total", len(reasons))
            n = f"{len(reasons)} span{'s' if len(reasons) > 1 else ''} of {len(batch.spans)}"
            why = Rejected(
                DeadKind.conflict, f"{batch.encoding}: {n} refused, the others stored: {reasons[0]}"
            )
            sends.append(self._dead_letter(record, why))
        return sends

    def _dead_letter(self, record: Any, rejected: Rejected) -> Any:
        size = len(record.value or b"")
        headers = dead_letter_headers(rejected, record.topic, record.partition, record.offset, size)
        self.metrics.inc("dead_letters_total", kind=rejected.kind.value)
        value = (record.value or b"")[: self.config.max_record_bytes]
        return self.producer.send(self.config.dead_letter_topic, key=record.key, value=value, headers=headers)

    def finish_batch(
        self, polled: dict[Any, list[Any]], stored: tuple[dict[str, Any], list[ClosedTrace], int]
    ) -> None:
        """After the batch is durable: commit its offsets, then update the open-trace view."""
        traces, closed, steps = stored
        self.loop.commit(polled)
        self._track(traces, closed)
        self.metrics.inc("records_total", sum(len(v) for v in polled.values()))
        self.metrics.inc("steps_total", steps)
        self.metrics.inc("batches_total")

    def _notify(self, closed: ClosedTrace) -> Any:
        reason = closed.reason if closed.reason in CLOSE_REASONS else "other"
        self.metrics.inc("traces_closed_total", reason=reason)
        value = json.dumps(
            {"trace_id": closed.trace_id, "step_count": closed.step_count, "reason": closed.reason}
        ).encode()
        return self.producer.send(self.config.closed_topic, key=closed.trace_id.encode(), value=value)

    def _track(self, traces: dict[str, Any], closed: list[ClosedTrace]) -> None:
        now = time.monotonic()
        for tid in traces:
            self.open[tid] = now
        for c in closed:
            self.open.pop(c.trace_id, None)
        self.metrics.set("open_traces", len(self.open))

    # -- idle traces -----------------------------------------------------------------------------
    def periodic(self) -> None:
        """Between batches: close silent canonical traces, complete silent span traces."""
        self.close_idle_traces()
        self.spans.tick()

    def _announce(self, trace: AssembledTrace) -> None:
        """Span assembly's sink: tell the audit workers, as for any closed trace."""
        closed = ClosedTrace(trace.trace_id, trace.step_count, f"spans_{trace.reason}")
        wait_sent(self.producer, [self._notify(closed)])

    def close_idle_traces(self) -> list[ClosedTrace]:
        """Close traces silent for ``idle_close_s`` (checked against the store) and notify the workers."""
        idle_s = self.config.idle_close_s
        now = time.monotonic()
        for tid, seen in list(self.open.items()):
            if now - seen < idle_s:
                continue
            status, trace = close_idle(self.store, tid, idle_s)
            if status is IdleCheck.active:
                self.open[tid] = now
                continue
            self.open.pop(tid)
            self.states.pop(tid, None)  # runs between batches: the writer is not using it
            if self.redaction is not None:
                self.redaction.forget(tid)
            if trace is not None:
                self._unsent.append(trace)
        closed, self._unsent = self._unsent, []
        try:
            wait_sent(self.producer, [self._notify(c) for c in closed])
        except Exception:
            self._unsent = closed  # the TraceClosed events are stored; announce them on the next scan
            raise
        self.metrics.set("open_traces", len(self.open))
        return closed

    # -- the loop --------------------------------------------------------------------------------
    def run(self, stop: threading.Event | None = None) -> None:
        """Consume until ``stop`` is set; a failed batch is rewound and retried after a pause."""
        self.spans.warm_up()  # the importers load now, not when the first span trace completes
        # What is loaded by now lives as long as the process: out of the collector's sight, the
        # collections that a batch's allocations trigger scan only the batch (half the GC time).
        gc.freeze()
        self.spans.recover()  # span traces open before a restart, and completions it interrupted
        self.loop.run(stop or threading.Event())

    def close(self) -> None:
        """Leave the group cleanly (partitions move to the other members at once)."""
        self.loop.close_commits()
        self.producer.close(timeout=10)
        self.consumer.close(autocommit=False)
