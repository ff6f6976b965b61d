"""Build an InteractionGraph from a canonical trace: one or more edges per step, never a guess.

Edge rules (direction is the direction information flows):

- message, handoff: actor -> each named recipient, or actor -> ``unknown`` when none is named;
- tool_call: actor -> ``tool:<name>`` (actor -> recipients / ``unknown`` when no tool is named);
- tool_result: ``tool:<name>`` (or the actor) -> named recipients, else -> the actor of the call
  whose ``call_id`` the result answers (the log states that link), else -> ``unknown``;
- document_read: ``doc:<name>`` -> actor (the name from the tool arguments or raw fields; when
  none is given, the reading tool or ``unknown`` is the source);
- state_write: actor -> ``record:<name>`` (else the writing tool, else ``unknown``);
- final_output: actor -> ``final_output``, then actor -> each named recipient.

Consecutive speakers are never read as talking to each other.
"""

from __future__ import annotations

import gc
from typing import Any

import networkx as nx

from graph.model import (
    FINAL_OUTPUT,
    UNKNOWN,
    AnnotatedEdge,
    Edge,
    InteractionGraph,
    edge_ref,
    participant_node,
)
from graph.results import DocumentRead
from schemas import GraphMode, StepKind, Trace, TraceStep

DOC_KEYS = ("document", "doc", "document_id", "path", "file", "filename", "uri", "url", "title")
RECORD_KEYS = ("record", "record_id", "key", "path", "table", "field", "entity", "id")


def build_graph(trace: Trace, mode: GraphMode | str) -> InteractionGraph | None:
    """Build the graph of ``trace`` in ``mode`` ('annotated', 'topology'); None for 'none'."""
    try:
        mode = GraphMode(mode)
    except ValueError as exc:
        valid = ", ".join(m.value for m in GraphMode)
        raise ValueError(f"unknown graph mode '{mode}' (valid: {valid})") from exc
    if mode == GraphMode.none:
        return None
    # building allocates millions of small objects that form no cycles: with the cyclic garbage
    # collector paused they are scanned once at the end instead of several times as they grow. Only
    # the young generations are collected (they hold everything the build allocated): a full
    # collection would scan the whole process heap, seconds per build beside a loaded model
    collecting = gc.isenabled()
    gc.disable()
    try:
        ig = InteractionGraph(trace, mode)
        _add_topology(ig)
        if mode == GraphMode.annotated:
            from graph.annotate import annotate
            from graph.provenance import build_provenance

            ig.provenance = build_provenance(ig)
            ig.annotations = annotate(ig)
    finally:
        if collecting:
            gc.enable()
            gc.collect(1)
    return ig


def _named(step: TraceStep, keys: tuple[str, ...]) -> str | None:
    """A document or record name that the step itself states (tool arguments, then raw fields)."""
    sources: list[dict[str, Any]] = []
    if step.tool is not None and isinstance(step.tool.arguments, dict):
        sources.append(step.tool.arguments)
    sources.append(step.raw)
    for src in sources:
        for key in keys:
            value = src.get(key)
            if isinstance(value, str | int) and str(value).strip():
                return str(value).strip()
    return None


