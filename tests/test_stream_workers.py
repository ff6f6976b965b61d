"""Continuous auditing end to end on a real broker and PostgreSQL: two ingestion consumers and two
audit workers share 4 partitions; 200 traces are each audited exactly once by the rules engine."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from auditor.core.store import open_store
from schemas.report import Severity
from tests.stream_support import (
    count_type,
    kafka_bootstrap,
    new_topics,
    publish_traces,
    read_topic,
    running,
    wait_until,
)

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def pg_store(pg_schema_url: str) -> Iterator:
    s = open_store(pg_schema_url)
    yield s
    s.close()


def test_two_consumers_and_two_workers_audit_every_trace_exactly_once(pg_store) -> None:
    from auditor.audit.workers import AuditWorker, WorkerConfig
    from ingest.stream import ConsumerConfig, StreamConsumer

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 4, "steps", "dlq", "closed", "reports", "alerts")
    consumers = [
        StreamConsumer(
            pg_store,
            ConsumerConfig(
                bootstrap,
                t["steps"],
                f"g-{t['steps']}",
                t["dlq"],
                t["closed"],
                poll_ms=100,
                session_timeout_ms=6000,
            ),
        )
        for _ in range(2)
    ]
    workers = [
        AuditWorker(
            pg_store,
            WorkerConfig(
                bootstrap,
                t["closed"],
                f"w-{t['closed']}",
                t["reports"],
                t["alerts"],
                Severity.high,
                poll_ms=100,
                session_timeout_ms=6000,
            ),
        )
        for _ in range(2)
    ]
    members = consumers + workers
    traces = {f"grp-{i:03d}": 0 if i % 20 == 0 else 2 + i % 5 for i in range(200)}  # every 20th drifts
    drifting = [tid for tid, n in traces.items() if n == 0]
    with ExitStack() as stack:
        for m in members:
            stack.enter_context(running(m))
        wait_until(lambda: all(m.consumer.assignment() for m in members), 30, "every member assigned")
        publish_traces(bootstrap, t["steps"], traces)
        wait_until(lambda: count_type(pg_store, "AuditCompleted") == len(traces), 90, "200 audits")

    reports = Counter(e.payload["trace_id"] for e in pg_store.read_all(types=["ReportFiled"]))
    assert reports == Counter(dict.fromkeys(traces, 1)), "every trace audited and filed exactly once"
    assert count_type(pg_store, "AuditFailed") == 0
    assert all(c.metrics.total("records_total") > 0 for c in consumers), "both consumers shared the work"
    assert all(w.metrics.value("audits_total", outcome="done") > 0 for w in workers), "both workers audited"
    published = read_topic(bootstrap, t["reports"], len(traces))
    assert {json.loads(r.value)["trace_id"] for r in published} == set(traces)
    alerts = read_topic(bootstrap, t["alerts"], len(drifting))
    assert sorted(json.loads(a.value)["trace_id"] for a in alerts) == drifting
    assert {json.loads(a.value)["severity"] for a in alerts} == {"high"}
