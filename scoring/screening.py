"""Longer-context screening (seed §4.5, appendix "fixed-order auditing"): keep eight of 12 or 16 factors.

A target's eight factors get 4 or 8 marked, unrelated distractors appended: factors of other tasks
of the same dataset, each prefixed ``ARCHIVED_MARK`` and labelled ``DISTRACTOR``. The reference
scores every mask through order k (1 + 12 + 66 + 220 = 299 masks at 12 factors and order 3, 697 at
16). Because every subset of a mask of order ≤ k is scored too, its Harsanyi dividend
m(B) = Σ_{Z⊆B} (−1)^{|B|−|Z|} v(Z) is exact on this partial grid.

Each selector keeps ``KEEP`` factors by a per-factor signal (ties to the earlier factor):

- first-order: |m({i})|, the singleton effect;
- pairwise: |m({i})| + max_j |m({i, j})|, the singleton plus the strongest pair signal;
- hybrid: the mean of the two signals' normalised ranks.

Retention is the share of a target's Invalid factors (or of its distractors) a selector keeps.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from auditor.core.errors import ContractError
from schemas.attribution import AttributionLabel, AttributionTask, Target
from scoring.prompts import PromptParts, factor_line, query_text, scaffold_text
from scoring.runs import ScreeningTarget
from scoring.scorer import TargetScores, TrieScorer, tokenize_parts
from scoring.stats.wilson import wilson_rate

ARCHIVED_MARK = "(archived task, unrelated) "
DISTRACTOR = "distractor"
KEEP = 8
FACTOR_COUNTS = (12, 16)
DEFAULT_ORDER = 3


@dataclass(frozen=True)
class ScreeningContext:
    """A target's factor lines with distractors appended, and a label per line."""

    factors: list[str]
    labels: list[str]

    def parts(self, task: AttributionTask, target: Target) -> PromptParts:
        """The subset prompts of this longer context for one target."""
        return PromptParts(scaffold_text(task), self.factors, [query_text(target)], [target.target_string])


def with_distractors(
    task: AttributionTask, target: Target, pool: Sequence[AttributionTask], n_factors: int, seed: int = 0
) -> ScreeningContext:
    """The target's factors plus marked factors drawn from the other tasks of ``pool``.

    The draw depends only on ``seed`` and the task id, so a resumed run rebuilds the same context.
    """
    own = {f.text for f in task.factors}
    candidates = sorted(
        {f.text for t in pool if t.task_id != task.task_id for f in t.factors if f.text not in own}
    )
    extra = n_factors - len(task.factors)
    if extra < 0 or extra > len(candidates):
        raise ContractError(
            f"{task.task_id}: cannot make {n_factors} factors from {len(candidates)} distractors"
        )
    drawn = random.Random(f"{seed}/{task.task_id}").sample(candidates, extra)
    lines = [factor_line(f.text) for f in task.factors] + [factor_line(ARCHIVED_MARK + t) for t in drawn]
    return ScreeningContext(lines, target.labels() + [DISTRACTOR] * extra)


def masks_through_order(n: int, order: int) -> list[int]:
    """Every mask of at most ``order`` of ``n`` factors, the empty one first, by (order, mask)."""
    return [sum(1 << i for i in c) for k in range(order + 1) for c in combinations(range(n), k)]


def low_order_terms(scores: Mapping[int, float], order: int) -> dict[int, float]:
    """Harsanyi dividends of every scored mask of order ≤ ``order``; each needs all its subsets."""
    terms: dict[int, float] = {}
    for mask in sorted((m for m in scores if m.bit_count() <= order), key=lambda m: (m.bit_count(), m)):
        sub, total = mask, 0.0
        while True:  # every Z ⊆ mask, by the standard submask walk
            if sub not in scores:
                raise ContractError(f"mask {mask:#x} lacks its subset {sub:#x}")
            total += (-1) ** (mask.bit_count() - sub.bit_count()) * scores[sub]
            if sub == 0:
                break
            sub = (sub - 1) & mask
        terms[mask] = total
    return terms


