"""The InteractionGraph: a networkx MultiDiGraph plus the indices the queries answer from.

Node ids are strings. A participant's node id is its name, as the trace spells it; tools are
``tool:<name>``, documents ``doc:<name>``, state records ``record:<name>``; two sinks are always
present: ``unknown`` (where a step's recipients are not recorded) and ``final_output``. A
participant whose name collides with a reserved id or prefix gets ``participant:<name>``.

Edge keys are the stable edge refs ``e:<step_id>:<n>`` (n-th edge of that step, from 0).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import networkx as nx

from graph.provenance_queries import ProvenanceQueries
from graph.queries import TopologyQueries
from schemas import GraphMode, Trace, TraceStep

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


class Edge(Mapping[str, Any]):
    """One edge: its endpoints and the step that made it (``source``, ``target``, ``pos``,
    ``step_id``, ``channel``), and, read as a mapping, the attributes networkx holds for it.

    The attributes are read from the step when asked, never copied: a trace of a million steps
    has a million edges, and one small object per edge costs a fraction of a record, an attribute
    dict and a summary string each. Read-only, as the graph is."""

    __slots__ = ("basis", "n", "pos", "source", "step", "target")
    KEYS: tuple[str, ...] = ("edge_ref", "step_id", "index", "time", "channel", "actor", "basis")

    def __init__(self, source: str, target: str, pos: int, n: int, basis: str, step: TraceStep) -> None:
        self.source, self.target, self.pos = source, target, pos
        self.n, self.basis, self.step = n, basis, step

    @property
    def step_id(self) -> str:
        return self.step.step_id

    @property
    def channel(self) -> str:
        return self.step.kind.value

    @property
    def ref(self) -> str:
        return edge_ref(self.step.step_id, self.n)

    def __getitem__(self, key: str) -> Any:
        if key not in self.KEYS:
            raise KeyError(key)
        return self.copy()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)

    def copy(self) -> dict[str, Any]:
        """The attributes as a plain dict (as networkx's own edge data would copy), in one call."""
        step = self.step
        return {
            "edge_ref": self.ref,
            "step_id": step.step_id,
            "index": step.index,
            "time": step.timestamp,
            "channel": step.kind.value,
            "actor": step.actor,
            "basis": self.basis,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r} -> {self.target!r}, {dict(self)!r})"


class AnnotatedEdge(Edge):
    """An edge of an annotated graph: its attributes add the step's extractive ``summary``."""

    __slots__ = ()
    KEYS = (*Edge.KEYS, "summary")

    def copy(self) -> dict[str, Any]:
        from graph.annotate import summarise  # annotate reads graph.model: imported when first used

        return {**super().copy(), "summary": summarise(self.step)}


class StepEdges(Sequence[tuple[str, ...]]):
    """The edge refs of each step, by position: ``step_edges[pos]`` is a tuple of refs. Most steps
    make one edge, so a step's lone ref is kept as itself and put in a tuple when asked (a tuple
    held per step would cost more than the ref)."""

    __slots__ = ("_refs",)

    def __init__(self) -> None:
        self._refs: list[str | tuple[str, ...]] = []

    def append(self, refs: list[str]) -> None:
        self._refs.append(refs[0] if len(refs) == 1 else tuple(refs))

    @overload
    def __getitem__(self, pos: int) -> tuple[str, ...]: ...

    @overload
    def __getitem__(self, pos: slice) -> list[tuple[str, ...]]: ...

    def __getitem__(self, pos: int | slice) -> tuple[str, ...] | list[tuple[str, ...]]:
        if isinstance(pos, slice):
            return [r if type(r) is tuple else (r,) for r in self._refs[pos]]
        refs = self._refs[pos]
        return refs if type(refs) is tuple else (refs,)

    def __len__(self) -> int:
        return len(self._refs)

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        for refs in self._refs:
            yield refs if type(refs) is tuple else (refs,)


def lower_text(steps: Sequence[TraceStep]) -> tuple[str, array[int]]:
    """Every step's content, lower-cased, in one string (steps joined by NUL), and the offset
    where each step starts in it: a substring search over the whole trace is one ``str.find``."""
    texts = [step.content.lower() for step in steps]
    starts = array("q")
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    return "\x00".join(texts), starts


class InteractionGraph(TopologyQueries, ProvenanceQueries):
    """One trace's interaction graph. Build it with ``graph.build_graph``; never mutate it."""

    def __init__(self, trace: Trace, mode: GraphMode) -> None:
        self.trace = trace
        self.mode = mode
        self.g: nx.MultiDiGraph = nx.MultiDiGraph(trace_id=trace.header.trace_id, mode=str(mode))
        self.step_pos: dict[str, int] = {}
        self.step_edges = StepEdges()
        self.edges: dict[str, Edge] = {}
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
        self._text: tuple[str, array[int]] | None = None
        self.annotations: Annotations | None = None
        self.provenance: ProvenanceIndex | None = None

    # -- the core accessors every consumer uses ------------------------------------------------

    @property
    def trace_id(self) -> str:
        return self.trace.header.trace_id

    def _lower_text(self) -> tuple[str, array[int]]:
        """``lower_text`` of the trace, made on the first text search: an audit seldom searches
        text, and the copy costs as much memory as the trace's content."""
        if self._text is None:
            self._text = lower_text(self.trace.steps)
        return self._text

    @property
    def text_blob(self) -> str:
        return self._lower_text()[0]

    @property
    def text_starts(self) -> array[int]:
        """Where each step starts in ``text_blob``."""
        return self._lower_text()[1]

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
        return {"source": rec.source, "target": rec.target, **rec.copy()}

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
