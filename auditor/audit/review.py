"""`auditor review`'s job as a function: import, store, build the graph, audit, validate, file.

The CLI, the streaming workers and the server call this; it never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.audit.engine import Phases, quiet
from auditor.audit.policy import Policy
from auditor.audit.report.validator import CitedEdges, ValidationResult, validate_report
from auditor.core.errors import ContractError
from auditor.core.store import EventStore
from auditor.core.store.reports import store_report
from auditor.core.store.traces import load_trace
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


def with_incident(report: AuditReport, trace: Trace, outcome: str | None) -> AuditReport:
    """The agent engine's report with the incident fields the rules engine files (outcome,
    attribution, risk_score, a finding at a known failure's decisive step)."""
    from auditor.audit.detectors import AuditContext
    from auditor.audit.incident import assess
    from graph import build_graph

    graph = build_graph(trace, GraphMode.topology)
    ctx = AuditContext(trace=trace, graph=graph, mode=GraphMode.topology)
    run, attribution, findings, score = assess(ctx, list(report.findings), outcome)
    return report.model_copy(
        update={"outcome": run, "attribution": attribution, "findings": findings, "risk_score": score}
    )


def audit_trace(
    store: EventStore | None,
    trace: Trace,
    *,
    mode: GraphMode | str = GraphMode.annotated,
    engine: str = "rules",
    policy: Policy | None = None,
    detectors: list[str] | None = None,
    agent: AgentOptions | None = None,
    outcome: str | None = None,
    phases: Phases = quiet,
) -> tuple[AuditReport, ValidationResult]:
    """Audit one trace, validate the report, and file it in the store when one is given.

    Reports of the rules engine and the V3 agent contract must validate (else it is a bug and
    nothing is filed); naive-contract reports are filed with their validation, which measures them.
    """
    edges: CitedEdges | None = None  # None: validation builds the trace's topology graph
    if engine == "rules":
        from auditor.audit.engine import rules_audit

        report, edges = rules_audit(trace, mode, policy, detectors, outcome=outcome, phases=phases)
    elif engine == "agent":
        from auditor.audit.agent import run_agent_audit

        opts = agent or AgentOptions()
        phases("the Auditor Agent")
        report = run_agent_audit(
            trace,
            opts.model,
            mode=mode,
            store=store,
            budget=opts.budget,
            contract=opts.contract,
            seed_findings=opts.seed_findings,
        )
        report = with_incident(report, trace, outcome)
    else:
        raise ContractError(
            f"engine '{engine}' is not available", hint="use --engine rules or --engine agent"
        )
    phases("validating the report")
    validation = validate_report(report.model_dump(mode="json"), trace, edges)
    naive = engine == "agent" and (agent or AgentOptions()).contract == "naive"
    if not validation.ok and not naive:  # an engine must never emit an unresolvable unit: refuse to file it
        problems = (
            validation.schema_errors
            + validation.reference_errors
            + [f"{u.finding_id}[{u.index}]: {u.problem}" for u in validation.units if not u.ok]
        )
        raise ContractError(f"the {engine} engine produced an invalid report: {'; '.join(problems[:3])}")
    if store is not None:
        phases("filing the report")
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
    source: str | None = None,
    trace_id: str | None = None,
    outcome: str | None = None,
    choose_policy: Callable[[Trace], Policy | None] | None = None,
    phases: Phases = quiet,
) -> list[ReviewOutcome]:
    """Store every trace of a file (in one transaction), then audit each as the store holds it:
    a report is computed from, and bound to, the stored trace's digest, never the file's copy
    (a file whose content differs from the stored trace of its id is refused before any audit).
    With ``redact``, traces are redacted (secrets, e-mails, phone numbers, ``patterns``) before
    they are stored, so neither the store nor a report ever holds the values; ``trace_id`` stores
    a one-trace file under a new id. Without ``policy``, ``choose_policy`` picks each stored
    trace's policy (the service's selector)."""
    from ingest import ingest_path

    phases("reading and storing the input")
    stored = ingest_path(store, path, fmt, redact=redact, patterns=patterns, source=source, trace_id=trace_id)
    outcomes = []
    for n, summary in enumerate(stored, 1):
        of = f"trace {n}/{len(stored)}: " if len(stored) > 1 else ""
        phases(f"{of}loading {summary.steps:,} steps")
        trace = load_trace(store, summary.trace_id)
        report, validation = audit_trace(
            store,
            trace,
            mode=mode,
            engine=engine,
            policy=policy if policy is not None or choose_policy is None else choose_policy(trace),
            detectors=detectors,
            agent=agent,
            outcome=outcome,
            phases=lambda phase, of=of: phases(of + phase),
        )
        outcomes.append(ReviewOutcome(trace, report, validation, summary.importer, summary.appended))
    return outcomes
