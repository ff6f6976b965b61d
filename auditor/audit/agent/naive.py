"""The naive contract: a short free-text prompt, no schema, no tools, no pre-submission validation.

It exists so the seed's contract-versus-model comparison can be run on any model. Its output is
parsed as well as possible (step ids and quoted text per paragraph) into a schema-shaped report whose
citations are NOT checked here: measuring how many resolve is the point of the comparison.
"""

from __future__ import annotations

import re

from auditor.audit.agent.prompts import NAIVE, data_block
from auditor.audit.engine import new_report
from auditor.core.llm import complete
from auditor.core.store import EventStore
from schemas import (
    AuditReport,
    Criteria,
    Criterion,
    Decision,
    EvidenceUnit,
    Finding,
    GraphMode,
    RiskClass,
    Severity,
    Trace,
)

_STEP = re.compile(r"\b(s\d+)\b")
_QUOTE = re.compile(r"[\"“]([^\"”]{8,300})[\"”]")
_CLEAN = re.compile(r"(?i)\b(no (?:problems?|issues?|failures?)|nothing went wrong)\b")
MAX_TRACE_CHARS = 24_000


def render_trace(trace: Trace) -> str:
    lines = []
    for s in trace.steps:
        to = "?" if s.recipients is None else ",".join(s.recipients)
        lines.append(f"[{s.step_id}] {s.actor} -> {to} ({s.kind.value}): {s.content}")
    text = "\n".join(lines)
    return text if len(text) <= MAX_TRACE_CHARS else text[:MAX_TRACE_CHARS] + "\n…[trace truncated]"


def run_naive(trace: Trace, model: str, *, store: EventStore | None, audit_id: str) -> AuditReport:
    from auditor.audit.agent.loop import append_audit_event

    def record(rec: dict) -> None:
        append_audit_event(store, audit_id, "ModelCalled", "naive", rec)

    messages = [{"role": "user", "content": NAIVE + "\n" + data_block("trace", render_trace(trace))}]
    result = complete(model, messages, max_tokens=600, recorder=record)
    findings = parse_free_text(result.content or "", trace)
    return new_report(
        trace,
        "rpt-" + audit_id[4:],
        engine="agent/naive",
        model=model,
        graph_mode=GraphMode.none,
        decision=Decision.risk_identified if findings else Decision.no_material_risk,
        summary=(result.content or "")[:2000] or "(empty answer)",
        findings=findings,
        notes=[
            "naive contract: free text, no schema, no tools, no validation; citations are parsed, not checked"
        ],
    )


def parse_free_text(text: str, trace: Trace) -> list[Finding]:
    """One finding per paragraph that names a step of the trace; quotes as written by the model."""
    steps = {s.step_id for s in trace.steps}
    findings = []
    for i, para in enumerate(p for p in re.split(r"\n\s*\n|\n(?=\s*(?:\d+[.)]|[-*]) )", text) if p.strip()):
        ids = [sid for sid in _STEP.findall(para) if sid in steps]
        if not ids or _CLEAN.search(para):
            continue
        quotes = _QUOTE.findall(para) or [para.strip()[:200]]
        unassessed = Criterion(verdict="unassessed", rationale="the naive contract states no criteria")
        findings.append(
            Finding(
                finding_id=f"f-naive-{i}",
                risk_class=RiskClass.other,
                detector="agent:naive",
                title=para.strip().splitlines()[0][:200],
                boundary_edge=f"e:{ids[0]}:0",
                first_anomalous_step=ids[0],
                mechanism=para.strip()[:1000],
                criteria=Criteria(R1=unassessed, R2=unassessed, R3=unassessed, R4=unassessed),
                disposition="lead",
                severity=Severity.low,
                confidence=0.3,
                evidence=[
                    EvidenceUnit(step_id=ids[0], edge_ref=f"e:{ids[0]}:0", quote=q) for q in quotes[:3]
                ],
            )
        )
    return findings
