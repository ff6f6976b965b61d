"""The one-run coalition summary (Table-6 style): observed share, null, excess, per target kind.

For each estimand (empty-coalition Harsanyi, Shapley interaction, full-context) at each chosen
top-K (20, 50, 80 or all terms of order ≤ 3) and each cell (all targets, tool targets, slot
targets) it reports invalid shares against the label-count-matched null, a cluster-bootstrap
interval over source tasks, and Holm-adjusted permutation p-values; leave-one-out and
first-order shares are the baselines. The shares come in groups: the fractional (primary) and
any-invalid shares, the split of invalid mass into invalid-only, invalid–valid and
invalid–neutral terms, and the signed variants (fractional share of the positive and of the
negative mass). Targets with no Invalid factor have no invalid share (their share is not a zero)
and are counted separately.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from scoring.cells import CellSummary, summarise_cells
from scoring.coalition import SHARE_FIELDS, TargetShares, baseline_shares, target_shares
from scoring.runs import ScoredTarget
from scoring.transforms import ESTIMANDS

SHARE_GROUPS: dict[str, tuple[str, ...]] = {
    "primary": ("s_frac", "s_any"),
    "split": ("invalid_only", "invalid_valid", "invalid_neutral"),  # where invalid mass sits
    "signed": ("s_frac_pos", "s_frac_neg"),  # raising vs lowering the target score
    "all": SHARE_FIELDS,
}
TOP_K_CHOICES: dict[str, int | None] = {"20": 20, "50": 50, "80": 80, "all": None}
BASELINES = ("leave_one_out", "first_order")
METHODS = (*ESTIMANDS, *BASELINES)
BASELINE_K = "order 1"  # the baselines keep every first-order term, whatever K is


def top_k_label(k: int | None) -> str:
    return "all" if k is None else str(k)


@dataclass(frozen=True)
class ReportRow:
    """One table row: a method at one top-K, one cell and one share field."""

    method: str
    top_k: str
    cell: CellSummary


@dataclass(frozen=True)
class RunSummary:
    rows: list[ReportRow]
    n_targets: int
    n_without_invalid: int
    score_field: str
    fields: tuple[str, ...]


def summarise_run(
    targets: Iterable[ScoredTarget],
    *,
    score_field: str = "sum_logodds",
    ks: Sequence[int | None] = (50,),
    fields: Sequence[str] = SHARE_GROUPS["primary"],
    max_order: int = 3,
    n_perm: int = 500,
    n_resamples: int = 20_000,
) -> RunSummary:
    """Compute every target's shares at each K and fold them into cells per method and target kind.

    The estimands are recomputed at each K on the same game; the leave-one-out and first-order
    baselines do not depend on K and appear once.
    """
    unknown = set(fields) - set(SHARE_FIELDS)
    if unknown:
        raise ValueError(f"unknown share field(s) {sorted(unknown)}; choose from {', '.join(SHARE_FIELDS)}")
    keyed = [(m, top_k_label(k)) for m in ESTIMANDS for k in ks] + [(m, BASELINE_K) for m in BASELINES]
    per_method: dict[tuple[str, str], dict[str, list[TargetShares]]] = {
        key: {"all": [], "tool": [], "slot": []} for key in keyed
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
            (e, top_k_label(k)): target_shares(
                game,
                target.labels,
                target_key=target.key,
                estimand=e,
                k=k,
                max_order=max_order,
                n_perm=n_perm,
            )
            for e in ESTIMANDS
            for k in ks
        }
        base = baseline_shares(game, target.labels, target_key=target.key, n_perm=n_perm)
        results |= {(m, BASELINE_K): shares for m, shares in base.items()}
        for key, shares in results.items():
            per_method[key]["all"].append(shares)
            per_method[key][target.kind].append(shares)
    rows: list[ReportRow] = []
    for (method, top_k), cells in per_method.items():
        for field in fields:
            for row in summarise_cells(
                {c: s for c, s in cells.items() if s}, task_of, field, n_resamples=n_resamples
            ):
                rows.append(ReportRow(method, top_k, row))
    return RunSummary(rows, n_targets, n_without, score_field, tuple(fields))


def table_rows(summary: RunSummary) -> list[list[str]]:
    out = []
    for row in summary.rows:
        r = row.cell
        ci = f"[{r.excess_ci.low:+.3f}, {r.excess_ci.high:+.3f}]" if r.excess_ci else "n/a (<2 tasks)"
        out.append(
            [
                row.method,
                row.top_k,
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
    "top-K",
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
    """Excess of the first reported share per method, top-K and cell, with bootstrap intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    field = summary.fields[0]
    rows = [row for row in summary.rows if row.cell.field == field]
    cells = [row.cell for row in rows]
    labels = [f"{row.method} K={row.top_k}\n{row.cell.cell}" for row in rows]
    values = [c.excess for c in cells]
    errs = [
        [c.excess - c.excess_ci.low if c.excess_ci else 0 for c in cells],
        [c.excess_ci.high - c.excess if c.excess_ci else 0 for c in cells],
    ]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows)), 4))
    ax.bar(range(len(rows)), values, yerr=errs, capsize=3, color="#4a7ab5")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)), labels, fontsize=7, rotation=90)
    ax.set_ylabel(f"{field} invalid excess (observed − null)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
