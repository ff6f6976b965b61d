"""The incident layer of a review: did the run fail, who did it and when, and how risky is it.

- **Outcome**: the user's ``--outcome`` wins; else the outcome the source recorded (the importer
  keeps it in ``header.metadata["outcome"]``); else the review decides from the trace itself: a
  failed execution or tool result as the final state, an agent's call left without a result (an
  abandoned run), or a realized finding (the run did what it must not). Otherwise unknown — the
  review never claims success it cannot show.
- **Attribution** (failed runs): the embedded rules strategy's votes plus one vote per finding at
  its first anomalous step (weighted by disposition; a task-failure finding counts
  ``CORROBORATING`` of that), assembled into the ``auditor attribute``
  shape; in a coding run that submitted a change, the change's first edit votes instead of the
  rules' first act (``CHANGE_WEIGHT``). A participant marked human (a customer, a simulated user) is a source of claims and is
  never the responsible agent. When the failure is known (the flag, the source's record) and no
  finding sits at the decisive step, one is filed there; when it is inferred from the trace and
  no finding explains it (none at the decisive step, none citing where it shows), an operational
  failure is filed there, so that every failed run's report names its decisive step.
- **risk_score** = 1 − Π(1 − w·c) over the pieces of evidence, with w the disposition's weight
  (``RISK_WEIGHT``) and c the finding's confidence. A piece is a finding, except that a
  detector's findings under one declared rule (``policy_rule``) are one piece at their strongest:
  repeated attempts at one breach are not independent evidence. A failure the trace's final
  state shows (``final_state``) is one more piece (``FINAL_STATE``). 0 with no evidence, near 1
  with several independent realized findings; ranks runs for triage.
"""

from __future__ import annotations

import json

from auditor.audit.attribution.citations import Citer
from auditor.audit.attribution.facts import TraceFacts, agent_name
from auditor.audit.attribution.result import Vote, assemble, calibrated
from auditor.audit.attribution.rules import RulesStrategy
from auditor.audit.detectors.base import AuditContext, FindingDraft, criterion, file_finding
from auditor.audit.detectors.coding_verification import first_change
from auditor.audit.detectors.policy_facts import result_failed
from schemas import ActorKind, Criteria, Disposition, Finding, RiskClass, StepKind
from schemas.failure import Attribution, OutcomeSource, OutcomeValue, RunOutcome

RISK_WEIGHT = {
    Disposition.realized: 0.6,
    Disposition.anomaly_with_interception: 0.35,
    Disposition.adjacent_risk: 0.3,
    Disposition.lead: 0.15,
    Disposition.operational_failure: 0.05,
}
# The finding a failed run's decisive step gets where no detector filed one: it reads the outcome,
# so whatever measures the review against recorded outcomes leaves it out.
DECISIVE = "failure_attribution"
VOTE_WEIGHT = {  # a finding's support for its first anomalous step, beside the rules' signals (1.0)
    Disposition.realized: 1.5,
    Disposition.anomaly_with_interception: 0.8,
    Disposition.adjacent_risk: 0.8,
    Disposition.lead: 0.3,
    Disposition.operational_failure: 0.1,
}
# Task-failure findings (a loop, a premature end, an unchecked success claim) mark where a failure
# showed, usually late in the run, not where the error entered: they only corroborate the
# attribution signals. On the Who&When developer half, full weight for them lowered the
# hand-crafted agent accuracy from 83% to 69%.
CORROBORATING = 0.2
# Detectors whose task-failure findings sit where the error entered (a coding run's edit that the
# failing test exercises, the change submitted unrun; the call that narrowed a choice's candidates,
# the answer that names a pick the records rule out), not where it showed: full weight.
LOCATING = frozenset({"coding_verification", "choice_criterion"})
# A coding run's submitted change (its first edit) is where its failure begins when no finding names
# a later act: a primary signal, below a realized finding's vote.
CHANGE_WEIGHT = 1.0
OUTCOMES = ("failed", "succeeded", "unknown")


