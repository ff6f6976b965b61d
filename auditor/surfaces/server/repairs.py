"""Repairs as the console and API show them: plan, patch and its diff, the four review
dimensions, the retest figures with their intervals, the decision and the PR proposal.

Each repair is rebuilt from its stream ``repair-{id}`` (see ``repair.stream``).
"""

from __future__ import annotations

import difflib
from typing import Any

from auditor.core.store import EventStore


def _review(r: Any) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "review_id": r.review_id,
        "round": r.round,
        "reviewer": r.reviewer,
        "approved": r.approved,
        "dimensions": {name: d.model_dump(mode="json") for name, d in r.dimensions().items()},
    }


def repair_summary(state: Any) -> dict[str, Any]:
    """One row of the repairs list: what it repairs, where it stands, the headline figures."""
    ctx, last = state.context, state.rounds[-1] if state.rounds else None
    retest = state.retest
    return {
        "repair_id": state.repair_id,
        "world": ctx.world,
        "report_id": ctx.report_id,
        "trace_id": ctx.trace_id,
        "finding_ids": ctx.finding_ids,
        "controls": sorted({i.control for i in ctx.items}),
        "rounds": len(state.rounds),
        "review": _review(last.review) if last else None,
        "retest": None
        if retest is None
        else {
            "target_outcome": retest.target_outcome,
            "target": retest.target.model_dump(mode="json"),
            "baseline_target": retest.baseline_target.model_dump(mode="json"),
            "utility_after": retest.utility_after,
            "utility_baseline": retest.utility_baseline,
            "retain": retest.retain,
            "audit_pass": retest.audit_pass,
        },
        "decision": state.decision.model_dump(mode="json") if state.decision else None,
        "pr": None
        if state.pr is None
        else {
            "repo": state.pr.repo,
            "branch": state.pr.branch,
            "commit": state.pr.commit,
            "title": state.pr.title,
        },
    }


def repair_detail(state: Any) -> dict[str, Any]:
    """Everything about one repair, with a unified diff of each round's patched workflow."""
    ctx = state.context
    rounds = []
    for r in state.rounds:
        diff = difflib.unified_diff(
            ctx.workflow_yaml.splitlines(keepends=True),
            r.patched_yaml.splitlines(keepends=True),
            fromfile=f"a/{ctx.workflow_origin}",
            tofile=f"b/{ctx.workflow_origin}",
        )
        rounds.append(
            {
                "patch": r.patch.model_dump(mode="json"),
                "scope": r.scope.model_dump(mode="json"),
                "review": _review(r.review),
                "diff": "".join(diff),
            }
        )
    return {
        **repair_summary(state),
        "plan": [i.model_dump(mode="json") for i in ctx.items],
        "findings": ctx.findings,
        "auditor_engine": ctx.auditor_engine,
        "graph_mode": ctx.graph_mode,
        "rounds_detail": rounds,
        "retest_detail": state.retest.model_dump(mode="json") if state.retest else None,
        "pr_proposal": state.pr.model_dump(mode="json") if state.pr else None,
    }


def list_repairs(
    store: EventStore, report_id: str | None = None, trace_id: str | None = None
) -> list[dict[str, Any]]:
    from repair.stream import load_repair

    out = []
    for stream in store.list_streams("repair-"):
        state = load_repair(store, stream.removeprefix("repair-"))
        if report_id and state.context.report_id != report_id:
            continue
        if trace_id and state.context.trace_id != trace_id:
            continue
        out.append(repair_summary(state))
    return out


def get_repair(store: EventStore, repair_id: str) -> dict[str, Any]:
    from repair.stream import load_repair

    return repair_detail(load_repair(store, repair_id))
