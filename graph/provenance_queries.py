"""Provenance queries: where a value first appeared, how it travelled, where versions collided.

Each carrying step is compared with the step it most plausibly got the value from: the latest
earlier carrier that had an explicit edge to this step's actor; else this actor's own earlier
mention; else the latest earlier carrier at all (route ``unknown_route``: the value was around,
but no recorded edge delivered it, as in broadcast chats).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graph.results import CarriageHop, MergePoint, ValueAppearance, ValuePropagation
from graph.values import VALUE_KINDS, Mention, extract_mentions, status_rank

if TYPE_CHECKING:
    from graph.model import InteractionGraph

# the most material change names the hop's carriage
CHANGE_PRIORITY = ("status_changed", "attribution_dropped", "hedge_dropped", "transformed")


def _same_surface(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def _compare(src: Mention, m: Mention) -> tuple[list[str], str | None]:
    changes: list[str] = []
    if not _same_surface(src.surface, m.surface):
        changes.append("transformed")
    if src.hedges and not m.hedges:
        changes.append("hedge_dropped")
    if src.attributions and not m.attributions:
        changes.append("attribution_dropped")
    status_from = None
    if src.status and m.status and src.status != m.status:
        changes.append("status_changed")
        status_from = src.status
    return sorted(changes, key=CHANGE_PRIORITY.index), status_from


class ProvenanceQueries:
    """Mixin of InteractionGraph: needs the annotation layer (mode 'annotated')."""

    def _parse_value(self: InteractionGraph, value: str) -> Mention:
        found = [m for m in extract_mentions(value) if m.kind in VALUE_KINDS]
        non_status = [m for m in found if m.kind != "status"]
        if non_status or found:
            return (non_status or found)[0]
        return Mention("text", value, value.lower(), 0, 0)

    def _carriers(self: InteractionGraph, query: Mention) -> list[tuple[int, int]]:
        """(position, mention index) per carrying step; index -1 for a plain-text match."""
        index = self.provenance
        assert index is not None
        if query.kind == "text":
            return [(p, -1) for p in self._text_positions(query.surface)]
        if query.kind != "status":
            return index.carrier_refs(query)
        first = index.carrier_refs(query)
        if not first:
            return []
        start = first[0][0]
        anchor = index.mention(first[0]).anchor
        if anchor is not None:
            return [r for r in index.carrier_refs(self._parse_value(anchor)) if r[0] >= start]
        statuses = [
            (p, i)
            for p, ms in enumerate(index.mentions[start:], start)
            for i, m in enumerate(ms)
            if m.kind == "status"
        ]
        return [c for i, c in enumerate(statuses) if i == 0 or c[0] != statuses[i - 1][0]]

    def _mention_at(self: InteractionGraph, ref: tuple[int, int], query: Mention) -> Mention:
        assert self.provenance is not None
        return query if ref[1] < 0 else self.provenance.mention(ref)

    def value_first_appearance(self: InteractionGraph, value: str) -> ValueAppearance | None:
        """The step where a value (amount, id, e-mail, date, status or plain text) first appeared."""
        self.require_annotations("value_first_appearance")
        query = self._parse_value(value)
        assert self.provenance is not None
        carriers = self._carriers(query) if query.kind == "text" else self.provenance.carrier_refs(query)
        if not carriers:
            return None
        pos, m = carriers[0][0], self._mention_at(carriers[0], query)
        step = self.trace.steps[pos]
        return ValueAppearance(
            value,
            query.kind,
            query.norm,
            step.step_id,
            step.index,
            step.actor,
            m.surface,
            self.step_edges[pos],
        )

    def value_propagation(self: InteractionGraph, value: str, limit: int | None = 200) -> ValuePropagation:
        """First appearance and every later carrier of a value, each classified against its source."""
        self.require_annotations("value_propagation")
        query = self._parse_value(value)
        carriers = self._carriers(query)
        shown = carriers if limit is None else carriers[:limit]
        delivered: dict[str, tuple[int, str]] = {}
        own: dict[str, int] = {}
        held: dict[int, Mention] = {}
        hops: list[CarriageHop] = []
        last: int | None = None
        for ref in shown:
            pos, m = ref[0], self._mention_at(ref, query)
            actor = self.step_source[pos]  # who emitted the step: the tool for a result, the doc for a read
            via: str | None = None
            if last is None:
                src, route = None, "origin"
            elif actor in delivered:
                src, via = delivered[actor]
                route = "edge"
            elif actor in own:
                src, route = own[actor], "same_participant"
            else:
                src, route = last, "unknown_route"
            hops.append(self._hop(pos, m, src, route, via, held.get(src) if src is not None else None))
            held[pos], own[actor], last = m, pos, pos
            for ref in self.step_edges[pos]:
                delivered[self.edges[ref].target] = (pos, ref)
        return ValuePropagation(value, query.kind, bool(carriers), hops, len(shown) < len(carriers))

    def _hop(
        self: InteractionGraph,
        pos: int,
        m: Mention,
        src: int | None,
        route: str,
        via: str | None,
        sm: Mention | None,
    ) -> CarriageHop:
        step = self.trace.steps[pos]
        changes, status_from = _compare(sm, m) if sm is not None else ([], None)
        upgraded = status_from is not None and m.status is not None and not m.status.startswith("rejected")
        upgraded = upgraded and status_rank(m.status or "") > status_rank(status_from or "")
        return CarriageHop(
            step_id=step.step_id,
            index=step.index,
            actor=step.actor,
            surface=m.surface,
            source_step=self.trace.steps[src].step_id if src is not None else None,
            route=route,
            via_edge=via,
            carriage="origin" if sm is None else (changes[0] if changes else "verbatim"),
            changes=changes,
            edge_refs=self.step_edges[pos],
            status=m.status,
            status_from=status_from,
            status_upgraded=upgraded,
            hedges=list(m.hedges),
            attributions=list(m.attributions),
            dropped_hedges=list(sm.hedges) if "hedge_dropped" in changes and sm else [],
            dropped_attributions=list(sm.attributions) if "attribution_dropped" in changes and sm else [],
        )

    def merge_points(self: InteractionGraph, participant: str | None = None) -> list[MergePoint]:
        """Participants that received conflicting versions of one fact (optionally one of them)."""
        self.require_annotations("merge_points")
        assert self.provenance is not None
        if participant is None:
            return list(self.provenance.merge_points)
        name = self.g.nodes[self.node_of(participant)]["name"]
        return list(self.provenance.merge_points_by_participant.get(name, []))
