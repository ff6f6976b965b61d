"""The one-run coalition summary (Table-6 style): observed share, null, excess, per target kind.

For each estimand (empty-coalition Harsanyi, Shapley interaction, full-context) and each cell
(all targets, tool targets, slot targets) it reports the fractional (primary) and any-invalid
(secondary) shares against the label-count-matched null, a cluster-bootstrap interval over
source tasks, and Holm-adjusted permutation p-values; leave-one-out and first-order shares are
the baselines. Targets with no Invalid factor have no invalid share (their share is not a zero)
and are counted separately.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from scoring.cells import CellSummary, summarise_cells
from scoring.coalition import TargetShares, baseline_shares, target_shares
from scoring.runs import ScoredTarget
from scoring.transforms import ESTIMANDS

FIELDS = ("s_frac", "s_any")
METHODS = (*ESTIMANDS, "leave_one_out", "first_order")


@dataclass(frozen=True)
class RunSummary:
    rows: list[CellSummary]
    method_of: dict[int, str]
    n_targets: int
    n_without_invalid: int
    score_field: str


def summarise_run(
    targets: Iterable[ScoredTarget],
    *,
    score_field: str = "sum_logodds",
    k: int | None = 50,
    max_order: int = 3,
    n_perm: int = 500,
    n_resamples: int = 20_000,
) -> RunSummary:
    """Compute every target's shares and fold them into cells per method and target kind."""
    per_method: dict[str, dict[str, list[TargetShares]]] = {
        m: {"all": [], "tool": [], "slot": []} for m in METHODS
    }
    task_of: dict[str, str] = {}
    n_targets = n_without = 0
    for target in targets:
        n_targets += 1
        if "invalid" not in target.labels:
            n_without += 1
            continue
        game = target.game(score_field)
        task_of[target.key] = target.task_id
        results = {
            e: target_shares(
                game,
                target.labels,
                target_key=target.key,
                estimand=e,
                k=k,
                max_order=max_order,
                n_perm=n_perm,
            )
            for e in ESTIMANDS
        }
        results |= baseline_shares(game, target.labels, target_key=target.key, n_perm=n_perm)
        for method, shares in results.items():
            per_method[method]["all"].append(shares)
            per_method[method][target.kind].append(shares)
    rows: list[CellSummary] = []
    method_of: dict[int, str] = {}
    for method, cells in per_method.items():
        for field in FIELDS:
            for row in summarise_cells(
                {c: s for c, s in cells.items() if s}, task_of, field, n_resamples=n_resamples
            ):
                method_of[len(rows)] = method
                rows.append(row)
    return RunSummary(rows, method_of, n_targets, n_without, score_field)


def table_rows(summary: RunSummary) -> list[list[str]]:
    out = []
    for i, r in enumerate(summary.rows):
        ci = f"[{r.excess_ci.low:+.3f}, {r.excess_ci.high:+.3f}]" if r.excess_ci else "n/a (<2 tasks)"
        out.append(
            [
                summary.method_of[i],
                r.cell,
                r.field,
                str(r.n_targets),
                str(r.n_tasks),
                f"{r.observed:.3f}",
                f"{r.null:.3f}",
                f"{r.excess:+.3f}",
                ci,
                f"{r.p_value:.4f}",
                f"{r.p_holm:.4f}",
            ]
        )
    return out


COLUMNS = [
    "method",
    "cell",
    "share",
    "targets",
    "tasks",
    "observed",
    "null",
    "excess",
    "excess 95% CI",
    "p",
    "p (Holm)",
]


def write_csv(summary: RunSummary, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerows(table_rows(summary))


def write_png(summary: RunSummary, path: Path, title: str) -> None:
    """Fractional excess per method and cell, with bootstrap intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(summary.method_of[i], r) for i, r in enumerate(summary.rows) if r.field == "s_frac"]
    labels = [f"{m}\n{r.cell}" for m, r in rows]
    values = [r.excess for _, r in rows]
    errs = [
        [r.excess - r.excess_ci.low if r.excess_ci else 0 for _, r in rows],
        [r.excess_ci.high - r.excess if r.excess_ci else 0 for _, r in rows],
    ]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows)), 4))
    ax.bar(range(len(rows)), values, yerr=errs, capsize=3, color="#4a7ab5")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)), labels, fontsize=7, rotation=90)
    ax.set_ylabel("fractional invalid excess (observed − null)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
