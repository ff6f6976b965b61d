"""Cluster bootstrap and rank correlations: known values, scipy agreement, seeded determinism."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.stats import (
    cluster_bootstrap,
    cluster_bootstrap_difference,
    cluster_bootstrap_mean,
    kendall_tau_b,
    rank_noise_floor,
    spearman,
)

scipy_stats = pytest.importorskip("scipy.stats")


def test_two_cluster_bootstrap_distribution_by_hand() -> None:
    # Means over resamples are 0, 0.5, 1 with probability 1/4, 1/2, 1/4.
    res = cluster_bootstrap_mean([0.0, 1.0], ["m1", "m2"], n_resamples=4000, seed=3)
    assert res.estimate == 0.5
    assert (res.low, res.high) == (0.0, 1.0)
    assert res.n_clusters == 2


def test_cluster_rows_move_together() -> None:
    # Each cluster is internally constant; a row bootstrap would be far narrower than this.
    values = [1.0] * 50 + [0.0] * 50
    clusters = ["a"] * 50 + ["b"] * 50
    res = cluster_bootstrap_mean(values, clusters, n_resamples=2000, seed=1)
    assert (res.low, res.high) == (0.0, 1.0)


def test_fast_and_generic_paths_agree() -> None:
    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(12), rng.integers(2, 9, size=12))
    values = rng.normal(size=clusters.size) + clusters * 0.1
    fast = cluster_bootstrap_mean(values, clusters.tolist(), n_resamples=4000, seed=5)
    slow = cluster_bootstrap(
        lambda idx: float(values[idx].mean()), clusters.tolist(), n_resamples=4000, seed=6
    )
    assert fast.estimate == pytest.approx(slow.estimate)
    assert fast.low == pytest.approx(slow.low, abs=0.05)
    assert fast.high == pytest.approx(slow.high, abs=0.05)
    again = cluster_bootstrap_mean(values, clusters.tolist(), n_resamples=4000, seed=5)
    assert again == fast


def test_difference_is_paired_by_cluster() -> None:
    # Condition A is exactly B + 0.2 within each model: the difference never varies.
    models = ["m1", "m2", "m3", "m4"]
    base = [0.1, 0.5, 0.3, 0.8]
    res = cluster_bootstrap_difference([b + 0.2 for b in base], models, base, models, n_resamples=1000)
    assert res.estimate == pytest.approx(0.2)
    assert res.low == pytest.approx(0.2) and res.high == pytest.approx(0.2)


def test_bootstrap_needs_two_clusters() -> None:
    with pytest.raises(ValueError, match="at least 2 clusters"):
        cluster_bootstrap_mean([1.0, 2.0], ["a", "a"])


@pytest.mark.parametrize("seed", range(6))
def test_rank_correlations_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=10).astype(float)  # heavy ties, as with 6-episode cells
    y = rng.integers(0, 4, size=10).astype(float)
    assert spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y).statistic, abs=1e-12)
    assert kendall_tau_b(x, y) == pytest.approx(scipy_stats.kendalltau(x, y).statistic, abs=1e-12)


def test_constant_ordering_is_undefined_not_zero() -> None:
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert np.isnan(kendall_tau_b([1, 2, 3], [4, 4, 4]))


def test_noise_floor_under_shared_ordering() -> None:
    counts_a = [1, 3, 5, 7, 9, 11]
    # Large cells: binomial noise vanishes and the floor sits near perfect agreement.
    big = rank_noise_floor(
        [c * 100 for c in counts_a], 1200, [1200 - c * 100 for c in counts_a], 1200, n_resamples=500, seed=17
    )
    assert big.spearman == pytest.approx(-1.0)
    assert big.spearman_median > 0.99
    assert big.spearman_p_below == 0.0 and big.below_q025
    # Small cells (12 episodes): the floor drops well below 1, as the seed's Appendix F.9 argues.
    small = rank_noise_floor(counts_a, 12, counts_a, 12, n_resamples=2000, seed=17)
    assert small.spearman == pytest.approx(1.0)
    assert 0.5 < small.spearman_median < 1.0
    assert small.spearman_q025 < small.spearman_median
    assert small.kendall_median <= small.spearman_median
    assert rank_noise_floor(counts_a, 12, counts_a, 12, n_resamples=2000, seed=17) == small


def test_noise_floor_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="episode count"):
        rank_noise_floor([7, 1], 6, [1, 2], 6)
