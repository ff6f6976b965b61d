"""Span assembly in the store: spans of a real SDK-instrumented agent arrive in batches, are stored
at once, completed when the root has ended and the trace is silent, imported by the span importers
and audited; late spans make a new revision; a restart (a new assembly over the same store)
loses nothing and finishes an interrupted completion."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from auditor.report.validator import validate_report
from auditor.reports import list_reports
from auditor.span_audits import InProcessAudit, audited
from auditor.store import EventStore, open_store
from auditor.traces import load_trace
from ingest.otlp_request import ReceivedSpan, decode_json, decode_protobuf
from ingest.span_assembly import (
    ASSEMBLED,
    COMPLETED,
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


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    s = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    yield s
    s.close()


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
