"""Paired per-target comparisons folded into cells (all, tool, slot targets).

The matched controls and the construction controls all compare two shares of the same target:
the observed one (invalid share, or the share in a reconstructed run) against a baseline (the
matched non-invalid control, or the original run). A cell averages both over its targets and
gives the mean difference observed − baseline a cluster-bootstrap interval over source tasks (a
task's targets move together). Targets whose shares are undefined are left out, never zeroed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scoring.generation_report import NA
from scoring.stats import BootstrapInterval, cluster_bootstrap_mean, spearman

CELLS = ("all", "tool", "slot")
COMPARISON_COLUMNS = [
    "control",
    "estimand",
    "cell",
    "share",
    "targets",
    "tasks",
    "observed",
    "baseline",
    "observed − baseline",
    "95% CI",
    "Spearman ρ",
    "reading",
]


@dataclass(frozen=True)
class PairedShare:
    """One target's two shares of one field under one estimand."""

    task_id: str
    kind: str
    observed: float
    baseline: float


@dataclass(frozen=True)
class ComparisonRow:
    """One cell of a paired comparison; ``reverses`` marks a baseline at or above the observed share."""

    control: str
    estimand: str
    cell: str
    field: str
    n_targets: int
    n_tasks: int
    observed: float
    baseline: float
    difference: float
    ci: BootstrapInterval | None
    spearman: float | None

    @property
    def reverses(self) -> bool:
        return self.difference < 0


def compare_cells(
    control: str,
    estimand: str,
    field: str,
    pairs: Sequence[PairedShare],
    *,
    n_resamples: int = 20_000,
    with_spearman: bool = False,
) -> list[ComparisonRow]:
    """One row per non-empty cell; ``with_spearman`` adds the target-level rank agreement."""
    rows = []
    for cell in CELLS:
        kept = [
            p
            for p in pairs
            if (cell == "all" or p.kind == cell) and np.isfinite(p.observed) and np.isfinite(p.baseline)
        ]
        if not kept:
            continue
        obs = np.array([p.observed for p in kept])
        base = np.array([p.baseline for p in kept])
        tasks = [p.task_id for p in kept]
        ci = None
        if len(set(tasks)) >= 2:
            ci = cluster_bootstrap_mean(obs - base, tasks, n_resamples=n_resamples)
        rho = None
        if with_spearman and len(kept) >= 3 and np.ptp(obs) > 0 and np.ptp(base) > 0:
            rho = spearman(obs.tolist(), base.tolist())
        rows.append(
            ComparisonRow(
                control,
                estimand,
                cell,
                field,
                len(kept),
                len(set(tasks)),
                float(obs.mean()),
                float(base.mean()),
                float((obs - base).mean()),
                ci,
                rho,
            )
        )
    return rows


def comparison_table_rows(rows: Sequence[ComparisonRow], readings: tuple[str, str]) -> list[list[str]]:
    """Printable rows; ``readings`` say what a non-negative and a negative difference mean here."""
    return [
        [
            r.control,
            r.estimand,
            r.cell,
            r.field,
            str(r.n_targets),
            str(r.n_tasks),
            f"{r.observed:.3f}",
            f"{r.baseline:.3f}",
            f"{r.difference:+.3f}",
            f"[{r.ci.low:+.3f}, {r.ci.high:+.3f}]" if r.ci else "n/a (<2 tasks)",
            NA if r.spearman is None else f"{r.spearman:.3f}",
            readings[1] if r.reverses else readings[0],
        ]
        for r in rows
    ]
