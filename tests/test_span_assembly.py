"""Span assembly in the store: spans of a real SDK-instrumented agent arrive in batches, are stored
at once, completed when the root has ended and the trace is silent, imported by the span importers
and audited; late spans make a new revision; a restart (a new assembly over the same store)
loses nothing and finishes an interrupted completion. Each test runs on SQLite and PostgreSQL (the
``store`` fixture)."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from auditor.audit.audit_runs import finished as audited
from auditor.audit.report.validator import validate_report
from auditor.audit.span_audits import InProcessAudit
from auditor.core.store import EventStore
from auditor.core.store.reports import list_reports
from auditor.core.store.traces import load_trace
from ingest.otlp_request import ReceivedSpan, decode_json, decode_protobuf
from ingest.span_assembly import (
    ASSEMBLED,
    COMPLETED,
    OPENED_STREAM,
    RECEIVED,
    REJECTED,
    AssembledTrace,
    AssemblySettings,
    Received,
    SpanAssembly,
    spans_stream,
)
from tests.otel_toy_agent import encoded_spans, json_body, provider, run_agent

IDLE = 0.3


def agent_spans(late_note: bool = False, order: str = "A-1042") -> tuple[str, list[ReceivedSpan]]:
    """Run the toy agent; its spans as the SDK's OTLP exporter encodes them, in the order they ended."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tid = run_agent(provider(SimpleSpanProcessor(exporter)), order=order, late_note=late_note)
    decoded = decode_protobuf(encoded_spans(list(exporter.get_finished_spans())))
    assert decoded.rejected == 0
    return tid, decoded.spans


def assembly(store: EventStore, sink: list[AssembledTrace] | None = None, fail: bool = False) -> SpanAssembly:
    audit = InProcessAudit(store)

    def handed(trace: AssembledTrace) -> None:
        if fail:
            raise RuntimeError("crash before the hand-over")
        audit(trace)
        if sink is not None:
            sink.append(trace)

    return SpanAssembly(store, AssemblySettings(idle_s=IDLE, rootless_s=30.0), "otlp-http", handed)


def types(store: EventStore, tid: str) -> list[str]:
    return [e.type for e in store.read_stream(spans_stream(tid))]


def test_protobuf_and_json_encodings_decode_to_the_same_spans() -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    run_agent(provider(SimpleSpanProcessor(exporter)))
    spans = list(exporter.get_finished_spans())
    proto, js = decode_protobuf(encoded_spans(spans)), decode_json(json_body(spans))

    def essence(s: ReceivedSpan) -> tuple:
        return (
            s.trace_id,
            s.span_id,
            s.parent_id,
            s.end_ns,
            s.span["name"],
            s.span["attributes"],
            s.resource,
        )

    assert [essence(s) for s in proto.spans] == [essence(s) for s in js.spans]
    assert [s.parent_id is None for s in proto.spans] == [False, False, False, True]  # the root ends last


def test_a_trace_arriving_in_batches_is_stored_at_once_completed_imported_and_audited(store) -> None:
    tid, spans = agent_spans()
    done: list[AssembledTrace] = []
    asm = assembly(store, done)
    assert asm.receive(spans[:2]) == Received(2, 0)  # the first batch: nothing waits in memory only
    assert types(store, tid) == [RECEIVED, RECEIVED]
    time.sleep(IDLE + 0.1)
    assert asm.tick() == []  # silent, but its root has not ended: not complete
    assert asm.receive(spans) == Received(2, 2)  # a retried export stores only what is new
    assert asm.tick() == []  # the root has ended, but the trace is not silent yet
    time.sleep(IDLE + 0.1)
    [trace] = asm.tick()
    assert done == [trace] and trace.trace_id == f"otel-{tid}" and trace.revision == 1
    assert types(store, tid) == [RECEIVED] * 4 + [COMPLETED, ASSEMBLED]
    stored = load_trace(store, trace.trace_id)
    assert [(s.actor, s.kind) for s in stored.steps] == [
        ("user", "message"),
        ("refund_agent", "tool_call"),
        ("lookup_order", "tool_result"),
        ("refund_agent", "message"),
        ("refund_agent", "final_output"),
    ]
    assert stored.header.source == "otlp-http" and stored.header.metadata["span_revision"] == 1
    [report] = list_reports(store, trace.trace_id)
    assert validate_report(report.model_dump(mode="json"), stored).ok
    assert audited(store, trace.trace_id)
    assert asm.tick() == [] and asm.open_count == 0


