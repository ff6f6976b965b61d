"""The rules engine: run the detectors over a trace's graph and assemble a V3 report.

The report is deterministic for a given trace, graph mode, policy and detector set (its id is a
digest of them), so re-running an audit files nothing new in the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

from auditor.audit.detectors import AuditContext, available_detectors, file_finding, load_detector
from auditor.audit.detectors.base import CitationError, control_for
from auditor.audit.policy import Policy
from auditor.audit.report.disposition import ACTIONABLE
from auditor.audit.report.validator import CitedEdges
from auditor.core.store.traces import trace_digest
from schemas import AuditReport, Decision, Disposition, Finding, GraphMode, RepairPlanItem, Trace
from schemas.controls import CONTROLS
from schemas.report import PolicyRef

Phases = Callable[[str], None]
"""Told what an audit is doing now ("building the interaction graph", "detector 3/18: state_drift"):
a long trace takes minutes, and the CLI shows the phase instead of a silent terminal."""


def quiet(_: str) -> None:
    """The default ``Phases``: nobody is watching."""


def engine_version() -> str:
    return f"rules/{version('agent-auditor')}"


def run_rules_audit(
    trace: Trace,
    mode: GraphMode | str = GraphMode.annotated,
    policy: Policy | None = None,
    detectors: Sequence[str] | None = None,
    outcome: str | None = None,
) -> AuditReport:
    """``outcome`` (failed | succeeded | unknown | None: the source's record, else inferred) decides
    whether the report attributes the failure (auditor/audit/incident.py)."""
    return rules_audit(trace, mode, policy, detectors, outcome)[0]


def rules_audit(
    trace: Trace,
    mode: GraphMode | str = GraphMode.annotated,
    policy: Policy | None = None,
    detectors: Sequence[str] | None = None,
    outcome: str | None = None,
    phases: Phases = quiet,
) -> tuple[AuditReport, CitedEdges]:
    """``run_rules_audit``, with the edges its report cites in the audit's graph: the review
    validates the report against them once the graph is gone. ``phases`` is told each phase as
    it starts."""
    from auditor.audit.incident import assess
    from graph import build_graph, graph_digest

    mode = GraphMode(mode)
    phases("building the interaction graph")
    graph = build_graph(trace, GraphMode.topology if mode is GraphMode.none else mode)
    assert graph is not None
    ctx = AuditContext(trace=trace, graph=graph, mode=mode, policy=policy)
    names = list(detectors) if detectors else available_detectors()
    findings: list[Finding] = []
    for i, name in enumerate(names, 1):
        phases(f"detector {i}/{len(names)}: {name}")
        try:
            detector = load_detector(name)
        except (ImportError, AttributeError) as exc:  # one broken detector never breaks the rest
            ctx.notes.append(f"detector {name} unavailable: {exc}")
            continue
        if detector.needs_annotations and not ctx.annotated:
            ctx.notes.append(f"detector {name} not run: it needs the annotated graph (mode {mode.value})")
            continue
        try:
            drafts = list(detector.detect(ctx))
        except CitationError as exc:  # a detector bug must never become an unresolvable citation
            ctx.notes.append(f"detector {name} failed: {exc}")
            continue
        for d in drafts:
            if not d.evidence:  # no verbatim quote to cite (its steps hold no text): no finding
                ctx.notes.append(
                    f"detector {name}: '{d.title}' left out, none of its steps has text to quote"
                )
                continue
            findings.append(file_finding(name, d, trace.header.trace_id))
    phases("assessing the outcome")
    run, attribution, findings, score = assess(ctx, findings, outcome)
    findings.sort(key=lambda f: (ctx.position(f.first_anomalous_step), f.risk_class.value))
    ctx.release()  # the graph goes when this function returns, before the report is validated
    cited = CitedEdges.of(graph, findings)
    digest = trace_digest(trace)
    key = "|".join(
        [digest, engine_version(), mode.value, policy.digest if policy else "-", *names, f"outcome={outcome}"]
    )
    report = new_report(
        trace,
        "rpt-" + hashlib.sha256(key.encode()).hexdigest()[:16],
        digest=digest,
        engine=engine_version(),
        graph_mode=mode,
        graph_digest=graph_digest(graph) if mode is not GraphMode.none else None,
        decision=decision_for(findings),
        summary=_summary(findings),
        findings=findings,
        repair_plan=repair_plan_for(findings),
        outcome=run,
        attribution=attribution,
        risk_score=score,
        policy=PolicyRef(name=policy.name, digest=policy.digest) if policy else None,
        notes=ctx.notes + ([f"policy {policy.name} ({policy.digest})"] if policy else []),
    )
    return report, cited


def new_report(trace: Trace, report_id: str, *, digest: str | None = None, **fields: Any) -> AuditReport:
    """A report on ``trace`` filed now, by any engine (rules, agent, naive): the fields they all set
    alike (the trace's id and digest, the time) and the engine's own (``fields``). ``digest``: the
    trace's, where the caller computed it already (a long trace takes a while to hash)."""
    return AuditReport(
        report_id=report_id,
        trace_id=trace.header.trace_id,
        trace_digest=digest if digest is not None else trace_digest(trace),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        **fields,
    )


def decision_for(findings: list[Finding]) -> Decision:
    """A risk is identified when a finding is actionable (a lead or an operational failure is not)."""
    if any(f.disposition in ACTIONABLE for f in findings):
        return Decision.risk_identified
    return Decision.no_material_risk


def _summary(findings: list[Finding]) -> str:
    if not findings:
        return "No interaction-risk finding: no detector established a violated property at a boundary."
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.disposition.value] = counts.get(f.disposition.value, 0) + 1
    parts = ", ".join(f"{n} {d.replace('_', ' ')}" for d, n in counts.items())
    # the first actionable finding, where an operational failure or a lead comes before it: a
    # coding run's routine failed commands are no headline
    lead = next((f for f in findings if f.disposition in ACTIONABLE), findings[0])
    first = "First" if lead is findings[0] else "First actionable"
    return f"{len(findings)} finding(s): {parts}. {first}: {lead.title}."


def repair_plan_for(findings: list[Finding]) -> list[RepairPlanItem]:
    items = []
    for f in findings:
        if f.disposition in (Disposition.lead, Disposition.operational_failure):
            continue
        control = control_for(f.risk_class)
        if control is None:
            continue
        items.append(
            RepairPlanItem(
                item_id=f"plan-{f.finding_id[2:]}",
                finding_id=f.finding_id,
                control=control,
                surface=CONTROLS[control].surface,
                rationale=f"{CONTROLS[control].meaning} Addresses: {f.title} (boundary {f.boundary_edge}).",
            )
        )
    return items
