"""Merge points: a participant that received conflicting versions of the same fact.

Two kinds of fact are compared, both read from what reached the participant over explicit edges
(messages addressed to it, tool results returned to it, documents it read):

- the status of an anchored item: ``INV-4471`` "approved" from one sender, "pending" from another;
- a labelled amount: "total" ``$2,437,910`` from one sender and "total" ``$1.9M`` from another
  (two amounts are one version when each lies within the other's rounding).

Broadcasts to ``unknown`` reach no one in particular, so they never make a merge point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graph.results import FactVersion, MergePoint
from graph.values import Mention, amounts_match

if TYPE_CHECKING:
    from graph.model import InteractionGraph
    from graph.provenance import ProvenanceIndex

# fact -> version key -> (step ids, edge refs, senders)
_Versions = dict[str, tuple[list[str], list[str], list[str]]]


def _fact_of(m: Mention) -> tuple[str, str] | None:
    if m.kind == "status" and m.anchor:
        return "status", f"status of {m.anchor}"
    if m.kind == "amount" and m.label:
        return "amount", f"amount: {m.label}"
    return None


def _version_key(m: Mention, reps: list[Mention]) -> str:
    if m.kind != "amount":
        return m.norm
    for rep in reps:
        if amounts_match(rep, m):
            return rep.surface
    reps.append(m)
    return m.surface


def _received(ig: InteractionGraph, index: ProvenanceIndex, node: str) -> list[MergePoint]:
    facts: dict[tuple[str, str], _Versions] = {}
    reps: dict[tuple[str, str], list[Mention]] = {}
    for ref in ig.in_edges.get(node, []):
        rec = ig.edges[ref]
        step_id = ig.trace.steps[rec.pos].step_id
        sender = ig.g.nodes[rec.source]["name"]
        for m in index.mentions[rec.pos]:
            fact = _fact_of(m)
            if fact is None:
                continue
            key = _version_key(m, reps.setdefault(fact, []))
            steps, refs, senders = facts.setdefault(fact, {}).setdefault(key, ([], [], []))
            if not refs or refs[-1] != ref:
                steps.append(step_id)
                refs.append(ref)
                senders.append(sender)
    name = ig.g.nodes[node]["name"]
    return [
        MergePoint(
            name, fact, kind, [FactVersion(v, s, r, sorted(set(se))) for v, (s, r, se) in versions.items()]
        )
        for (kind, fact), versions in facts.items()
        if len(versions) > 1
    ]


def find_merge_points(ig: InteractionGraph, index: ProvenanceIndex) -> list[MergePoint]:
    """Every participant's merge points, participants in order of first appearance."""
    found: list[MergePoint] = []
    for node in ig.participants.values():
        found.extend(_received(ig, index, node))
    return found