class _Builder:
    """Adds nodes and edges step by step and fills the graph's indices as it goes."""

    def __init__(self, ig: InteractionGraph) -> None:
        self.ig = ig
        self.edge_type = AnnotatedEdge if ig.mode == GraphMode.annotated else Edge
        self.call_actor: dict[str, str] = {}
        self.untyped: set[str] = set()  # participants seen only as recipients: kind still unknown
        ig.g.add_node(UNKNOWN, kind="unknown", name=UNKNOWN)
        ig.g.add_node(FINAL_OUTPUT, kind="sink", name=FINAL_OUTPUT)

    def participant(self, name: str, kind: str | None) -> str:
        """The node of a named participant, added on first sight; called once or more per step,
        so the common case (known, typed) is two dictionary lookups."""
        node = self.ig.participants.get(name)
        if node is None:
            node = participant_node(name)
            self.ig.g.add_node(node, kind=kind or "participant", name=name)
            self.ig.participants[name] = node
            if kind is None:
                self.untyped.add(node)
        elif kind is not None and node in self.untyped:
            self.ig.g.nodes[node]["kind"] = kind
            self.untyped.discard(node)
        return node

    def other(self, prefix: str, name: str, kind: str) -> str:
        node = f"{prefix}:{name}"
        if node not in self.ig.g:
            self.ig.g.add_node(node, kind=kind, name=name)
        return node

    def recipients(self, step: TraceStep) -> list[tuple[str, str]]:
        if step.recipients:
            return [(self.participant(r, None), "explicit") for r in step.recipients]
        return [(UNKNOWN, "unknown")]

    def endpoints(self, step: TraceStep, actor: str) -> list[tuple[str, str, str]]:
        """(source, target, basis) of each edge of one step, in a fixed order."""
        kind, tool = step.kind, step.tool
        if kind == StepKind.tool_call:
            if tool is not None:
                if tool.call_id:
                    self.call_actor[tool.call_id] = actor
                return [(actor, self.other("tool", tool.name, "tool"), "explicit")]
            return [(actor, t, b) for t, b in self.recipients(step)]
        if kind == StepKind.tool_result:
            src = self.other("tool", tool.name, "tool") if tool is not None else actor
            if step.recipients:
                return [(src, t, b) for t, b in self.recipients(step)]
            call_id = (step.refs.call_id if step.refs else None) or (tool.call_id if tool else None)
            caller = self.call_actor.get(call_id) if call_id else None
            return [(src, caller, "call_id")] if caller else [(src, UNKNOWN, "unknown")]
        if kind == StepKind.document_read:
            doc = _named(step, DOC_KEYS)
            if doc is not None:
                return [(self.other("doc", doc, "document"), actor, "explicit")]
            src = self.other("tool", tool.name, "tool") if tool is not None else UNKNOWN
            return [(src, actor, "explicit" if tool is not None else "unknown")]
        if kind == StepKind.state_write:
            rec = _named(step, RECORD_KEYS)
            if rec is not None:
                return [(actor, self.other("record", rec, "record"), "explicit")]
            if tool is not None:
                return [(actor, self.other("tool", tool.name, "tool"), "explicit")]
            return [(actor, UNKNOWN, "unknown")]
        if kind == StepKind.final_output:
            named = [(actor, t, b) for t, b in self.recipients(step) if b == "explicit"]
            return [(actor, FINAL_OUTPUT, "sink"), *named]
        return [(actor, t, b) for t, b in self.recipients(step)]

    def add_step(self, pos: int, step: TraceStep) -> None:
        ig = self.ig
        if step.step_id in ig.step_pos:
            raise ValueError(f"trace '{ig.trace_id}': step_id '{step.step_id}' appears twice")
        ig.step_pos[step.step_id] = pos
        actor = self.participant(step.actor, step.actor_kind.value)
        ig.actor_node.append(actor)
        ig.by_actor.setdefault(actor, []).append(pos)
        channel = step.kind.value
        ig.by_kind.setdefault(channel, []).append(pos)
        ig.step_kind.append(channel)
        refs: list[str] = []
        for n, (src, dst, basis) in enumerate(self.endpoints(step, actor)):
            ref = edge_ref(step.step_id, n)
            edge = self.edge_type(src, dst, pos, n, basis, step)
            _link(ig.g, edge, ref)
            ig.edges[ref] = edge
            ig.out_edges.setdefault(src, []).append(ref)
            ig.in_edges.setdefault(dst, []).append(ref)
            refs.append(ref)
            if step.kind == StepKind.document_read:
                name = ig.g.nodes[src]["name"]
                ig.doc_reads.append(
                    DocumentRead(name, step.actor, step.step_id, step.index, ref, step.timestamp)
                )
        ig.step_edges.append(refs)
        ig.step_source.append(ig.edges[refs[0]].source)
        if step.kind == StepKind.final_output:
            ig.final_positions.append(pos)


def _link(g: nx.MultiDiGraph, edge: Edge, ref: str) -> None:
    """Add ``edge`` to networkx's adjacency under the key ``ref``, as itself: ``add_edge`` would copy
    its attributes into a new dict per edge. Both endpoints are nodes already; the successor and
    predecessor maps share one key dict per node pair, as ``add_edge`` makes them."""
    keys = g._succ[edge.source].get(edge.target)
    if keys is None:
        keys = g._succ[edge.source][edge.target] = g._pred[edge.target][edge.source] = {}
    keys[ref] = edge


def _add_topology(ig: InteractionGraph) -> None:
    builder = _Builder(ig)
    for pos, step in enumerate(ig.trace.steps):
        builder.add_step(pos, step)
