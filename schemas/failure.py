"""What went wrong, who, and when: the run's outcome, failure modes and failure attribution.

``MAST_MODES`` is the MAST taxonomy (Cemri et al. 2025, "Why Do Multi-Agent LLM Systems Fail?"):
a finding names its code in ``Finding.failure_mode`` where one fits. ``RunOutcome`` says whether
the audited run failed and how that is known; ``FailureAttribution`` is the responsible agent and
the decisive step with the ranked candidates behind them (the shape of ``auditor attribute --json``).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from schemas.evidence import EvidenceUnit

MAST_MODES: dict[str, str] = {
    "1.1": "disobey task specification",
    "1.2": "disobey role specification",
    "1.3": "step repetition",
    "1.4": "loss of conversation history",
    "1.5": "unaware of termination conditions",
    "2.1": "conversation reset",
    "2.2": "fail to ask for clarification",
    "2.3": "task derailment",
    "2.4": "information withholding",
    "2.5": "ignored other agent's input",
    "2.6": "action-reasoning mismatch",
    "3.1": "premature termination",
    "3.2": "no or incomplete verification",
    "3.3": "incorrect verification",
}


class OutcomeValue(StrEnum):
    failed = "failed"
    succeeded = "succeeded"
    unknown = "unknown"


class OutcomeSource(StrEnum):
    flag = "flag"  # the user said so (--outcome)
    trace = "trace"  # the source log recorded it (an eval score, a reward, an error final state)
    inferred = "inferred"  # the review decided it from the trace itself
    none = "none"  # nothing said, nothing found


class RunOutcome(BaseModel):
    """Whether the audited run failed, and how that is known (with the evidence when inferred)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: OutcomeValue
    source: OutcomeSource
    reason: str = Field(description="Why: the flag, the header field, or the inference rule that fired.")
    evidence: list[EvidenceUnit] = Field(default_factory=list)


class StepCandidate(BaseModel):
    """One candidate decisive step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_id: str
    index: int
    agent: str = Field(description="The step's participant (name before ' (').")
    score: float = Field(description="The strategy's support for this step (higher is stronger).")
    confidence: float = Field(ge=0, le=1, description="Share of the ranking's total support.")
    signals: list[str] = Field(default_factory=list, description="Which signals nominated it, and why.")
    evidence: list[EvidenceUnit] = Field(default_factory=list)


class AgentCandidate(BaseModel):
    """One candidate responsible agent: the sum of its steps' support."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str
    score: float
    confidence: float = Field(ge=0, le=1)
    steps: list[str] = Field(default_factory=list, description="Its candidate steps, strongest first.")
    evidence: list[EvidenceUnit] = Field(default_factory=list)


class Attribution(BaseModel):
    """Who caused the failure and when, with the ranking that decided it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trace_id: str
    strategy: str
    model: str | None = None
    agent: str | None = Field(description="The responsible agent (top agent candidate).")
    step_id: str | None = Field(description="The decisive step (top step candidate).")
    step_index: int | None = None
    confidence: float | None = Field(default=None, ge=0, le=1, description="The top step's confidence.")
    agents: list[AgentCandidate] = Field(default_factory=list)
    steps: list[StepCandidate] = Field(default_factory=list)
    used_ground_truth: bool = False
    notes: list[str] = Field(default_factory=list)
