"""Plain result types of the graph queries: frozen dataclasses that carry step ids and edge refs.

The auditor's tools serialise these with ``dataclasses.asdict``; nothing here refers back to the
graph, so a result stays valid (and cheap) after the graph is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class StepHit:
    """One step as the queries report it."""

    step_id: str
    index: int
    actor: str
    kind: str
    edge_refs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StepsResult:
    """Matching steps in trace order; ``total`` counts all matches, ``hits`` at most ``limit``."""

    total: int
    truncated: bool
    hits: list[StepHit]


@dataclass(frozen=True, slots=True)
class NeighbourLink:
    """The edges between a participant and one neighbour, in one direction."""

    node: str
    edge_count: int
    edge_refs: list[str]
    step_ids: list[str]


@dataclass(frozen=True, slots=True)
class Neighbours:
    participant: str
    node: str
    outgoing: list[NeighbourLink]
    incoming: list[NeighbourLink]


@dataclass(frozen=True, slots=True)
class Hop:
    """One edge of a time-ordered chain: who passed what to whom, at which step."""

    step_id: str
    index: int
    edge_ref: str
    source: str
    target: str
    channel: str


@dataclass(frozen=True, slots=True)
class Chain:
    """A time-respecting path of edges; empty ``hops`` with ``found=False`` when there is none."""

    from_step: str
    to_step: str
    found: bool
    hops: list[Hop]
    through_unknown: bool = False


@dataclass(frozen=True, slots=True)
class DocumentRead:
    document: str
    reader: str
    step_id: str
    index: int
    edge_ref: str
    timestamp: str | None


@dataclass(frozen=True, slots=True)
class Fan:
    """Edges into (fan-in) or out of (fan-out) a participant, counted per neighbour."""

    participant: str
    direction: str
    edge_count: int
    distinct: int
    per_neighbour: dict[str, int]


@dataclass(frozen=True, slots=True)
class ValueAppearance:
    """Where a value first appeared: the step, its edges, and the text as written there."""

    value: str
    kind: str
    normalized: str
    step_id: str
    index: int
    actor: str
    surface: str
    edge_refs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CarriageHop:
    """One step that carried a value on, compared with the step it most plausibly got it from.

    ``changes`` is empty and ``carriage == "verbatim"`` when the value and its qualifiers came
    through unchanged; otherwise it lists ``transformed``, ``hedge_dropped``,
    ``attribution_dropped`` and ``status_changed`` as they apply. ``route`` says how the source
    step reached this one: ``edge`` (an explicit edge), ``same_participant``, or
    ``unknown_route`` (the value was around but no recorded edge delivered it).
    """

    step_id: str
    index: int
    actor: str
    surface: str
    source_step: str | None
    route: str
    via_edge: str | None
    carriage: str
    changes: list[str]
    edge_refs: tuple[str, ...]
    status: str | None = None
    status_from: str | None = None
    status_upgraded: bool = False
    hedges: list[str] = field(default_factory=list)
    attributions: list[str] = field(default_factory=list)
    dropped_hedges: list[str] = field(default_factory=list)
    dropped_attributions: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ValuePropagation:
    """A value's first appearance followed by every step that carried it on, in trace order."""

    value: str
    kind: str
    found: bool
    hops: list[CarriageHop]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class FactVersion:
    value: str
    step_ids: list[str]
    edge_refs: list[str]
    senders: list[str]


@dataclass(frozen=True, slots=True)
class MergePoint:
    """A participant that received two or more conflicting versions of one fact."""

    participant: str
    fact: str
    fact_kind: str
    versions: list[FactVersion]
