"""One audit of a closed trace, run and recorded once: the Kafka audit workers' and the OTLP
receiver's in-process audit alike.

A finished audit leaves one marker in ``audit-{trace_id}``: ``AuditCompleted`` (the report's id and
decision) or ``AuditFailed`` (the engine's error), under the idempotency key
``audit:{trace_id}:{engine}``. A trace whose marker is stored is not audited again (a re-delivered
notice, a trace a restart hands over again); the report itself is filed by the engine, which the
store de-duplicates, so a run interrupted before its marker repeats harmlessly. The store failing
is raised, never recorded: the caller retries once it is back. Any other failure of the engine is
this trace's own: it is recorded, so that the trace is not retried for ever.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from auditor.core.errors import StoreError
from auditor.core.store import EventStore
from auditor.core.store.traces import load_trace
from schemas.events import NewEvent
from schemas.report import AuditReport
from schemas.trace import Trace

AuditFn = Callable[[EventStore, Trace], AuditReport]
"""An engine: audit the trace, file its report in the store, return the report."""

Publish = Callable[[AuditReport], dict[str, Any]]
"""What is done with a report before its audit is marked complete (the workers publish it); returns
what the marker records beside the report's id and decision."""

COMPLETED = "AuditCompleted"
FAILED = "AuditFailed"
log = logging.getLogger("auditor.audits")


class Outcome(StrEnum):
    done = "done"
    failed = "failed"
    skipped = "skipped"  # an earlier run finished the trace


@dataclass(frozen=True)
class AuditRun:
    """What one ``AuditRecorder.run`` did; ``seconds`` is the time inside the engine."""

    trace_id: str
    outcome: Outcome
    report: AuditReport | None = None
    error: str | None = None
    seconds: float = 0.0
    recorded: dict[str, Any] = field(default_factory=dict)  # the marker's payload


def audit_stream(trace_id: str) -> str:
    return f"audit-{trace_id}"


def finished(store: EventStore, trace_id: str) -> bool:
    """Whether an audit of the trace finished (completed or failed)."""
    return any(ev.type in (COMPLETED, FAILED) for ev in store.read_stream(audit_stream(trace_id)))


class AuditRecorder:
    """Runs ``audit`` (the engine called ``engine``) on closed traces of ``store``, each once."""

    def __init__(self, store: EventStore, engine: str, audit: AuditFn) -> None:
        self.store, self.engine, self.audit = store, engine, audit

    def run(self, trace_id: str, trace: Trace | None = None, publish: Publish | None = None) -> AuditRun:
        """Audit the trace unless a run finished it: ``trace`` when the caller holds it as
        stored, else the store's. ``publish`` takes the report before the audit is marked done."""
        if finished(self.store, trace_id):
            return AuditRun(trace_id, Outcome.skipped)
        started = time.perf_counter()
        try:
            report = self.audit(self.store, trace if trace is not None else load_trace(self.store, trace_id))
        except (StoreError, SQLAlchemyError):
            raise  # the store is down: the caller retries, nothing is recorded
        except Exception as exc:  # this trace broke the engine: record it, never retry for ever
            log.exception("audit of trace %s failed", trace_id)
            error = f"{type(exc).__name__}: {exc}"
            seconds = time.perf_counter() - started
            recorded = self._record(trace_id, FAILED, {"error": error})
            return AuditRun(trace_id, Outcome.failed, error=error, seconds=seconds, recorded=recorded)
        seconds = time.perf_counter() - started
        extra = publish(report) if publish is not None else {}
        recorded = self._record(
            trace_id, COMPLETED, {"report_id": report.report_id, "decision": report.decision.value, **extra}
        )
        return AuditRun(trace_id, Outcome.done, report, seconds=seconds, recorded=recorded)

    def _record(self, trace_id: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        payload = {"trace_id": trace_id, "engine": self.engine, **fields}
        event = NewEvent(type=kind, payload=payload, idempotency_key=f"audit:{trace_id}:{self.engine}")
        self.store.append(audit_stream(trace_id), [event])
        return payload
