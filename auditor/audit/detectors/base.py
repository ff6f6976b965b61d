"""What a detector sees and how it files a finding.

A detector reads the trace, its interaction graph and the declared policy, and returns findings
whose evidence units always resolve: ``AuditContext.unit`` refuses a quote that is not verbatim
in the step, so the engine never emits an unresolvable citation. Detectors decide from facts
(graph provenance, declared policy, amounts, statuses, scopes, reads); a keyword may nominate a
candidate but never decides one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Protocol

from auditor.audit.report.disposition import DISPOSITION_SEVERITY, derive_disposition
from auditor.core.lean import share_fields_sets
from schemas import (
    CONTROLS,
    Criteria,
    Criterion,
    EvidenceUnit,
    Finding,
    GraphMode,
    PropagationHop,
    RiskClass,
    Severity,
    Trace,
    TraceStep,
    Verdict,
)

if TYPE_CHECKING:
    from auditor.audit.policy import Policy
    from graph import InteractionGraph

# The control each risk class's repair plan names (the repair package implements them).
RISK_CONTROL = {
    RiskClass.cumulative_action: "shared_cumulative_check",
    RiskClass.authority_without_evidence: "evidence_cross_check",
    RiskClass.information_state_drift: "authoritative_state_reconciliation",
    RiskClass.delegated_disclosure: "structured_requester_handoff",
    RiskClass.routing_provenance_loss: "review_bound_approval",
    RiskClass.unverified_relay: "verified_status_propagation",
}


class CitationError(ValueError):
    """A detector tried to cite text that is not in the step: a bug, never shipped in a report."""


@dataclass
class AuditContext:
    """The inputs of one audit. ``graph`` is the annotated or topology graph (citations always
    resolve against the trace's canonical edges); ``annotated`` says whether provenance exists."""

    trace: Trace
    graph: InteractionGraph
    mode: GraphMode
    policy: Policy | None = None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._pos = self.graph.step_pos  # the graph's own index of the same steps: not a second copy

    def release(self) -> None:
        """Drop what detectors kept on the context for one another (facts built once per audit,
        such as ``failure_facts.RunFacts``). Those facts refer back to the context, so without this
        they, and the graph with them, outlive the audit until the cycle collector finds them."""
        kept = {f.name for f in fields(self)} | {"_pos"}
        for key in [k for k in self.__dict__ if k not in kept]:
            del self.__dict__[key]

    @property
    def annotated(self) -> bool:
        return self.mode is GraphMode.annotated

    def step(self, step_id: str) -> TraceStep:
        return self.trace.steps[self._pos[step_id]]

    def position(self, step_id: str) -> int:
        return self._pos[step_id]

    def unit(self, step_id: str, quote: str, edge_ref: str | None = None) -> EvidenceUnit:
        """An evidence unit that resolves by construction (or a CitationError)."""
        step = self.step(step_id)
        quote = quote.strip()
        if not quote or quote not in step.content:
            raise CitationError(f"quote {quote[:60]!r} is not verbatim in step {step_id}")
        edges = self.graph.edges_of_step(step_id)
        ref = edge_ref or edges[0]
        if ref not in edges:
            raise CitationError(f"edge {ref} is not an edge of step {step_id}")
        return EvidenceUnit(step_id=step_id, edge_ref=ref, quote=quote)

    def sentence_around(self, step_id: str, needle: str, limit: int = 240) -> str:
        """The sentence (or line) of a step that contains ``needle``: a readable verbatim quote."""
        content = self.step(step_id).content
        at = content.find(needle)
        if at < 0:
            return needle
        start = max(content.rfind(sep, 0, at) for sep in (". ", "\n", "! ", "? ")) + 1
        ends = [
            e for e in (content.find(sep, at + len(needle)) for sep in (". ", "\n", "! ", "? ")) if e >= 0
        ]
        end = min(ends) + 1 if ends else len(content)
        text = content[start:end].strip()
        if len(text) > limit:  # keep the needle, trim around it
            i = text.find(needle)
            lo = max(0, i - (limit - len(needle)) // 2)
            text = text[lo : lo + limit].strip()
        return text if text in content else needle


def criterion(verdict: Verdict | str, rationale: str) -> Criterion:
    return Criterion(verdict=Verdict(verdict), rationale=rationale)


@dataclass
class FindingDraft:
    """What a detector establishes; ``file`` turns it into a schema-valid Finding."""

    risk_class: RiskClass
    title: str
    boundary_edge: str
    first_anomalous_step: str
    mechanism: str
    criteria: Criteria
    evidence: Sequence[EvidenceUnit]
    responsible_participant: str | None = None
    propagation_path: Sequence[PropagationHop] = ()
    material_effect: str | None = None
    intercepted_at: str | None = None
    outside_audited_risk: bool = False
    operational: bool = False
    confidence: float = 0.7
    policy_rule: str | None = None
    severity: Severity | None = None
    failure_mode: str | None = None


def file_finding(detector: str, draft: FindingDraft, trace_id: str) -> Finding:
    """A schema-valid Finding; its id is unique per trace and stable per finding (SARIF fingerprints).
    Held lean (auditor.core.lean): a long trace can yield tens of thousands of findings."""
    disposition = derive_disposition(
        draft.criteria,
        intercepted_at=draft.intercepted_at,
        outside_audited_risk=draft.outside_audited_risk,
        operational=draft.operational,
    )
    key = f"{trace_id}|{detector}|{draft.risk_class}|{draft.boundary_edge}|{draft.first_anomalous_step}|{draft.title}"
    finding = Finding(
        finding_id="f-" + hashlib.sha256(key.encode()).hexdigest()[:12],
        risk_class=draft.risk_class,
        detector=detector,
        title=draft.title,
        boundary_edge=draft.boundary_edge,
        first_anomalous_step=draft.first_anomalous_step,
        responsible_participant=draft.responsible_participant,
        mechanism=draft.mechanism,
        propagation_path=list(draft.propagation_path),
        material_effect=draft.material_effect,
        criteria=draft.criteria,
        disposition=disposition,
        intercepted_at=draft.intercepted_at if disposition.value == "anomaly_with_interception" else None,
        severity=draft.severity or Severity(DISPOSITION_SEVERITY[disposition]),
        confidence=draft.confidence,
        policy_rule=draft.policy_rule,
        failure_mode=draft.failure_mode,
        evidence=list(dict.fromkeys(draft.evidence)),
    )
    return share_fields_sets(finding)


class Detector(Protocol):
    """One failure shape. ``needs_annotations`` detectors are skipped (and noted) in topology mode."""

    name: str
    risk_class: RiskClass
    needs_annotations: bool

    def detect(self, ctx: AuditContext) -> Iterable[FindingDraft]: ...


def control_for(risk_class: RiskClass) -> str | None:
    name = RISK_CONTROL.get(risk_class)
    return name if name in CONTROLS else None
