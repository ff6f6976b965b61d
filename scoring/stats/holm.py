"""Holm's step-down family-wise correction, returning adjusted p-values in input order."""

from __future__ import annotations

from collections.abc import Sequence


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Adjusted p_(i) = max_{j<=i} min(1, (m − j + 1) p_(j)) over the ascending order."""
    m = len(p_values)
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value {p} outside [0, 1]")
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def holm_reject(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Which hypotheses Holm rejects at family-wise level alpha."""
    return [p <= alpha for p in holm_adjust(p_values)]
