"""The OpenTelemetry Collector's Kafka encodings on a real broker: records holding an
ExportTraceServiceRequest in ``otlp_proto`` (the exporter's default) or ``otlp_json``, with no
``format`` header, made by the OpenTelemetry SDK's own encoders from a toy agent's spans. A trace
split over several records (as the collector's batch processor cuts it, no ``groupbytrace``) is
assembled, closed and audited by the workers; a consumer restarted mid-trace loses no span; a
header-named importer still reads a whole document; a redacting consumer stores the spans redacted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

pytest.importorskip("kafka")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from auditor.audit.report.validator import validate_report
from auditor.core.store import EventStore, open_store
from auditor.core.store.reports import list_reports
from auditor.core.store.traces import load_trace
from ingest.span_assembly import RECEIVED, AssemblySettings, spans_stream
from schemas.report import Severity
from tests.otel_toy_agent import encoded_spans, json_body, provider, run_agent
from tests.stream_support import count_type, kafka_bootstrap, new_topics, running, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    s = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    yield s
    s.close()


def agent_spans(order: str) -> tuple[str, list]:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tid = run_agent(provider(SimpleSpanProcessor(exporter)), order=order)
    return tid, list(exporter.get_finished_spans())


def members(store: EventStore, bootstrap: str, t: dict[str, str], redact: bool = False) -> tuple:
    from auditor.audit.workers import AuditWorker, WorkerConfig
    from ingest.stream import ConsumerConfig, StreamConsumer

    spans = AssemblySettings(idle_s=0.5, rootless_s=60.0, tick_s=0.05)
    group = f"g-{t['steps']}"
    consumer = StreamConsumer(
        store,
        ConsumerConfig(
            bootstrap, t["steps"], group, t["dlq"], t["closed"], poll_ms=100, spans=spans, redact=redact
        ),
    )
    worker = AuditWorker(
        store,
        WorkerConfig(
            bootstrap, t["closed"], f"w-{t['closed']}", t["reports"], t["alerts"], Severity.high, poll_ms=100
        ),
    )
    return consumer, worker


def audited_report(store: EventStore, trace_id: str) -> None:
    wait_until(
        lambda: any(e.type == "AuditCompleted" for e in store.read_stream(f"audit-{trace_id}")),
        60,
        f"the audit of {trace_id}",
    )
    [report] = list_reports(store, trace_id)
    assert validate_report(report.model_dump(mode="json"), load_trace(store, trace_id)).ok


def test_collector_encodings_without_header_are_assembled_and_audited(store: EventStore) -> None:
    from kafka import KafkaProducer

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 2, "steps", "dlq", "closed", "reports", "alerts")
    proto_tid, proto_spans = agent_spans("K-proto")
    json_tid, json_spans = agent_spans("K-json")
    doc_tid, doc_spans = agent_spans("K-document")
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    consumer, worker = members(store, bootstrap, t)
    with ExitStack() as stack:
        stack.enter_context(running(consumer))
        stack.enter_context(running(worker))
        # otlp_proto keyed by trace id (partition_traces_by_id), the children first, the root later
        producer.send(t["steps"], key=proto_tid.encode(), value=encoded_spans(proto_spans[:3]))
        # otlp_json, no key, the whole trace
        producer.send(t["steps"], value=json_body(json_spans))
        # a header-named importer: a whole OTLP JSON document, as before
        producer.send(t["steps"], value=json_body(doc_spans), headers=[("format", b"otel-genai")])
        producer.flush()
        wait_until(lambda: count_type(store, RECEIVED) == 7, 30, "7 spans stored")
        producer.send(t["steps"], key=proto_tid.encode(), value=encoded_spans(proto_spans[3:]))
        producer.flush()
        for tid in (proto_tid, json_tid, doc_tid):
            audited_report(store, f"otel-{tid}")
    producer.close()
    assert [e.type for e in store.read_stream(spans_stream(proto_tid))][:4] == [RECEIVED] * 4
    assert count_type(store, "SpanTraceAssembled") == 2  # the document went the importer's way
    assert load_trace(store, f"otel-{proto_tid}").header.source == f"kafka:{t['steps']}"


def test_a_consumer_restarted_mid_trace_loses_no_span(store: EventStore) -> None:
    from kafka import KafkaProducer

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 1, "steps", "dlq", "closed", "reports", "alerts")
    tid, spans = agent_spans("K-restart")
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    first, _ = members(store, bootstrap, t)
    with running(first):
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[:2]))
        producer.flush()
        wait_until(lambda: count_type(store, RECEIVED) == 2, 30, "2 spans stored")
    # the first consumer is gone with its memory; its successor rebuilds the open trace from the store
    consumer, worker = members(store, bootstrap, t)
    with running(consumer), running(worker):
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[2:]))
        producer.flush()
        audited_report(store, f"otel-{tid}")
    producer.close()
    assert len(load_trace(store, f"otel-{tid}").steps) == 5


def test_a_redacting_consumer_stores_span_records_redacted(store: EventStore) -> None:
    import json

    from kafka import KafkaProducer

    from tests.stream_support import read_topic

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 1, "steps", "dlq", "closed", "reports", "alerts")
    email = "dana.ruiz@northwind.example"
    tid, spans = agent_spans(email)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    consumer, worker = members(store, bootstrap, t, redact=True)
    with running(consumer), running(worker):
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[:2]))
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[2:]))
        producer.flush()
        audited_report(store, f"otel-{tid}")
    producer.close()
    stored = json.dumps([e.payload for e in store.read_all()], ensure_ascii=False)
    assert email not in stored and count_type(store, RECEIVED) == 4
    steps = load_trace(store, f"otel-{tid}").steps
    assert steps[0].content == "Please refund order [REDACTED_EMAIL_1], it arrived broken."
    assert read_topic(bootstrap, t["dlq"], 1, timeout=2) == []  # nothing dead-lettered