def test_late_spans_reopen_the_trace_as_a_new_revision(store) -> None:
    tid, spans = agent_spans(late_note=True)
    late = [s for s in spans if s.span["name"] == "chat follow-up"]
    first = [s for s in spans if s not in late]
    asm = assembly(store)
    asm.receive(first)
    time.sleep(IDLE + 0.1)
    [one] = asm.tick()
    asm.receive(late)
    assert asm.tick() == []
    time.sleep(IDLE + 0.1)
    [two] = asm.tick()
    assert (two.revision, two.trace_id) == (2, f"otel-{tid}-r2")
    old, new = load_trace(store, one.trace_id), load_trace(store, two.trace_id)
    assert len(new.steps) == len(old.steps) + 1 and "still awaits approval" in new.steps[-1].content
    assert new.header.metadata["revises"] == one.trace_id
    assert len(list_reports(store, one.trace_id)) == 1 and len(list_reports(store, two.trace_id)) == 1
    assert [r.trace_id for r in list_reports(store, one.trace_id)] == [one.trace_id]  # the old report stays


def test_a_restart_rebuilds_open_traces_from_the_store(store) -> None:
    tid, spans = agent_spans()
    assembly(store).receive(spans)  # this process dies here, its memory with it
    after = assembly(store)
    assert after.recover() == [] and after.open_count == 1
    time.sleep(IDLE + 0.1)
    [trace] = after.tick()
    assert trace.trace_id == f"otel-{tid}" and audited(store, trace.trace_id)


def test_a_completion_interrupted_before_its_hand_over_is_finished_after_a_restart(store) -> None:
    tid, spans = agent_spans()
    crashing = assembly(store, fail=True)
    crashing.receive(spans)
    time.sleep(IDLE + 0.1)
    with pytest.raises(RuntimeError):
        crashing.tick()
    assert types(store, tid)[-1] == COMPLETED  # completed and stored, never handed over
    done: list[AssembledTrace] = []
    [trace] = assembly(store, done).recover()
    assert done == [trace] and audited(store, trace.trace_id)
    assert types(store, tid)[-1] == ASSEMBLED
    assert assembly(store).recover() == []  # nothing left to finish: nothing is audited twice
    assert len(list_reports(store, trace.trace_id)) == 1


def test_spans_without_agent_content_are_kept_and_the_revision_rejected_with_the_reason(store) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer = provider(SimpleSpanProcessor(exporter)).get_tracer("web")
    with tracer.start_as_current_span("GET /health") as span:
        span.set_attribute("http.request.method", "GET")
        tid = format(span.get_span_context().trace_id, "032x")
    asm = assembly(store)
    asm.receive(decode_protobuf(encoded_spans(list(exporter.get_finished_spans()))).spans)
    assert asm.flush(tid) == []
    [event] = [e for e in store.read_stream(spans_stream(tid)) if e.type == REJECTED]
    assert "no importer recognises" in event.payload["reason"] and tid in event.payload["reason"]
    assert types(store, tid)[0] == RECEIVED  # the span itself is kept


def test_a_flush_completes_a_trace_before_its_idle_time(store) -> None:
    _, spans = agent_spans()
    asm = SpanAssembly(
        store, AssemblySettings(idle_s=3600, rootless_s=3600), "otlp-http", InProcessAudit(store)
    )
    asm.receive(spans)
    assert asm.tick() == []
    [trace] = asm.flush()
    assert trace.reason == "flush" and audited(store, trace.trace_id)


