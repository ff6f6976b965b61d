"""Exact paired tests and Holm correction against values known by hand and from the seed paper."""

from __future__ import annotations

import math

import pytest

from scoring.stats import (
    binom_two_sided_half,
    holm_adjust,
    holm_reject,
    mcnemar_exact,
    mcnemar_from_counts,
    sign_test,
    wilson_rate,
)


def test_binomial_tail_small_cases_by_hand() -> None:
    assert binom_two_sided_half(0, 5) == pytest.approx(2 / 32)
    assert binom_two_sided_half(1, 6) == pytest.approx(2 * 7 / 64)
    assert binom_two_sided_half(3, 6) == 1.0  # the centre never exceeds 1
    assert binom_two_sided_half(0, 0) == 1.0


def test_mcnemar_matches_seed_factorial_value() -> None:
    # 48-episode factorial: power changes error with exact McNemar p = 0.0703 (1 vs 7 discordant).
    assert mcnemar_from_counts(7, 1).p_value == pytest.approx(0.0703, abs=5e-5)


def test_mcnemar_from_paired_outcomes() -> None:
    a = [1, 1, 1, 1, 1, 0, 0, 1, 0]
    b = [0, 0, 0, 0, 1, 0, 1, 1, 0]
    res = mcnemar_exact(a, b)
    assert (res.b, res.c, res.n_pairs) == (4, 1, 9)
    assert res.p_value == pytest.approx(2 * (1 + 5) / 32)
    assert res.difference == pytest.approx(3 / 9)


def test_mcnemar_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        mcnemar_exact([1, 0], [1])
    with pytest.raises(ValueError, match="empty cohort"):
        mcnemar_exact([], [])


def test_sign_test_matches_seed_token_and_time_contrasts() -> None:
    # Topology-only vs no graph: fewer tokens in 76 of 100 (p = 1.8e-7), faster in 79 of 100 (4.3e-9).
    tokens = sign_test([-1.0] * 76 + [1.0] * 24)
    assert tokens.p_value == pytest.approx(1.8e-7, rel=0.05)
    assert sign_test([-2.0] * 79 + [3.0] * 21).p_value == pytest.approx(4.3e-9, rel=0.05)
    tied = sign_test([0.0, 0.0, 1.0, -1.0])
    assert (tied.positive, tied.negative, tied.ties, tied.p_value) == (1, 1, 2, 1.0)


def test_large_n_stays_finite() -> None:
    p = binom_two_sided_half(4000, 10000)
    assert 0.0 < p < 1e-80 or p == 0.0
    assert math.isfinite(p)


def test_holm_adjusted_values_by_hand() -> None:
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_reject([0.01, 0.04, 0.03, 0.005], alpha=0.05) == [True, False, False, True]
    assert holm_adjust([]) == []
    with pytest.raises(ValueError):
        holm_adjust([1.5])


def test_holm_seed_cells() -> None:
    # Twelve cells, ten at p = .001: adjusted .012 for the smallest group.
    adjusted = holm_adjust([0.001] * 10 + [0.009, 0.053])
    assert adjusted[0] == pytest.approx(0.012)
    assert adjusted[-1] == pytest.approx(0.053)


def test_wilson_seed_intervals() -> None:
    zero = wilson_rate(0, 20)
    assert (round(zero.low, 3), round(zero.high, 3)) == (0.0, 0.161)
    three = wilson_rate(3, 100)
    assert (round(three.low, 3), round(three.high, 3)) == (0.010, 0.085)
    with pytest.raises(ValueError, match="empty cohort"):
        wilson_rate(0, 0)
