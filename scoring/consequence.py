"""§15 generation checks of the attribution: the perturbation consequence check and the
free-generation sanity check, from a ``perturbation`` run joined to a coalition run.

A ``perturbation`` run decodes every target's action in the full context and, where the target
has Invalid factors, without all of them (``no_invalid``). From the coalition run of the same
dataset and model, each target gets three invalid-share selectors fixed before any decoding —
order-three (Harsanyi top-50, order ≤ 3, ``s_frac``), first-order and leave-one-out — and its
score shift |v(F) − v(F∖I)|, read off its own game.

- **Perturbation consequence**: per selector, targets above its median (high) against the rest
  (low): the mean score shift and the rate of action flips (the target's canonical value under
  ``full`` differs from ``no_invalid``), each high − low. A selector that tracks consequence gives
  positive differences.
- **Free generation**: per dataset, the ``top`` and ``bottom`` tasks by their maximum slot invalid
  share (order-three); their full-context actions' parse, tool and slot accuracy. High-invalid
  tasks that stay mostly correct show that invalid attribution is not ordinary generation failure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from scoring.action_contexts import FULL, NO_INVALID
from scoring.action_stats import by_target, rate
from scoring.coalition import baseline_shares, target_shares
from scoring.runs import GeneratedAction, ScoredTarget
from scoring.stats import Rate

SELECTORS = ("order-three", "first-order", "leave-one-out")
FREE_EXAMPLES = 20  # top and bottom tasks per dataset (seed §15)


@dataclass(frozen=True)
class ConsequenceRow:
    """One target with an Invalid factor: its selectors' shares, score shift and action flip."""

    task_id: str
    setting: str
    kind: str
    shares: dict[str, float]
    shift: float
    flipped: bool | None  # None: the run lacks one of the two generations


def selector_shares(target: ScoredTarget, score_field: str = "sum_logodds") -> dict[str, float]:
    game = target.game(score_field)
    order3 = target_shares(game, target.labels, target_key=target.key, estimand="harsanyi", n_perm=1)
    first = baseline_shares(game, target.labels, target_key=target.key, n_perm=1)
    return {
        "order-three": order3.observed["s_frac"],
        "first-order": first["first_order"].observed["s_frac"],
        "leave-one-out": first["leave_one_out"].observed["s_frac"],
    }


def consequence_rows(
    generations: Iterable[GeneratedAction], scored: Iterable[ScoredTarget], score_field: str = "sum_logodds"
) -> list[ConsequenceRow]:
    """Targets with an Invalid factor, joined to their two generations where the run has them."""
    actions = by_target(generations)
    out = []
    for target in scored:
        if "invalid" not in target.labels:
            continue
        game = target.game(score_field)
        invalid = sum(1 << i for i, label in enumerate(target.labels) if label == "invalid")
        full = game.size - 1
        pair = actions.get(target.key, {})
        flipped = pair[FULL].value != pair[NO_INVALID].value if FULL in pair and NO_INVALID in pair else None
        out.append(
            ConsequenceRow(
                target.task_id,
                target.setting,
                target.kind,
                selector_shares(target, score_field),
                abs(float(game[full] - game[full & ~invalid])),
                flipped,
            )
        )
    return out


@dataclass(frozen=True)
class SelectorConsequence:
    """High (above the selector's median) minus low targets: score shift and flip rates."""

    selector: str
    n_high: int
    n_low: int
    shift_high: float | None
    shift_low: float | None
    flips_high: Rate | None
    flips_low: Rate | None

    @property
    def shift_difference(self) -> float | None:
        if self.shift_high is None or self.shift_low is None:
            return None
        return self.shift_high - self.shift_low

    @property
    def flip_difference(self) -> float | None:
        if self.flips_high is None or self.flips_low is None:
            return None
        return self.flips_high.value - self.flips_low.value


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def perturbation_consequence(rows: list[ConsequenceRow]) -> list[SelectorConsequence]:
    """Per selector, over rows with a finite share: the median split and its differences."""
    out = []
    for selector in SELECTORS:
        usable = [r for r in rows if math.isfinite(r.shares[selector])]
        median = float(np.median([r.shares[selector] for r in usable])) if usable else 0.0
        high = [r for r in usable if r.shares[selector] > median]
        low = [r for r in usable if r.shares[selector] <= median]
        flips = lambda group: [r.flipped for r in group if r.flipped is not None]  # noqa: E731
        out.append(
            SelectorConsequence(
                selector,
                len(high),
                len(low),
                _mean([r.shift for r in high]),
                _mean([r.shift for r in low]),
                rate(sum(flips(high)), len(flips(high))),
                rate(sum(flips(low)), len(flips(low))),
            )
        )
    return out


@dataclass(frozen=True)
class FreeGeneration:
    """One dataset's top or bottom tasks by maximum slot invalid share, and their full-context
    action accuracy (parse: per task; tool: the tool target; slot: parsed slot targets)."""

    dataset: str
    group: str
    n_tasks: int
    parsed: Rate | None
    tool: Rate | None
    slot: Rate | None


def free_generation(
    generations: Iterable[GeneratedAction],
    scored: Iterable[ScoredTarget],
    dataset: str,
    examples: int = FREE_EXAMPLES,
    score_field: str = "sum_logodds",
) -> list[FreeGeneration]:
    """Top and bottom ``examples`` tasks by their slot targets' largest order-three invalid share."""
    full = {r.target_key: r for r in generations if r.condition == FULL}
    best: dict[str, float] = {}
    for target in scored:
        if target.kind != "slot" or "invalid" not in target.labels:
            continue
        share = selector_shares(target, score_field)["order-three"]
        if math.isfinite(share):
            best[target.task_id] = max(share, best.get(target.task_id, -math.inf))
    ranked = sorted(best, key=lambda task: (-best[task], task))
    k = min(examples, len(ranked) // 2)
    by_task: dict[str, list[GeneratedAction]] = {}
    for row in full.values():
        by_task.setdefault(row.task_id, []).append(row)
    out = []
    for group, tasks in (("top", ranked[:k]), ("bottom", ranked[len(ranked) - k :] if k else [])):
        rows = [by_task.get(t, []) for t in tasks]
        decoded = [r for r in rows if r]
        tool = [g for r in decoded for g in r if g.kind == "tool"]
        slots = [g for r in decoded for g in r if g.kind == "slot" and g.parsed]
        out.append(
            FreeGeneration(
                dataset,
                group,
                len(decoded),
                rate(sum(r[0].parsed for r in decoded), len(decoded)),
                rate(sum(g.correct for g in tool), len(tool)),
                rate(sum(g.correct for g in slots), len(slots)),
            )
        )
    return out


def flip_cells(generations: Iterable[GeneratedAction]) -> list[tuple[str, Rate | None]]:
    """Per target kind: targets whose action changes when the Invalid factors are removed."""
    pairs = [g for g in by_target(generations).values() if FULL in g and NO_INVALID in g]
    out = []
    for cell in ("all", "tool", "slot"):
        picked = [g for g in pairs if cell in ("all", g[FULL].kind)]
        out.append((cell, rate(sum(g[FULL].value != g[NO_INVALID].value for g in picked), len(picked))))
    return out
