"""The trie scorer on the real local model gives the naive one-prompt-at-a-time scores."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_trie_equals_naive_on_smollm2(smollm2) -> None:  # type: ignore[no-untyped-def]
    from scoring.datasets import build_dataset
    from scoring.prompts import prompt_parts
    from scoring.scorer import ScoreStats, TrieScorer, naive_scores, tokenize_parts

    task = build_dataset("agentaudit")[0]
    tok = tokenize_parts(smollm2.tokenizer, prompt_parts(task))
    masks = [0, 0b1, 0b10100101, 0b11111111]
    naive, trie = ScoreStats(), ScoreStats()
    ref = naive_scores(smollm2.model, tok, masks, [0, 1], naive)
    got = TrieScorer(smollm2.model, token_budget=300).score(tok, masks, [0, 1], trie)
    for a, b in zip(ref, got, strict=True):
        assert np.abs(a.sum_logodds - b.sum_logodds).max() < 1e-3
        assert np.abs(a.sum_logprob - b.sum_logprob).max() < 1e-3
        assert np.isfinite(a.sum_logodds).all()
    assert trie.tokens < naive.tokens  # shared scaffold and prefixes are computed once
