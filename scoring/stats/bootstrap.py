"""Cluster bootstrap: resample whole clusters (models, or source tasks) with replacement.

Rows inside a cluster are correlated (one model's episodes, one source task's three targets), so
the cluster, not the row, is the unit that is resampled. Ratio-of-sums statistics (pooled means,
differences of pooled means) are computed from per-cluster sums and a resample-by-cluster count
matrix, so 20,000 resamples cost one matrix product instead of 20,000 Python loops.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 20_000


@dataclass(frozen=True)
class BootstrapInterval:
    """A point estimate with its percentile interval and what it was resampled over."""

    estimate: float
    low: float
    high: float
    n_clusters: int
    n_resamples: int
    level: float = 0.95

    def __str__(self) -> str:
        return f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def _cluster_index(clusters: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    """Map cluster labels to 0..k-1 in first-seen order (deterministic under a fixed seed)."""
    seen: dict[Hashable, int] = {}
    codes = np.fromiter(
        (seen.setdefault(c, len(seen)) for c in clusters), dtype=np.int64, count=len(clusters)
    )
    if len(seen) < 2:
        raise ValueError(f"a cluster bootstrap needs at least 2 clusters, got {len(seen)}")
    return codes, len(seen)


def cluster_counts(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """How many times each cluster is drawn in each resample: shape (n_resamples, n_clusters)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_clusters, size=(n_resamples, n_clusters))
    counts = np.zeros((n_resamples, n_clusters), dtype=np.float64)
    np.add.at(counts, (np.repeat(np.arange(n_resamples), n_clusters), draws.ravel()), 1.0)
    return counts


def _interval(estimate: float, samples: np.ndarray, n_clusters: int, level: float) -> BootstrapInterval:
    samples = samples[np.isfinite(samples)]
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha])
    return BootstrapInterval(float(estimate), float(low), float(high), n_clusters, int(samples.size), level)


def cluster_bootstrap_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapInterval:
    """Pooled mean of row values with a cluster-resampled percentile interval."""
    vals = np.asarray(values, dtype=np.float64)
    if vals.size != len(clusters):
        raise ValueError(f"{vals.size} values but {len(clusters)} cluster labels")
    codes, k = _cluster_index(clusters)
    sums = np.bincount(codes, weights=vals, minlength=k)
    sizes = np.bincount(codes, minlength=k).astype(np.float64)
    w = cluster_counts(k, n_resamples, seed)
    return _interval(vals.mean(), (w @ sums) / (w @ sizes), k, level)


def cluster_bootstrap_difference(
    values_a: Sequence[float],
    clusters_a: Sequence[Hashable],
    values_b: Sequence[float],
    clusters_b: Sequence[Hashable],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapInterval:
    """Pooled mean(A) − mean(B), resampling clusters shared by both conditions (e.g. models).

    A cluster drawn once contributes all its rows under both conditions, which keeps the
    comparison paired at the cluster level.
    """
    va, vb = np.asarray(values_a, dtype=np.float64), np.asarray(values_b, dtype=np.float64)
    if va.size == 0 or vb.size == 0:
        raise ValueError("both conditions need at least one row")
    codes, k = _cluster_index(list(clusters_a) + list(clusters_b))
    ca, cb = codes[: va.size], codes[va.size :]
    sa, na = np.bincount(ca, weights=va, minlength=k), np.bincount(ca, minlength=k).astype(np.float64)
    sb, nb = np.bincount(cb, weights=vb, minlength=k), np.bincount(cb, minlength=k).astype(np.float64)
    w = cluster_counts(k, n_resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        samples = (w @ sa) / (w @ na) - (w @ sb) / (w @ nb)
    return _interval(va.mean() - vb.mean(), samples, k, level)


def cluster_bootstrap(
    statistic: Callable[[np.ndarray], float],
    clusters: Sequence[Hashable],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapInterval:
    """Any statistic of a row-index array; each resample concatenates the rows of drawn clusters."""
    codes, k = _cluster_index(clusters)
    members = [np.flatnonzero(codes == c) for c in range(k)]
    rng = np.random.default_rng(seed)
    samples = np.empty(n_resamples)
    for r in range(n_resamples):
        drawn = rng.integers(0, k, size=k)
        samples[r] = statistic(np.concatenate([members[c] for c in drawn]))
    return _interval(statistic(np.arange(len(codes))), samples, k, level)
