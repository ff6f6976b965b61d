"""The provenance index: every value mention per step, indexed for first-appearance lookups.

Built once per annotated graph. Ids, e-mails, dates and statuses are looked up by their
normalised form; amounts through a sorted value array, because ``2.44M`` and ``$2,437,910`` are
the same amount at different precisions and cannot share a key.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graph.values import Mention, amounts_match, extract_all

if TYPE_CHECKING:
    from graph.model import InteractionGraph
    from graph.results import MergePoint


@dataclass
class ProvenanceIndex:
    """Mentions per step position, plus lookups from a value to the steps that hold it."""

    mentions: list[tuple[Mention, ...]] = field(default_factory=list)
    exact: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)
    amount_values: list[float] = field(default_factory=list)
    amount_refs: list[tuple[int, int]] = field(default_factory=list)
    merge_points: list[MergePoint] = field(default_factory=list)

    def carriers(self, query: Mention) -> list[tuple[int, Mention]]:
        """The steps (first matching mention each) that hold ``query``'s value, in trace order."""
        if query.kind == "amount":
            assert query.value is not None and query.quantum is not None
            lo = bisect_left(self.amount_values, query.value / 2 - query.quantum)
            hi = bisect_right(self.amount_values, query.value * 2 + query.quantum)
            refs = sorted(r for r in self.amount_refs[lo:hi] if amounts_match(query, self.mention(r)))
        else:
            refs = self.exact.get((query.kind, query.norm), [])
        out: list[tuple[int, Mention]] = []
        last = -1
        for ref in refs:
            if ref[0] != last:
                out.append((ref[0], self.mention(ref)))
                last = ref[0]
        return out

    def mention(self, ref: tuple[int, int]) -> Mention:
        return self.mentions[ref[0]][ref[1]]


def build_provenance(ig: InteractionGraph) -> ProvenanceIndex:
    """Extract every step's mentions and index them; then find the merge points."""
    from graph.merge import find_merge_points

    index = ProvenanceIndex()
    amounts: list[tuple[float, int, int]] = []
    index.mentions = extract_all([step.content for step in ig.trace.steps])
    for pos, found in enumerate(index.mentions):
        for i, m in enumerate(found):
            if m.kind == "amount":
                assert m.value is not None
                amounts.append((m.value, pos, i))
            else:
                index.exact.setdefault((m.kind, m.norm), []).append((pos, i))
    amounts.sort()
    index.amount_values = [a[0] for a in amounts]
    index.amount_refs = [(a[1], a[2]) for a in amounts]
    index.merge_points = find_merge_points(ig, index)
    return index
