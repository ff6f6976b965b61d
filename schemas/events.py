"""The event envelope and the core event payloads. Everything that happens is an event."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.trace import LabelsRecord, TraceHeader, TraceStep

EVENT_SCHEMA_VERSION = 1


class NewEvent(BaseModel):
    """An event to append: the store assigns positions, versions and hashes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(min_length=1)
    payload: dict[str, Any]
    metadata: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str | None = None
    schema_version: int = EVENT_SCHEMA_VERSION


class RecordedEvent(BaseModel):
    """An event as stored: its place in the global order, its stream and its hash link."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    global_position: int
    stream_id: str
    stream_version: int
    type: str
    schema_version: int
    payload: dict[str, Any]
    metadata: dict[str, Any]
    idempotency_key: str | None
    prev_hash: str
    hash: str
    recorded_at: str


class TraceStarted(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["TraceStarted"] = "TraceStarted"
    header: TraceHeader


class StepRecorded(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["StepRecorded"] = "StepRecorded"
    trace_id: str
    step: TraceStep


class TraceClosed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["TraceClosed"] = "TraceClosed"
    trace_id: str
    step_count: int
    reason: str = "end_record"


class LabelsRecorded(BaseModel):
    """Sidecar labels, stored in their own stream so that an auditor reading a trace never sees them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["LabelsRecorded"] = "LabelsRecorded"
    labels: LabelsRecord


def trace_stream(trace_id: str) -> str:
    return f"trace-{trace_id}"


def labels_stream(trace_id: str) -> str:
    return f"labels-{trace_id}"
