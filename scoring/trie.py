"""The prefix trie of subset prompts, run in batches of equal content (pure Python, no torch).

Subset prompts share leading factors: the prompt of {f0, f2, f5} begins with the prompt of
{f0, f2}. Every distinct factor prefix is one trie *piece* holding only its last factor's tokens,
followed, when the prefix is itself a scored subset, by one leaf per target query (the query and
the target tokens but the last; the leaves see the factor and themselves, not each other). Pieces
that end in the same factor hold the same tokens, so a forward call runs a batch of them: each row
over its own past (the scaffold and its ancestors, gathered from a pool of cached keys and values,
padded to the longest row) at the positions it has in its own subset prompt. Each unique token is
computed once and attends only to its own prompt, so no attention is spent on other branches.
"""

from __future__ import annotations

from dataclasses import dataclass

SCAFFOLD_ONLY = -1  # the content of the empty subset's piece: its leaves alone, over the scaffold


@dataclass(frozen=True)
class Piece:
    """One row of unique tokens: a factor after its parent's prompt, then the leaves of its subset."""

    mask: int  # the factor prefix this piece completes
    content: int  # its last factor, or SCAFFOLD_ONLY
    parent: int  # index of the parent piece, -1 when the past is the scaffold alone
    start: int  # position of its first token in its own subset prompt
    slot: int  # first pool slot of its factor tokens (-1 without any)
    scored: bool  # whether ``mask`` is a requested subset (the row then carries the leaves)


@dataclass(frozen=True)
class Plan:
    pieces: list[Piece]
    batches: list[list[int]]  # piece indices per forward call, parents in earlier calls
    factor_lengths: list[int]
    leaf_lengths: list[int]
    pool_size: int  # scaffold plus every factor piece

    def factor_length(self, piece: Piece) -> int:
        return 0 if piece.content == SCAFFOLD_ONLY else self.factor_lengths[piece.content]

    def row_length(self, piece: Piece) -> int:
        return self.factor_length(piece) + (sum(self.leaf_lengths) if piece.scored else 0)

    @property
    def n_tokens(self) -> int:
        return sum(self.row_length(p) for p in self.pieces)

    def past(self, index: int, scaffold_len: int) -> list[int]:
        """Pool slots a piece attends to before its own tokens: the scaffold, then its ancestors."""
        chain = []
        parent = self.pieces[index].parent
        while parent >= 0:
            chain.append(self.pieces[parent])
            parent = self.pieces[parent].parent
        slots = list(range(scaffold_len))
        for piece in reversed(chain):
            slots.extend(range(piece.slot, piece.slot + self.factor_lengths[piece.content]))
        return slots

    def offsets(self, piece: Piece) -> list[int]:
        """Each row token's position after the piece's start: every leaf continues the factor."""
        factor = self.factor_length(piece)
        offsets = list(range(factor))
        if piece.scored:
            for length in self.leaf_lengths:
                offsets.extend(range(factor, factor + length))
        return offsets

    def segments(self, piece: Piece) -> list[tuple[int, int]]:
        """(offset, length) of the row's factor tokens and then of each leaf, within the row."""
        spans = [(0, self.factor_length(piece))]
        if piece.scored:
            for length in self.leaf_lengths:
                spans.append((spans[-1][0] + spans[-1][1], length))
        return spans


def plan_batches(
    masks: list[int],
    factor_lengths: list[int],
    leaf_lengths: list[int],
    scaffold_len: int,
    token_budget: int,
) -> Plan:
    """The trie of ``masks``, cut into calls of at most ``token_budget`` new tokens (at least one
    row each); rows of similar past length go together to keep the padding low."""
    scored = set(masks)
    prefixes = {0} if 0 in scored else set()
    for mask in masks:
        while mask:
            prefixes.add(mask)
            mask &= ~(1 << (mask.bit_length() - 1))
    parent_of = {prefix: prefix & ~(1 << (prefix.bit_length() - 1)) for prefix in prefixes - {0}}
    parent_of[0] = 0
    starts = {0: scaffold_len}
    for prefix in sorted(prefixes - {0}):  # a prefix's parent is smaller, so it is placed first
        starts[prefix] = starts[parent_of[prefix]] + factor_lengths[prefix.bit_length() - 1]
    groups: dict[tuple[int, bool], list[int]] = {}
    for prefix in prefixes:
        content = prefix.bit_length() - 1 if prefix else SCAFFOLD_ONLY
        groups.setdefault((content, prefix in scored), []).append(prefix)

    pieces: list[Piece] = []
    batches: list[list[int]] = []
    piece_of = {0: -1}
    slot = scaffold_len
    for content, is_scored in sorted(groups):  # parents end in a lower factor: their calls come first
        length = 0 if content == SCAFFOLD_ONLY else factor_lengths[content]
        per_call = max(1, token_budget // (length + (sum(leaf_lengths) if is_scored else 0)))
        rows = sorted(groups[content, is_scored], key=lambda prefix: starts[parent_of[prefix]])
        for first in range(0, len(rows), per_call):
            batch = []
            for prefix in rows[first : first + per_call]:
                parent, start = piece_of[parent_of[prefix]], starts[parent_of[prefix]]
                pieces.append(Piece(prefix, content, parent, start, slot if length else -1, is_scored))
                if prefix:
                    piece_of[prefix] = len(pieces) - 1
                slot += length
                batch.append(len(pieces) - 1)
            batches.append(batch)
    return Plan(pieces, batches, list(factor_lengths), list(leaf_lengths), slot)
