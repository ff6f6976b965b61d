"""The prefix trie of subset prompts, packed into tree-attention calls (pure Python, no torch).

Subset prompts share leading factors: the prompt of {f0, f2, f5} begins with the prompt of
{f0, f2}. Every distinct factor prefix is one trie node holding only its last factor's tokens;
a leaf holds one target query (the query and the target tokens but the last) under the node of
its subset. A *call* packs many nodes into one sequence: each token sees the cached past, its
ancestors' tokens and the earlier tokens of its own node (a tree attention mask), at the
position it has in its own subset prompt. So each unique token is computed once.

The trie is cut at depth ``split``: one call holds the nodes over the first ``split`` factors;
then one call per distinct top part holds the rest of the subsets below it, with that top part's
path gathered from the first call's cache as its past.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Node:
    """A run of tokens whose parent is another node of the same call (or the past when -1)."""

    tokens: list[int]
    parent: int
    leaf: tuple[int, int] | None = None  # (mask, query) for a leaf


@dataclass
class Call:
    """One packed forward call: nodes in parent-before-child order, over a given past."""

    top: int  # the top-part mask whose path is the past (0: the scaffold only)
    nodes: list[Node] = field(default_factory=list)
    node_of_prefix: dict[int, int] = field(default_factory=dict)

    @property
    def n_tokens(self) -> int:
        return sum(len(n.tokens) for n in self.nodes)

    def prefix_node(self, prefix: int, factor_tokens: list[list[int]]) -> int:
        """Node index for a path prefix (a mask of factors), creating missing ancestors."""
        if prefix == 0:
            return -1
        if prefix in self.node_of_prefix:
            return self.node_of_prefix[prefix]
        last = prefix.bit_length() - 1
        parent = self.prefix_node(prefix & ~(1 << last), factor_tokens)
        self.nodes.append(Node(factor_tokens[last], parent))
        self.node_of_prefix[prefix] = len(self.nodes) - 1
        return self.node_of_prefix[prefix]


@dataclass(frozen=True)
class Plan:
    split: int
    top: Call
    lower: list[Call]

    @property
    def n_tokens(self) -> int:
        return self.top.n_tokens + sum(c.n_tokens for c in self.lower)


def plan_calls(
    masks: list[int],
    factor_tokens: list[list[int]],
    leaf_tokens: list[list[int]],
    split: int,
) -> Plan:
    """Pack the trie of ``masks`` (with one leaf per mask and query) into calls cut at ``split``."""
    top_bits = (1 << split) - 1
    top = Call(top=-1)
    groups: dict[int, list[int]] = {}
    for mask in masks:
        groups.setdefault(mask & top_bits, []).append(mask)
    for top_part in groups:
        top.prefix_node(top_part, factor_tokens)
    lower = []
    for top_part, members in groups.items():
        call = Call(top=top_part)
        for mask in members:
            parent = call.prefix_node(mask & ~top_bits, factor_tokens)
            for q, tokens in enumerate(leaf_tokens):
                call.nodes.append(Node(tokens, parent, leaf=(mask, q)))
        lower.append(call)
    return Plan(split, top, lower)


def choose_split(n_factors: int, per_factor: float, per_leaf: float, budget: int) -> int:
    """Smallest split whose lower calls fit the token budget (fewer, larger calls first)."""
    for split in range(n_factors + 1):
        rest = n_factors - split
        size = per_factor * ((1 << rest) - 1) + per_leaf * (1 << rest)
        if size <= budget:
            return split
    return n_factors


def layout(call: Call, past_len: int) -> tuple[list[int], list[int], list[int], list[list[int]]]:
    """Flatten a call: token ids, positions, the node of each token, and each node's ancestors."""
    ids: list[int] = []
    positions: list[int] = []
    node_of: list[int] = []
    end_pos: list[int] = []
    ancestors: list[list[int]] = []
    for i, node in enumerate(call.nodes):
        start = past_len if node.parent < 0 else end_pos[node.parent]
        ids.extend(node.tokens)
        positions.extend(range(start, start + len(node.tokens)))
        node_of.extend([i] * len(node.tokens))
        end_pos.append(start + len(node.tokens))
        ancestors.append(([] if node.parent < 0 else ancestors[node.parent]) + [i])
    return ids, positions, node_of, ancestors
