"""Audit reports in the event store: one ``ReportFiled`` event per report, in ``report-{id}``.

A report's id is a digest of what it audited and how, so filing the same audit twice appends
nothing new; reports of a trace are found through the global log by type.
"""

from __future__ import annotations

from auditor.core.errors import NotFoundError
from auditor.core.store import EventStore
from schemas import AuditReport, NewEvent


def report_stream(report_id: str) -> str:
    return f"report-{report_id}"


def store_report(store: EventStore, report: AuditReport, validation: dict | None = None) -> int:
    """Append the report (idempotently); returns its global position.

    The payload carries the report model itself: the store's encoder (pydantic-core) writes it
    straight to the same JSON text as its ``model_dump(mode="json")``, without that dict beside the
    model (several hundred MB for a report of a million steps).
    """
    event = NewEvent(
        type="ReportFiled",
        payload={"trace_id": report.trace_id, "report": report, "validation": validation},
        idempotency_key=f"report:{report.report_id}",
    )
    return store.append(report_stream(report.report_id), [event])[0].global_position


def load_report(store: EventStore, report_id: str) -> AuditReport:
    for ev in store.read_stream(report_stream(report_id)):
        if ev.type == "ReportFiled":
            return AuditReport.model_validate(ev.payload["report"])
    raise NotFoundError(f"no report with id '{report_id}'", hint="run 'auditor reports list'")


def list_reports(store: EventStore, trace_id: str | None = None) -> list[AuditReport]:
    out = []
    for ev in store.read_all(types=["ReportFiled"]):
        if trace_id is None or ev.payload.get("trace_id") == trace_id:
            out.append(AuditReport.model_validate(ev.payload["report"]))
    return out
