"""`auditor review`'s job as a function: import, store, build the graph, audit, validate, file.

The CLI, the streaming workers and the server call this; it never prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from auditor.errors import ContractError
from auditor.policy import Policy
from auditor.report.validator import ValidationResult, validate_report
from auditor.reports import store_report
from auditor.store import EventStore
from auditor.traces import append_trace
from schemas import AuditReport, GraphMode, Trace


@dataclass
class ReviewOutcome:
    trace: Trace
    report: AuditReport
    validation: ValidationResult
    importer: str
    new_events: int


def read_traces(path: Path, fmt: str = "auto") -> list[tuple[Trace, object, str]]:
    """Every trace of a file, fully parsed and validated before anything is stored."""
    from ingest import open_traces

    out = []
    for imported in open_traces(path, fmt):
        out.append(
            (Trace(header=imported.header, steps=list(imported.steps())), imported.labels, imported.importer)
        )
    return out


def audit_trace(
    store: EventStore | None,
    trace: Trace,
    *,
    mode: GraphMode | str = GraphMode.annotated,
    engine: str = "rules",
    policy: Policy | None = None,
    detectors: list[str] | None = None,
) -> tuple[AuditReport, ValidationResult]:
    """Audit one trace, validate the report, and file it in the store when one is given."""
    from auditor.engine import run_rules_audit

    if engine != "rules":
        raise ContractError(f"engine '{engine}' is not available", hint="use --engine rules")
    report = run_rules_audit(trace, mode, policy, detectors)
    validation = validate_report(report.model_dump(mode="json"), trace)
    if not validation.ok:  # the engine must never emit an unresolvable unit: refuse to file it
        problems = (
            validation.schema_errors
            + validation.reference_errors
            + [f"{u.finding_id}[{u.index}]: {u.problem}" for u in validation.units if not u.ok]
        )
        raise ContractError(f"the {engine} engine produced an invalid report: {'; '.join(problems[:3])}")
    if store is not None:
        store_report(store, report, validation.to_dict())
    return report, validation


def review_file(
    store: EventStore,
    path: Path,
    *,
    fmt: str = "auto",
    mode: GraphMode | str = GraphMode.annotated,
    engine: str = "rules",
    policy: Policy | None = None,
    detectors: list[str] | None = None,
) -> list[ReviewOutcome]:
    outcomes = []
    for trace, labels, importer in read_traces(path, fmt):
        summary = append_trace(store, trace.header, trace.steps, labels)  # type: ignore[arg-type]
        report, validation = audit_trace(
            store, trace, mode=mode, engine=engine, policy=policy, detectors=detectors
        )
        outcomes.append(ReviewOutcome(trace, report, validation, importer, summary.appended))
    return outcomes
