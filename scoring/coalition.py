"""Invalid-involvement summaries of selected interactions and their label-count-matched null.

For one target: rank the estimand's coefficients of order ≤ 3 by absolute strength (independent
of labels), keep the top K, and measure how much of the kept strength involves Invalid factors —
``s_any`` (any Invalid member) and ``s_frac`` (strength shared by the fraction of Invalid
members) — split into invalid-only, invalid–valid and invalid–neutral mass, plus signed variants.
The null permutes the target's labels over its factors (counts preserved, 500 permutations, seed
17 by default) and recomputes the same shares on the same kept set.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scoring.transforms import Estimand, estimand_coefficients, masks_up_to_order, popcounts

SHARE_FIELDS = (
    "s_any",
    "s_frac",
    "invalid_only",
    "invalid_valid",
    "invalid_neutral",
    "s_frac_pos",
    "s_frac_neg",
)
NULL_PERMUTATIONS = 500
NULL_SEED = 17


def select_top_k(coefs: np.ndarray, n: int, k: int | None = 50, max_order: int = 3) -> np.ndarray:
    """Masks of the K strongest terms of order ≤ max_order (all of them when k is None).

    Ties in |coefficient| keep the lower (order, mask) first, so selection is deterministic.
    """
    candidates = masks_up_to_order(n, max_order)
    strength = np.abs(coefs[candidates])
    order = np.argsort(-strength, kind="stable")
    kept = order if k is None else order[:k]
    return candidates[kept]


def label_masks(labels: Sequence[str]) -> tuple[int, int, int]:
    """Bit masks of the Invalid, Valid and Neutral factors."""
    masks = {"invalid": 0, "valid": 0, "neutral": 0}
    for i, label in enumerate(labels):
        if label in masks:
            masks[label] |= 1 << i
    return masks["invalid"], masks["valid"], masks["neutral"]


def shares_for_labelings(
    masks: np.ndarray, coefs: np.ndarray, n: int, labelings: np.ndarray
) -> dict[str, np.ndarray]:
    """Every share for each labeling (rows of (invalid, valid, neutral) bit masks), vectorised.

    A share whose denominator is zero (no kept strength, or no signed mass of that sign) is NaN:
    an undefined share is never a zero.
    """
    sizes = popcounts(n)
    signed = coefs[masks]
    strength = np.abs(signed)
    inv, val, neu = (labelings[:, j : j + 1] for j in range(3))
    n_inv = sizes[masks[None, :] & inv]
    has_inv = n_inv > 0
    has_val = (masks[None, :] & val) != 0
    has_neu = (masks[None, :] & neu) != 0
    frac = n_inv / sizes[masks][None, :]
    only = n_inv == sizes[masks][None, :]

    def share(weights: np.ndarray, part: np.ndarray) -> np.ndarray:
        total = weights.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            return (part * weights[None, :]).sum(1) / total if total > 0 else np.full(len(labelings), np.nan)

    pos, neg = np.clip(signed, 0, None), np.clip(-signed, 0, None)
    return {
        "s_any": share(strength, has_inv),
        "s_frac": share(strength, frac),
        "invalid_only": share(strength, only & has_inv),
        "invalid_valid": share(strength, has_inv & has_val),
        "invalid_neutral": share(strength, has_inv & ~has_val & has_neu),
        "s_frac_pos": share(pos, frac),
        "s_frac_neg": share(neg, frac),
    }


def permuted_labelings(labels: Sequence[str], key: str, n_perm: int, seed: int) -> np.ndarray:
    """Label-count-matched relabelings: rows of (invalid, valid, neutral) masks, seeded per target."""
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    arr = np.asarray(labels)
    rows = np.empty((n_perm, 3), dtype=np.int64)
    for p in range(n_perm):
        rows[p] = label_masks(rng.permutation(arr).tolist())
    return rows


@dataclass(frozen=True)
class TargetShares:
    """Observed shares of one target, the null's per-permutation shares and their mean."""

    target_key: str
    estimand: str
    k: int | None
    max_order: int
    observed: dict[str, float]
    null_samples: dict[str, np.ndarray]

    @property
    def null_mean(self) -> dict[str, float]:
        return {
            f: float(np.nanmean(s)) if np.isfinite(s).any() else float("nan")
            for f, s in self.null_samples.items()
        }

    @property
    def excess(self) -> dict[str, float]:
        null = self.null_mean
        return {f: self.observed[f] - null[f] for f in SHARE_FIELDS}


def target_shares(
    values: Sequence[float] | np.ndarray,
    labels: Sequence[str],
    *,
    target_key: str,
    estimand: Estimand = "shapley",
    k: int | None = 50,
    max_order: int = 3,
    n_perm: int = NULL_PERMUTATIONS,
    seed: int = NULL_SEED,
    null_labelings: np.ndarray | None = None,
) -> TargetShares:
    """Observed and null invalid shares for one target's subset-score game; the null draws the
    label-count-matched permutations unless other ``null_labelings`` are given."""
    coefs = estimand_coefficients(values, estimand)
    n = coefs.size.bit_length() - 1
    if len(labels) != n:
        raise ValueError(f"{len(labels)} labels for a game over {n} factors")
    kept = select_top_k(coefs, n, k, max_order)
    observed = shares_for_labelings(kept, coefs, n, np.asarray([label_masks(labels)]))
    if null_labelings is None:
        null_labelings = permuted_labelings(labels, target_key, n_perm, seed)
    null = shares_for_labelings(kept, coefs, n, null_labelings)
    return TargetShares(
        target_key, estimand, k, max_order, {f: float(v[0]) for f, v in observed.items()}, null
    )


def baseline_shares(
    values: Sequence[float] | np.ndarray,
    labels: Sequence[str],
    *,
    target_key: str,
    n_perm: int = NULL_PERMUTATIONS,
    seed: int = NULL_SEED,
) -> dict[str, TargetShares]:
    """First-order baselines: leave-one-out (v(N) − v(N∖i)) and first-order (v(i) − v(∅)) shares.

    They are the order-1 terms of the full-context and Harsanyi estimands, kept whole (no top-K).
    """
    return {
        "leave_one_out": target_shares(
            values,
            labels,
            target_key=target_key,
            estimand="full",
            k=None,
            max_order=1,
            n_perm=n_perm,
            seed=seed,
        ),
        "first_order": target_shares(
            values,
            labels,
            target_key=target_key,
            estimand="harsanyi",
            k=None,
            max_order=1,
            n_perm=n_perm,
            seed=seed,
        ),
    }
