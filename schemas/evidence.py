"""The evidence unit: the one citation every finding, attribution and outcome is built from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EvidenceUnit(BaseModel):
    """A checkable citation: the quote must stand verbatim in the step's content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_id: str = Field(min_length=1)
    edge_ref: str = Field(min_length=1, description="One of the cited step's edges in the graph.")
    quote: str = Field(min_length=1, description="Verbatim text from the step's content.")
