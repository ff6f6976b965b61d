"""JSON Schema files exported from the pydantic contracts; a test fails when they drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from schemas.controls import Control
from schemas.events import NewEvent, RecordedEvent
from schemas.repair import PRProposal, RepairDecision, RepairPatch, RetestResult, ReviewVerdict, ScopeCheck
from schemas.report import AuditReport
from schemas.trace import LabelsRecord, TraceHeader, TraceStep

SCHEMA_DIR = Path(__file__).parent / "json"

EXPORTED: dict[str, type[BaseModel]] = {
    "trace_step": TraceStep,
    "trace_header": TraceHeader,
    "labels_record": LabelsRecord,
    "new_event": NewEvent,
    "recorded_event": RecordedEvent,
    "audit_report_v3": AuditReport,
    "control": Control,
    "repair_patch": RepairPatch,
    "scope_check": ScopeCheck,
    "review_verdict": ReviewVerdict,
    "retest_result": RetestResult,
    "repair_decision": RepairDecision,
    "pr_proposal": PRProposal,
}


def json_schemas() -> dict[str, dict[str, Any]]:
    return {name: model.model_json_schema() for name, model in EXPORTED.items()}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in json_schemas().items():
        path = directory / f"{name}.schema.json"
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written
