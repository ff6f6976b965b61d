"""Merge points: a participant that received conflicting versions of the same fact.

Two kinds of fact are compared, both read from what reached the participant over explicit edges
(messages addressed to it, tool results returned to it, documents it read):

- the status of an item named on the same line: ``INV-4471`` "approved" from one sender,
  "pending" from another;
- a labelled amount of such an item: "INV-4471 total" ``$2,437,910`` from one sender and ``$1.9M``
  from another (two amounts are one version when each lies within the other's rounding).

Broadcasts to ``unknown`` reach no one in particular, so they never make a merge point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graph.results import FactVersion, MergePoint
from graph.values import Mention, amounts_match

if TYPE_CHECKING:
    from graph.model import InteractionGraph
    from graph.provenance import ProvenanceIndex

_Entry = tuple[int, Mention, str, str, str]  # position, mention, step id, edge ref, sender


def _fact_of(m: Mention) -> tuple[str, str, str] | None:
    """The fact a mention states, when it names what it is about (an id on the same line):
    (kind, anchor, label)."""
    if m.anchor is None:
        return None
    if m.kind == "status":
        return "status", m.anchor, "status"
    if m.kind == "amount" and m.label:
        return "amount", m.anchor, m.label
    return None


def _versions(kind: str, entries: list[_Entry]) -> list[FactVersion]:
    """Group one fact's entries into versions, in order of first receipt. Amounts are swept in
    value order: a new version starts where an amount is not a rounding of the current one."""
    keys: list[str] = []
    if kind == "amount":
        order = sorted(range(len(entries)), key=lambda i: entries[i][1].value or 0.0)
        keys = [""] * len(entries)
        rep: Mention | None = None
        for i in order:
            m = entries[i][1]
            if rep is None or not amounts_match(rep, m):
                rep = m
            keys[i] = rep.surface
    else:
        keys = [e[1].norm for e in entries]
    grouped: dict[str, tuple[list[str], list[str], set[str]]] = {}
    for key, (_, _, step_id, ref, sender) in zip(keys, entries, strict=True):
        steps, refs, senders = grouped.setdefault(key, ([], [], set()))
        if not refs or refs[-1] != ref:
            steps.append(step_id)
            refs.append(ref)
        senders.add(sender)
    return [FactVersion(k, s, r, sorted(se)) for k, (s, r, se) in grouped.items()]


def _received(
    ig: InteractionGraph, index: ProvenanceIndex, node: str, names: dict[str, str]
) -> list[MergePoint]:
    facts: dict[tuple[str, str, str], list[_Entry]] = {}
    mentions_at, edges = index.mentions, ig.edges
    for ref in ig.in_edges.get(node, []):
        rec = edges[ref]
        mentions = mentions_at[rec.pos]
        for m in mentions:
            if m.anchor is None:
                continue
            fact = _fact_of(m)
            if fact is not None:
                facts.setdefault(fact, []).append((rec.pos, m, rec.step_id, ref, names[rec.source]))
    points = []
    for (kind, anchor, label), entries in facts.items():
        if len(entries) < 2 or (kind == "status" and len({e[1].norm for e in entries}) < 2):
            continue
        versions = _versions(kind, entries)
        if len(versions) > 1:
            points.append(MergePoint(names[node], f"{label} of {anchor}", kind, versions))
    return points


def find_merge_points(ig: InteractionGraph, index: ProvenanceIndex) -> list[MergePoint]:
    """Every participant's merge points, participants in order of first appearance."""
    names = {node: attrs["name"] for node, attrs in ig.g.nodes(data=True)}
    found: list[MergePoint] = []
    for node in ig.participants.values():
        found.extend(_received(ig, index, node, names))
    return found
