"""Rank correlations between implementation orderings, and their binomial noise floor.

With per-model cells of 6–24 episodes, binomial noise alone pulls rank correlations below 1 even
when two risks share one true ordering. The noise floor asks what the correlation would look like
in that case: the second risk's rates are reassigned to the first risk's order (maximal
concordance), every per-model count is redrawn binomially at its episode count, and the
correlation is recomputed. Undefined correlations (a constant ordering) are dropped and counted,
never scored as zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scoring.stats.bootstrap import DEFAULT_RESAMPLES


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Tie-averaged ranks (1-based) along the last axis."""
    x = np.asarray(x, dtype=np.float64)
    less = (x[..., :, None] > x[..., None, :]).sum(-1)
    equal = (x[..., :, None] == x[..., None, :]).sum(-1)
    return less + (equal + 1) / 2.0


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(-1) / np.where(den > 0, den, 1.0), np.nan)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Tie-adjusted Spearman ρ per row (NaN where either row is constant)."""
    return _pearson_rows(average_ranks(x), average_ranks(y))


def kendall_tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall τ_b per row: (C − D) / sqrt((n0 − n1)(n0 − n2)), NaN where undefined."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    iu = np.triu_indices(x.shape[-1], 1)
    sx, sy = sx[..., iu[0], iu[1]], sy[..., iu[0], iu[1]]
    den = np.sqrt((sx != 0).sum(-1) * (sy != 0).sum(-1).astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (sx * sy).sum(-1) / np.where(den > 0, den, 1.0), np.nan)


def _check_pair(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two equal-length orderings, got {a.shape} and {b.shape}")
    if a.size < 2:
        raise ValueError("a rank correlation needs at least 2 shared implementations")
    return a, b


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman ρ with average ranks for ties; NaN when an ordering is constant."""
    return float(spearman_rows(*_check_pair(x, y)))


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Tie-adjusted Kendall τ_b; NaN when an ordering is constant."""
    return float(kendall_tau_b_rows(*_check_pair(x, y)))


@dataclass(frozen=True)
class NoiseFloor:
    """Observed correlations beside their distribution under a shared true ordering."""

    spearman: float
    kendall: float
    spearman_median: float
    spearman_q025: float
    kendall_median: float
    kendall_q025: float
    spearman_p_below: float
    n_resamples: int
    n_undefined: int

    @property
    def below_median(self) -> bool:
        return self.spearman < self.spearman_median

    @property
    def below_q025(self) -> bool:
        return self.spearman < self.spearman_q025


def rank_noise_floor(
    counts_a: Sequence[int],
    n_a: int | Sequence[int],
    counts_b: Sequence[int],
    n_b: int | Sequence[int],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> NoiseFloor:
    """Noise floor of ρ and τ_b between two risks' per-model rates (same model order in both)."""
    ka, kb = np.asarray(counts_a, dtype=np.int64), np.asarray(counts_b, dtype=np.int64)
    na = np.broadcast_to(np.asarray(n_a, dtype=np.int64), ka.shape)
    nb = np.broadcast_to(np.asarray(n_b, dtype=np.int64), kb.shape)
    if (ka < 0).any() or (ka > na).any() or (kb < 0).any() or (kb > nb).any():
        raise ValueError("each count must lie in 0..its episode count")
    ra, rb = _check_pair(ka / na, kb / nb)
    shared = np.empty_like(rb)
    shared[np.argsort(ra, kind="stable")] = np.sort(rb)
    rng = np.random.default_rng(seed)
    sim_a = rng.binomial(na, ra, size=(n_resamples, ra.size))
    sim_b = rng.binomial(nb, shared, size=(n_resamples, rb.size))
    rho = spearman_rows(sim_a / na, sim_b / nb)
    tau = kendall_tau_b_rows(sim_a / na, sim_b / nb)
    rho_ok, tau_ok = rho[np.isfinite(rho)], tau[np.isfinite(tau)]
    if rho_ok.size == 0:
        raise ValueError("every resample had a constant ordering: no noise floor exists")
    obs_rho, obs_tau = spearman(ra, rb), kendall_tau_b(ra, rb)
    return NoiseFloor(
        spearman=obs_rho,
        kendall=obs_tau,
        spearman_median=float(np.median(rho_ok)),
        spearman_q025=float(np.quantile(rho_ok, 0.025)),
        kendall_median=float(np.median(tau_ok)),
        kendall_q025=float(np.quantile(tau_ok, 0.025)),
        spearman_p_below=float((rho_ok <= obs_rho).mean()),
        n_resamples=n_resamples,
        n_undefined=int(n_resamples - rho_ok.size),
    )