# A failure shown only by the final state (a failed last result, an abandoned call) is realized
# evidence of half a finding's certainty: it says the run failed, not which rule it broke.
FINAL_STATE = RISK_WEIGHT[Disposition.realized] * 0.5


def risk_score(findings: list[Finding], shown: RunOutcome | None = None) -> float:
    """1 − Π(1 − w·c) over the independent pieces of evidence (the module doc): the findings, one
    piece per detector and declared rule, and ``shown``, a failure the final state shows."""
    strongest: dict[tuple[str, str], float] = {}
    for f in findings:
        key = (f.detector, f"rule:{f.policy_rule}") if f.policy_rule else (f.detector, f.finding_id)
        strongest[key] = max(strongest.get(key, 0.0), RISK_WEIGHT[f.disposition] * f.confidence)
    keep = 1.0 - (FINAL_STATE if shown is not None else 0.0)
    for weight in strongest.values():
        keep *= 1.0 - weight
    return round(1.0 - keep, 6)


def decide_outcome(ctx: AuditContext, findings: list[Finding], flag: str | None) -> RunOutcome:
    """The run's outcome: the flag, else the source's record, else what the trace shows."""
    if flag in ("failed", "succeeded"):
        return RunOutcome(value=OutcomeValue(flag), source=OutcomeSource.flag, reason="--outcome given")
    recorded = ctx.trace.header.metadata.get("outcome")
    if flag is None and isinstance(recorded, dict) and recorded.get("value") in ("failed", "succeeded"):
        detail = json.dumps(recorded.get("detail"), default=str)[:200]
        return RunOutcome(
            value=OutcomeValue(recorded["value"]),
            source=OutcomeSource.trace,
            reason=f"recorded by the source ({recorded.get('source', 'header')}: {detail})",
        )
    return _inferred(ctx, findings)


def final_state(ctx: AuditContext) -> RunOutcome | None:
    """The failure the trace's final state shows, if any: a failed last tool result, a last call
    that never got its result (an abandoned run), or a failed last execution."""
    steps = [s for s in ctx.trace.steps if s.actor_kind is not ActorKind.human]
    last = steps[-1] if steps else None
    if last is not None and last.kind is StepKind.tool_result and result_failed(last):
        return _failed(ctx, last.step_id, "the run ends on a failed tool result")
    if last is not None and last.kind is StepKind.tool_call:
        return _failed(ctx, last.step_id, "the run ends on a call that never got its result (abandoned)")
    executions = TraceFacts(ctx.trace).executions
    if executions and executions[-1].failed:
        return _failed(ctx, executions[-1].result.step_id, "the last execution in the run failed")
    return None


def _inferred(ctx: AuditContext, findings: list[Finding]) -> RunOutcome:
    shown = final_state(ctx)
    if shown is not None:
        return shown
    realized = next((f for f in findings if f.disposition is Disposition.realized), None)
    if realized is not None:
        return RunOutcome(
            value=OutcomeValue.failed,
            source=OutcomeSource.inferred,
            reason=f"a realized finding: {realized.title}",
            evidence=realized.evidence[:2],
        )
    return RunOutcome(
        value=OutcomeValue.unknown,
        source=OutcomeSource.none,
        reason="no recorded outcome and no failure shown",
    )


def _failed(ctx: AuditContext, step_id: str, reason: str) -> RunOutcome:
    content = ctx.step(step_id).content.strip()
    line = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")[:200]
    units = [ctx.unit(step_id, line)] if line else []
    return RunOutcome(value=OutcomeValue.failed, source=OutcomeSource.inferred, reason=reason, evidence=units)


