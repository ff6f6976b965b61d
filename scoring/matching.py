"""Matched non-invalid controls from a stored coalition run (seed §15.3–15.4).

Each Invalid factor of a target is matched to a non-invalid (Valid or Neutral) factor, and the
share of the kept top-K interaction strength that involves the matched factors is compared with
the share that involves the Invalid factors (observed − control, per cell, with a source-task
interval). The three controls differ in where a match may come from:

- ``salience``: any non-invalid factor, the one with the nearest first-order |Harsanyi| effect
  |v({i}) − v(∅)|;
- ``value-bearing``: preferably a non-invalid factor carrying concrete values, identifiers,
  schema (tool) evidence, policy or operational directives (buckets identifier, tool_mention,
  policy, directive); metadata and narrative factors only when none is left;
- ``role``: preferably same-slot competing evidence (a non-invalid factor that competes with this
  target: an authorized competitor), then a same-role factor competing with another target of
  the task, then any non-invalid factor ("when possible").

Matching is one-to-one (a control factor stands for one Invalid factor) and minimises first the
summed tier (fallbacks), then the summed salience distance, over all assignments (at most a few
hundred for eight factors). A target with fewer candidates than Invalid factors is left out and
counted. The role control is conservative on purpose: same-role competing evidence can be as
salient as target-invalid evidence, so a reversal reads as a boundary condition, not a failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Literal

import numpy as np

from schemas.attribution import AttributionTask, ContentBucket, Relation, Target
from scoring.coalition import label_masks, select_top_k, shares_for_labelings
from scoring.comparison import ComparisonRow, PairedShare, compare_cells
from scoring.construction import check_labels
from scoring.report import SHARE_GROUPS
from scoring.runs import ScoredTarget
from scoring.transforms import ESTIMANDS, estimand_coefficients

Control = Literal["salience", "value-bearing", "role"]
CONTROLS: tuple[Control, ...] = ("salience", "value-bearing", "role")
VALUE_BEARING = frozenset(
    {ContentBucket.identifier, ContentBucket.tool_mention, ContentBucket.policy, ContentBucket.directive}
)
READINGS = {
    "salience": ("invalid higher", "control higher"),
    "value-bearing": ("invalid higher", "control higher"),
    "role": ("invalid higher", "boundary condition (reverses)"),
}


def first_order_salience(game: np.ndarray) -> np.ndarray:
    """|v({i}) − v(∅)| of each factor: the first-order Harsanyi effect's strength."""
    n = game.size.bit_length() - 1
    return np.abs(game[[1 << i for i in range(n)]] - game[0])


def candidate_tiers(control: Control, task: AttributionTask, target: Target, invalid: int) -> dict[int, int]:
    """Non-invalid candidates for one Invalid factor, each with its tier (0 = preferred)."""
    labels = target.labels()
    others = [t for t in task.targets if t.target_id != target.target_id]
    tiers = {}
    for j, factor in enumerate(task.factors):
        if labels[j] not in ("valid", "neutral"):
            continue
        if control == "salience":
            tiers[j] = 0
        elif control == "value-bearing":
            tiers[j] = 0 if factor.bucket in VALUE_BEARING else 1
        elif target.judgments[j].relation is Relation.competes:
            tiers[j] = 0
        elif factor.role == task.factors[invalid].role and any(
            t.judgments[j].relation is Relation.competes for t in others
        ):
            tiers[j] = 1
        else:
            tiers[j] = 2
    return tiers


def match_controls(
    invalid: Sequence[int], tiers: Sequence[dict[int, int]], salience: np.ndarray
) -> tuple[list[int], int] | None:
    """The one-to-one assignment of controls to ``invalid`` factors with the lowest summed tier, then
    the smallest summed salience distance (ties: the first assignment in candidate order), and its
    fallback count; None when there are fewer candidates than Invalid factors."""
    pool = sorted(set().union(*tiers)) if tiers else []
    if len(pool) < len(invalid):
        return None
    best: tuple[tuple[int, float], tuple[int, ...]] | None = None
    for chosen in permutations(pool, len(invalid)):
        if any(c not in t for c, t in zip(chosen, tiers, strict=True)):
            continue
        cost = (
            sum(t[c] for c, t in zip(chosen, tiers, strict=True)),
            float(sum(abs(salience[i] - salience[c]) for i, c in zip(invalid, chosen, strict=True))),
        )
        if best is None or cost < best[0]:
            best = (cost, chosen)
    if best is None:
        return None
    return list(best[1]), sum(t[c] > 0 for c, t in zip(best[1], tiers, strict=True))


@dataclass(frozen=True)
class MatchedControl:
    """One control's comparison rows and how its matching went."""

    control: Control
    rows: list[ComparisonRow]
    n_targets: int
    n_unmatched: int
    n_matches: int
    n_fallbacks: int


def matched_control_summary(
    control: Control,
    targets: Iterable[ScoredTarget],
    tasks: dict[str, AttributionTask],
    *,
    score_field: str = "sum_logodds",
    k: int | None = 50,
    max_order: int = 3,
    fields: Sequence[str] = SHARE_GROUPS["primary"],
    n_resamples: int = 20_000,
) -> MatchedControl:
    """Invalid share against the matched non-invalid control share, per estimand, field and cell."""
    pairs: dict[tuple[str, str], list[PairedShare]] = {(e, f): [] for e in ESTIMANDS for f in fields}
    n_targets = unmatched = matches = fallbacks = 0
    for scored in targets:
        if "invalid" not in scored.labels:
            continue
        n_targets += 1
        target = check_labels(tasks, scored.task_id, scored.target_id, scored.labels)
        task = tasks[scored.task_id]
        game = scored.game(score_field)
        invalid = [i for i, lab in enumerate(scored.labels) if lab == "invalid"]
        tiers = [candidate_tiers(control, task, target, i) for i in invalid]
        found = match_controls(invalid, tiers, first_order_salience(game))
        if found is None:
            unmatched += 1
            continue
        chosen, n_fallback = found
        matches += len(chosen)
        fallbacks += n_fallback
        inv, val, neu = label_masks(scored.labels)
        ctrl = sum(1 << c for c in chosen)
        labelings = np.array([[inv, val, neu], [ctrl, val & ~ctrl, neu & ~ctrl]])
        n = len(scored.labels)
        for e in ESTIMANDS:
            coefs = estimand_coefficients(game, e)
            shares = shares_for_labelings(select_top_k(coefs, n, k, max_order), coefs, n, labelings)
            for f in fields:
                pairs[e, f].append(
                    PairedShare(scored.task_id, scored.kind, float(shares[f][0]), float(shares[f][1]))
                )
    rows = [
        row
        for (e, f), ps in pairs.items()
        for row in compare_cells(control, e, f, ps, n_resamples=n_resamples)
    ]
    return MatchedControl(control, rows, n_targets, unmatched, matches, fallbacks)
