"""The content-type-matched random-label null (seed §15.2), from a stored coalition run.

The label-count null keeps how many Valid, Invalid and Neutral labels a target has but lets an
Invalid label land on any factor. Invalid factors may simply be more often exact identifiers or
directives, so this stricter null shuffles a target's labels only among factors of the same coarse
content bucket (identifier/e-mail/code value, tool or action mention, directive, policy or
constraint, metadata, narrative), 500 permutations with seed 17 as in §15.1, and recomputes the
same shares on the same kept top-K set. Within a bucket, factors are permuted in factor-id order,
so a presentation-order shuffle that keeps content leaves every null draw unchanged.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import numpy as np

from schemas.attribution import AttributionTask, ContentBucket, Factor
from scoring.cells import summarise_cells
from scoring.coalition import (
    NULL_PERMUTATIONS,
    NULL_SEED,
    TargetShares,
    label_masks,
    target_shares,
)
from scoring.construction import check_labels
from scoring.report import SHARE_GROUPS, ReportRow, top_k_label
from scoring.runs import ScoredTarget
from scoring.transforms import ESTIMANDS, Estimand


def bucket_groups(factors: Sequence[Factor]) -> list[list[int]]:
    """Positions of each content bucket's factors (buckets in contract order, members by factor id)."""
    groups = []
    for bucket in ContentBucket:
        members = [i for i, f in enumerate(factors) if f.bucket is bucket]
        groups.append(sorted(members, key=lambda i: factors[i].factor_id))
    return groups


def content_labelings(
    labels: Sequence[str], groups: Sequence[Sequence[int]], key: str, n_perm: int, seed: int
) -> np.ndarray:
    """Relabelings that permute labels only within each bucket: rows of (invalid, valid, neutral) masks."""
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    arr = np.asarray(labels)
    rows = np.empty((n_perm, 3), dtype=np.int64)
    for p in range(n_perm):
        out = arr.copy()
        for g in groups:
            if len(g) > 1:
                idx = np.asarray(g)
                out[idx] = arr[idx[rng.permutation(len(g))]]
        rows[p] = label_masks(out.tolist())
    return rows


def content_null_shares(
    game: np.ndarray,
    labels: Sequence[str],
    factors: Sequence[Factor],
    *,
    target_key: str,
    estimand: Estimand = "shapley",
    k: int | None = 50,
    max_order: int = 3,
    n_perm: int = NULL_PERMUTATIONS,
    seed: int = NULL_SEED,
) -> TargetShares:
    """Observed shares of one target and its content-type-matched null on the same kept set."""
    return target_shares(
        game,
        labels,
        target_key=target_key,
        estimand=estimand,
        k=k,
        max_order=max_order,
        null_labelings=content_labelings(labels, bucket_groups(factors), target_key, n_perm, seed),
    )


def content_null_summary(
    targets: Iterable[ScoredTarget],
    tasks: dict[str, AttributionTask],
    *,
    score_field: str = "sum_logodds",
    k: int | None = 50,
    fields: Sequence[str] = SHARE_GROUPS["primary"],
    n_perm: int = NULL_PERMUTATIONS,
    n_resamples: int = 20_000,
) -> list[ReportRow]:
    """Observed, content-matched null and excess per estimand and target kind (Table-6 cells)."""
    per: dict[str, dict[str, list[TargetShares]]] = {
        e: {"all": [], "tool": [], "slot": []} for e in ESTIMANDS
    }
    task_of: dict[str, str] = {}
    for target in targets:
        if "invalid" not in target.labels:
            continue
        check_labels(tasks, target.task_id, target.target_id, target.labels)
        factors = tasks[target.task_id].factors
        task_of[target.key] = target.task_id
        for e in ESTIMANDS:
            shares = content_null_shares(
                target.game(score_field),
                target.labels,
                factors,
                target_key=target.key,
                estimand=e,
                k=k,
                n_perm=n_perm,
            )
            per[e]["all"].append(shares)
            per[e][target.kind].append(shares)
    rows = []
    for e, cells in per.items():
        for field in fields:
            kept = {c: s for c, s in cells.items() if s}
            rows.extend(
                ReportRow(e, top_k_label(k), cell)
                for cell in summarise_cells(kept, task_of, field, n_resamples=n_resamples)
            )
    return rows
