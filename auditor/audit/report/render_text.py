"""Words shared by the report renderers: what each risk class, criterion and disposition means.

The Markdown, HTML and SARIF renderers all explain the same V3 report; keeping the wording here
means a ticket, a page and a code-review annotation never disagree about what a finding says.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas import AuditReport, Disposition, Finding, RepairPlanItem, RiskClass, StepKind, Trace


@dataclass(frozen=True)
class RiskText:
    """A risk class as a reader sees it: a short name and the help a reviewer needs."""

    title: str
    help: str


RISK_TEXT: dict[RiskClass, RiskText] = {
    RiskClass.cumulative_action: RiskText(
        "Cumulative action",
        "Several participants each act within their own limit while a shared limit (a cap, a budget, "
        "a quota) is exceeded in total. Awareness of the prior total by the crossing actor does not "
        "remove the boundary's contribution (informed composition is still realized).",
    ),
    RiskClass.authority_without_evidence: RiskText(
        "Authority without evidence",
        "A claim is adopted into an official record or decision because of who asserted it, while "
        "evidence the participant could read contradicts it or was never read.",
    ),
    RiskClass.information_state_drift: RiskText(
        "Information-state drift",
        "A decision or submission status, a hedge or an attribution changes across a handoff "
        "(pending becomes approved, a named source is dropped) without a step that decided it.",
    ),
    RiskClass.delegated_disclosure: RiskText(
        "Delegated disclosure",
        "Restricted fields cross a delegation edge and reach a requester whose scope does not include "
        "them, or a delegation carries no requester identity or scope at all.",
    ),
    RiskClass.routing_provenance_loss: RiskText(
        "Routing and provenance loss",
        "A task is routed by self-reported capability away from the participant that holds the "
        "required evidence or tool, or a reviewer's identity is dropped before an approval that "
        "relies on the review.",
    ),
    RiskClass.unverified_relay: RiskText(
        "Unverified relay",
        "An upstream error, uncertainty, failed or blocked check, or unfinished step is relayed "
        "downstream as an established fact, an independent corroboration or a completed step.",
    ),
    RiskClass.policy_violation: RiskText(
        "Policy violation",
        "An action the declared policy forbids or has not cleared: a write without the explicit "
        "confirmation it demands, an action the records read show ineligible, a charge the policy "
        "computes otherwise, an identifier the customer never gave.",
    ),
    RiskClass.task_failure: RiskText(
        "Task failure",
        "The run's own work went wrong: a loop, a premature or missed termination, success claimed "
        "without a check, a correction ignored — or the decisive step of a run known to have failed.",
    ),
    RiskClass.injected_instruction: RiskText(
        "Injected instruction",
        "Text inside data (a tool result, a document, a web page, an e-mail) addressed the agent with "
        "a request to act, and the agent took a side-effecting action whose decisive arguments came "
        "from that text rather than from its principal (indirect prompt injection).",
    ),
    RiskClass.other: RiskText(
        "Other interaction risk",
        "An interaction failure outside the named classes; read the mechanism and the criteria.",
    ),
}

CRITERION_TEXT: dict[str, str] = {
    "R1": "violated property at an interaction boundary",
    "R2": "contribution beyond transport",
    "R3": "material effect at the endpoint",
    "R4": "evidence supports each element",
}

DISPOSITION_TEXT: dict[Disposition, str] = {
    Disposition.realized: "realized",
    Disposition.anomaly_with_interception: "anomaly with interception",
    Disposition.lead: "lead",
    Disposition.adjacent_risk: "adjacent risk",
    Disposition.operational_failure: "operational failure",
}


def shorten(text: str, limit: int) -> str:
    """The first ``limit`` characters of one-line text, with an ellipsis when cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + " …"


def words(value: str) -> str:
    """An enum value as prose: ``risk_identified`` → ``risk identified``."""
    return value.replace("_", " ")


def disposition_phrase(finding: Finding) -> str:
    text = DISPOSITION_TEXT[finding.disposition]
    if finding.intercepted_at:
        return f"{text} (intercepted at step {finding.intercepted_at})"
    return text


def plan_items(report: AuditReport, finding: Finding) -> list[RepairPlanItem]:
    return [item for item in report.repair_plan if item.finding_id == finding.finding_id]


def step_positions(trace: Trace) -> dict[str, int]:
    """Step id → position in the trace (0-based), the order the transcript shows."""
    return {s.step_id: i for i, s in enumerate(trace.steps)}


def headline(report: AuditReport) -> str:
    """One line: decision and finding counts by disposition."""
    counts: dict[str, int] = {}
    for f in report.findings:
        key = DISPOSITION_TEXT[f.disposition]
        counts[key] = counts.get(key, 0) + 1
    parts = ", ".join(f"{n} {d}" for d, n in counts.items())
    noun = "finding" if len(report.findings) == 1 else "findings"
    tail = f" ({parts})" if parts else ""
    return f"{words(report.decision.value)}: {len(report.findings)} {noun}{tail}"


def incident_lines(report: AuditReport, trace: Trace) -> list[tuple[str, str]]:
    """The incident facts (outcome, attribution, risk score) as (label, text) pairs for every
    renderer; empty for a report without them (contract v3). "When" is the decisive step and, where
    the trace's steps carry times, its time: a responder matches it against other logs."""
    out: list[tuple[str, str]] = []
    if report.outcome is not None:
        o = report.outcome
        out.append(("Outcome", f"{o.value.value} ({o.source.value}: {o.reason})"))
    a = report.attribution
    if a is not None and a.agent is not None:
        conf = f", confidence {a.confidence:.2f}" if a.confidence is not None else ""
        when = next((s.timestamp for s in trace.steps if s.step_id == a.step_id), None)
        at = f"step {a.step_id}" + (f" on {when}" if when else "")
        out.append(("Attributed to", f"{a.agent} at {at} (index {a.step_index}{conf}; {a.strategy})"))
    if report.outcome is not None or report.findings:
        out.append(("Risk score", f"{report.risk_score:.2f}"))
    return out


def cited_acts(report: AuditReport, trace: Trace) -> dict[str, str]:
    """Step id → the act, for the tool calls that evidence cites ("call cancel_reservation"): a
    call's quote holds its arguments, and the tool's name stands beside it."""
    cited = {u.step_id for f in report.findings for u in f.evidence}
    return {
        s.step_id: f"call {s.tool.name}"
        for s in trace.steps
        if s.step_id in cited and s.kind is StepKind.tool_call and s.tool is not None
    }
