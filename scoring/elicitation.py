"""Score-elicitation variants (§15): the same audit when the target is asked for another way.

The direct prompt teacher-forces the reference value itself after the target question. Each
variant keeps the scaffold and the factor lines and replaces only the question and the forced
continuation, so the subset game, the labels and the transforms are unchanged:

- ``elicit-yesno``: is the reference the answer? the continuation is `` yes``;
- ``elicit-rating``: how well does the context support it, 1–5? the continuation is `` 5``;
- ``elicit-choice``: the reference against the target's concrete competitor as (A)/(B), the
  reference's letter alternating by target (a fixed hash), so no letter is always right.

A variant run is a coalition run over the rewritten tasks. ``elicitation_agreement`` pairs its
targets with a direct run's and reports Pearson and Spearman correlations of the per-target
invalid shares: a high correlation says the attribution does not hinge on the elicitation format.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from schemas.attribution import AttributionTask, Target
from scoring.coalition import target_shares
from scoring.runs import ScoredTarget
from scoring.stats import spearman

VARIANTS = ("elicit-yesno", "elicit-rating", "elicit-choice")
SHARE_FIELDS = ("s_frac", "s_any")
KIND_CELLS = {"all": None, "tool": "tool", "slot": "slot"}


def _subject(target: Target) -> str:
    return "the tool to call" if target.slot is None else f"the value of argument {target.slot}"


def elicited_target(task: AttributionTask, target: Target, variant: str) -> Target:
    """The target asked the ``variant`` way (question and forced continuation only)."""
    value = target.value
    if variant == "elicit-yesno":
        question = f"{target.question} Is {value!r} {_subject(target)}? Reply yes or no."
        forced = " yes"
    elif variant == "elicit-rating":
        question = (
            f"{target.question} On a scale from 1 (unsupported) to 5 (fully supported), how well does "
            f"the context support {value!r} as {_subject(target)}? Reply with one digit."
        )
        forced = " 5"
    elif variant == "elicit-choice":
        first = int(hashlib.sha256(task.target_key(target).encode()).hexdigest(), 16) % 2 == 0
        a, b = (value, target.competing_value) if first else (target.competing_value, value)
        question = (
            f"{target.question} Choose {_subject(target)}: (A) {a!r} or (B) {b!r}. Reply with the letter."
        )
        forced = " A" if first else " B"
    else:
        raise ValueError(f"unknown elicitation variant {variant!r}")
    return target.model_copy(update={"question": question, "target_string": forced})


def elicited_tasks(variant: str, tasks: Sequence[AttributionTask]) -> list[AttributionTask]:
    """Every task with each target asked the ``variant`` way."""
    return [
        t.model_copy(update={"targets": [elicited_target(t, g, variant) for g in t.targets]}) for t in tasks
    ]


@dataclass(frozen=True)
class Agreement:
    """Correlation of per-target invalid shares between a variant run and the direct run."""

    cell: str
    share: str
    n_targets: int
    pearson: float | None
    spearman: float | None


def _shares(targets: Iterable[ScoredTarget], score_field: str) -> dict[str, tuple[str, dict[str, float]]]:
    out = {}
    for t in targets:
        if "invalid" not in t.labels:
            continue  # no invalid share is defined
        s = target_shares(t.game(score_field), t.labels, target_key=t.key, estimand="harsanyi", n_perm=1)
        out[t.key] = (t.kind, s.observed)
    return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def elicitation_agreement(
    direct: Iterable[ScoredTarget], variant: Iterable[ScoredTarget], score_field: str = "sum_logodds"
) -> list[Agreement]:
    """Per target kind and share: Pearson and Spearman over the targets both runs scored."""
    a, b = _shares(direct, score_field), _shares(variant, score_field)
    both = [k for k in a if k in b]
    out = []
    for cell, kind in KIND_CELLS.items():
        keys = [k for k in both if kind is None or a[k][0] == kind]
        for share in SHARE_FIELDS:
            pairs = [(a[k][1][share], b[k][1][share]) for k in keys]
            pairs = [(x, y) for x, y in pairs if math.isfinite(x) and math.isfinite(y)]
            x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
            defined = len(pairs) >= 3 and x.std() > 0 and y.std() > 0
            out.append(
                Agreement(
                    cell,
                    share,
                    len(pairs),
                    _finite(float(np.corrcoef(x, y)[0, 1])) if defined else None,
                    _finite(spearman(x, y)) if defined else None,
                )
            )
    return out
