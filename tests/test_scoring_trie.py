"""The trie plan: every unique token once, parents before children, calls within the budget."""

from __future__ import annotations

from scoring.trie import SCAFFOLD_ONLY, plan_batches

FACTORS = [5, 3, 4, 2]
LEAVES = [6, 7]


def test_full_grid_computes_each_prefix_once_with_its_leaves() -> None:
    plan = plan_batches(list(range(16)), FACTORS, LEAVES, 10, token_budget=40)
    assert sorted(p.mask for p in plan.pieces) == list(range(16))
    expected = sum(FACTORS[m.bit_length() - 1] for m in range(1, 16)) + 16 * sum(LEAVES)
    assert plan.n_tokens == expected
    assert plan.pool_size == 10 + sum(FACTORS[m.bit_length() - 1] for m in range(1, 16))
    seen: set[int] = {-1}
    for batch in plan.batches:
        rows = [plan.pieces[i] for i in batch]
        assert len({(p.content, p.scored) for p in rows}) == 1  # one content per call
        assert all(p.parent in seen for p in rows)  # parents ran in an earlier call
        assert len(rows) == 1 or sum(plan.row_length(p) for p in rows) <= 40
        seen.update(batch)
    empty = next(p for p in plan.pieces if p.mask == 0)
    assert empty.content == SCAFFOLD_ONLY and empty.slot == -1 and plan.row_length(empty) == 13


def test_past_and_positions_follow_the_subset_prompt() -> None:
    plan = plan_batches(list(range(16)), FACTORS, LEAVES, 10, token_budget=1000)
    index = next(i for i, p in enumerate(plan.pieces) if p.mask == 0b1011)
    piece = plan.pieces[index]
    assert piece.start == 10 + 5 + 3  # after the scaffold, f0 and f1
    past = plan.past(index, 10)
    assert len(past) == 18 and past[:10] == list(range(10))
    assert plan.offsets(piece) == [0, 1] + [2 + k for k in range(6)] + [2 + k for k in range(7)]
    assert plan.segments(piece) == [(0, 2), (2, 6), (8, 7)]


def test_partial_grid_keeps_unscored_prefixes_without_leaves() -> None:
    plan = plan_batches([0b1000, 0b1010], FACTORS, LEAVES, 10, token_budget=100)
    by_mask = {p.mask: p for p in plan.pieces}
    assert set(by_mask) == {0b10, 0b1000, 0b1010}
    assert not by_mask[0b10].scored and plan.row_length(by_mask[0b10]) == 3
    assert by_mask[0b1010].scored and by_mask[0b1010].parent == plan.pieces.index(by_mask[0b10])
