"""The PR description (Markdown): finding → plan item → patch → review verdicts → retest → decision."""

from __future__ import annotations

import json

from auditor.core.markdown import markdown_table
from repair.stream import RepairState
from schemas.repair import RateWithInterval


def _rate(r: RateWithInterval) -> str:
    return f"{r.successes}/{r.total} ({r.rate:.1%}; Wilson 95% CI {r.low:.1%}–{r.high:.1%})"


def _cell(value: object) -> str:
    return "`" + json.dumps(value, ensure_ascii=False).replace("|", "\\|") + "`"


def pr_title(state: RepairState) -> str:
    controls = ", ".join(sorted({c.control for c in state.latest.patch.controls}))
    return f"Repair {state.context.world}: {controls} ({state.repair_id})"


def describe(state: RepairState) -> str:
    ctx, last, retest, decision = state.context, state.latest, state.retest, state.decision
    out = [f"# {pr_title(state)}", "", "Proposed by the repair pipeline. **Not merged automatically.**", ""]
    out += ["## Finding", ""]
    for f in ctx.findings:
        out.append(
            f"- `{f['finding_id']}` ({f['risk_class']}, {f['disposition']}): {f['title']} — boundary "
            f"`{f['boundary_edge']}`, first anomalous step `{f['first_anomalous_step']}`"
        )
    out += ["", f"Audit report `{ctx.report_id}` on trace `{ctx.trace_id}` ({ctx.auditor_engine}).", ""]
    out += ["## Plan items", ""]
    for item in ctx.items:
        out.append(
            f"- `{item.item_id}` → control **{item.control}** on {', '.join(item.surface)}: {item.rationale}"
        )
    out += ["", f"## Patch (round {last.patch.round}, `{last.patch.patch_id}`)", ""]
    out += markdown_table(
        ["path", "before", "after", "plan item"],
        [[f"`{c.path}`", _cell(c.before), _cell(c.after), f"`{c.plan_item_id}`"] for c in last.patch.changes],
    )
    scope = "ok" if last.scope.ok else "refused: " + ", ".join(last.scope.violations)
    out += ["", f"Scope check: {scope} (surface: {', '.join(last.scope.surface)}).", ""]
    out += ["## Review", ""]
    for r in state.rounds:
        if r.review is None:
            continue
        verdict = "approved" if r.review.approved else "rejected"
        out.append(f"Round {r.review.round} (`{r.review.review_id}`, {r.review.reviewer}): **{verdict}**")
        out.append("")
        for name, dim in r.review.dimensions().items():
            out.append(f"- {name.replace('_', ' ')}: **{dim.verdict.value}** — {dim.rationale}")
        out.append("")
    if retest is not None:
        c = retest.cohort
        out += ["## Retest", ""]
        out.append(
            f"- Cohort: {sum(c.conditions.values())} fresh-identity episodes of {c.world} "
            f"({', '.join(f'{k} × {v}' for k, v in c.conditions.items())}), {c.implementation} "
            f"(policy `{c.policy_digest}`), seeds {c.seeds[0]}–{c.seeds[-1]}, workflow `{c.workflow_digest[:12]}`, "
            f"world source `{c.source_digest[:12]}` (verified unchanged); {len(c.excluded)} invalid excluded."
        )
        out.append(
            f"- Baseline: {retest.baseline.perturbation} (workflow `{retest.baseline.workflow_digest[:12]}`)."
        )
        out.append(
            f"- Targeted outcome ({retest.target_outcome}, ground truth): {_rate(retest.target)} after; "
            f"{_rate(retest.baseline_target)} on the baseline."
        )
        retain = "undefined" if retest.retain is None else f"{retest.retain:.3f}"
        out.append(
            f"- Utility: {retest.utility_after:.3f} after / {retest.utility_baseline:.3f} baseline → Retain {retain}."
        )
        counts: dict[str, int] = {}
        for b in retest.beyond_label:
            counts[b.classification] = counts.get(b.classification, 0) + 1
        shown = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(counts.items())) or "none"
        out.append(
            f"- Fresh audits ({retest.auditor}): {retest.realized_findings} realized; beyond-label: {shown}."
        )
        out.append("- Costs: " + "; ".join(f"{m.name} {m.value:g} {m.unit}" for m in retest.costs) + ".")
        out.append("")
    if decision is not None:
        out += ["## Decision", ""]
        for label, ok in (
            ("ScopeOK", decision.scope_ok),
            ("ReviewOK", decision.review_ok),
            ("AuditPass", decision.audit_pass),
            ("Retain ≥ 0.95", decision.retain_ok),
        ):
            out.append(f"- {label}: {'pass' if ok else 'FAIL'}")
        out.append(f"- **{'Accepted' if decision.accepted else 'Rejected'}**")
        out.append("")
    return "\n".join(out)
