"""Statistics of world and attribution evidence (numpy only, no torch): intervals, paired tests,
family-wise correction, cluster bootstrap, rank correlations with their noise floor."""

from scoring.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    BootstrapInterval,
    cluster_bootstrap,
    cluster_bootstrap_difference,
    cluster_bootstrap_mean,
)
from scoring.stats.holm import holm_adjust, holm_reject
from scoring.stats.paired import (
    McNemarResult,
    SignTestResult,
    binom_two_sided_half,
    mcnemar_exact,
    mcnemar_from_counts,
    sign_test,
)
from scoring.stats.rank import NoiseFloor, kendall_tau_b, rank_noise_floor, spearman
from scoring.stats.wilson import Rate, wilson_interval, wilson_rate

__all__ = [
    "DEFAULT_RESAMPLES",
    "BootstrapInterval",
    "McNemarResult",
    "NoiseFloor",
    "Rate",
    "SignTestResult",
    "binom_two_sided_half",
    "cluster_bootstrap",
    "cluster_bootstrap_difference",
    "cluster_bootstrap_mean",
    "holm_adjust",
    "holm_reject",
    "kendall_tau_b",
    "mcnemar_exact",
    "mcnemar_from_counts",
    "rank_noise_floor",
    "sign_test",
    "spearman",
    "wilson_interval",
    "wilson_rate",
]
