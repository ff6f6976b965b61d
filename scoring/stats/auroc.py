"""AUROC: how often a positive (a failed run, a degraded target) scores above a negative.

One statistic for every place that ranks by a score against a label (the triage's agreement with
recorded verdicts, the outcome benchmark, degradation prediction), so all of them count ties the
same way: one half, which makes a score that ties everything read 0.5, not 0 or 1.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from scoring.stats.bootstrap import BootstrapInterval, cluster_bootstrap


def auroc(positive: Sequence[float] | np.ndarray, negative: Sequence[float] | np.ndarray) -> float:
    """P(a positive scores above a negative), ties one half (the Mann–Whitney U over n·m); NaN
    when either side is empty. Computed from tie-averaged ranks, so it costs a sort, not n·m
    comparisons."""
    pos = np.asarray(positive, dtype=np.float64)
    neg = np.asarray(negative, dtype=np.float64)
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    _, inverse, counts = np.unique(np.concatenate([pos, neg]), return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]  # 1-based, ties averaged
    u = ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2.0
    return float(u / (pos.size * neg.size))


def auroc_interval(
    scores: Sequence[float] | np.ndarray,
    positive: Sequence[bool] | np.ndarray,
    clusters: Sequence[Hashable],
    *,
    n_resamples: int,
    seed: int = 0,
) -> BootstrapInterval | None:
    """The AUROC of ``scores`` for ``positive`` with a 95% percentile interval that resamples
    ``clusters`` (runs of one task share its difficulty, so the task is the unit); None without two
    clusters or without both sides."""
    values = np.asarray(scores, dtype=np.float64)
    label = np.asarray(positive, dtype=bool)
    if len(set(clusters)) < 2 or label.all() or not label.any():
        return None

    def statistic(idx: np.ndarray) -> float:
        drawn = label[idx]
        return auroc(values[idx][drawn], values[idx][~drawn])

    return cluster_bootstrap(statistic, clusters, n_resamples=n_resamples, seed=seed)


def roc_points(positive: Sequence[float], negative: Sequence[float]) -> list[tuple[float, float]]:
    """The ROC curve of a score: (false-positive rate, true-positive rate) after each distinct
    score, highest first; runs tied on a score move the curve diagonally, so the area under it is
    the AUROC with ties counted one half."""
    points = [(0.0, 0.0)]
    tp = fp = 0
    for score in sorted(set(positive) | set(negative), reverse=True):
        tp += sum(1 for p in positive if p == score)
        fp += sum(1 for n in negative if n == score)
        points.append((fp / len(negative), tp / len(positive)))
    return points
