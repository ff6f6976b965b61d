"""Exact interaction transforms of a set game over n factors, all in O(n·2^n) (SII: O(n²·2^n)).

A game is a float array of length 2^n: entry ``mask`` is the target score with exactly the factors
whose bits are set in ``mask`` (bit i = factor i). The three evidence-availability estimands are
one quantity, the discrete derivative Δ_B v(T) = Σ_{Z⊆B} (−1)^{|B|−|Z|} v(T ∪ Z), read at three
backgrounds:

- Harsanyi (Möbius) dividends: background T = ∅ (sparse evidence);
- full-context transform: background T = N \\ B (deletions near the complete prompt);
- Shapley interaction index: the coalition-size-weighted average over all T ⊆ N \\ B.

All three follow from the dividends m: full(B) = Σ_{S⊇B} m(S) and SII(B) = Σ_{S⊇B} m(S)/(|S|−|B|+1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

Estimand = Literal["harsanyi", "shapley", "full"]
ESTIMANDS: tuple[Estimand, ...] = ("harsanyi", "shapley", "full")
MAX_FACTORS = 20


def as_game(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, int]:
    """Validate a game vector and return it as float64 with its factor count."""
    v = np.asarray(values, dtype=np.float64)
    size = v.size
    n = size.bit_length() - 1
    if v.ndim != 1 or size == 0 or size != 1 << n:
        raise ValueError(f"a game needs 2^n values indexed by subset mask, got shape {v.shape}")
    if n > MAX_FACTORS:
        raise ValueError(f"{n} factors is beyond the exact transforms' limit of {MAX_FACTORS}")
    if not np.isfinite(v).all():
        raise ValueError("a game holds a non-finite score")
    return v, n


def popcounts(n: int) -> np.ndarray:
    """|mask| for every mask of n bits."""
    counts = np.zeros(1 << n, dtype=np.int64)
    for i in range(n):
        counts.reshape(-1, 2, 1 << i)[:, 1, :] += 1
    return counts


def moebius(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Harsanyi dividends m(B) = Σ_{Z⊆B} (−1)^{|B|−|Z|} v(Z) by the fast subset transform."""
    v, n = as_game(values)
    a = v.copy()
    for i in range(n):
        view = a.reshape(-1, 2, 1 << i)
        view[:, 1, :] -= view[:, 0, :]
    return a


def superset_sum(coefs: np.ndarray) -> np.ndarray:
    """Σ_{S⊇B} c(S) for every B (the upward zeta transform)."""
    a, n = as_game(coefs)
    a = a.copy()
    for i in range(n):
        view = a.reshape(-1, 2, 1 << i)
        view[:, 0, :] += view[:, 1, :]
    return a


def full_context(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Discrete derivative of every B at background N \\ B: deletions from the complete prompt."""
    return superset_sum(moebius(values))


def shapley_interaction(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Shapley interaction index of every set (Grabisch): Σ_{S⊇B} m(S) / (|S| − |B| + 1).

    The superset sum carries a polynomial in the size gap |S| − |B|, so each distance keeps its
    own weight; entry 0 (the empty set) is the mean of all dividends weighted by 1/(|S|+1).
    """
    m = moebius(values)
    n = m.size.bit_length() - 1
    poly = np.zeros((m.size, n + 1))
    poly[:, 0] = m
    for i in range(n):
        view = poly.reshape(-1, 2, 1 << i, n + 1)
        view[:, 0, :, 1:] += view[:, 1, :, :-1]
    return poly @ (1.0 / np.arange(1, n + 2))


def shapley_values(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Shapley value of each factor: the singleton entries of the interaction index."""
    sii = shapley_interaction(values)
    n = sii.size.bit_length() - 1
    return sii[[1 << i for i in range(n)]]


def estimand_coefficients(values: Sequence[float] | np.ndarray, estimand: Estimand) -> np.ndarray:
    """Coefficients of one evidence-availability estimand for every mask."""
    if estimand == "harsanyi":
        return moebius(values)
    if estimand == "shapley":
        return shapley_interaction(values)
    if estimand == "full":
        return full_context(values)
    raise ValueError(f"unknown estimand {estimand!r}; choose one of {', '.join(ESTIMANDS)}")


def masks_up_to_order(n: int, max_order: int) -> np.ndarray:
    """Non-empty masks of at most ``max_order`` factors, ordered by (order, mask)."""
    sizes = popcounts(n)
    masks = np.flatnonzero((sizes >= 1) & (sizes <= max_order))
    return masks[np.lexsort((masks, sizes[masks]))]
