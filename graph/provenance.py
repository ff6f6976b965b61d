"""The provenance index: every value mention per step, indexed for first-appearance lookups.

Built once per annotated graph. Ids, e-mails, dates and statuses are looked up by their
normalised form; amounts through sorted value arrays, one per precision and currency, because
``2.44M`` and ``$2,437,910`` are the same amount at different precisions and cannot share a key.
A mention is referred to by one integer, its code ``position * stride + index in its step``
(``stride`` exceeds every step's mention count), kept in typed arrays: a trace of a million
steps has about as many mentions.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graph.values import Mention, extract_all

if TYPE_CHECKING:
    from graph.model import InteractionGraph
    from graph.results import MergePoint


@dataclass
class ProvenanceIndex:
    """Mentions per step position, plus lookups from a value to the codes of the mentions that
    hold it (``exact`` by kind and norm, ``amounts`` by precision and currency: the sorted values
    and their codes)."""

    mentions: list[tuple[Mention, ...]] = field(default_factory=list)
    stride: int = 1
    exact: dict[tuple[str, str], array[int]] = field(default_factory=dict)
    amounts: dict[tuple[float, str | None], tuple[array[float], array[int]]] = field(default_factory=dict)
    merge_points: list[MergePoint] = field(default_factory=list)
    merge_points_by_participant: dict[str, list[MergePoint]] = field(default_factory=dict)

    def carrier_refs(self, query: Mention) -> list[tuple[int, int]]:
        """(position, mention index) of the first mention of ``query``'s value in each step that
        holds it, in trace order. Amounts are grouped by precision and currency: within a group
        the matching values form one contiguous range of the sorted array."""
        found: list[int] | array[int]
        if query.kind == "amount":
            assert query.value is not None and query.quantum is not None
            found = []
            for (quantum, currency), (values, codes) in self.amounts.items():
                if query.currency and currency and currency != query.currency:
                    continue
                # within one group the window is exactly amounts_match's tolerance
                tol = max(query.quantum, quantum) / 2 * (1 + 1e-9)
                lo, hi = bisect_left(values, query.value - tol), bisect_right(values, query.value + tol)
                found.extend(codes[lo:hi])
            found.sort()  # codes sort as their (position, index)
        else:
            found = self.exact.get((query.kind, query.norm), array("q"))
        out: list[tuple[int, int]] = []
        last = -1
        for code in found:
            ref = divmod(code, self.stride)
            if ref[0] != last:
                out.append(ref)
                last = ref[0]
        return out

    def carriers(self, query: Mention) -> list[tuple[int, Mention]]:
        """Like ``carrier_refs``, with the mentions themselves."""
        return [(ref[0], self.mention(ref)) for ref in self.carrier_refs(query)]

    def mention(self, ref: tuple[int, int]) -> Mention:
        return self.mentions[ref[0]][ref[1]]


def build_provenance(ig: InteractionGraph) -> ProvenanceIndex:
    """Extract every step's mentions and index them; then find the merge points."""
    from graph.merge import find_merge_points

    index = ProvenanceIndex()
    amounts: dict[tuple[float, str | None], list[tuple[float, int]]] = {}
    index.mentions = extract_all([step.content for step in ig.trace.steps])
    stride = index.stride = 1 + max(map(len, index.mentions), default=0)
    exact = index.exact
    for pos, found in enumerate(index.mentions):
        for code, m in enumerate(found, pos * stride):
            if m.kind == "amount":
                assert m.value is not None and m.quantum is not None
                amounts.setdefault((m.quantum, m.currency), []).append((m.value, code))
            else:
                codes = exact.get((m.kind, m.norm))
                if codes is None:
                    codes = exact[m.kind, m.norm] = array("q")
                codes.append(code)
    for key, group in amounts.items():
        group.sort()  # by value, then code: as (value, position, index)
        index.amounts[key] = (array("d", [g[0] for g in group]), array("q", [g[1] for g in group]))
    index.merge_points = find_merge_points(ig, index)
    for point in index.merge_points:
        index.merge_points_by_participant.setdefault(point.participant, []).append(point)
    return index
