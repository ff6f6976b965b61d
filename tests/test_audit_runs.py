"""One audit-run recorder for the Kafka workers and the OTLP receiver (auditor.audit.audit_runs), and the
trace span assembly hands it: a real SDK-instrumented agent's spans assembled in a real store
(SQLite and PostgreSQL, the ``store`` fixture), imported from their OTLP document in memory.

- Span assembly imports the OTLP document without writing it to a file, and the trace it hands
  over is the one ``load_trace`` rebuilds from the store (same model, same digest), so the audit
  needs no reload, and none is made.
- A finished trace is skipped; an engine failure is recorded once as ``AuditFailed``; a store
  failure is raised with nothing recorded (the caller retries).
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

import auditor.audit.audit_runs as audit_runs
from auditor.audit.audit_runs import AuditRecorder, Outcome, audit_stream
from auditor.audit.workers import rules_audit
from auditor.core.errors import StoreError
from auditor.core.store import EventStore
from auditor.core.store.traces import load_trace, trace_digest
from ingest.span_assembly import AssembledTrace, AssemblySettings, SpanAssembly
from schemas.report import AuditReport
from schemas.trace import Trace
from tests.test_span_assembly import agent_spans


def assembled(store: EventStore, order: str = "A-1042") -> AssembledTrace:
    """The toy agent's trace, received, completed and stored by span assembly; handed to no audit."""
    handed: list[AssembledTrace] = []
    asm = SpanAssembly(store, AssemblySettings(idle_s=60.0), "otlp-http", handed.append)
    tid, spans = agent_spans(order=order)
    asm.receive(spans)
    assert asm.flush(tid) == handed
    return handed[0]


def markers(store: EventStore, trace_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, e.payload) for e in store.read_stream(audit_stream(trace_id))]


def test_the_assembled_trace_is_the_stored_one_and_is_audited_without_a_reload(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_file(*_: Any, **__: Any) -> Any:
        raise AssertionError("a temporary file was written")

    with monkeypatch.context() as files:  # the OTLP document is imported where it is, in memory
        files.setattr(tempfile, "TemporaryDirectory", no_file)
        files.setattr(tempfile, "mkstemp", no_file)
        trace = assembled(store)
    assert trace.trace is not None
    stored = load_trace(store, trace.trace_id)
    assert trace.trace.model_dump(mode="json") == stored.model_dump(mode="json")
    assert trace_digest(trace.trace) == trace_digest(stored)

    def no_reload(*_: Any) -> Trace:
        raise AssertionError("the trace was read back from the store")

    monkeypatch.setattr(audit_runs, "load_trace", no_reload)
    run = AuditRecorder(store, "rules", rules_audit).run(trace.trace_id, trace.trace)
    assert run.outcome is Outcome.done and isinstance(run.report, AuditReport)
    assert run.report.trace_digest == trace_digest(stored)
    assert markers(store, trace.trace_id) == [
        (
            "AuditCompleted",
            {
                "trace_id": trace.trace_id,
                "engine": "rules",
                "report_id": run.report.report_id,
                "decision": run.report.decision.value,
            },
        )
    ]


def test_a_trace_the_store_held_already_is_audited_from_the_store(store: EventStore) -> None:
    def crash(_: AssembledTrace) -> None:
        raise RuntimeError("the process died before the hand-over")

    tid, spans = agent_spans(order="B-7")
    first = SpanAssembly(store, AssemblySettings(idle_s=60.0), "otlp-http", crash)
    first.receive(spans)
    with pytest.raises(RuntimeError):
        first.flush(tid)
    handed: list[AssembledTrace] = []
    # a restart finishes the completion: the trace was stored before the crash, nothing is appended
    [again] = SpanAssembly(store, AssemblySettings(idle_s=60.0), "otlp-http", handed.append).recover()
    assert handed == [again] and again.trace is None
    run = AuditRecorder(store, "rules", rules_audit).run(again.trace_id, again.trace)
    assert run.outcome is Outcome.done and run.report is not None
    assert run.report.trace_digest == trace_digest(load_trace(store, again.trace_id))


def test_finished_traces_are_skipped_and_an_engine_failure_is_recorded_once(store: EventStore) -> None:
    trace = assembled(store)
    calls: list[str] = []

    def broken(_: EventStore, t: Trace) -> AuditReport:
        calls.append(t.header.trace_id)
        raise ValueError("a detector tripped")

    recorder = AuditRecorder(store, "rules", broken)
    failed = recorder.run(trace.trace_id, trace.trace)
    assert (failed.outcome, failed.error) == (Outcome.failed, "ValueError: a detector tripped")
    assert recorder.run(trace.trace_id, trace.trace).outcome is Outcome.skipped
    assert AuditRecorder(store, "rules", rules_audit).run(trace.trace_id).outcome is Outcome.skipped
    assert calls == [trace.trace_id]
    assert [kind for kind, _ in markers(store, trace.trace_id)] == ["AuditFailed"]


def test_a_store_failure_is_raised_and_nothing_recorded(store: EventStore) -> None:
    trace = assembled(store)

    def store_down(_: EventStore, __: Trace) -> AuditReport:
        raise StoreError("the database went away")

    with pytest.raises(StoreError):
        AuditRecorder(store, "rules", store_down).run(trace.trace_id, trace.trace)
    assert markers(store, trace.trace_id) == []
    assert AuditRecorder(store, "rules", rules_audit).run(trace.trace_id).outcome is Outcome.done