def attribute_failure(ctx: AuditContext, findings: list[Finding]) -> Attribution:
    """The rules strategy's votes plus the findings' votes (never at a human's step), cited over
    the audit's graph."""
    trace = ctx.trace
    facts = TraceFacts(trace)
    votes = RulesStrategy().votes(trace, facts, cite=Citer(trace, ctx))
    human = {s.step_id for s in trace.steps if s.actor_kind is ActorKind.human}
    votes = [v for v in votes if v.step_id not in human]
    change = first_change(ctx)
    if change is not None:  # a coding run fails from its change, not from its first act (an `ls`)
        first = facts.first_act.step_id if facts.first_act is not None else None
        votes = [v for v in votes if v.step_id != first]
        quote = [change[1]] if change[1] is not None else []
        votes.append(Vote(change[0], CHANGE_WEIGHT, "the submitted change begins here", quote))
    for f in findings:
        if f.first_anomalous_step not in human:
            weight = VOTE_WEIGHT[f.disposition] * (
                CORROBORATING
                if f.risk_class is RiskClass.task_failure and f.detector not in LOCATING
                else 1.0
            )
            votes.append(Vote(f.first_anomalous_step, weight, f"finding: {f.title}", f.evidence))
    return calibrated(assemble(trace, "rules+findings", votes, notes=facts.notes), facts.form)


def decisive_finding(
    ctx: AuditContext, attribution: Attribution, outcome: RunOutcome, operational: bool = False
) -> Finding | None:
    """A finding at the decisive step of a failed run, where none of the detectors filed one:
    realized for a known failure; an operational failure (R1 fails: no boundary property is
    shown violated) for one only the trace's final state shows, citing where it shows."""
    top = attribution.steps[0] if attribution.steps else None
    if top is None or not top.evidence:
        return None
    step = ctx.step(top.step_id)
    signals = "; ".join(top.signals)[:400] or "the attribution's top step"
    failed = f"the run failed ({outcome.source.value}: {outcome.reason})"
    draft = FindingDraft(
        risk_class=RiskClass.task_failure,
        title=f"decisive step of the failed run: {agent_name(step.actor)} at {step.step_id}"
        + (f" ({outcome.reason})" if operational else ""),
        boundary_edge=top.evidence[0].edge_ref,
        first_anomalous_step=step.step_id,
        responsible_participant=agent_name(step.actor),
        mechanism="The failure attribution places the decisive error here: " + "; ".join(top.signals),
        material_effect=f"the run failed ({outcome.reason})",
        criteria=Criteria(
            R1=criterion("fails", f"{failed}; no detector found a violated property that explains it")
            if operational
            else criterion("holds", failed),
            R2=criterion("unassessed" if operational else "holds", signals),
            R3=criterion("holds", "the run did not reach its goal"),
            R4=criterion("holds", "the step is quoted verbatim"),
        ),
        evidence=[*top.evidence, *(outcome.evidence if operational else [])],
        operational=operational,
        confidence=round(min(max(top.confidence, 0.05), 1.0), 6),
    )
    return file_finding(DECISIVE, draft, ctx.trace.header.trace_id)


def explains(finding: Finding, attribution: Attribution, outcome: RunOutcome) -> bool:
    """A finding explains a failure when it sits at the decisive step or cites a step where the
    failure shows."""
    shown = {u.step_id for u in outcome.evidence}
    return finding.first_anomalous_step == attribution.step_id or any(
        u.step_id in shown for u in finding.evidence
    )


def assess(
    ctx: AuditContext, findings: list[Finding], flag: str | None
) -> tuple[RunOutcome, Attribution | None, list[Finding], float]:
    """The incident fields of a report from its findings, for either engine: (outcome,
    attribution, findings with the decisive-step finding added where a known failure needs it,
    risk_score of the detectors' own findings and the final state)."""
    score = risk_score(findings, final_state(ctx))
    run = decide_outcome(ctx, findings, flag)
    if run.value is not OutcomeValue.failed:
        return run, None, findings, score
    attribution = attribute_failure(ctx, findings)
    known = run.source in (OutcomeSource.flag, OutcomeSource.trace)
    if known and not any(f.first_anomalous_step == attribution.step_id for f in findings):
        decisive = decisive_finding(ctx, attribution, run)
    elif not known and not any(explains(f, attribution, run) for f in findings):
        decisive = decisive_finding(ctx, attribution, run, operational=True)  # the trace shows it
    else:
        decisive = None
    findings = [*findings, decisive] if decisive is not None else findings
    return run, attribution, findings, score
