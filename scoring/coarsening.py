"""Exact coarsening of stored subset scores by source, source–type and type groups (seed §15.8).

Merging factors into groups needs no new model call: the coarsened game over groups is the
original game restricted to unions of groups, v'(T) = v(∪_{g∈T} G_g). Groups are the factors of
one source type (``source``), one (source type, content bucket) pair (``source-type``) or one
content bucket (``type``). A merged group's label is target-specific: Invalid if any member is,
else Valid if any member is, else Neutral. The coarsened games then go through the same summary
as the run (observed, label-count null, excess), so only the factorisation changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from schemas.attribution import AttributionTask, Factor
from scoring.construction import check_labels
from scoring.report import SHARE_GROUPS, ReportRow, summarise_run
from scoring.runs import ScoredTarget

GROUPINGS: dict[str, Callable[[Factor], tuple[str, ...]]] = {
    "source": lambda f: (f.source_type.value,),
    "source-type": lambda f: (f.source_type.value, f.bucket.value),
    "type": lambda f: (f.bucket.value,),
}


def factor_groups(factors: Sequence[Factor], grouping: str) -> list[int]:
    """Bit mask of each group's members, groups in order of their first member."""
    key = GROUPINGS[grouping]
    masks: dict[tuple[str, ...], int] = {}
    for i, f in enumerate(factors):
        masks[key(f)] = masks.get(key(f), 0) | 1 << i
    return list(masks.values())


def coarsen_game(values: np.ndarray, groups: Sequence[int]) -> np.ndarray:
    """The game over groups: entry T is the original score of the union of the groups in T."""
    out = np.empty(1 << len(groups))
    for t in range(out.size):
        out[t] = values[sum(g for j, g in enumerate(groups) if t >> j & 1)]
    return out


def merged_labels(labels: Sequence[str], groups: Sequence[int]) -> list[str]:
    """Invalid if any member is Invalid, else Valid if any member is Valid, else Neutral."""
    out = []
    for g in groups:
        members = {labels[i] for i in range(len(labels)) if g >> i & 1}
        out.append("invalid" if "invalid" in members else "valid" if "valid" in members else "neutral")
    return out


def coarsened_target(target: ScoredTarget, factors: Sequence[Factor], grouping: str) -> ScoredTarget:
    """The stored target as a game over its groups (every score field coarsened the same way)."""
    groups = factor_groups(factors, grouping)
    scores = {f: coarsen_game(target.game(f), groups) for f in target.scores}
    return ScoredTarget(
        target.task_id,
        target.target_id,
        target.kind,
        target.setting,
        merged_labels(target.labels, groups),
        np.arange(1 << len(groups)),
        scores,
    )


@dataclass(frozen=True)
class CoarseningRow:
    """One row of a coarsened summary: the grouping, its mean group count, and the summary row."""

    grouping: str
    mean_groups: float
    row: ReportRow


def coarsening_summary(
    targets: Iterable[ScoredTarget],
    tasks: dict[str, AttributionTask],
    *,
    score_field: str = "sum_logodds",
    k: int | None = 50,
    fields: Sequence[str] = SHARE_GROUPS["primary"],
    n_perm: int = 500,
    n_resamples: int = 20_000,
) -> list[CoarseningRow]:
    """The Table-6 summary of each grouping's coarsened games (estimands and first-order baselines)."""
    stored = list(targets)
    for t in stored:
        check_labels(tasks, t.task_id, t.target_id, t.labels)
    rows = []
    for grouping in GROUPINGS:
        coarse = [coarsened_target(t, tasks[t.task_id].factors, grouping) for t in stored]
        summary = summarise_run(
            coarse, score_field=score_field, ks=[k], fields=fields, n_perm=n_perm, n_resamples=n_resamples
        )
        mean_groups = float(np.mean([len(c.labels) for c in coarse])) if coarse else float("nan")
        rows.extend(CoarseningRow(grouping, mean_groups, r) for r in summary.rows)
    return rows
