"""Teacher-forced support of step groups for a target string: leave-one-out and pairwise
interactions over the groups of a trace, for failure attribution.

A trace's steps (before the step that delivered the answer) are grouped into at most
``MAX_GROUPS`` contiguous groups; each group is one factor of a subset prompt (scaffold + the
groups present + query), and the target is the answer string. For each target:

- ``loo[g] = v(N) − v(N∖{g})``: how much the target's log-probability (summed, per token) drops
  when group g is removed — the group's support for the target;
- ``pair[(g, h)] = v(N) − v(N∖g) − v(N∖h) + v(N∖{g,h})``: the full-context interaction of two
  groups (the discrete derivative at background N∖{g,h}), computed for the strongest groups only.

Scores come from ``scoring.scorer`` (scaffold encoded once, prefix trie), so they match the naive
one-prompt-at-a-time reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from scoring.prompts import PromptParts
from scoring.scorer import ScoreStats, TrieScorer, tokenize_parts

MAX_GROUPS = 12
PAIR_TOP = 4


@dataclass(frozen=True)
class GroupGame:
    """The leave-one-out values and top interactions of one target over the groups."""

    target: str
    n_tokens: int
    full: float
    loo: list[float]
    pairs: dict[tuple[int, int], float] = field(default_factory=dict)


def group_spans(n: int, max_groups: int = MAX_GROUPS) -> list[range]:
    """Contiguous, near-equal groups covering ``range(n)``: one item per group when n ≤ max_groups."""
    if n <= 0:
        return []
    k = min(n, max_groups)
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(k)]


def score_groups(
    loaded: Any,
    scaffold: str,
    groups: list[str],
    query: str,
    targets: list[str],
    *,
    pairs: bool = True,
    stats: ScoreStats | None = None,
) -> list[GroupGame]:
    """Leave-one-out (and top pairwise interactions) of each group for each target.

    ``groups`` are the factor texts (each must end in a newline); targets must start with a space
    (the tokeniser contract checked by ``tokenize_parts``). Values are mean per-token log-probs.
    """
    n = len(groups)
    if not 1 <= n <= 20:
        raise ValueError(f"score_groups needs 1..20 groups, got {n}")
    parts = PromptParts(scaffold=scaffold, factors=groups, queries=[query] * len(targets), targets=targets)
    tok = tokenize_parts(loaded.tokenizer, parts)
    scorer = TrieScorer(loaded.model)
    full = (1 << n) - 1
    masks = [full, *[full ^ (1 << g) for g in range(n)]]
    first = scorer.score(tok, masks=masks, stats=stats)
    games = []
    for t, scores in enumerate(first):
        per_tok = scores.sum_logprob / scores.n_target_tokens
        v = dict(zip(masks, per_tok.tolist(), strict=True))
        games.append(
            GroupGame(
                targets[t], scores.n_target_tokens, v[full], [v[full] - v[full ^ (1 << g)] for g in range(n)]
            )
        )
    if pairs and n >= 2:
        for t, game in enumerate(games):
            top = sorted(range(n), key=lambda g: -abs(game.loo[g]))[:PAIR_TOP]
            pair_masks = [full ^ (1 << g) ^ (1 << h) for g, h in combinations(sorted(top), 2)]
            second = scorer.score(tok, masks=pair_masks, queries=[t], stats=stats)[0]
            values = dict(
                zip(pair_masks, (second.sum_logprob / second.n_target_tokens).tolist(), strict=True)
            )
            for g, h in combinations(sorted(top), 2):
                without_g = game.full - game.loo[g]
                without_h = game.full - game.loo[h]
                game.pairs[(g, h)] = game.full - without_g - without_h + values[full ^ (1 << g) ^ (1 << h)]
    return games
