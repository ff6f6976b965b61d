"""The repair pipeline's steps as functions over the store: each step reads the stream, appends one event.

open → propose (ScopeOK) → review rounds (ReviewOK; rejected reviews go back to the Repair Agent)
→ retest (AuditPass, Retain) → decide → PR proposal. The CLI and the end-to-end run call these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from auditor.audit.policy import load_policy
from auditor.core.errors import ContractError, InputError
from auditor.core.store import EventStore
from auditor.core.store.traces import load_labels, load_trace
from repair.decision import decide
from repair.pr import propose_pr
from repair.propose import Proposal, propose_patch, revise_parameters
from repair.retest import RetestPlan, run_retest
from repair.reviewer import issues_of, review_patch
from repair.stream import (
    DECIDED,
    OPENED,
    PR_PROPOSED,
    PROPOSED,
    RETESTED,
    REVIEWED,
    AuditContext,
    RepairState,
    load_repair,
    record,
    repair_id_for,
)
from schemas.repair import PRProposal, RepairDecision, RetestResult
from schemas.report import AuditReport, RepairPlanItem
from worlds import Workflow

MAX_ROUNDS = 3
_POLICY_NOTE = re.compile(r"^policy .+ \((sha256:[0-9a-f]+)\)$")


def report_policy_digest(report: AuditReport) -> str | None:
    """The declared-invariants policy an audit ran with, as its report notes name it."""
    for note in report.notes:
        m = _POLICY_NOTE.match(note)
        if m:
            return m.group(1)
    return None


def audit_context(
    store: EventStore,
    report: AuditReport,
    wf: Workflow,
    items: list[RepairPlanItem],
    audited_keys: Iterable[str] = (),
    policy_path: Path | None = None,
) -> AuditContext:
    """What the audit saw, read from the store: the world source and policy digests, the identities."""
    used = report_policy_digest(report)
    given = load_policy(policy_path).digest if policy_path is not None else None
    if used != given:
        raise InputError(
            f"the audit ran with policy {used or 'none'}, not {given or 'none'}",
            field="--policy",
            hint="pass the declared-invariants policy the audit used, so the fresh audits match it",
        )
    trace = load_trace(store, report.trace_id)
    source = trace.header.metadata.get("source_digest")
    labels = load_labels(store, report.trace_id)
    if not source or labels is None or "policy_digest" not in labels.labels:
        raise InputError(
            f"trace {report.trace_id} is not a recorded world episode with labels",
            hint="repairs are retested in a world: audit an episode recorded by 'auditor world run'",
        )
    if labels.labels.get("world") != wf.world:
        raise InputError(
            f"the report audits a {labels.labels.get('world')} episode", path=wf.origin, field="world"
        )
    wanted = {i.finding_id for i in items}
    findings = [
        {
            "finding_id": f.finding_id,
            "risk_class": f.risk_class.value,
            "disposition": f.disposition.value,
            "title": f.title,
            "boundary_edge": f.boundary_edge,
            "first_anomalous_step": f.first_anomalous_step,
        }
        for f in report.findings
        if f.finding_id in wanted
    ]
    return AuditContext(
        world=wf.world,
        report_id=report.report_id,
        trace_id=report.trace_id,
        finding_ids=sorted(wanted),
        items=items,
        workflow_yaml=wf.to_yaml(),
        workflow_origin=wf.origin,
        source_digest=source,
        policy_digest=labels.labels["policy_digest"],
        audited_identity_keys=sorted({labels.labels["identity"]["key"], *audited_keys}),
        audited_episode_ids=[report.trace_id],
        auditor_engine=report.engine,
        graph_mode=report.graph_mode.value,
        findings=findings,
        audit_policy_path=str(policy_path.resolve()) if policy_path is not None else None,
        audit_policy_digest=given,
    )


def open_repair(store: EventStore, ctx: AuditContext) -> str:
    repair_id = repair_id_for(
        ctx.report_id,
        [i.item_id for i in ctx.items],
        Workflow.from_yaml(ctx.workflow_yaml, ctx.workflow_origin).digest(),
    )
    record(store, repair_id, OPENED, {"context": ctx.payload()}, "open")
    return repair_id


def propose_step(
    store: EventStore,
    repair_id: str,
    params: dict[str, dict[str, Any]] | None = None,
    model: str | None = None,
) -> RepairState:
    """Round 1 of the Repair Agent (the catalogue, or ``model`` through the gateway); an out-of-scope
    patch is recorded, then refused by name."""
    state = load_repair(store, repair_id)
    if state.rounds:
        return state
    if model is not None:
        return _propose_agent(store, state, model, 1)
    return _propose(store, state, params or {}, 1)


def _propose_agent(store: EventStore, state: RepairState, model: str, round_: int) -> RepairState:
    from repair.agent import agent_propose, render

    wf = state.context.workflow()
    history = [(render(r.patch), issues_of(r.review)) for r in state.rounds if r.review is not None]
    prop, _ = agent_propose(model, wf, state.context.items, history, round_)
    return _record_proposal(store, state, wf, prop)


def _propose(
    store: EventStore, state: RepairState, params: dict[str, dict[str, Any]], round_: int
) -> RepairState:
    wf = state.context.workflow()
    return _record_proposal(store, state, wf, propose_patch(wf, state.context.items, params, round_))


def _record_proposal(store: EventStore, state: RepairState, wf: Workflow, prop: Proposal) -> RepairState:
    payload = {
        "patch": prop.patch.model_dump(mode="json"),
        "patched_yaml": prop.patched.to_yaml(),
        "scope": prop.scope.model_dump(mode="json"),
    }
    record(store, state.repair_id, PROPOSED, payload, prop.patch.patch_id)
    if not prop.scope.ok:
        raise InputError(
            f"patch refused: paths outside the repair surface: {', '.join(prop.scope.violations)}",
            path=wf.origin,
            hint=f"the surface is {', '.join(wf.repair_surface)}",
        )
    return load_repair(store, state.repair_id)


def review_step(
    store: EventStore, repair_id: str, max_rounds: int = MAX_ROUNDS, reviewer_model: str | None = None
) -> RepairState:
    """Review the latest patch; on rejection the Repair Agent revises, for at most ``max_rounds`` rounds.

    The rules Reviewer decides by default; with ``reviewer_model`` an LLM Reviewer judges under the
    same schema in its own conversation."""
    state = load_repair(store, repair_id)
    wf = state.context.workflow()
    while True:
        last = state.latest
        if not last.scope.ok:
            raise ContractError(
                f"repair {repair_id}'s patch was refused by the scope check; nothing to review"
            )
        if last.review is None:
            patched = Workflow.from_yaml(last.patched_yaml, wf.origin)
            if reviewer_model:
                from repair.llm_reviewer import llm_review_patch

                review = llm_review_patch(
                    reviewer_model, wf, patched, last.patch, state.context.items, last.patch.round
                )
            else:
                review = review_patch(wf, patched, last.patch, state.context.items, last.patch.round)
            record(store, repair_id, REVIEWED, {"review": review.model_dump(mode="json")}, review.review_id)
            state = load_repair(store, repair_id)
            last = state.latest
        assert last.review is not None
        if last.review.approved or last.patch.round >= max_rounds:
            return state
        if last.patch.engine.startswith("agent/"):
            state = _propose_agent(
                store, state, last.patch.engine.removeprefix("agent/"), last.patch.round + 1
            )
            continue
        params = {c.control: dict(c.parameters) for c in last.patch.controls}
        revised = revise_parameters(params, state.context.items, issues_of(last.review))
        if revised == params:  # the agent cannot address the reviewer's issues: stop, rejected
            return state
        state = _propose(store, state, revised, last.patch.round + 1)


def retest_step(store: EventStore, repair_id: str, plan: RetestPlan) -> RetestResult:
    state = load_repair(store, repair_id)
    result = run_retest(store, state, plan)
    record(
        store,
        repair_id,
        RETESTED,
        {"retest": result.model_dump(mode="json")},
        f"{result.patch_id}:{plan.seed}:{plan.episodes}",
    )
    return result


def decide_step(store: EventStore, repair_id: str) -> RepairDecision:
    decision = decide(load_repair(store, repair_id))
    record(
        store, repair_id, DECIDED, {"decision": decision.model_dump(mode="json")}, decision.model_dump_json()
    )
    return decision


def pr_step(store: EventStore, repair_id: str, repo: Path, file: str | None = None) -> PRProposal:
    state = load_repair(store, repair_id)
    if state.pr is not None:
        return state.pr
    proposal = propose_pr(state, repo, file)
    record(store, repair_id, PR_PROPOSED, {"proposal": proposal.model_dump(mode="json")}, proposal.branch)
    return proposal
