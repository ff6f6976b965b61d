"""What the Kafka intake refuses of OTLP span records, it reports as OTLP/HTTP does, on a real broker.

OTLP/HTTP answers a span id received before with other content in partial success, and refuses a
JSON body with a key repeated in one object. A Kafka record has no one to answer: the consumer
dead-letters it with the reason (the record's other spans are stored), and an ``otlp_json``
record with a repeated key is refused whole, never merged into one of its values. On SQLite and
PostgreSQL (the ``store`` fixture).
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("kafka")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from auditor.core.store import EventStore
from ingest.span_assembly import RECEIVED, AssemblySettings, spans_stream
from tests.otel_toy_agent import encoded_spans, json_body, provider, run_agent
from tests.stream_support import count_type, kafka_bootstrap, new_topics, read_topic, running, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def agent_runs(*orders: str) -> list[tuple[str, list]]:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tp = provider(SimpleSpanProcessor(exporter))
    runs = []
    for order in orders:
        tid = run_agent(tp, order=order)
        runs.append((tid, list(exporter.get_finished_spans())))
        exporter.clear()
    return runs


def consumer(store: EventStore, bootstrap: str, t: dict[str, str]):  # type: ignore[no-untyped-def]
    from ingest.stream import ConsumerConfig, StreamConsumer

    spans = AssemblySettings(idle_s=3600.0, rootless_s=3600.0, tick_s=0.05)  # nothing completes here
    config = ConsumerConfig(
        bootstrap, t["steps"], f"g-{t['steps']}", t["dlq"], t["closed"], poll_ms=100, spans=spans
    )
    return StreamConsumer(store, config)


def headers(record) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {k: v.decode() for k, v in record.headers}


def test_a_span_id_sent_again_with_other_content_is_dead_lettered_and_the_rest_stored(
    store: EventStore,
) -> None:
    from kafka import KafkaProducer
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 1, "steps", "dlq", "closed")
    (first_tid, first), (second_tid, second) = agent_runs("R-1", "R-2")
    changed = ExportTraceServiceRequest.FromString(encoded_spans(first + second))
    span = changed.resource_spans[0].scope_spans[0].spans[0]
    original_name, span.name = span.name, "renamed on the way"
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    member = consumer(store, bootstrap, t)
    with running(member):
        producer.send(t["steps"], key=first_tid.encode(), value=encoded_spans(first))
        producer.flush()
        wait_until(lambda: count_type(store, RECEIVED) == 4, 30, "the first run's 4 spans stored")
        producer.send(t["steps"], value=changed.SerializeToString())  # the first run again, one span changed
        producer.flush()
        wait_until(lambda: count_type(store, RECEIVED) == 8, 30, "the second run's 4 spans stored")
        [dead] = read_topic(bootstrap, t["dlq"], 1, timeout=30)
    producer.close()
    why = headers(dead)
    assert why["dlq.kind"] == "conflict"
    span_id = span.span_id.hex()
    assert why["dlq.reason"] == (
        f"otlp_proto: 1 span of 8 refused, the others stored: span {span_id} of trace {first_tid} "
        "was already received with other content; the first is kept"
    )
    assert dead.value == changed.SerializeToString()
    kept = [
        e.payload["span"]["name"] for e in store.read_stream(spans_stream(first_tid)) if e.type == RECEIVED
    ]
    assert original_name in kept and "renamed on the way" not in kept
    assert [e.type for e in store.read_stream(spans_stream(second_tid))] == [RECEIVED] * 4
    assert member.metrics.total("spans_rejected_total") == 1
    assert member.metrics.total("dead_letters_total") == 1


def test_an_otlp_json_record_with_a_key_repeated_in_one_object_is_refused_whole(store: EventStore) -> None:
    from kafka import KafkaProducer

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 1, "steps", "dlq", "closed")
    (tid, spans), (clean_tid, clean) = agent_runs("J-1", "J-2")
    body = json_body(spans)
    # the first span names itself twice: JSON readers keep one of the two, so neither is taken
    repeated, n = re.subn(rb'"spanId"\s*:', b'"name": "a shadowed name", "spanId":', body, count=1)
    assert n == 1
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    with running(consumer(store, bootstrap, t)):
        producer.send(t["steps"], value=repeated)  # no header: detected as otlp_json
        producer.send(t["steps"], value=repeated, headers=[("format", b"otlp_json")])
        producer.send(t["steps"], value=json_body(clean))
        producer.flush()
        wait_until(lambda: len(list(store.read_stream(spans_stream(clean_tid)))) == 4, 30, "the clean spans")
        dead = read_topic(bootstrap, t["dlq"], 2, timeout=10)
    producer.close()
    assert len(dead) == 2
    for record in dead:
        why = headers(record)
        assert why["dlq.kind"] == "wrong_schema"
        assert why["dlq.reason"].startswith(
            "otlp_json: record, field 'resourceSpans.0.scopeSpans.0.spans.0.name'"
        )
        assert "appears more than once in one object" in why["dlq.reason"]
        assert "shadowed" not in why["dlq.reason"]  # a refusal never quotes what the record holds
    assert [e.type for e in store.read_stream(spans_stream(tid))] == []
    assert [e.type for e in store.read_stream(spans_stream(clean_tid))] == [RECEIVED] * 4
