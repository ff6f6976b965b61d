"""`auditor review`'s job as a function: import, store, build the graph, audit, validate, file.

The CLI, the streaming workers and the server call this; it never prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.errors import ContractError
from auditor.policy import Policy
from auditor.report.validator import ValidationResult, validate_report
from auditor.reports import store_report
from auditor.store import EventStore
from auditor.traces import append_trace
from schemas import AuditReport, GraphMode, Trace


@dataclass(frozen=True)
class AgentOptions:
    """How the agent engine runs: the model (any litellm name, or local/smollm2), the contract,
    the budget, and whether it starts from the rules engine's findings."""

    model: str = "local/smollm2"
    contract: str = "v3"
    seed_findings: str | None = None
    budget: Any = None


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
    agent: AgentOptions | None = None,
) -> tuple[AuditReport, ValidationResult]:
    """Audit one trace, validate the report, and file it in the store when one is given.

    Reports of the rules engine and the V3 agent contract must validate (else it is a bug and
    nothing is filed); naive-contract reports are filed with their validation, which measures them.
    """
    if engine == "rules":
        from auditor.engine import run_rules_audit

        report = run_rules_audit(trace, mode, policy, detectors)
    elif engine == "agent":
        from auditor.agent import run_agent_audit

        opts = agent or AgentOptions()
        report = run_agent_audit(
            trace,
            opts.model,
            mode=mode,
            store=store,
            budget=opts.budget,
            contract=opts.contract,
            seed_findings=opts.seed_findings,
        )
    else:
        raise ContractError(
            f"engine '{engine}' is not available", hint="use --engine rules or --engine agent"
        )
    validation = validate_report(report.model_dump(mode="json"), trace)
    naive = engine == "agent" and (agent or AgentOptions()).contract == "naive"
    if not validation.ok and not naive:  # an engine must never emit an unresolvable unit: refuse to file it
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
    agent: AgentOptions | None = None,
    redact: bool = False,
    patterns: dict[str, str] | None = None,
) -> list[ReviewOutcome]:
    """Review every trace of a file. With ``redact``, each trace is redacted (secrets, e-mails,
    phone numbers, ``patterns``) before it is stored and audited: neither the store nor the
    report ever holds the values."""
    from ingest.redact import Redactor

    outcomes = []
    for trace, labels, importer in read_traces(path, fmt):
        if redact:
            redactor = Redactor(patterns)
            trace = redactor.trace(trace)
            labels = redactor.labels(labels) if labels is not None else None  # type: ignore[arg-type]
        summary = append_trace(store, trace.header, trace.steps, labels)  # type: ignore[arg-type]
        report, validation = audit_trace(
            store, trace, mode=mode, engine=engine, policy=policy, detectors=detectors, agent=agent
        )
        outcomes.append(ReviewOutcome(trace, report, validation, importer, summary.appended))
    return outcomes
