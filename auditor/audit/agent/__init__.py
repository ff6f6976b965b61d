"""The agent engine: an LLM Auditor Agent (LangGraph, through the litellm gateway) that investigates
with tools and submits a V3 report checked by the validator; or the naive free-text contract.

``run_agent_audit`` is the front door used by ``auditor review --engine agent``.
"""

from __future__ import annotations

import hashlib
import time

from auditor.audit.agent.loop import AgentRun, Budget, load_libraries
from auditor.audit.detectors import AuditContext
from auditor.audit.engine import decision_for, new_report, repair_plan_for, run_rules_audit
from auditor.core.store import EventStore
from auditor.core.store.traces import trace_digest
from schemas import AuditReport, Decision, Finding, GraphMode, Trace

CONTRACTS = ("v3", "naive")


def audit_id_for(trace: Trace, model: str, mode: GraphMode, contract: str, seed: str | None) -> str:
    key = "|".join([trace_digest(trace), model, mode.value, contract, seed or "-"])
    return "aud-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def run_agent_audit(
    trace: Trace,
    model: str,
    *,
    mode: GraphMode | str = GraphMode.annotated,
    store: EventStore | None = None,
    budget: Budget | None = None,
    contract: str = "v3",
    seed_findings: str | None = None,
    audit_id: str | None = None,
) -> AuditReport:
    """Run (or resume, when the store holds checkpoints of ``audit_id``) one agent audit."""
    load_libraries()
    started = time.perf_counter()  # the wall-time budget covers the whole audit, setup included
    from graph import build_graph, graph_digest

    mode = GraphMode(mode)
    audit_id = audit_id or audit_id_for(trace, model, mode, contract, seed_findings)
    if contract == "naive":
        from auditor.audit.agent.naive import run_naive

        return run_naive(trace, model, store=store, audit_id=audit_id)
    graph = build_graph(trace, GraphMode.topology if mode is GraphMode.none else mode)
    assert graph is not None
    ctx = AuditContext(trace=trace, graph=graph, mode=mode)
    seeded: list[Finding] = run_rules_audit(trace, mode).findings if seed_findings == "rules" else []
    budget = budget or Budget()
    run = AgentRun(ctx, model, store, audit_id, budget, [f.model_dump(mode="json") for f in seeded], started)
    checkpointer = None
    if store is not None:
        from auditor.audit.agent.checkpoint_saver import EventStoreSaver

        checkpointer = EventStoreSaver(store)
    app = run.compile(checkpointer)
    config = {"configurable": {"thread_id": audit_id}, "recursion_limit": 400}
    resumed = checkpointer is not None and checkpointer.get_tuple(config) is not None
    final = app.invoke(None if resumed else run.initial(), config)
    return _assemble(
        trace,
        model,
        mode,
        graph_digest(graph) if mode is not GraphMode.none else None,
        audit_id,
        final,
        seeded,
        resumed,
        budget,
    )


def _assemble(trace, model, mode, gdigest, audit_id, state, seeded, resumed, budget) -> AuditReport:  # type: ignore[no-untyped-def]
    notes = list(state.get("notes") or [])
    if resumed:
        notes.append("resumed from the event-store checkpoint")
    sub = state.get("submission")
    findings = [Finding.model_validate(f) for f in (sub or {}).get("findings", [])]
    withdrawn = {w["finding_id"]: w["reason"] for w in (sub or {}).get("withdrawn", [])}
    have = {f.finding_id for f in findings}
    for f in seeded:  # rules-seeded findings cannot be silently dropped
        if f.finding_id in withdrawn:
            notes.append(f"withdrawn rules finding {f.finding_id} ({f.title}): {withdrawn[f.finding_id]}")
        elif f.finding_id not in have:
            findings.append(f)
    if sub is None:
        decision = Decision.inconclusive
        notes.append("no report was submitted and accepted; the audit is inconclusive")
    else:
        decision = decision_for(findings)
    tool_calls = state.get("tool_calls", 0)
    if decision is Decision.inconclusive and not tool_calls:
        summary = _uninvestigated(model)
    else:
        summary = (sub or {}).get(
            "summary"
        ) or f"{len(findings)} finding(s) filed by the Auditor Agent ({model})."
    notes.append(
        f"agent audit {audit_id}: {tool_calls} tool calls, {state.get('tokens', 0)} tokens, "
        f"{state.get('elapsed', 0.0):.1f} s of the {budget.max_seconds:g} s budget"
    )
    return new_report(
        trace,
        "rpt-" + audit_id[4:],
        engine="agent/v3",
        model=model,
        graph_mode=mode,
        graph_digest=gdigest,
        decision=decision,
        summary=str(summary)[:2000],
        findings=findings,
        repair_plan=repair_plan_for(findings),
        notes=notes,
    )


def _uninvestigated(model: str) -> str:
    """The summary of an audit that never looked at the trace: why, and what to do instead."""
    why = (
        "the offline local model (SmolLM2-135M by default) is too small to use the audit tools, so its "
        "audits end inconclusive"
        if model.startswith("local/")
        else "the model or the budget ended the audit before it did"
    )
    return (
        f"Inconclusive: the Auditor Agent ({model}) made no tool call, so the trace was not investigated; "
        f"{why}. Give a model that calls tools with --model (openai/…, anthropic/…, ollama/…), "
        "or use --engine rules."
    )


__all__ = ["CONTRACTS", "Budget", "audit_id_for", "run_agent_audit"]
