"""Contracts shared by every package: traces, events, V3 reports, repair controls."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from schemas.controls import CONTROLS, Control
from schemas.events import (
    LabelsRecorded,
    NewEvent,
    RecordedEvent,
    StepRecorded,
    TraceClosed,
    TraceStarted,
    labels_stream,
    trace_stream,
)
from schemas.report import (
    AuditReport,
    Criteria,
    Criterion,
    Decision,
    Disposition,
    EvidenceUnit,
    Finding,
    GraphMode,
    PropagationHop,
    RepairPlanItem,
    RiskClass,
    Severity,
    Verdict,
)
from schemas.trace import (
    CANONICAL_FORMAT_VERSION,
    ActorKind,
    LabelsRecord,
    StepKind,
    StepRefs,
    ToolInfo,
    Trace,
    TraceHeader,
    TraceStep,
    WithheldItem,
)

if TYPE_CHECKING:
    from schemas.attribution import (
        ATTRIBUTION_FORMAT_VERSION,
        AttributionLabel,
        AttributionTask,
        Authority,
        ContentBucket,
        Factor,
        FactorJudgment,
        Relation,
        SourceType,
        Target,
        TargetKind,
    )
    from schemas.repair import (
        PRProposal,
        RepairDecision,
        RepairPatch,
        RetestResult,
        ReviewVerdict,
        ScopeCheck,
    )

# The attribution and repair contracts load on first use: `auditor review` never needs them.
_LAZY = {
    **dict.fromkeys(
        (
            "ATTRIBUTION_FORMAT_VERSION",
            "AttributionLabel",
            "AttributionTask",
            "Authority",
            "ContentBucket",
            "Factor",
            "FactorJudgment",
            "Relation",
            "SourceType",
            "Target",
            "TargetKind",
        ),
        "schemas.attribution",
    ),
    **dict.fromkeys(
        ("PRProposal", "RepairDecision", "RepairPatch", "RetestResult", "ReviewVerdict", "ScopeCheck"),
        "schemas.repair",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'schemas' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ATTRIBUTION_FORMAT_VERSION",
    "CANONICAL_FORMAT_VERSION",
    "CONTROLS",
    "ActorKind",
    "AttributionLabel",
    "AttributionTask",
    "AuditReport",
    "Authority",
    "ContentBucket",
    "Control",
    "Criteria",
    "Criterion",
    "Decision",
    "Disposition",
    "EvidenceUnit",
    "Factor",
    "FactorJudgment",
    "Finding",
    "GraphMode",
    "LabelsRecord",
    "LabelsRecorded",
    "NewEvent",
    "PRProposal",
    "PropagationHop",
    "RecordedEvent",
    "Relation",
    "RepairDecision",
    "RepairPatch",
    "RepairPlanItem",
    "RetestResult",
    "ReviewVerdict",
    "RiskClass",
    "ScopeCheck",
    "Severity",
    "SourceType",
    "StepKind",
    "StepRecorded",
    "StepRefs",
    "Target",
    "TargetKind",
    "ToolInfo",
    "Trace",
    "TraceClosed",
    "TraceHeader",
    "TraceStarted",
    "TraceStep",
    "Verdict",
    "WithheldItem",
    "labels_stream",
    "trace_stream",
]
