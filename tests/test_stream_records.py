"""The steps topic's wire format and the metrics exposition, without a broker; the batch writer on
the store (SQLite and PostgreSQL) without Kafka."""

from __future__ import annotations

import urllib.request

import pytest

from ingest.stream_metrics import Metrics, MetricsServer
from ingest.stream_records import DeadKind, EndRecord, Parsed, Rejected, encode, parse_record
from ingest.stream_store import Coords, IdleCheck, close_idle, group_by_trace, open_traces, write_batch
from schemas.trace import TraceHeader, TraceStep
from tests.stream_support import make_trace, stored_steps


def test_canonical_items_round_trip_through_the_wire() -> None:
    header, steps = make_trace("t1", 2)
    for item in (header, *steps, EndRecord(trace_id="t1")):
        parsed = parse_record(b"t1", encode(item))
        assert parsed == Parsed("t1", item)


@pytest.mark.parametrize(
    ("key", "value", "headers", "kind", "reason"),
    [
        (b"t", b"{", None, DeadKind.malformed, "malformed JSON"),
        (b"t", b"\xc3\x28", None, DeadKind.malformed, "not UTF-8 at byte 0"),
        (None, b"{}", None, DeadKind.malformed, "no key"),
        (b"t", b'"text"', None, DeadKind.malformed, "found str"),
        (b"t", b'{"step_id": "s", "index": 0}', None, DeadKind.wrong_schema, "field 'actor': Field required"),
        (
            b"t",
            b'{"step_id": "s", "index": 0, "actor": "a", "colour": 1}',
            None,
            DeadKind.wrong_schema,
            "colour",
        ),
        (b"t", b'{"record": "end", "trace_id": "u"}', None, DeadKind.wrong_schema, "key says 't'"),
        (
            b"t",
            b'{"step_id": "s", "index": 0, "actor": "a"}',
            [("format", b"otel")],
            DeadKind.wrong_schema,
            "'otel'",
        ),
        (b"t", b"x" * 2000, None, DeadKind.oversized, "2000 bytes, the limit is 1024"),
    ],
)
def test_bad_records_are_rejected_with_a_reason(key, value, headers, kind, reason) -> None:  # type: ignore[no-untyped-def]
    result = parse_record(key, value, headers, max_bytes=1024)
    assert isinstance(result, Rejected)
    assert result.kind is kind
    assert reason in result.reason


def test_metrics_render_prometheus_text_and_serve_it() -> None:
    m = Metrics("auditor_test")
    m.describe("done_total", "counter", "Things done.")
    m.describe("open", "gauge", "Things open.")
    m.inc("done_total", kind='say "hi"')
    m.inc("done_total", 2, kind="plain")
    text = m.render()
    assert '# TYPE auditor_test_done_total counter\nauditor_test_done_total{kind="plain"} 2\n' in text
    assert 'auditor_test_done_total{kind="say \\"hi\\""} 1' in text
    assert "auditor_test_open 0" in text
    server = MetricsServer(m, 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as resp:
            assert resp.read().decode() == m.render()
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as resp:
            assert resp.status == 200
    finally:
        server.close()


def _batch(trace_id: str, items: list, first_offset: int) -> list:
    return [(trace_id, item, Coords("steps", 0, first_offset + i)) for i, item in enumerate(items)]


def test_batch_writer_is_idempotent_and_closes_on_end_records(store) -> None:  # type: ignore[no-untyped-def]
    header, steps = make_trace("w1", 4)
    first = _batch("w1", [header, *steps[:2]], 0) + _batch(
        "w2", [TraceStep(step_id="x", index=0, actor="a")], 9
    )
    assert write_batch(store, group_by_trace(first).values(), source="kafka:steps") == []
    rest = _batch("w1", [*steps[2:], EndRecord()], 3)
    for _ in range(2):  # the second pass is a re-delivery after a crash before the commit
        closed = write_batch(store, group_by_trace(first + rest).values(), source="kafka:steps")
        assert [(c.trace_id, c.step_count, c.reason) for c in closed] == [("w1", 4, "end_record")]
    assert stored_steps(store, "w1") == [0, 1, 2, 3]
    events = list(store.read_stream("trace-w1"))
    assert [e.type for e in events] == ["TraceStarted"] + ["StepRecorded"] * 4 + ["TraceClosed"]
    assert events[1].metadata == {"source": "kafka", "topic": "steps", "partition": 0, "offset": 1}
    assert TraceHeader.model_validate(events[0].payload["header"]) == header
    started_w2 = next(iter(store.read_stream("trace-w2"))).payload["header"]
    assert started_w2["trace_id"] == "w2" and started_w2["source"] == "kafka:steps"  # no invented task
    assert open_traces(store, "steps") == ["w2"]
    assert close_idle(store, "w2", idle_s=3600) == (IdleCheck.active, None)
    status, trace = close_idle(store, "w2", idle_s=0)
    assert status is IdleCheck.closed and trace is not None and trace.step_count == 1
    assert close_idle(store, "w2", idle_s=0) == (IdleCheck.already_closed, None)
    assert close_idle(store, "nope", idle_s=0) == (IdleCheck.missing, None)
    assert open_traces(store, "steps") == []
