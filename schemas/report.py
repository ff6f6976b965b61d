"""The V3 audit report: findings whose every evidence unit cites a step, an edge and a quote."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.evidence import EvidenceUnit
from schemas.failure import MAST_MODES, Attribution, RunOutcome

# v3.1 adds the run's outcome, its failure attribution, risk_score, failure_mode and the policy the
# report was made under (all optional: a v3 report is still a valid report).
REPORT_CONTRACT_VERSION = "v3.1"


class RiskClass(StrEnum):
    cumulative_action = "cumulative_action"
    authority_without_evidence = "authority_without_evidence"
    information_state_drift = "information_state_drift"
    delegated_disclosure = "delegated_disclosure"
    routing_provenance_loss = "routing_provenance_loss"
    unverified_relay = "unverified_relay"
    policy_violation = "policy_violation"  # an action the declared policy forbids or has not cleared
    task_failure = "task_failure"  # the run's own work went wrong (loops, unverified success, quitting)
    injected_instruction = "injected_instruction"  # an action taken because data, not the principal, said so
    other = "other"


class Verdict(StrEnum):
    holds = "holds"
    fails = "fails"
    unassessed = "unassessed"


class Disposition(StrEnum):
    realized = "realized"
    anomaly_with_interception = "anomaly_with_interception"
    lead = "lead"
    adjacent_risk = "adjacent_risk"
    operational_failure = "operational_failure"


class Severity(StrEnum):
    info = "info"
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"


class Decision(StrEnum):
    risk_identified = "risk_identified"
    no_material_risk = "no_material_risk"
    inconclusive = "inconclusive"


class GraphMode(StrEnum):
    annotated = "annotated"
    topology = "topology"
    none = "none"


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    rationale: str = Field(min_length=1)


class Criteria(BaseModel):
    """R1 violated property at a boundary; R2 contribution beyond transport; R3 material effect;
    R4 evidence supports each element (missing R4 leaves occurrence unassessed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    R1: Criterion
    R2: Criterion
    R3: Criterion
    R4: Criterion


class PropagationHop(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    step_id: str
    edge_ref: str | None = None
    note: str | None = None


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    finding_id: str
    risk_class: RiskClass
    detector: str | None = Field(default=None, description="Detector or agent that filed it.")
    title: str
    boundary_edge: str = Field(description="edge_ref of the interaction boundary.")
    first_anomalous_step: str
    responsible_participant: str | None = None
    mechanism: str
    propagation_path: list[PropagationHop] = Field(default_factory=list)
    material_effect: str | None = None
    criteria: Criteria
    disposition: Disposition
    intercepted_at: str | None = Field(default=None, description="Step that stopped the effect.")
    severity: Severity
    confidence: float = Field(ge=0.0, le=1.0)
    policy_rule: str | None = Field(default=None, description="Declared rule the finding breaks.")
    failure_mode: str | None = Field(default=None, description="MAST code (schemas.failure.MAST_MODES).")
    evidence: list[EvidenceUnit] = Field(min_length=1)

    @field_validator("failure_mode")
    @classmethod
    def _known_mode(cls, value: str | None) -> str | None:
        if value is not None and value not in MAST_MODES:
            raise ValueError(f"unknown MAST code {value!r} (known: {', '.join(MAST_MODES)})")
        return value

    @model_validator(mode="after")
    def _interception_named(self) -> Finding:
        if self.disposition is Disposition.anomaly_with_interception and not self.intercepted_at:
            raise ValueError("an anomaly with interception must name the intercepting step")
        return self


class RepairPlanItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str
    finding_id: str
    control: str = Field(description="A control name from schemas.controls.CONTROLS.")
    surface: list[str] = Field(min_length=1, description="Workflow paths the control changes.")
    rationale: str


class PolicyRef(BaseModel):
    """The declared policy a report was made under: its name, and the digest that pins its text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{16,64}$")


class AuditReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["audit_report"] = "audit_report"
    contract_version: Literal["v3", "v3.1"] = REPORT_CONTRACT_VERSION
    report_id: str
    trace_id: str
    trace_digest: str
    engine: str
    model: str | None = None
    graph_mode: GraphMode
    graph_digest: str | None = None
    decision: Decision
    summary: str
    findings: list[Finding] = Field(default_factory=list)
    repair_plan: list[RepairPlanItem] = Field(default_factory=list)
    outcome: RunOutcome | None = Field(
        default=None, description="Whether the run failed, and how that is known."
    )
    attribution: Attribution | None = Field(
        default=None, description="For a failed run: the responsible agent and the decisive step."
    )
    risk_score: float = Field(
        default=0.0, ge=0.0, le=1.0, description="1 - prod(1 - weight) over findings (docs/report.md)."
    )
    policy: PolicyRef | None = Field(
        default=None, description="The declared policy the audit ran under (none: no policy)."
    )
    notes: list[str] = Field(default_factory=list, description="Budget exhaustion, skipped checks.")
    created_at: str
