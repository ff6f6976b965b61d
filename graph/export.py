"""Export: node-link JSON (what the ``GraphBuilt`` event stores), its digest, and GraphML.

The node-link dict is deterministic for a given trace and mode: nodes in order of first
appearance, links in step order, so ``graph_digest`` is the same on every rebuild and an audit
report can cite the exact graph it used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

if TYPE_CHECKING:
    from graph.model import InteractionGraph

NODE_LINK_FORMAT = "interaction-graph/1"


def graph_to_node_link(ig: InteractionGraph) -> dict[str, Any]:
    """The graph as plain JSON data; the annotation layer is present only in annotated mode."""
    g = ig.g
    links = []
    for refs in ig.step_edges:
        for ref in refs:
            rec = ig.edges[ref]
            links.append(
                {
                    "source": rec.source,
                    "target": rec.target,
                    "key": ref,
                    **g.edges[rec.source, rec.target, ref],
                }
            )
    data: dict[str, Any] = {
        "format": NODE_LINK_FORMAT,
        "trace_id": ig.trace_id,
        "mode": str(ig.mode),
        "directed": True,
        "multigraph": True,
        "nodes": [{"id": n, **attrs} for n, attrs in g.nodes(data=True)],
        "links": links,
    }
    if ig.annotations is not None:
        data["annotations"] = ig.annotations.to_dict(ig)
    return data


def canonical_json(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def graph_digest(ig: InteractionGraph, node_link: dict[str, Any] | None = None) -> str:
    """sha256 over the canonical JSON of the node-link data (pass it if already computed)."""
    return graph_digest_of_node_link(node_link if node_link is not None else graph_to_node_link(ig))


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
            attrs = ig.g.edges[rec.source, rec.target, ref]
            out.add_edge(rec.source, rec.target, key=ref, **{k: v for k, v in attrs.items() if v is not None})
    tmp = Path(str(path) + ".tmp")
    nx.write_graphml(out, tmp)
    tmp.replace(path)
