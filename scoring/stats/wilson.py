"""Wilson score intervals for binomial rates: every rate names its denominator."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    """A proportion with its denominator and Wilson interval; no rate exists for an empty cohort."""

    successes: int
    total: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.successes / self.total

    def __str__(self) -> str:
        return f"{self.successes}/{self.total} ({self.value:.1%}; 95% CI {self.low:.1%}–{self.high:.1%})"


def wilson_interval(successes: int, total: int, z: float = 1.959963984540054) -> tuple[float, float]:
    if total <= 0:
        raise ValueError("an empty cohort has no rate")
    if not 0 <= successes <= total:
        raise ValueError(f"successes {successes} outside 0..{total}")
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_rate(successes: int, total: int) -> Rate:
    low, high = wilson_interval(successes, total)
    return Rate(successes, total, low, high)
