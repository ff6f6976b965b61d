"""The canonical trace: what every importer produces and every other package reads.

A trace is a header plus an ordered list of steps. One step is one observable act of one
participant. Importers export without invention: unknown recipients stay ``None``.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import to_json

CANONICAL_FORMAT_VERSION = 1
# ``raw.error_type`` of a tool result whose call the harness or the user would not let run (Claude
# Code's permission denials, Codex's declined commands): the call ran nothing, observed nothing
REFUSED = "refused"

# A trace id names a stream, a URL path segment (/api/traces/{id}, the console) and a line of
# terminal output, so it is short and holds nothing that a path, a query or a terminal reads
# specially: no whitespace, control or invisible characters (bidi overrides, zero-width), none of
# / \ ? # % (paths and queries) or [ ] (the terminal's markup), and it is not '.' or '..' (which a
# client resolves as a path step).
TRACE_ID_MAX = 200
STEP_ID_MAX = 200  # a step id is part of its event's idempotency key (512 characters at most)
_ID_FORBIDDEN = r"\s/\\?#%\[\]\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff"
TRACE_ID_PATTERN = rf"^(?!\.{{1,2}}$)[^{_ID_FORBIDDEN}]{{1,{TRACE_ID_MAX}}}$"
_ID_BAD_CHAR = re.compile(f"[{_ID_FORBIDDEN}]")
TRACE_ID_RULE_DOC = (
    f"1 to {TRACE_ID_MAX} characters, none of them whitespace, control or invisible characters or "
    "/ \\ ? # % [ ], and not '.' or '..'"
)
TRACE_ID_RULE = f"a trace id is {TRACE_ID_RULE_DOC}"


def _trace_id_field() -> Any:
    """The trace id field, its rule stated in the JSON Schema (checked by ``check_trace_id``)."""
    return Field(
        description=f"The trace's id: {TRACE_ID_RULE_DOC}.",
        json_schema_extra={"minLength": 1, "maxLength": TRACE_ID_MAX, "pattern": TRACE_ID_PATTERN},
    )


_PLAIN = frozenset((str, int, bool, type(None)))  # JSON as they are (an int: any size)
_CONTAINERS = (dict, list)


def finite(value: Any, name: str) -> Any:
    """``value`` (the field ``name``) when it holds no NaN or infinite number. Those are not JSON
    (RFC 8259): written out they would become null, a silent change, so a trace holding one is
    refused, naming where. A value of plain members passes at once; any other is written by
    pydantic-core first (fast), and only a text that shows NaN or Infinity is walked."""
    if not value or not isinstance(value, _CONTAINERS):
        return value
    for member in value.values() if type(value) is dict else value:
        if type(member) not in _PLAIN:
            break
    else:
        return value
    try:
        text = to_json(value)
    except ValueError:  # not JSON at all (a lone surrogate, an object): the store says where
        return value
    if b"NaN" not in text and b"Infinity" not in text:
        return value
    stack: list[tuple[Any, str]] = [(value, name)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            spelled = "NaN" if math.isnan(item) else ("Infinity" if item > 0 else "-Infinity")
            raise ValueError(f"{where} is {spelled}, which is not a JSON number")
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, f"{where}.{i}") for i, v in reversed(list(enumerate(item))))
    return value


def no_nul(value: str | list[str] | None, name: str) -> Any:
    """``value`` (the field ``name``) unless it holds U+0000. Ids, names, the source and the task
    become database text that a search filters on, and PostgreSQL text cannot hold a NUL; content,
    tool arguments and ``raw`` keep one faithfully (stored as JSON, where it is escaped)."""
    if value is not None and "\x00" in (value if isinstance(value, str) else "".join(value)):
        raise ValueError(f"{name} holds a NUL character (U+0000), which is refused in ids and names")
    return value


def iso_time(value: str | None) -> str | None:
    """``value`` when it is an ISO 8601 time (as ``datetime.fromisoformat`` reads it) that has a
    UTC equivalent: search orders and filters traces by it in UTC."""
    if value is None:
        return value
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is not None:
            moment.astimezone(UTC)
    except (ValueError, OverflowError):
        shown = repr(value[:40]) + ("…" if len(value) > 40 else "")
        raise ValueError(
            f"timestamp {shown} is not an ISO 8601 time with a UTC equivalent within years 1 to 9999 "
            "(write e.g. 2024-05-01T12:30:00Z, or leave it out)"
        ) from None
    return value


def check_trace_id(value: str) -> str:
    """``value`` when it is a usable trace id (see ``TRACE_ID_RULE``); else a ValueError that
    says which character or which limit it breaks, quoting at most 40 characters of it."""
    shown = repr(value[:40]) + ("…" if len(value) > 40 else "")
    if not value or len(value) > TRACE_ID_MAX:
        raise ValueError(f"trace id {shown} has {len(value):,} characters; {TRACE_ID_RULE}")
    if value in (".", ".."):
        raise ValueError(f"trace id {shown} is a path step; {TRACE_ID_RULE}")
    bad = _ID_BAD_CHAR.search(value)
    if bad:
        raise ValueError(f"trace id {shown} holds {bad.group()!r} at position {bad.start()}; {TRACE_ID_RULE}")
    return value


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

    @field_validator("arguments")
    @classmethod
    def _finite(cls, value: dict[str, Any] | str | None) -> dict[str, Any] | str | None:
        return finite(value, "arguments")


class StepRefs(BaseModel):
    """Links from a step to earlier steps, as the log states them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply_to: str | None = Field(default=None, description="step_id this step answers.")
    call_id: str | None = Field(default=None, description="call id of the tool call a result answers.")


