"""The AUROC every ranking figure uses: ties count one half, and the rank form equals the count
over every (positive, negative) pair it replaces."""

from __future__ import annotations

import math

import numpy as np

from scoring.stats.auroc import auroc, auroc_interval


def _pairs(pos: list[float], neg: list[float]) -> float:
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_hand_values() -> None:
    assert auroc([3.0, 4.0], [1.0, 2.0]) == 1.0
    assert auroc([1.0, 2.0], [3.0, 4.0]) == 0.0
    assert auroc([1.0, 1.0], [1.0, 1.0]) == 0.5  # a score that ties everything tells nothing
    assert auroc([2.0, 1.0], [1.0]) == 0.75  # one win, one tie
    assert math.isnan(auroc([], [1.0])) and math.isnan(auroc([1.0], []))


def test_equals_the_count_over_pairs_with_many_ties() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        pos = rng.integers(0, 4, size=rng.integers(1, 30)).astype(float).tolist()
        neg = rng.integers(0, 4, size=rng.integers(1, 30)).astype(float).tolist()
        assert auroc(pos, neg) == _pairs(pos, neg)


def test_interval_holds_the_estimate_and_needs_both_sides_and_two_clusters() -> None:
    scores = [0.9, 0.8, 0.7, 0.1, 0.6, 0.2, 0.3, 0.05]
    positive = [True, True, True, True, False, False, False, False]
    ci = auroc_interval(scores, positive, list(range(8)), n_resamples=500)
    assert ci is not None
    assert ci.estimate == auroc(scores[:4], scores[4:]) == 13 / 16
    assert ci.low <= ci.estimate <= ci.high and ci.low < ci.high
    assert auroc_interval(scores, [True] * 8, list(range(8)), n_resamples=10) is None
    assert auroc_interval(scores, positive, ["task"] * 8, n_resamples=10) is None
