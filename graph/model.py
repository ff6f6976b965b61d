"""The InteractionGraph: a networkx MultiDiGraph plus the indices the queries answer from.

Node ids are strings. A participant's node id is its name, as the trace spells it; tools are
``tool:<name>``, documents ``doc:<name>``, state records ``record:<name>``; two sinks are always
present: ``unknown`` (where a step's recipients are not recorded) and ``final_output``. A
participant whose name collides with a reserved id or prefix gets ``participant:<name>``.

Edge keys are the stable edge refs ``e:<step_id>:<n>`` (n-th edge of that step, from 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import networkx as nx

from graph.provenance_queries import ProvenanceQueries
from graph.queries import TopologyQueries
from schemas import GraphMode, Trace

if TYPE_CHECKING:
    from graph.annotate import Annotations
    from graph.provenance import ProvenanceIndex
    from graph.results import DocumentRead

UNKNOWN = "unknown"
FINAL_OUTPUT = "final_output"
RESERVED_PREFIXES = ("tool:", "doc:", "record:", "participant:")


class GraphQueryError(LookupError):
    """A query named a step, participant or value the graph does not hold."""


class AnnotationUnavailable(GraphQueryError):
    """A query needs the annotation layer, but the graph was built in topology mode."""


def edge_ref(step_id: str, n: int) -> str:
    """The stable ref of the n-th edge of a step: the same trace always yields the same refs."""
    return f"e:{step_id}:{n}"


def participant_node(name: str) -> str:
    """Node id of a named participant (agent, human, system...), avoiding the reserved ids."""
    if name in (UNKNOWN, FINAL_OUTPUT) or name.startswith(RESERVED_PREFIXES):
        return f"participant:{name}"
    return name


class EdgeRecord(NamedTuple):
    """What the indices keep per edge (the full attributes live on the networkx edge)."""

    source: str
    target: str
    pos: int
    channel: str
    step_id: str


class InteractionGraph(TopologyQueries, ProvenanceQueries):
    """One trace's interaction graph. Build it with ``graph.build_graph``; never mutate it."""

    def __init__(self, trace: Trace, mode: GraphMode) -> None:
        self.trace = trace
        self.mode = mode
        self.g: nx.MultiDiGraph = nx.MultiDiGraph(trace_id=trace.header.trace_id, mode=str(mode))
        self.step_pos: dict[str, int] = {}
        self.step_edges: list[tuple[str, ...]] = []
        self.edges: dict[str, EdgeRecord] = {}
        self.actor_node: list[str] = []
        self.step_source: list[str] = []
        self.step_kind: list[str] = []
        self.by_actor: dict[str, list[int]] = {}
        self.by_kind: dict[str, list[int]] = {}
        self.out_edges: dict[str, list[str]] = {}
        self.in_edges: dict[str, list[str]] = {}
        self.participants: dict[str, str] = {}
        self.doc_reads: list[DocumentRead] = []
        self.final_positions: list[int] = []
        self.text_blob: str = ""
        self.text_starts: list[int] = []
        self.annotations: Annotations | None = None
        self.provenance: ProvenanceIndex | None = None

    # -- the core accessors every consumer uses ------------------------------------------------

    @property
    def trace_id(self) -> str:
        return self.trace.header.trace_id

    @property
    def annotated(self) -> bool:
        return self.mode == GraphMode.annotated

    def edges_of_step(self, step_id: str) -> list[str]:
        """The edge refs of one step, in order; a report's evidence unit must cite one of them."""
        pos = self.step_pos.get(step_id)
        if pos is None:
            raise GraphQueryError(f"step '{step_id}' is not in trace '{self.trace_id}'")
        return list(self.step_edges[pos])

    def edge(self, ref: str) -> dict[str, Any]:
        """The attributes of one edge (source, target, step_id, channel, time, and its summary
        in annotated mode)."""
        rec = self.edges.get(ref)
        if rec is None:
            raise GraphQueryError(f"edge '{ref}' is not in the graph of trace '{self.trace_id}'")
        return {"source": rec.source, "target": rec.target, **self.g.edges[rec.source, rec.target, ref]}

    def node_of(self, participant: str) -> str:
        """Resolve a participant name (or a node id) to its node id; unknown names list the valid."""
        node = self.participants.get(participant)
        if node is not None:
            return node
        if participant in self.g:
            return participant
        known = ", ".join(sorted(self.participants)[:30])
        raise GraphQueryError(f"no participant '{participant}' in trace '{self.trace_id}' (known: {known})")

    def step_position(self, step_id: str) -> int:
        pos = self.step_pos.get(step_id)
        if pos is None:
            raise GraphQueryError(f"step '{step_id}' is not in trace '{self.trace_id}'")
        return pos

    def require_annotations(self, query: str) -> None:
        if self.mode != GraphMode.annotated:
            raise AnnotationUnavailable(
                f"'{query}' needs the annotation layer; the graph of '{self.trace_id}' was built "
                f"in mode '{self.mode}' (rebuild with mode 'annotated')"
            )

    def __repr__(self) -> str:
        return (
            f"InteractionGraph(trace={self.trace_id!r}, mode={self.mode!s}, nodes={self.g.number_of_nodes()}, "
            f"edges={self.g.number_of_edges()})"
        )
