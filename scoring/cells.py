"""Cell-level summaries: observed, null and excess shares per cell with permutation p-values.

A cell (dataset × target kind, or model × dataset) averages its targets. Its permutation null
averages the targets' null shares permutation by permutation, so the cell p-value is
(1 + #{null ≥ observed}) / (1 + P); Holm corrects across the cells of one table. Intervals come
from a cluster bootstrap over source tasks (a task's three targets move together).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scoring.coalition import TargetShares
from scoring.stats import BootstrapInterval, cluster_bootstrap_mean, holm_adjust


@dataclass(frozen=True)
class CellSummary:
    """One cell of a Table-6-style summary for one share field."""

    cell: str
    field: str
    n_targets: int
    n_tasks: int
    observed: float
    null: float
    excess: float
    p_value: float
    p_holm: float
    excess_ci: BootstrapInterval | None


def _cell_stats(shares: Sequence[TargetShares], field: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obs = np.array([s.observed[field] for s in shares])
    null_rows = np.vstack([s.null_samples[field] for s in shares])
    keep = np.isfinite(obs)
    return obs[keep], null_rows[keep], keep


def summarise_cells(
    cells: dict[str, Sequence[TargetShares]],
    task_of: dict[str, str],
    field: str = "s_frac",
    *,
    n_resamples: int = 20_000,
    seed: int = 0,
) -> list[CellSummary]:
    """Observed, null, excess, permutation p (Holm-adjusted) and bootstrap CI for each cell.

    Targets whose share is undefined (no kept strength) are left out of their cell, not zeroed.
    """
    partial: list[dict] = []
    for name, shares in cells.items():
        obs, null_rows, keep = _cell_stats(shares, field)
        if obs.size == 0:
            continue
        null_cell = np.nanmean(null_rows, axis=0)
        per_target_excess = obs - np.nanmean(null_rows, axis=1)
        tasks = [task_of[s.target_key] for s, k in zip(shares, keep, strict=True) if k]
        ci = None
        if len(set(tasks)) >= 2:
            ci = cluster_bootstrap_mean(per_target_excess, tasks, n_resamples=n_resamples, seed=seed)
        partial.append(
            dict(
                cell=name,
                field=field,
                n_targets=int(obs.size),
                n_tasks=len(set(tasks)),
                observed=float(obs.mean()),
                null=float(null_cell.mean()),
                excess=float(per_target_excess.mean()),
                excess_ci=ci,
                p_value=(1 + int((null_cell >= obs.mean()).sum())) / (1 + null_cell.size),
            )
        )
    adjusted = holm_adjust([row["p_value"] for row in partial])
    return [CellSummary(**row, p_holm=p) for row, p in zip(partial, adjusted, strict=True)]
