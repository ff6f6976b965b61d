"""The steps topic's wire format without a broker; the batch writer on the store (SQLite and
PostgreSQL) without Kafka."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.core.store import verify_chain
from auditor.core.store.traces import load_trace
from ingest import open_traces as import_file
from ingest.stream_records import DeadKind, Document, EndRecord, Parsed, Rejected, encode, parse_record
from ingest.stream_store import (
    Coords,
    IdleCheck,
    TraceState,
    close_idle,
    group_by_trace,
    open_traces,
    write_batch,
)
from schemas.events import StepRecorded
from schemas.trace import TraceHeader, TraceStep
from tests.stream_support import make_trace, stored_steps

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
WHOWHEN = json.dumps(
    {
        "question": "How many apples are left?",
        "history": [
            {"content": "Count the apples in the basket.", "role": "user"},
            {"content": "There are 3 apples left.", "name": "Counter"},
        ],
        "mistake_agent": "Counter",
        "mistake_step": "1",
    }
).encode()


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
        (
            b"t",
            b'{"step_id": "s", "index": 0, "actor": "a", "raw": {"x": NaN}}',
            None,
            DeadKind.malformed,
            "JSON",
        ),
        (b"t", b'{"step_id": "s", "index": 0, "actor": "\\ud800"}', None, DeadKind.malformed, "hex escape"),
        (
            b"k",
            WHOWHEN,
            [("format", b"otel-genai"), ("name", b"7.json")],
            DeadKind.wrong_schema,
            "otel-genai: ",
        ),
        (
            b"k",
            b"no format here",
            [("format", b"auto"), ("name", b"x.log")],
            DeadKind.wrong_schema,
            "x.log: no importer",
        ),
        (
            b"k",
            b'{"history": []}',
            [("format", b"whowhen"), ("name", b"9.json")],
            DeadKind.wrong_schema,
            "9.json, field 'history'",
        ),
    ],
)
def test_bad_records_are_rejected_with_a_reason(key, value, headers, kind, reason) -> None:  # type: ignore[no-untyped-def]
    result = parse_record(key, value, headers, max_bytes=1024 if value.startswith(b"x") else 1 << 20)
    assert isinstance(result, Rejected)
    assert result.kind is kind
    assert reason in result.reason
    assert "auditor-record-" not in result.reason  # a document's reason names it, not its spool file


def test_a_canonical_step_is_stored_as_the_model_dumps_it() -> None:
    """The fast path (pydantic parses the bytes) and the payload the writer composes from them give
    exactly what validating the decoded JSON and dumping the event model give."""
    value = (
        b'{"step_id": "s1", "index": 1, "actor": "b\\u00e9", "content": "x\\ny \\"z\\"", "raw": {"n": 1.5}}'
    )
    parsed = parse_record("tr\u00e9ce".encode(), value)
    assert isinstance(parsed, Parsed) and parsed.item == TraceStep.model_validate(json.loads(value))


def test_documents_in_an_importers_format_parse_as_the_file_would() -> None:
    for fmt in (b"otel-genai", b"auto"):
        value = (FIXTURES / "otel_genai.json").read_bytes()
        parsed = parse_record(None, value, [("format", fmt), ("name", b"otel_genai.json")])
        assert isinstance(parsed, Parsed) and isinstance(parsed.item, Document)
        assert parsed.item.importer == "otel-genai" and parsed.trace_id is None
        (imported,) = import_file(FIXTURES / "otel_genai.json")
        ((header, steps),) = parsed.item.traces
        assert header == imported.header.model_copy(update={"source": "otel_genai.json"})
        assert list(steps) == list(imported.steps())
    parsed = parse_record(b"run-7", WHOWHEN, [("format", b"whowhen")])  # the key names the source
    assert isinstance(parsed, Parsed) and isinstance(parsed.item, Document)
    ((header, steps),) = parsed.item.traces
    assert (header.trace_id, header.source, len(steps)) == ("whowhen-hand-crafted-run-7", "run-7", 2)
    assert "mistake_agent" not in header.metadata  # the labels stay behind, as the importer withholds them


def _batch(trace_id: str, items: list, first_offset: int) -> list:
    return [(trace_id, item, Coords("steps", 0, first_offset + i)) for i, item in enumerate(items)]


def _write(store, items: list, cache: dict | None = None):  # type: ignore[no-untyped-def]
    return write_batch(store, group_by_trace(items).values(), source="kafka:steps", cache=cache)


def test_batch_writer_keys_events_by_kafka_coordinates_and_closes_on_end_records(store) -> None:  # type: ignore[no-untyped-def]
    header, steps = make_trace("w1", 4)
    first = _batch("w1", [header, *steps[:2]], 0) + _batch(
        "w2", [TraceStep(step_id="x", index=0, actor="a")], 9
    )
    assert _write(store, first).closed == []
    rest = _batch("w1", [*steps[2:], EndRecord()], 3)
    for _ in range(2):  # the second pass is a re-delivery after a crash before the commit
        closed = _write(store, first + rest).closed
        assert [(c.trace_id, c.step_count, c.reason) for c in closed] == [("w1", 4, "end_record")]
    assert stored_steps(store, "w1") == [0, 1, 2, 3]
    events = list(store.read_stream("trace-w1"))
    assert [e.type for e in events] == ["TraceStarted"] + ["StepRecorded"] * 4 + ["TraceClosed"]
    assert [e.idempotency_key for e in events] == [f"kafka:steps/0/{n}" for n in range(6)]
    assert events[1].metadata == {"source": "kafka", "topic": "steps", "partition": 0, "offset": 1}
    assert events[1].payload == StepRecorded(trace_id="w1", step=steps[0]).model_dump(mode="json")
    assert TraceHeader.model_validate(events[0].payload["header"]) == header
    w2 = list(store.read_stream("trace-w2"))  # its first record was a step: the start is implied
    assert [e.idempotency_key for e in w2] == ["kafka:steps/0/9#start", "kafka:steps/0/9"]
    assert w2[0].payload["header"]["source"] == "kafka:steps"  # no invented task
    assert load_trace(store, "w1").steps == steps
    assert verify_chain(store).ok  # one insert for many streams keeps the hash chain whole
    assert open_traces(store, "steps") == ["w2"]
    assert close_idle(store, "w2", idle_s=3600) == (IdleCheck.active, None)
    status, trace = close_idle(store, "w2", idle_s=0)
    assert status is IdleCheck.closed and trace is not None and trace.step_count == 1
    assert close_idle(store, "w2", idle_s=0) == (IdleCheck.already_closed, None)
    assert close_idle(store, "nope", idle_s=0) == (IdleCheck.missing, None)
    assert open_traces(store, "steps") == []


def test_a_step_published_again_at_another_offset_is_stored_once(store) -> None:  # type: ignore[no-untyped-def]
    """Coordinates catch re-deliveries; step ids catch re-publication (a backfill run twice)."""
    header, steps = make_trace("rp", 3)
    _write(store, _batch("rp", [header, *steps, EndRecord()], 0))
    again = _write(store, _batch("rp", [header, *steps, EndRecord()], 100))  # the whole trace, re-produced
    assert [(c.trace_id, c.step_count) for c in again.closed] == [("rp", 3)]  # announced, not re-closed
    assert [e.type for e in store.read_stream("trace-rp")] == ["TraceStarted"] + ["StepRecorded"] * 3 + [
        "TraceClosed"
    ]
    late = TraceStep(step_id="late", index=3, actor="a")
    assert _write(store, _batch("rp", [late, EndRecord()], 200)).closed[0].step_count == 3  # stays closed
    assert stored_steps(store, "rp") == [0, 1, 2, 3]


def test_the_cached_state_is_re_read_when_another_writer_moved_the_trace(store) -> None:  # type: ignore[no-untyped-def]
    """A consumer keeps its open traces' state between batches; another writer (the previous owner
    of the partition, before a rebalance) appends in between, and nothing is stored twice."""
    header, steps = make_trace("rb", 4)
    cache: dict[str, TraceState] = {}
    _write(store, _batch("rb", [header, steps[0]], 0), cache)
    assert cache["rb"].version == 2 and cache["rb"].step_ids == {steps[0].step_id}
    _write(store, _batch("rb", [steps[1], steps[2]], 2))  # another consumer, no cache
    _write(store, _batch("rb", [steps[1], steps[2], steps[3], EndRecord()], 4), cache)  # re-published
    assert stored_steps(store, "rb") == [0, 1, 2, 3]
    assert "rb" not in cache  # closed: a closed trace is re-read if it ever gets more records


def test_documents_are_stored_closed_once_and_conflicts_are_refused(store) -> None:  # type: ignore[no-untyped-def]
    value = (FIXTURES / "otel_genai.json").read_bytes()
    doc = parse_record(b"k", value, [("format", b"otel-genai"), ("name", b"otel_genai.json")])
    assert isinstance(doc, Parsed) and isinstance(doc.item, Document)
    ((header, steps),) = doc.item.traces
    tid = header.trace_id
    for offset in (5, 5, 9):  # stored; re-delivered; published again at another offset
        result = _write(store, [(None, doc.item, Coords("steps", 1, offset))])
        assert [(c.trace_id, c.step_count, c.reason) for c in result.closed] == [
            (tid, len(steps), "document")
        ]
        assert result.rejected == []
    events = list(store.read_stream(f"trace-{tid}"))
    assert [e.idempotency_key for e in events] == [f"kafka:steps/1/5#{n}" for n in range(len(steps) + 2)]
    assert load_trace(store, tid).steps == list(steps)
    other = Document("otel-genai", ((header, (*steps[:3], steps[3].model_copy(update={"step_id": "new"}))),))
    refused = _write(store, [(None, other, Coords("steps", 1, 11))])
    assert refused.closed == [] and [(c.offset, r.kind) for c, r in refused.rejected] == [
        (11, DeadKind.conflict)
    ]
    assert len(list(store.read_stream(f"trace-{tid}"))) == len(steps) + 2


def test_a_streamed_trace_imported_again_from_its_file_is_stored_once(store) -> None:  # type: ignore[no-untyped-def]
    """The consumer keys events by offset, a file import by step id: each path skips what the other stored."""
    from auditor.core.store.traces import append_trace

    header, steps = make_trace("sf", 3)
    _write(store, _batch("sf", [header, *steps[:2]], 0))
    summary = append_trace(store, header, steps)  # the same trace, later, from its file
    assert (summary.steps, summary.appended) == (3, 1)
    assert [e.type for e in store.read_stream("trace-sf")] == ["TraceStarted"] + ["StepRecorded"] * 3
    assert load_trace(store, "sf").steps == steps
