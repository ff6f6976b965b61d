"""Response bodies of the API, declared for the OpenAPI description."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from auditor.audit.feedback import MAX_REASON
from schemas.trace import TraceStep


class TraceSummary(BaseModel):
    trace_id: str
    source: str | None
    framework: str | None
    task: str | None = Field(description="The task text, cut at 500 characters.")
    steps: int
    participants: list[str] = Field(description="Actors and named recipients, in order of appearance.")
    time: str = Field(description="First step's timestamp (UTC), else when the trace was stored.")
    time_basis: str = Field(description="'step' or 'recorded': where `time` comes from.")
    report_id: str | None = Field(description="The latest report of the trace.")
    reports: int
    decision: str | None
    findings: int = Field(description="Findings of the latest report.")
    max_severity: str | None = Field(description="Highest severity among them.")
    risk_score: float = Field(description="The latest report's risk score (0 before any report).")
    outcome: str | None = Field(
        description="The run's outcome in the latest report: failed, succeeded, unknown."
    )
    outcome_source: str | None = Field(description="How the outcome is known: flag, trace, inferred, none.")
    agent: str | None = Field(description="The responsible agent the latest report attributes a failure to.")
    decisive_step: str | None = Field(description="The decisive step of that attribution.")
    attribution_confidence: float | None
    service: str | None = Field(description="The service that ran the trace (OpenTelemetry `service.name`).")


class TraceList(BaseModel):
    total: int = Field(description="Matches counted; with `total_exact` false there are more than this.")
    total_exact: bool
    offset: int
    limit: int
    traces: list[TraceSummary]


class StepsPage(BaseModel):
    trace_id: str
    total: int
    offset: int
    steps: list[TraceStep]


class ReportSummary(BaseModel):
    report_id: str
    trace_id: str
    engine: str | None
    graph_mode: str | None
    decision: str | None
    findings: int
    max_severity: str | None
    created_at: str | None
    valid: bool | None = Field(description="Whether the validator resolved every evidence unit.")
    risk_score: float
    outcome: str | None
    agent: str | None = Field(description="The responsible agent of the report's attribution.")


class ReportList(BaseModel):
    total: int = Field(description="Matches counted; with `total_exact` false there are more than this.")
    total_exact: bool
    offset: int
    limit: int
    reports: list[ReportSummary]


class FeedbackIn(BaseModel):
    label: Literal["confirmed", "dismissed"] = Field(description="Whether the finding holds.")
    reason: str = Field(min_length=1, max_length=MAX_REASON, description="Why: what the reviewer checked.")


class Feedback(BaseModel):
    report_id: str
    trace_id: str
    finding_id: str
    detector: str
    risk_class: str
    label: str
    reason: str
    reviewer: dict[str, str] = Field(description="The token's name and id that gave the label.")
    at: str


class FeedbackList(BaseModel):
    feedback: list[Feedback] = Field(description="Every label given, oldest first; the latest counts.")


class DetectorPrecision(BaseModel):
    detector: str
    confirmed: int
    dismissed: int
    precision: float | None = Field(description="confirmed / (confirmed + dismissed); none before a label.")


class PrecisionList(BaseModel):
    detectors: list[DetectorPrecision]


class AuditResult(BaseModel):
    trace_id: str
    report_id: str
    importer: str
    steps: int
    new_events: int
    decision: str
    findings: int


class AuditResponse(BaseModel):
    results: list[AuditResult]


class Health(BaseModel):
    status: str
    store: str
    indexed_position: int


class WhoAmI(BaseModel):
    token_id: str
    name: str
    scopes: list[str]


class RepairList(BaseModel):
    repairs: list[dict[str, Any]] = Field(
        description="repair_id, world, report, controls, rounds, latest review (four dimensions), "
        "retest figures with Wilson intervals, decision and PR proposal."
    )
