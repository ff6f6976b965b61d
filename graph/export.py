"""Export: node-link JSON (what the ``GraphBuilt`` event stores), its digest, and GraphML.

The node-link dict is deterministic for a given trace and mode: nodes in order of first
appearance, links in step order, so ``graph_digest`` is the same on every rebuild and an audit
report can cite the exact graph it used. ``graph_digest`` hashes the canonical JSON as it is
written, piece by piece: on a trace of a million steps the links alone would be a million dicts
and several hundred megabytes of text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

if TYPE_CHECKING:
    from graph.model import InteractionGraph

NODE_LINK_FORMAT = "interaction-graph/1"


def _links(ig: InteractionGraph) -> Iterator[dict[str, Any]]:
    for refs in ig.step_edges:
        for ref in refs:
            rec = ig.edges[ref]
            yield {"source": rec.source, "target": rec.target, "key": ref, **rec.copy()}


def node_link_parts(ig: InteractionGraph) -> dict[str, Any]:
    """The node-link data with its long lists (links, the annotations' values) as iterators, to
    be read once: ``graph_to_node_link`` makes lists of them, ``graph_digest`` hashes them."""
    data: dict[str, Any] = {
        "format": NODE_LINK_FORMAT,
        "trace_id": ig.trace_id,
        "mode": str(ig.mode),
        "directed": True,
        "multigraph": True,
        "nodes": [{"id": n, **attrs} for n, attrs in ig.g.nodes(data=True)],
        "links": _links(ig),
    }
    if ig.annotations is not None:
        data["annotations"] = ig.annotations.parts(ig)
    return data


def _listed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    return list(value) if isinstance(value, Iterator) else value


def graph_to_node_link(ig: InteractionGraph) -> dict[str, Any]:
    """The graph as plain JSON data; the annotation layer is present only in annotated mode."""
    return _listed(node_link_parts(ig))


def canonical_json(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _lazy(value: Any) -> bool:
    return isinstance(value, Iterator) or (isinstance(value, dict) and any(map(_lazy, value.values())))


def _canonical_pieces(value: Any) -> Iterator[str]:
    """``canonical_json(value)`` as text pieces, where a dict's value may be an iterator of the
    (plain) items of a list: JSON of a dict is its sorted ``"key":value`` pairs joined by commas
    in braces, of a list its items joined by commas in brackets, so the pieces join to exactly the
    same text. A thousand items go to the encoder at a time."""
    if isinstance(value, dict) and _lazy(value):
        yield "{"
        for i, key in enumerate(sorted(value)):
            yield ("," if i else "") + json.dumps(key, ensure_ascii=False) + ":"
            yield from _canonical_pieces(value[key])
        yield "}"
    elif isinstance(value, Iterator):
        yield "["
        for i, batch in enumerate(_batches(value)):
            yield ("," if i else "") + _dumps(batch)[1:-1]
        yield "]"
    else:
        yield _dumps(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _batches(items: Iterator[Any], size: int = 1024) -> Iterator[list[Any]]:
    """The items in lists of up to ``size`` (none empty)."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def graph_digest(ig: InteractionGraph, node_link: dict[str, Any] | None = None) -> str:
    """sha256 over the canonical JSON of the node-link data (pass it if already computed; else it
    is hashed as it is written, never held whole)."""
    if node_link is not None:
        return graph_digest_of_node_link(node_link)
    h = hashlib.sha256()
    pending: list[str] = []
    size = 0
    for piece in _canonical_pieces(node_link_parts(ig)):
        pending.append(piece)
        size += len(piece)
        if size > 1 << 16:
            h.update("".join(pending).encode("utf-8"))
            pending, size = [], 0
    h.update("".join(pending).encode("utf-8"))
    return "sha256:" + h.hexdigest()


def graph_digest_of_node_link(data: dict[str, Any]) -> str:
    """The digest of node-link data as stored (a ``GraphBuilt`` payload, an exported file)."""
    return "sha256:" + hashlib.sha256(canonical_json(data)).hexdigest()


def write_graphml(ig: InteractionGraph, path: str | Path) -> None:
    """GraphML of nodes and edges (None attributes left out, as GraphML has no null); the
    annotation layer travels as one JSON string attribute of the graph."""
    out = nx.MultiDiGraph(trace_id=ig.trace_id, mode=str(ig.mode), digest=graph_digest(ig))
    if ig.annotations is not None:
        out.graph["annotations_json"] = json.dumps(
            ig.annotations.to_dict(ig), ensure_ascii=False, default=str
        )
    for n, attrs in ig.g.nodes(data=True):
        out.add_node(n, **{k: v for k, v in attrs.items() if v is not None})
    for refs in ig.step_edges:
        for ref in refs:
            rec = ig.edges[ref]
            attrs = rec.copy()
            out.add_edge(rec.source, rec.target, key=ref, **{k: v for k, v in attrs.items() if v is not None})
    tmp = Path(str(path) + ".tmp")
    nx.write_graphml(out, tmp)
    tmp.replace(path)