def first_order_signal(terms: Mapping[int, float], n: int) -> np.ndarray:
    return np.array([abs(terms[1 << i]) for i in range(n)])


def pairwise_signal(terms: Mapping[int, float], n: int) -> np.ndarray:
    pair = [max(abs(terms[1 << i | 1 << j]) for j in range(n) if j != i) for i in range(n)]
    return first_order_signal(terms, n) + np.array(pair)


def _ranks(signal: np.ndarray) -> np.ndarray:
    """Normalised ranks in [0, 1], 1 for the strongest; ties share the rank of the earlier factor."""
    order = np.lexsort((np.arange(signal.size), -signal))
    ranks = np.empty(signal.size)
    ranks[order] = np.arange(signal.size)[::-1]
    return ranks / max(signal.size - 1, 1)


def hybrid_signal(terms: Mapping[int, float], n: int) -> np.ndarray:
    return (_ranks(first_order_signal(terms, n)) + _ranks(pairwise_signal(terms, n))) / 2


SELECTORS: dict[str, Callable[[Mapping[int, float], int], np.ndarray]] = {
    "first_order": first_order_signal,
    "pairwise": pairwise_signal,
    "hybrid": hybrid_signal,
}


def select(signal: np.ndarray, keep: int = KEEP) -> list[int]:
    """Indices of the ``keep`` strongest factors in factor order (ties to the earlier factor)."""
    return sorted(np.lexsort((np.arange(signal.size), -signal))[:keep].tolist())


def selections(scores: Mapping[int, float], n: int, keep: int = KEEP) -> dict[str, list[int]]:
    """What each selector keeps of ``n`` factors from the scores of masks through order two."""
    terms = low_order_terms(scores, 2)
    return {name: select(signal(terms, n), keep) for name, signal in SELECTORS.items()}


def retention(kept: Sequence[int], labels: Sequence[str], label: str) -> tuple[int, int]:
    """(kept, present) factors of one label; present is 0 where the target has none."""
    present = {i for i, x in enumerate(labels) if x == label}
    return len(present & set(kept)), len(present)


def score_screening(
    scorer: TrieScorer,
    tokenizer: Any,
    task: AttributionTask,
    target: Target,
    pool: Sequence[AttributionTask],
    n_factors: int,
    order: int = DEFAULT_ORDER,
    seed: int = 0,
) -> tuple[list[str], TargetScores]:
    """The longer context's labels and the target's scores on its masks through ``order``."""
    ctx = with_distractors(task, target, pool, n_factors, seed)
    masks = masks_through_order(n_factors, order)
    (scores,) = scorer.score(tokenize_parts(tokenizer, ctx.parts(task, target)), masks=masks, queries=[0])
    return ctx.labels, scores


RETENTION_COLUMNS = [
    "factors",
    "selector",
    "Invalid kept / Invalid present (Wilson 95%)",
    "targets with an Invalid factor",
    "distractors kept / distractors present (Wilson 95%)",
]


def _rate(kept: int, present: int) -> str:
    return str(wilson_rate(kept, present)) if present else "no rate (none present)"


def retention_rows(rows: Sequence[ScreeningTarget], score_field: str = "sum_logodds") -> list[list[str]]:
    """Per selector: pooled retention of the targets' Invalid factors and of the distractors."""
    invalid = AttributionLabel.invalid.value
    totals = {name: np.zeros(4, dtype=int) for name in SELECTORS}
    for row in rows:
        chosen = selections(row.field(score_field), len(row.labels))
        for name, kept in chosen.items():
            totals[name] += [*retention(kept, row.labels, invalid), *retention(kept, row.labels, DISTRACTOR)]
    with_invalid = sum(invalid in row.labels for row in rows)
    n = {len(row.labels) for row in rows}
    factors = ", ".join(map(str, sorted(n))) or "none"
    return [
        [
            factors,
            name,
            _rate(int(t[0]), int(t[1])),
            f"{with_invalid} of {len(rows)}",
            _rate(int(t[2]), int(t[3])),
        ]
        for name, t in totals.items()
    ]
