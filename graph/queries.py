"""Topology queries: neighbours, chains between steps, reads, fan-in/out, step search.

They need no annotation, so they answer in both graph modes. Chains are time-respecting: an edge
can only pass something on if its source already held it when the edge's step happened.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from typing import TYPE_CHECKING

from graph.results import Chain, DocumentRead, Fan, Hop, NeighbourLink, Neighbours, StepHit, StepsResult

if TYPE_CHECKING:
    from graph.model import InteractionGraph


class TopologyQueries:
    """Mixin of InteractionGraph: every method reads only the indices built with the topology."""

    def step_hit(self: InteractionGraph, pos: int) -> StepHit:
        step = self.trace.steps[pos]
        return StepHit(step.step_id, step.index, step.actor, step.kind.value, self.step_edges[pos])

    def neighbours(self: InteractionGraph, participant: str) -> Neighbours:
        """Who a participant sent to and received from, with the edges and steps of each link."""
        node = self.node_of(participant)

        def links(refs: list[str], far_end: str) -> list[NeighbourLink]:
            grouped: dict[str, tuple[list[str], list[str]]] = {}
            edges = self.edges
            for ref in refs:
                rec = edges[ref]
                group = grouped.get(rec.target if far_end == "target" else rec.source)
                if group is None:
                    group = grouped[rec.target if far_end == "target" else rec.source] = ([], [])
                group[0].append(ref)
                group[1].append(rec.step_id)
            return [NeighbourLink(n, len(rs), rs, ss) for n, (rs, ss) in grouped.items()]

        return Neighbours(
            participant,
            node,
            outgoing=links(self.out_edges.get(node, []), "target"),
            incoming=links(self.in_edges.get(node, []), "source"),
        )

    def _sweep(
        self: InteractionGraph, start: int, stop: int, through_unknown: bool
    ) -> tuple[dict[str, str], dict[str, str | None], dict[int, str]]:
        """Forward pass from step ``start`` to ``stop`` (inclusive): who holds what the start step
        sent, the edge that delivered it (parent pointers), and the relaying edge of each step."""
        from graph.model import UNKNOWN

        holders: dict[str, str] = {}
        parent: dict[str, str | None] = {}
        relayed: dict[int, str] = {}
        for ref in self.step_edges[start]:
            parent[ref] = None
            holders.setdefault(self.edges[ref].target, ref)
        relayed[start] = self.step_edges[start][0]
        sources = self.step_source
        for pos in range(start + 1, stop + 1):
            src = sources[pos]
            via = holders.get(src)
            if via is None and through_unknown:
                via = holders.get(UNKNOWN)
            if via is None:
                continue
            refs = self.step_edges[pos]
            relayed[pos] = refs[0]
            for ref in refs:
                parent[ref] = via
                holders.setdefault(self.edges[ref].target, ref)
        return holders, parent, relayed

    def _hops(self: InteractionGraph, parent: dict[str, str | None], last: str) -> list[Hop]:
        """Follow parent pointers back from the edge ``last`` to the start step's edge."""
        hops: list[Hop] = []
        ref: str | None = last
        while ref is not None:
            rec = self.edges[ref]
            step = self.trace.steps[rec.pos]
            hops.append(Hop(step.step_id, step.index, ref, rec.source, rec.target, rec.channel))
            ref = parent[ref]
        hops.reverse()
        return hops

    def handoff_chain(
        self: InteractionGraph, from_step: str, to_step: str, through_unknown: bool = False
    ) -> Chain:
        """The earliest time-respecting chain of edges that carries ``from_step`` on to ``to_step``.

        With ``through_unknown`` an edge to ``unknown`` counts as reaching every participant (use
        it for broadcast chats, where no recipient is recorded); the chain then says so.
        """
        start, stop = self.step_position(from_step), self.step_position(to_step)
        if stop < start:
            return Chain(from_step, to_step, False, [], through_unknown)
        _, parent, relayed = self._sweep(start, stop, through_unknown)
        if stop not in relayed:
            return Chain(from_step, to_step, False, [], through_unknown)
        return Chain(from_step, to_step, True, self._hops(parent, relayed[stop]), through_unknown)

    def paths_to_final_output(
        self: InteractionGraph, step: str, through_unknown: bool = False
    ) -> list[Chain]:
        """One chain per final-output step that what ``step`` sent can reach, in trace order."""
        from graph.model import FINAL_OUTPUT

        start = self.step_position(step)
        if not self.final_positions or self.final_positions[-1] < start:
            return []
        _, parent, relayed = self._sweep(start, self.final_positions[-1], through_unknown)
        chains = []
        for pos in self.final_positions:
            if pos < start or pos not in relayed:
                continue
            final_ref = next(r for r in self.step_edges[pos] if self.edges[r].target == FINAL_OUTPUT)
            to_id = self.trace.steps[pos].step_id
            chains.append(Chain(step, to_id, True, self._hops(parent, final_ref), through_unknown))
        return chains

    def document_reads(
        self: InteractionGraph, document: str | None = None, reader: str | None = None
    ) -> list[DocumentRead]:
        """Who read which document and when, in trace order (filter by document and/or reader)."""
        return [
            r
            for r in self.doc_reads
            if (document is None or r.document == document) and (reader is None or r.reader == reader)
        ]

    def _fan(self: InteractionGraph, participant: str, direction: str) -> Fan:
        node = self.node_of(participant)
        if direction == "in":
            counts = Counter(self.edges[r].source for r in self.in_edges.get(node, []))
        else:
            counts = Counter(self.edges[r].target for r in self.out_edges.get(node, []))
        return Fan(participant, direction, sum(counts.values()), len(counts), dict(counts.most_common()))

    def fan_in(self: InteractionGraph, participant: str) -> Fan:
        """Edges into a participant, counted per sender."""
        return self._fan(participant, "in")

    def fan_out(self: InteractionGraph, participant: str) -> Fan:
        """Edges out of a participant, counted per receiver."""
        return self._fan(participant, "out")

    def _text_positions(self: InteractionGraph, text: str) -> list[int]:
        needle = text.lower()
        blob, starts, found = self.text_blob, self.text_starts, []
        i = blob.find(needle)
        while i != -1:
            pos = bisect_right(starts, i) - 1
            found.append(pos)
            nxt = pos + 1
            if nxt >= len(starts):
                break
            i = blob.find(needle, starts[nxt])
        return found

    def steps_by(
        self: InteractionGraph,
        participant: str | None = None,
        kind: str | None = None,
        text: str | None = None,
        limit: int | None = 200,
    ) -> StepsResult:
        """Steps matching every given filter (actor, step kind, case-insensitive substring)."""
        node = self.node_of(participant) if participant is not None else None
        if text:
            matched = self._text_positions(text)
        elif node is not None:
            matched = self.by_actor.get(node, [])
        elif kind is not None:
            matched = self.by_kind.get(kind, [])
        else:
            matched = list(range(len(self.trace.steps)))
        # the other filters are checked per candidate (cheaper than building sets to intersect)
        if node is not None and text:
            actors = self.actor_node
            matched = [p for p in matched if actors[p] == node]
        if kind is not None and (text or node is not None):
            kinds = self.step_kind
            matched = [p for p in matched if kinds[p] == kind]
        shown = matched if limit is None else matched[:limit]
        return StepsResult(len(matched), len(shown) < len(matched), [self.step_hit(p) for p in shown])
