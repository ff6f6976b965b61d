"""Exact paired tests: McNemar for paired binary outcomes and the two-sided sign test.

Both reduce to an exact binomial test at p = 1/2 on the discordant (or non-tied) pairs, so they
share one tail computation; no normal approximation is ever used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def binom_two_sided_half(k: int, n: int) -> float:
    """Exact two-sided p-value of k successes in n fair trials (doubling the smaller tail)."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"k={k} outside 0..n={n}")
    if n == 0:
        return 1.0
    small = min(k, n - k)
    # log-space sum of C(n, i) / 2^n for i <= small keeps n in the thousands exact enough.
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
        for i in range(small + 1)
    ]
    top = max(logs)
    tail = math.exp(top) * sum(math.exp(x - top) for x in logs)
    return min(1.0, 2.0 * tail)


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test: b = pairs positive only under A, c = positive only under B."""

    b: int
    c: int
    n_pairs: int
    p_value: float

    @property
    def difference(self) -> float:
        """Paired rate difference rate(A) − rate(B) over all pairs."""
        return (self.b - self.c) / self.n_pairs


def mcnemar_exact(a: Sequence[bool | int], b: Sequence[bool | int]) -> McNemarResult:
    """Exact McNemar on paired outcomes; pair i is the same implementation, seed and task."""
    if len(a) != len(b):
        raise ValueError(f"paired outcomes differ in length: {len(a)} vs {len(b)}")
    if not a:
        raise ValueError("no pairs: an empty cohort has no test")
    only_a = sum(1 for x, y in zip(a, b, strict=True) if bool(x) and not bool(y))
    only_b = sum(1 for x, y in zip(a, b, strict=True) if bool(y) and not bool(x))
    return McNemarResult(only_a, only_b, len(a), binom_two_sided_half(only_a, only_a + only_b))


def mcnemar_from_counts(b: int, c: int, n_pairs: int | None = None) -> McNemarResult:
    """Exact McNemar from the two discordant counts."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    total = b + c if n_pairs is None else n_pairs
    if total < b + c or total == 0:
        raise ValueError(f"n_pairs={total} cannot hold {b}+{c} discordant pairs")
    return McNemarResult(b, c, total, binom_two_sided_half(b, b + c))


@dataclass(frozen=True)
class SignTestResult:
    """Exact two-sided sign test on paired differences; ties are dropped and counted."""

    positive: int
    negative: int
    ties: int
    p_value: float


def sign_test(differences: Sequence[float]) -> SignTestResult:
    """Two-sided sign test of median difference zero (e.g. tokens arm A − arm B per trajectory)."""
    pos = sum(1 for d in differences if d > 0)
    neg = sum(1 for d in differences if d < 0)
    ties = len(differences) - pos - neg
    return SignTestResult(pos, neg, ties, binom_two_sided_half(pos, pos + neg))
