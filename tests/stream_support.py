"""Helpers for the streaming tests: the shared local broker, unique topics, synthetic traces.

The broker is started once per CI run by ``scripts/kafka-local`` (``.ci/run``), which exports
AUDITOR_TEST_KAFKA. Without it the Kafka tests skip, unless AUDITOR_REQUIRE_KAFKA=1 makes them fail.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from schemas.trace import TraceHeader, TraceStep


def kafka_bootstrap() -> str:
    addr = os.environ.get("AUDITOR_TEST_KAFKA")
    if not addr:
        if os.environ.get("AUDITOR_REQUIRE_KAFKA") == "1":
            pytest.fail("AUDITOR_REQUIRE_KAFKA=1 but AUDITOR_TEST_KAFKA is not set")
        pytest.skip("Kafka not configured (start scripts/kafka-local and set AUDITOR_TEST_KAFKA)")
    return addr


def new_topics(bootstrap: str, partitions: int = 1, *names: str, prefix: str = "test") -> dict[str, str]:
    """Create uniquely named topics (one suffix for the set) and return {name: unique name}."""
    from kafka.admin import KafkaAdminClient, NewTopic

    suffix = uuid.uuid4().hex[:8]
    topics = {n: f"{prefix}-{n}-{suffix}" for n in names}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(t, partitions, 1) for t in topics.values()])
    finally:
        admin.close()
    return topics


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def make_trace(trace_id: str, steps: int) -> tuple[TraceHeader, list[TraceStep]]:
    """A small but realistic two-agent exchange with a tool call."""
    header = TraceHeader(trace_id=trace_id, source="stream-test", task=f"refund order {trace_id}")
    out = []
    for i in range(steps):
        actor = ("planner", "executor", "refund_api")[i % 3]
        kind = ("message", "tool_call", "tool_result")[i % 3]
        out.append(
            TraceStep(
                step_id=f"{trace_id}-s{i}",
                index=i,
                actor=actor,
                actor_kind="tool" if actor == "refund_api" else "agent",
                kind=kind,
                content=f"step {i} of {trace_id}: amount {i * 7} EUR",
            )
        )
    return header, out


def drift_trace(trace_id: str) -> tuple[TraceHeader, list[TraceStep]]:
    """A pending status relayed as approved across a handoff and sent out: the rules engine files a
    realized, high-severity information-state drift finding on it."""
    header = TraceHeader(trace_id=trace_id, source="stream-test", task="Tell the supplier about the renewal.")
    lines = [
        ("lead", ["clerk"], "message", "The supplier renewal is submitted for approval with finance; nothing is signed off yet."),
        ("clerk", ["author"], "handoff", "Supplier renewal: approved. Please write the letter."),
        ("author", ["vendor:northwind"], "final_output", "Dear Northwind, we confirm your renewal has been approved."),
    ]  # fmt: skip
    steps = [
        TraceStep(step_id=f"s{i}", index=i, actor=a, recipients=r, kind=k, content=c)
        for i, (a, r, k, c) in enumerate(lines)
    ]
    return header, steps


def publish_traces(bootstrap: str, topic: str, traces: dict[str, int], end: bool = True) -> None:
    """Publish synthetic traces; a step count of 0 publishes the drift trace instead."""
    from ingest.stream import StepPublisher

    with StepPublisher(bootstrap, topic) as pub:
        for tid, n in traces.items():
            header, steps = make_trace(tid, n) if n else drift_trace(tid)
            pub.start_trace(header)
            for s in steps:
                pub.step(tid, s)
            if end:
                pub.end(tid)


def read_topic(bootstrap: str, topic: str, expect: int, timeout: float = 20.0) -> list[Any]:
    """Read ``expect`` records from the start of a topic (no group, so nothing is committed)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None)
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < expect and time.monotonic() < deadline:
            for recs in consumer.poll(timeout_ms=200).values():
                got.extend(recs)
    finally:
        consumer.close()
    return got


def stored_steps(store: Any, trace_id: str) -> list[int]:
    """The step indexes of a trace in stream order (duplicates and gaps show up here)."""
    return [
        e.payload["step"]["index"] for e in store.read_stream(f"trace-{trace_id}") if e.type == "StepRecorded"
    ]


def count_type(store: Any, event_type: str) -> int:
    return int(store.stats()["by_type"].get(event_type, 0))


@contextmanager
def running(member: Any) -> Iterator[threading.Event]:
    """Run a consumer or worker loop in a thread; on exit stop it, close it, re-raise its error."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def body() -> None:
        try:
            member.run(stop)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(timeout=30)
        member.close()
    if errors:
        raise errors[0]
