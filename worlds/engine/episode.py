"""Episodes: what was run (spec), with which content identity, and what it produced (result).

The trace an auditor reads (header + steps) is kept apart from the labels (ground truth,
judgments, key steps, canaries): the header names no condition and carries no canary.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from schemas.trace import LabelsRecord, Trace, TraceHeader, TraceStep
from worlds.engine.card import CARD


class Identity(BaseModel):
    """The content of one episode (customer, incident, requester, canary tokens …), drawn from a seed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    world: str
    key: str = Field(description="Stable identity key; fresh cohorts exclude keys already used.")
    fields: dict[str, Any]


class EpisodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    world: str
    condition: str
    policy: str
    policy_digest: str
    seed: int
    identity: Identity
    workflow_digest: str

    @property
    def episode_id(self) -> str:
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return f"{self.world.lower()}-{hashlib.sha256(blob).hexdigest()[:16]}"


class Judgment(BaseModel):
    """One judged quantity and which judge decided it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    value: Any
    judge: str = Field(
        description="Which judge decided: 'ledger', 'enum', 'canary', 'pattern', 'structured', or "
        "'llm:<model>' for the quote-grounded LLM judge."
    )
    evidence_steps: list[str] = Field(default_factory=list)
    detail: str = ""


class Outcome(BaseModel):
    """What a world's judges read from the final state and the recorded steps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoints: dict[str, bool | None] = Field(description="Endpoint → occurred; None when not assessable.")
    measures: dict[str, Any] = Field(
        default_factory=dict, description="Mechanism measures, in their own units."
    )
    judgments: list[Judgment] = Field(default_factory=list)
    key_steps: list[str] = Field(
        default_factory=list, description="Step ids an audit must cite for the target."
    )
    target_fired: bool = Field(description="Whether the world's seeded target outcome occurred.")
    utility: float = Field(ge=0.0, description="Task utility: non-negative, higher is better.")
    valid: bool = True
    invalid_reason: str | None = None
    secrets: list[str] = Field(default_factory=list, description="Canary tokens; never in the trace header.")


class EpisodeResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: EpisodeSpec
    header: TraceHeader
    steps: list[TraceStep]
    outcome: Outcome
    source_digest: str

    @property
    def episode_id(self) -> str:
        return self.spec.episode_id

    def trace(self) -> Trace:
        return Trace(header=self.header, steps=self.steps)

    def labels(self) -> LabelsRecord:
        body = {
            "world": self.spec.world,
            "condition": self.spec.condition,
            "policy": self.spec.policy,
            "policy_digest": self.spec.policy_digest,
            "seed": self.spec.seed,
            "identity": self.spec.identity.model_dump(mode="json"),
            "workflow_digest": self.spec.workflow_digest,
            "source_digest": self.source_digest,
            **self.outcome.model_dump(mode="json"),
        }
        return LabelsRecord(trace_id=self.episode_id, source=f"worlds/{self.spec.world}", labels=body)

    def trace_jsonl(self) -> str:
        lines = [self.header.model_dump_json()] + [s.model_dump_json() for s in self.steps]
        return "\n".join(lines) + "\n"


@cache
def source_digest(world_package: str) -> str:
    """Digest of the engine's and the world's Python source and the world's card (``world.yaml``); the
    workflow YAML, the repair surface, is not part of it."""
    h = hashlib.sha256()
    for package in ("worlds.engine", world_package):
        root = resources.files(package)
        for entry in sorted(root.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".py") or entry.name == CARD:
                h.update(f"{package}/{entry.name}\n".encode())
                h.update(entry.read_bytes())
    return h.hexdigest()