class TraceStep(BaseModel):
    """One observable act of one participant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["step"] = "step"
    step_id: str = Field(
        min_length=1, max_length=STEP_ID_MAX, description="Stable id, unique within the trace."
    )
    index: int = Field(ge=0, description="Position in the trace, 0-based, gap-free.")
    timestamp: str | None = Field(
        default=None, description="ISO 8601 time where the log has one (with a UTC equivalent)."
    )
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

    @field_validator("raw")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        return finite(value, "raw")

    @field_validator("timestamp")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        return iso_time(value)

    @field_validator("step_id", "actor")
    @classmethod
    def _no_nul(cls, value: str, info: ValidationInfo) -> str:
        return no_nul(value, str(info.field_name))

    @field_validator("recipients")
    @classmethod
    def _no_blank_recipients(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not r.strip() for r in value):
            raise ValueError("recipient names must be non-empty; use null when unknown")
        return no_nul(value, "recipients")


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
    trace_id: str = _trace_id_field()
    source: str | None = Field(default=None, description="Where the trace came from (file, corpus).")
    framework: str | None = Field(default=None, description="The MAS framework that produced it.")
    task: str | None = Field(default=None, description="The task text, where the log has it.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    withheld: list[WithheldItem] = Field(default_factory=list)

    @field_validator("trace_id")
    @classmethod
    def _usable_id(cls, value: str) -> str:
        return check_trace_id(value)

    @field_validator("metadata")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        return finite(value, "metadata")

    @field_validator("source", "framework", "task")
    @classmethod
    def _no_nul(cls, value: str | None, info: ValidationInfo) -> str | None:
        return no_nul(value, str(info.field_name))


class LabelsRecord(BaseModel):
    """Sidecar labels (annotations, gold answers) kept apart from the steps an auditor reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Literal["labels"] = "labels"
    trace_id: str = _trace_id_field()
    source: str | None = None
    labels: dict[str, Any] = Field(default_factory=dict)

    @field_validator("trace_id")
    @classmethod
    def _usable_id(cls, value: str) -> str:
        return check_trace_id(value)

    @field_validator("labels")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        return finite(value, "labels")

    @field_validator("source")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        return no_nul(value, "source")


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
