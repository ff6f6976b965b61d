"""The interaction graph of a trace: who passed what to whom, when, and (annotated) on what basis.

Pure: imports ``schemas`` and networkx only (matplotlib lazily, for ``graph.draw``). The store,
the CLI and the audit engine sit above it.

Contracts the audit engine relies on
------------------------------------
``build_graph(trace, mode) -> InteractionGraph | None``
    ``mode`` is a ``schemas.GraphMode`` or its string: ``annotated``, ``topology`` or ``none``
    (returns None). Duplicate step ids raise ValueError. ``graph.g`` is a networkx MultiDiGraph;
    never mutate it.

Nodes
    A participant's node id is its name (``participant:<name>`` if the name collides with a
    reserved id); tools ``tool:<name>``, documents ``doc:<name>``, state records
    ``record:<name>``; always two sinks: ``unknown`` and ``final_output``. Node attrs: ``kind``
    (agent, tool, human, system, environment, participant [named only as a recipient], document,
    record, unknown, sink) and ``name``. ``graph.node_of(name)`` resolves a participant.

Edges (stable refs)
    Every step yields at least one edge, keyed ``e:<step_id>:<n>`` (n-th edge of the step, from
    0): deterministic from the trace alone, identical on every rebuild and in both modes.
    ``graph.edges_of_step(step_id)`` lists them: an evidence unit's ``edge_ref`` must be one of
    them. Unnamed recipients give an edge to ``unknown`` (never a guess, never "whoever spoke
    next"). The rules per step kind are in ``graph.build``. Edge attrs: ``edge_ref``, ``step_id``,
    ``index``, ``time``, ``channel`` (the step kind), ``actor``, ``basis`` (explicit, call_id,
    unknown, sink) and, annotated only, ``summary``: a read-only mapping (``graph.model.Edge``)
    that reads them from the step when asked, so a million edges do not hold a million dicts.
    ``graph.edges[ref]`` is the same object, with ``source``, ``target``, ``pos``, ``step_id`` and
    ``channel`` as attributes.

Annotation layer (annotated mode only; topology carries none of it)
    ``graph.annotations``: edge summaries, authority and permission labels, unconsulted
    obligations; ``graph.provenance``: every value mention (amounts, ids, e-mails, dates,
    statuses, with hedges and attributions on the same line) and the merge points. Provenance
    queries on a topology graph raise ``AnnotationUnavailable``.

Queries (methods of InteractionGraph; each returns plain dataclasses from ``graph.results``)
    ``neighbours(p)``, ``handoff_chain(from_step, to_step)``, ``paths_to_final_output(step)``,
    ``document_reads(document=, reader=)``, ``fan_in(p)``, ``fan_out(p)``,
    ``steps_by(participant=, kind=, text=, limit=)``; annotated only:
    ``value_first_appearance(v)``, ``value_propagation(v, limit=200)`` (hops classified
    ``verbatim``, ``transformed``, ``hedge_dropped``, ``attribution_dropped``,
    ``status_changed``; each with its source step, route and the edge that delivered it),
    ``merge_points(p=None)``. A value is any text: amounts in any spelling (``$2,437,910`` =
    ``2.44M``), ids, e-mails, dates, statuses (``submitted for approval``), else a plain
    substring. Unknown steps or participants raise ``GraphQueryError``. Results that can be
    long say ``total``/``truncated``. Indices are built once, so each query answers in
    milliseconds on a 100,000-step trace (``benchmarks/graph_bench.py``).

Export and record
    ``graph_to_node_link(g) -> dict`` (nodes in order of first appearance, links in step
    order, ``annotations`` only in annotated mode), ``graph_digest(g) -> "sha256:<hex>"`` over
    its canonical JSON (``graph_digest_of_node_link`` for stored data), ``write_graphml(g, path)``.
    This package never touches the store: ``auditor graph build`` appends a ``GraphBuilt`` event
    to stream ``graph-<trace_id>`` with payload ``trace_id, mode, digest, trace_digest, nodes,
    edges, node_link`` and idempotency key ``graph:<trace_id>:<mode>:<digest>``.
    ``graph.draw.draw_swimlane(g, path, highlight=[step ids or edge refs], steps=(start, stop))``
    renders SVG or PNG (matplotlib, imported lazily; the first 500 steps unless a window is given).
"""

from graph.build import build_graph
from graph.export import (
    NODE_LINK_FORMAT,
    graph_digest,
    graph_digest_of_node_link,
    graph_to_node_link,
    write_graphml,
)
from graph.model import (
    FINAL_OUTPUT,
    UNKNOWN,
    AnnotationUnavailable,
    GraphQueryError,
    InteractionGraph,
    edge_ref,
)
from graph.results import (
    CarriageHop,
    Chain,
    DocumentRead,
    FactVersion,
    Fan,
    Hop,
    MergePoint,
    NeighbourLink,
    Neighbours,
    StepHit,
    StepsResult,
    ValueAppearance,
    ValuePropagation,
)

__all__ = [
    "FINAL_OUTPUT",
    "NODE_LINK_FORMAT",
    "UNKNOWN",
    "AnnotationUnavailable",
    "CarriageHop",
    "Chain",
    "DocumentRead",
    "FactVersion",
    "Fan",
    "GraphQueryError",
    "Hop",
    "InteractionGraph",
    "MergePoint",
    "NeighbourLink",
    "Neighbours",
    "StepHit",
    "StepsResult",
    "ValueAppearance",
    "ValuePropagation",
    "build_graph",
    "edge_ref",
    "graph_digest",
    "graph_digest_of_node_link",
    "graph_to_node_link",
    "write_graphml",
]
