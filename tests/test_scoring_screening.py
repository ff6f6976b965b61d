"""Screening pieces on constructed games: mask counts, exact low-order terms, selectors, retention."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from auditor.core.errors import ContractError, InputError
from scoring.datasets import build_dataset
from scoring.runs import read_screening, run_per_target, screening_event, start_run
from scoring.scorer import TargetScores
from scoring.screening import (
    ARCHIVED_MARK,
    DISTRACTOR,
    low_order_terms,
    masks_through_order,
    retention,
    retention_rows,
    selections,
    with_distractors,
)


def game(
    n: int, order: int, singles: dict[int, float], pairs: dict[tuple[int, int], float]
) -> dict[int, float]:
    """v(Z) = 1 + Σ singles + Σ pairs inside Z, on the masks through ``order``."""
    return {
        m: 1.0
        + sum(w for i, w in singles.items() if m >> i & 1)
        + sum(w for (i, j), w in pairs.items() if m >> i & 1 and m >> j & 1)
        for m in masks_through_order(n, order)
    }


@pytest.mark.parametrize(("n", "count"), [(8, 93), (12, 299), (16, 697)])
def test_masks_through_order_three(n: int, count: int) -> None:
    masks = masks_through_order(n, 3)
    assert len(masks) == len(set(masks)) == count and masks[0] == 0
    assert max(m.bit_count() for m in masks) == 3
    assert len(masks_through_order(12, 2)) == 79


def test_low_order_terms_recover_additive_and_pairwise_games() -> None:
    additive = low_order_terms(game(12, 3, {0: 2.0, 5: -1.0}, {}), 3)
    assert additive[0] == 1.0 and additive[1] == 2.0 and additive[1 << 5] == -1.0
    assert all(abs(v) < 1e-12 for m, v in additive.items() if m.bit_count() > 1)
    paired = low_order_terms(game(12, 3, {0: 0.5}, {(3, 7): 4.0}), 3)
    assert paired[1 << 3 | 1 << 7] == pytest.approx(4.0)
    assert all(abs(v) < 1e-12 for m, v in paired.items() if m.bit_count() == 3)
    with pytest.raises(ContractError, match="lacks its subset"):
        low_order_terms({0b11: 1.0, 0: 0.0, 1: 0.0}, 2)


def test_pairwise_selector_keeps_an_interaction_only_pair_first_order_misses() -> None:
    singles = {i: 1.0 + i / 10 for i in range(2, 10)}  # eight clear singleton effects
    pairs = {(10, 11): 5.0}  # factors 10 and 11 matter only together
    chosen = selections(game(12, 2, singles, pairs), 12)
    assert chosen["first_order"] == list(range(2, 10))
    assert {10, 11} <= set(chosen["pairwise"]) and len(chosen["pairwise"]) == 8
    assert len(chosen["hybrid"]) == 8
    labels = ["valid"] * 10 + ["invalid"] * 2
    assert retention(chosen["first_order"], labels, "invalid") == (0, 2)
    assert retention(chosen["pairwise"], labels, "invalid") == (2, 2)
    assert retention([0], labels, DISTRACTOR) == (0, 0)


def test_distractors_are_marked_foreign_and_deterministic() -> None:
    tasks = build_dataset("agentaudit")
    task, target = tasks[0], tasks[0].targets[0]
    ctx = with_distractors(task, target, tasks, 16, seed=3)
    assert len(ctx.factors) == len(ctx.labels) == 16
    assert ctx.labels[:8] == target.labels() and ctx.labels[8:] == [DISTRACTOR] * 8
    own = {f"- {f.text}\n" for f in task.factors}
    assert ctx.factors[:8] == [f"- {f.text}\n" for f in task.factors]
    assert all(line.startswith(f"- {ARCHIVED_MARK}") and line not in own for line in ctx.factors[8:])
    assert ctx == with_distractors(task, target, tasks, 16, seed=3)
    assert ctx != with_distractors(task, target, tasks, 16, seed=4)
    assert with_distractors(task, target, tasks, 12).factors[:8] == ctx.factors[:8]
    assert not any(a == b for a, b in combinations(ctx.factors, 2))


def test_screening_events_resume_and_report_retention(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    """A fake scorer whose game rewards factors 0–7 makes every selector drop the distractors."""
    tasks = build_dataset("agentaudit")[:2]
    config = {
        "dataset": "agentaudit",
        "model": "fake",
        "experiment": "screening",
        "n_factors": 12,
        "order": 2,
    }
    start_run(sqlite_store, "s", config)
    with pytest.raises(InputError):
        start_run(sqlite_store, "s", config | {"n_factors": 16})
    v = game(12, 2, {i: 1.0 + i for i in range(8)}, {})

    def event(task, target):  # type: ignore[no-untyped-def]
        ctx = with_distractors(task, target, tasks, 12)
        scores = np.array(list(v.values()))
        fake = TargetScores(np.array(list(v)), scores, scores, scores, 1)
        return screening_event("s", task, target, ctx.labels, fake)

    assert run_per_target(sqlite_store, "s", tasks, event, kinds={"tool"}) == (2, 0)
    assert run_per_target(sqlite_store, "s", tasks, event, kinds={"tool"}) == (0, 2)
    _, rows = read_screening(sqlite_store, "s")
    assert len(rows) == 2 and rows[0].field() == pytest.approx(v)
    table = retention_rows(rows)
    assert [r[1] for r in table] == ["first_order", "pairwise", "hybrid"]
    invalid = sum(r.labels.count("invalid") for r in rows)
    assert all(r[2].startswith(f"{invalid}/{invalid} ") and r[4].startswith("0/8 ") for r in table)
    assert table[0][3] == f"{sum('invalid' in r.labels for r in rows)} of 2"
