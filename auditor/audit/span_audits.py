"""Audit assembled span traces in-process, exactly as the audit workers do, for `auditor serve`.

The OTLP receiver has no Kafka between the spans and the audit: each trace that span assembly
completes (``ingest.span_assembly``) is audited here with the workers' engine and recorded by the
same recorder (``auditor.audit.audit_runs``: its ``AuditCompleted`` / ``AuditFailed`` marker, a trace
finished once). The trace is the one span assembly just stored, handed over as it holds it; the
store's copy is read only when the store held the trace already (a restart re-hands interrupted
traces over, whose finished audits are skipped).
"""

from __future__ import annotations

from auditor.audit.audit_runs import AuditRecorder, AuditRun
from auditor.audit.policy_selection import PolicySet
from auditor.audit.workers import resolve_engine
from auditor.core.store import EventStore
from ingest.span_assembly import AssembledTrace


class InProcessAudit:
    """A span-assembly sink: audit the trace with ``engine`` (under the policy ``policies``
    chooses for it) and record the outcome; a store failure is raised (the revision stays
    unfinished and is retried)."""

    def __init__(self, store: EventStore, engine: str = "rules", policies: PolicySet | None = None) -> None:
        self.audits = AuditRecorder(store, engine, resolve_engine(engine, policies))

    def __call__(self, trace: AssembledTrace) -> AuditRun:
        return self.audits.run(trace.trace_id, trace.trace)
