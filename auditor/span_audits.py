"""Audit assembled span traces in-process, exactly as the audit workers do, for `auditor serve`.

The OTLP receiver has no Kafka between the spans and the audit: each trace that span assembly
completes (``ingest.span_assembly``) is audited here with the workers' engine, and the same
``AuditCompleted`` / ``AuditFailed`` marker goes to ``audit-{trace_id}`` under the workers'
idempotency key. A trace whose marker is stored is never audited again (a restart re-hands
interrupted traces over; this skips the finished ones), and the report itself is filed by the
engine (``auditor.review.audit_trace``), which the store de-duplicates.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import SQLAlchemyError

from auditor.errors import StoreError
from auditor.policy_selection import PolicySet
from auditor.store import EventStore
from auditor.workers import audit_stream, resolve_engine
from ingest.span_assembly import AssembledTrace
from schemas.events import NewEvent

log = logging.getLogger("auditor.spans")


def audited(store: EventStore, trace_id: str) -> bool:
    """Whether an audit of the trace finished (completed or failed)."""
    return any(
        ev.type in ("AuditCompleted", "AuditFailed") for ev in store.read_stream(audit_stream(trace_id))
    )


class InProcessAudit:
    """A span-assembly sink: audit the trace with ``engine`` (under the policy ``policies``
    chooses for it) and record the outcome."""

    def __init__(self, store: EventStore, engine: str = "rules", policies: PolicySet | None = None) -> None:
        self.store, self.engine = store, engine
        self.audit = resolve_engine(engine, policies)

    def __call__(self, trace: AssembledTrace) -> None:
        tid = trace.trace_id
        if audited(self.store, tid):
            return
        try:
            report = self.audit(self.store, tid)
        except (StoreError, SQLAlchemyError):
            raise  # the store is down: the revision stays unfinished and is retried
        except Exception as exc:  # this trace broke the engine: record it, never retry forever
            log.exception("audit of span trace %s failed", tid)
            self._record(tid, "AuditFailed", {"error": f"{type(exc).__name__}: {exc}"})
            return
        self._record(
            tid, "AuditCompleted", {"report_id": report["report_id"], "decision": report["decision"]}
        )

    def _record(self, trace_id: str, kind: str, payload: dict[str, object]) -> None:
        event = NewEvent(
            type=kind,
            payload={"trace_id": trace_id, "engine": self.engine, **payload},
            idempotency_key=f"audit:{trace_id}:{self.engine}",
        )
        self.store.append(audit_stream(trace_id), [event])
