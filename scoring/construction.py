"""Construction controls that need new model scores: factor-order shuffles, the placeholder mask,
and source-preserving no-invalid rewrites (seed §15.7–15.9).

Each builds what the model reads from a dataset task and leaves everything else as the coalition
audit has it, so the new run's subset scores are one more complete game per target:

- ``shuffled_task``: the same factors, labels and targets in another presentation order; subset
  membership is unchanged, only the prompt order moves (bit i of a mask is the i-th factor shown).
- ``placeholder_tokens`` / ``placeholder_masks``: every factor slot stays visible; an omitted
  factor is replaced by its source/type placeholder instead of deleted. The 2n pieces (factor i
  as bit 2i, its placeholder as bit 2i+1) run through the unchanged prefix trie, subset S scoring
  the 2n-bit mask that picks the factor where i ∈ S and the placeholder otherwise.
- ``no_invalid_task``: every factor that is Invalid for some target is replaced by its same-source
  non-competing rewrite and judged neither-supporting-nor-competing, so no target keeps an
  Invalid factor; the paired comparison then asks whether those positions stay interaction-relevant.

``tasks_of_run`` rebuilds the tasks a stored run scored, so the stored-score controls can read
factor buckets, roles and relations that the run's events do not carry.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from auditor.core.errors import ContractError, InputError
from schemas.attribution import AttributionLabel, AttributionTask, Relation, Target
from scoring.prompts import PromptParts, factor_line, prompt_parts
from scoring.scorer import TargetScores, TokenizedParts, TrieScorer

CONSTRUCTION_EXPERIMENTS = ("order-shuffle", "placeholder", "no-invalid")
SHUFFLES = (1, 2)  # two shuffled-order datasets per source (§15.7)
REWRITE_REASON = "rewritten as same-source non-competing background (no-invalid control)"


def shuffle_order(task_id: str, shuffle: int, n: int) -> list[int]:
    """The presentation order of shuffle ``shuffle`` for one task: seeded per task, never the identity."""
    rng = np.random.default_rng([shuffle, zlib.crc32(task_id.encode())])
    while True:
        order = rng.permutation(n).tolist()
        if order != list(range(n)):
            return order


def shuffled_task(task: AttributionTask, shuffle: int) -> AttributionTask:
    """The task with its factors (and every target's judgments) presented in a shuffled order."""
    order = shuffle_order(task.task_id, shuffle, len(task.factors))
    targets = [t.model_copy(update={"judgments": [t.judgments[i] for i in order]}) for t in task.targets]
    return AttributionTask.model_validate(
        task.model_copy(update={"factors": [task.factors[i] for i in order], "targets": targets}).model_dump()
    )


def invalid_anywhere(task: AttributionTask) -> list[int]:
    """Indices of the factors that are Invalid for at least one of the task's targets."""
    return [
        i
        for i in range(len(task.factors))
        if any(t.judgments[i].label is AttributionLabel.invalid for t in task.targets)
    ]


def _rewritten_target(target: Target, rewritten: set[int]) -> Target:
    judgments = [
        j.model_copy(
            update={
                "relation": Relation.neither,
                "label": AttributionLabel.neutral,
                "reason": REWRITE_REASON,
                "competing_value": None,
            }
        )
        if i in rewritten
        else j
        for i, j in enumerate(target.judgments)
    ]
    return target.model_copy(update={"judgments": judgments})


def no_invalid_task(task: AttributionTask) -> AttributionTask | None:
    """The task with every formerly competing (Invalid somewhere) factor rewritten as same-source
    non-competing background in its slot; None when a rewrite is missing or the result breaks the
    contract (e.g. a target would lose its only Valid factor), so the control never invents text."""
    rewritten = set(invalid_anywhere(task))
    factors = list(task.factors)
    for i in rewritten:
        text = factors[i].noncompeting_rewrite
        if not text:
            return None
        factors[i] = factors[i].model_copy(update={"text": text, "noncompeting_rewrite": None})
    targets = [_rewritten_target(t, rewritten) for t in task.targets]
    data = task.model_copy(update={"factors": factors, "targets": targets}).model_dump()
    try:
        return AttributionTask.model_validate(data)
    except ValueError:
        return None


def constructed_tasks(
    experiment: str, tasks: Sequence[AttributionTask], shuffle: int
) -> list[AttributionTask]:
    """What an experiment's model reads: shuffled or rewritten tasks, or the tasks as they are
    (coalition and placeholder, whose difference is in the prompt pieces, not the task)."""
    if experiment == "order-shuffle":
        if shuffle not in SHUFFLES:
            raise InputError(f"unknown shuffle {shuffle}", field="shuffle", hint="1 or 2")
        return [shuffled_task(t, shuffle) for t in tasks]
    if experiment == "no-invalid":
        return [r for r in map(no_invalid_task, tasks) if r is not None]
    return list(tasks)


def placeholder_parts(task: AttributionTask, targets: list[Target] | None = None) -> PromptParts:
    """The 2n prompt pieces: each factor line followed by its placeholder line."""
    base = prompt_parts(task, targets)
    pieces = [
        piece
        for factor, line in zip(task.factors, base.factors, strict=True)
        for piece in (line, factor_line(factor.placeholder))
    ]
    return PromptParts(base.scaffold, pieces, base.queries, base.targets)


def placeholder_mask(subset: int, n: int) -> int:
    """The 2n-bit piece mask of subset S: bit 2i when i ∈ S, bit 2i+1 (the placeholder) otherwise."""
    return sum(1 << (2 * i + (0 if subset >> i & 1 else 1)) for i in range(n))


def placeholder_masks(n: int) -> list[int]:
    """Piece masks of every subset, in subset order (entry S is subset S)."""
    return [placeholder_mask(s, n) for s in range(1 << n)]


def score_placeholder(scorer: TrieScorer, tok: TokenizedParts) -> list[TargetScores]:
    """``TargetScores`` of every subset under the placeholder mask, re-indexed by subset mask.

    ``tok`` holds the 2n tokenised pieces of ``placeholder_parts``; the trie scores the piece masks.
    """
    n = len(tok.factors) // 2
    results = scorer.score(tok, masks=placeholder_masks(n))
    return [dataclasses.replace(r, masks=np.arange(1 << n)) for r in results]


def tasks_of_run(config: dict[str, Any], dataset: str | None = None) -> dict[str, AttributionTask]:
    """The tasks a run scored, rebuilt as its experiment built them, by task id.

    ``dataset`` overrides the run's recorded dataset (needed where the run read a .jsonl path).
    """
    from scoring.datasets import BUILDERS, load_dataset

    name = dataset or config["dataset"]
    if dataset is None and name not in BUILDERS:
        raise InputError(
            f"run dataset {name!r} is not a registered dataset",
            field="dataset",
            hint="pass --dataset with the .jsonl file the run scored",
        )
    experiment = config.get("experiment", "coalition")
    tasks = constructed_tasks(experiment, load_dataset(name), config.get("shuffle") or 0)
    return {t.task_id: t for t in tasks}


def check_labels(
    tasks: dict[str, AttributionTask], task_id: str, target_id: str, labels: list[str]
) -> Target:
    """The rebuilt target a stored one names; a run whose labels differ is a contract break."""
    task = tasks.get(task_id)
    target = next((t for t in task.targets if t.target_id == target_id), None) if task else None
    if target is None or target.labels() != labels:
        raise ContractError(
            f"stored target {task_id}/{target_id} does not match the rebuilt dataset",
            hint="pass --dataset with the file the run scored",
        )
    return target
