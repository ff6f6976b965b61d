"""The canonical trace: what every importer produces and every other package reads.

A trace is a header plus an ordered list of steps. One step is one observable act of one
participant. Importers export without invention: unknown recipients stay ``None``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CANONICAL_FORMAT_VERSION = 1


class ActorKind(StrEnum):
    agent = "agent"
    tool = "tool"
    human = "human"
    system = "system"
    environment = "environment"


class StepKind(StrEnum):
    message = "message"
    tool_call = "tool_call"
    tool_result = "tool_result"
    handoff = "handoff"
    state_write = "state_write"
    document_read = "document_read"
    final_output = "final_output"


class ToolInfo(BaseModel):
    """The structured part of a tool act, present only where the log names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Tool or function name as the log spells it.")
    arguments: dict[str, Any] | str | None = Field(
        default=None, description="Arguments: parsed when the log gives JSON, else the verbatim text."
    )
    call_id: str | None = Field(default=None, description="Id linking a call to its result.")


class StepRefs(BaseModel):
    """Links from a step to earlier steps, as the log states them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply_to: str | None = Field(default=None, description="step_id this step answers.")
    call_id: str | None = Field(default=None, description="call id of the tool call a result answers.")


class TraceStep(BaseModel):
    """One observable act of one participant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["step"] = "step"
    step_id: str = Field(min_length=1, description="Stable id, unique within the trace.")
    index: int = Field(ge=0, description="Position in the trace, 0-based, gap-free.")
    timestamp: str | None = Field(default=None, description="ISO 8601 time where the log has one.")
    actor: str = Field(min_length=1, description="Who acted, as the log names them.")
    actor_kind: ActorKind = ActorKind.agent
    recipients: list[str] | None = Field(
        default=None, description="Explicitly named recipients; None when the log does not say."
    )
    kind: StepKind = StepKind.message
    content: str = Field(default="", description="The verbatim text of the act.")
    tool: ToolInfo | None = None
    refs: StepRefs | None = None
    raw: dict[str, Any] = Field(default_factory=dict, description="Source fields not mapped above.")

    @field_validator("recipients")
    @classmethod
    def _no_blank_recipients(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not r.strip() for r in value):
            raise ValueError("recipient names must be non-empty; use null when unknown")
        return value


class WithheldItem(BaseModel):
    """Something an importer removed from the content (labels, gold answers), and where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    what: str = Field(description="What kind of content was withheld, e.g. 'gold_answer'.")
    where: str = Field(description="Where it was: a step id, a source field or a byte range.")
    rule: str = Field(description="The documented segment rule that recognised it.")


class TraceHeader(BaseModel):
    """The optional first line of a canonical JSONL trace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["header"] = "header"
    format_version: int = CANONICAL_FORMAT_VERSION
    trace_id: str = Field(min_length=1)
    source: str | None = Field(default=None, description="Where the trace came from (file, corpus).")
    framework: str | None = Field(default=None, description="The MAS framework that produced it.")
    task: str | None = Field(default=None, description="The task text, where the log has it.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    withheld: list[WithheldItem] = Field(default_factory=list)


class LabelsRecord(BaseModel):
    """Sidecar labels (annotations, gold answers) kept apart from the steps an auditor reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["labels"] = "labels"
    trace_id: str
    source: str | None = None
    labels: dict[str, Any] = Field(default_factory=dict)


class Trace(BaseModel):
    """A whole trace in memory (small traces, tests, graph building)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    header: TraceHeader
    steps: list[TraceStep]

    def step(self, step_id: str) -> TraceStep:
        for s in self.steps:
            if s.step_id == step_id:
                return s
        raise KeyError(step_id)