def test_concurrent_receives_share_transactions_and_store_each_span_once(store) -> None:
    import threading

    runs = [agent_spans(order=f"G-{i}") for i in range(8)]
    asm = assembly(store)
    # each run's spans, and the last run's again from a second client (a retried export)
    batches = [spans for _, spans in runs] + [runs[-1][1]]
    barrier = threading.Barrier(len(batches) + 1)
    results: list[Received] = []

    def export(spans: list[ReceivedSpan]) -> None:
        barrier.wait()
        results.append(asm.receive(spans))

    threads = [threading.Thread(target=export, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    barrier.wait()
    for t in threads:
        t.join()
    assert sum(r.stored for r in results) == 32 and sum(r.duplicates for r in results) == 4
    for tid, _ in runs:
        events = list(store.read_stream(spans_stream(tid)))
        assert [(e.type, e.stream_version) for e in events] == [(RECEIVED, v) for v in (1, 2, 3, 4)]
    opened = [tid for e in store.read_stream(OPENED_STREAM) for tid in e.payload["trace_ids"]]
    assert sorted(opened) == sorted(tid for tid, _ in runs)  # each trace named once, as it opened
    assert asm.open_count == len(runs)


def _group_commit(queued: tuple[int, ...]) -> tuple[list[list[int]], dict[int, object]]:
    """Batch 0 is written alone while ``queued`` wait behind it (a batch of -1 cannot be stored):
    every write's batches, and each batch's answer (its result or its error)."""
    import threading

    from ingest.group_commit import GroupCommit

    writes: list[list[int]] = []
    first_inside, release = threading.Event(), threading.Event()

    def write(batches: list[int]) -> list[int]:
        writes.append(list(batches))
        if len(writes) == 1:  # the first writer holds the lock while the others queue
            first_inside.set()
            release.wait(10)
        if -1 in batches:
            raise RuntimeError("batch -1 cannot be stored")
        return [b * 10 for b in batches]

    commits: GroupCommit[int, int] = GroupCommit(write)
    answers: dict[int, object] = {}

    def submit(n: int) -> None:
        try:
            answers[n] = commits.submit(n)
        except RuntimeError as exc:
            answers[n] = str(exc)

    leader = threading.Thread(target=submit, args=(0,))
    leader.start()
    first_inside.wait(10)
    waiting = [threading.Thread(target=submit, args=(n,)) for n in queued]
    for t in waiting:
        t.start()
    while len(commits._queue) < len(queued):  # all waiting behind the first write
        time.sleep(0.01)
    assert answers == {}  # nobody is answered while the write holding their batch is not done
    release.set()
    for t in [leader, *waiting]:
        t.join(10)
    return writes, answers


def test_a_group_commit_answers_each_caller_only_after_the_write_holding_its_batch() -> None:
    writes, answers = _group_commit((1, 2, 3))
    assert writes[0] == [0] and sorted(writes[1]) == [1, 2, 3]  # the queued three: one write
    assert answers == {0: 0, 1: 10, 2: 20, 3: 30}


def test_a_batch_that_fails_its_group_commit_fails_alone() -> None:
    """Issue 31: one caller's bad batch in a shared transaction cost every caller of the group
    its data; now the group is written again batch by batch, and only the bad batch's caller
    gets the error."""
    writes, answers = _group_commit((1, -1, 2))
    assert sorted(writes[1]) == [-1, 1, 2]  # one group, refused whole, then one write per batch
    assert sorted(map(sorted, writes[2:])) == [[-1], [1], [2]]
    assert answers == {0: 0, 1: 10, -1: "batch -1 cannot be stored", 2: 20}


def test_recover_reads_the_spans_of_open_traces_only(store, monkeypatch: pytest.MonkeyPatch) -> None:
    done, late, still_open = (
        agent_spans(order="R-done"),
        agent_spans(order="R-late"),
        agent_spans(order="R-open"),
    )
    asm = assembly(store)
    asm.receive(done[1])
    asm.receive(late[1][:3])
    assert [t.otel_trace_id for t in asm.flush()] == [done[0], late[0]]  # completed: spans before
    asm.receive(late[1][3:])  # a late span after the completion: open again
    asm.receive(still_open[1])
    read: list[str] = []
    original = ReceivedSpan.from_payload

    def counted(payload: dict) -> ReceivedSpan:
        read.append(payload["span"]["traceId"])
        return original(payload)

    monkeypatch.setattr(ReceivedSpan, "from_payload", staticmethod(counted))
    after = assembly(store)
    assert after.recover() == []
    assert sorted(after._open) == sorted([late[0], still_open[0]])
    assert sorted(set(read)) == sorted([late[0], still_open[0]])  # the completed trace: no span read
    time.sleep(IDLE + 0.1)
    assert sorted((t.otel_trace_id, t.revision) for t in after.tick()) == sorted(
        [(late[0], 2), (still_open[0], 1)]
    )


def test_recover_finds_the_open_traces_of_a_store_older_than_the_span_traces_stream(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spans stored by a version that wrote no ``SpanTracesOpened``: a restart still finds the
    trace left open there (and not the one completed), beside one opened by today's code."""
    done, legacy, fresh = (
        agent_spans(order="L-done"),
        agent_spans(order="L-open"),
        agent_spans(order="N-open"),
    )
    asm = assembly(store)
    events = SpanAssembly._events
    with monkeypatch.context() as old_version:
        old_version.setattr(
            SpanAssembly,
            "_events",
            lambda self, cur, spans: [e for e in events(self, cur, spans) if e.stream_id != OPENED_STREAM],
        )
        asm.receive(done[1])
        assert [t.otel_trace_id for t in asm.flush()] == [done[0]]
        asm.receive(legacy[1])
    asm.receive(fresh[1])
    assert [e.payload["trace_ids"] for e in store.read_stream(OPENED_STREAM)] == [[fresh[0]]]  # only today's
    after = assembly(store)
    assert after.recover() == []
    assert sorted(after._open) == sorted([legacy[0], fresh[0]])
    time.sleep(IDLE + 0.1)
    assert sorted(t.otel_trace_id for t in after.tick()) == sorted([legacy[0], fresh[0]])


def test_spans_are_redacted_before_they_are_stored_with_one_placeholder_per_value(store) -> None:
    import json

    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ingest.span_redact import SpanRedaction

    email, key = "dana.ruiz@northwind.example", "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2"
    exporter = InMemorySpanExporter()
    tid = run_agent(provider(SimpleSpanProcessor(exporter), service=f"refunds {key}"), order=email)
    spans = decode_protobuf(encoded_spans(list(exporter.get_finished_spans()))).spans
    asm = SpanAssembly(
        store,
        AssemblySettings(idle_s=IDLE, rootless_s=30.0),
        "otlp-http",
        InProcessAudit(store),
        SpanRedaction(),
    )
    asm.receive(spans[:2])  # the trace's spans in two batches: one mapping across both
    asm.receive(spans[2:])
    stored = json.dumps([e.payload for e in store.read_all()], ensure_ascii=False)
    assert email not in stored and key not in stored
    assert "refunds [REDACTED_API_KEY_1]" in stored
    [trace] = asm.flush(tid)
    steps = load_trace(store, trace.trace_id).steps
    assert steps[0].content == "Please refund order [REDACTED_EMAIL_1], it arrived broken."
    assert steps[1].tool is not None and steps[1].tool.arguments == {"order": "[REDACTED_EMAIL_1]"}
    assert "[REDACTED_EMAIL_1]" in steps[2].content and "[REDACTED_EMAIL_1]" in steps[-1].content
    assert email not in json.dumps([e.payload for e in store.read_all()], ensure_ascii=False)
    assert tid not in asm.redaction._open  # a completed trace's mapping is dropped
