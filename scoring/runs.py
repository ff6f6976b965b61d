"""Scoring runs as events: one event per unit of work, so a run survives interruption.

Stream ``score-run-{run_id}`` opens with ``ScoreRunStarted`` (dataset, model, experiment,
device, dtype). A coalition run then holds one ``TargetScored`` per audited target with its labels
and the subset scores in three fields; a generation, degradation or guardrail run holds one ``ActionGenerated`` per
target and context (see ``scoring.action_contexts``) with the raw completion and its judged outcome; a
matched run holds one ``MatchedScored`` per target with its scores in the base and the four
factorial cells (see ``scoring.interventions``); a screening run holds one ``ScreeningScored`` per
target with its longer context's labels and the scores of its masks through the run's order (see
``scoring.screening``). Each
event carries an idempotency key, so a rerun skips what exists and re-delivery appends nothing.
The report is a projection of this stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import numpy as np

from auditor.core.errors import InputError, NotFoundError
from schemas.attribution import AttributionTask, Target
from schemas.events import NewEvent
from scoring.action_contexts import (
    ActionContext,
    action_contexts,
    degradation_contexts,
    guardrail_contexts,
    perturbation_contexts,
)
from scoring.actions import judge_target, parse_action
from scoring.prompts import with_instruction

R = TypeVar("R")

RUN_STARTED = "ScoreRunStarted"
TARGET_SCORED = "TargetScored"
ACTION_GENERATED = "ActionGenerated"
MATCHED_SCORED = "MatchedScored"
SCREENING_SCORED = "ScreeningScored"
PROXY_SCORED = "ProxyScored"  # one per target of an api-proxy run (scoring.api_proxy)
EXPERIMENTS = ("coalition", "generation", "matched", "degradation", "guardrail", "screening")
EXPERIMENTS += ("order-shuffle", "placeholder", "no-invalid")  # construction controls (scoring.construction)
EXPERIMENTS += ("elicit-yesno", "elicit-rating", "elicit-choice")  # scoring.elicitation
EXPERIMENTS += ("perturbation",)  # decoded full vs no-invalid (scoring.consequence)
EXPERIMENTS += ("api-proxy",)  # black-box first-token logprob proxy (scoring.api_proxy)
# What a resumed run must share with the run it resumes (absent keys compare as None).
RUN_IDENTITY = ("dataset", "model", "experiment", "n_factors", "order", "shuffle", "instruction")
Contexts = Callable[[AttributionTask, Target], list[ActionContext]]
CONTEXTS: dict[str, Contexts] = {
    "generation": action_contexts,
    "degradation": degradation_contexts,
    "guardrail": guardrail_contexts,
    "perturbation": perturbation_contexts,
}
SCORE_FIELDS = ("sum_logodds", "mean_logodds", "sum_logprob")


def run_stream(run_id: str) -> str:
    return f"score-run-{run_id}"


def default_run_id(dataset: str, model: str, experiment: str) -> str:
    """Same inputs, same run id: running the command again resumes the run."""
    name = model.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{dataset}-{name}-{experiment}")


@dataclass(frozen=True)
class ScoredTarget:
    """A ``TargetScored`` event read back: labels and aligned arrays of subset scores."""

    task_id: str
    target_id: str
    kind: str
    setting: str
    labels: list[str]
    masks: np.ndarray
    scores: dict[str, np.ndarray]

    @property
    def key(self) -> str:
        return f"{self.task_id}/{self.target_id}"

    def game(self, field: str = "sum_logodds") -> np.ndarray:
        """The full subset game (index = mask); needs every subset of the factors."""
        n = len(self.labels)
        if self.masks.size != 1 << n or not (self.masks == np.arange(1 << n)).all():
            raise ValueError(f"{self.key}: not a complete subset grid")
        return self.scores[field]


def start_run(store: Any, run_id: str, config: dict[str, Any]) -> None:
    """Append ``ScoreRunStarted`` once; a resumed run must keep its configuration."""
    stream = run_stream(run_id)
    existing = next(iter(store.read_stream(stream)), None)
    if existing is not None:
        old = {k: existing.payload.get(k) for k in RUN_IDENTITY}
        new = {k: config.get(k) for k in old}
        if old != new:
            raise InputError(
                f"run {run_id} exists with {old}, not {new}", field="run_id", hint="choose another --run-id"
            )
        return
    store.append(
        stream,
        [
            NewEvent(
                type=RUN_STARTED, payload={"run_id": run_id, **config}, idempotency_key=f"{stream}/started"
            )
        ],
    )


def check_coalition_partner(store: Any, config: dict[str, Any], coalition_run: str) -> None:
    """Refuse, in one line, a partner run that is not a coalition run of ``config``'s dataset and model."""
    other = read_config(store, coalition_run)
    for key in ("experiment", "dataset", "model"):
        want = "coalition" if key == "experiment" else config[key]
        if other.get(key, "coalition") != want:
            raise InputError(
                f"run {coalition_run} has {key} {other.get(key)!r}, not {want!r}",
                field="coalition-run",
                hint="give a coalition run of the same dataset and model",
            )


def done_keys(store: Any, run_id: str) -> set[str]:
    return {
        e.payload["key"]
        for e in store.read_stream(run_stream(run_id))
        if e.type in (TARGET_SCORED, ACTION_GENERATED, MATCHED_SCORED, SCREENING_SCORED, PROXY_SCORED)
    }


def chosen(task: AttributionTask, kinds: Collection[str] | None) -> list[int]:
    """Indices of the task's targets of the chosen kinds (all when ``kinds`` is None)."""
    return [i for i, t in enumerate(task.targets) if kinds is None or t.kind.value in kinds]


def chosen_targets(
    tasks: list[AttributionTask], kinds: Collection[str] | None
) -> Iterator[tuple[AttributionTask, Target]]:
    """(task, target) for every chosen target of the tasks, in order."""
    return ((task, task.targets[i]) for task in tasks for i in chosen(task, kinds))


def _target_fields(key: str, task: AttributionTask, target: Target) -> dict[str, Any]:
    """What every per-target event names: its key, task, target, kind and setting."""
    return {
        "key": key,
        "task_id": task.task_id,
        "target_id": target.target_id,
        "kind": target.kind.value,
        "setting": task.setting,
    }


def target_event(
    run_id: str,
    task: AttributionTask,
    index: int,
    masks: np.ndarray,
    fields: dict[str, np.ndarray],
    n_target_tokens: int,
) -> NewEvent:
    target = task.targets[index]
    key = task.target_key(target)
    return NewEvent(
        type=TARGET_SCORED,
        payload={
            **_target_fields(key, task, target),
            "labels": target.labels(),
            "n_target_tokens": n_target_tokens,
            "masks": masks.tolist(),
            **{f: [round(float(x), 6) for x in fields[f]] for f in SCORE_FIELDS},
        },
        idempotency_key=f"{run_stream(run_id)}/{key}",
    )


def read_config(store: Any, run_id: str) -> dict[str, Any]:
    """The run's ``ScoreRunStarted`` payload; an unknown run is the user's one-line mistake."""
    stream = run_stream(run_id)
    if store.stream_version(stream) == 0:
        raise NotFoundError(f"no scoring run {run_id!r}", hint="list runs with `auditor score runs`")
    return next(iter(store.read_stream(stream))).payload


def read_run(store: Any, run_id: str) -> tuple[dict[str, Any], Iterator[ScoredTarget]]:
    """The run's configuration and its scored targets, in the order they were recorded."""
    stream = run_stream(run_id)
    config = read_config(store, run_id)

    def targets() -> Iterator[ScoredTarget]:
        for e in store.read_stream(stream):
            if e.type != TARGET_SCORED:
                continue
            p = e.payload
            yield ScoredTarget(
                p["task_id"],
                p["target_id"],
                p["kind"],
                p["setting"],
                p["labels"],
                np.asarray(p["masks"]),
                {f: np.asarray(p[f], dtype=np.float64) for f in SCORE_FIELDS},
            )

    return config, targets()


def run_coalition(
    store: Any,
    run_id: str,
    tasks: list[AttributionTask],
    score_task: Callable[[Any], list[Any]],
    progress: Callable[[int], None] | None = None,
    kinds: Collection[str] | None = None,
) -> tuple[int, int]:
    """Score every chosen target not yet in the run; returns (scored now, skipped as already done)."""
    done = done_keys(store, run_id)
    scored = skipped = 0
    for task in tasks:
        picked = chosen(task, kinds)
        todo = [i for i in picked if task.target_key(task.targets[i]) not in done]
        skipped += len(picked) - len(todo)
        if todo:
            results = score_task(task, todo)
            events = [
                target_event(
                    run_id, task, i, r.masks, {f: getattr(r, f) for f in SCORE_FIELDS}, r.n_target_tokens
                )
                for i, r in zip(todo, results, strict=True)
            ]
            store.append(run_stream(run_id), events)
            scored += len(events)
        if progress is not None:
            progress(len(picked))
    return scored, skipped


@dataclass(frozen=True)
class GeneratedAction:
    """An ``ActionGenerated`` event read back: one target judged under one context."""

    task_id: str
    target_id: str
    kind: str
    setting: str
    condition: str
    completion: str
    parsed: bool
    value: str | None
    correct: bool
    competitor_match: bool | None

    @property
    def target_key(self) -> str:
        return f"{self.task_id}/{self.target_id}"


def generation_key(task: AttributionTask, target: Target, condition: str) -> str:
    return f"{task.target_key(target)}/{condition}"


def generation_event(
    run_id: str, task: AttributionTask, target: Target, context: ActionContext, completion: str
) -> NewEvent:
    """Parse and judge the completion now; the raw text stays in the event beside the outcome."""
    action = parse_action(completion)
    outcome = judge_target(action, target.slot, target.value, context.competitor)
    key = generation_key(task, target, context.condition)
    return NewEvent(
        type=ACTION_GENERATED,
        payload={
            **_target_fields(key, task, target),
            "condition": context.condition,
            "completion": completion,
            "parsed": action is not None,
            "value": outcome.value,
            "reference": target.value,
            "competitor": context.competitor,
            "correct": outcome.correct,
            "competitor_match": outcome.competitor_match,
        },
        idempotency_key=f"{run_stream(run_id)}/{key}",
    )


def _read_rows(store: Any, run_id: str, event_type: str, row: type[R]) -> tuple[dict[str, Any], list[R]]:
    """The run's configuration and every ``event_type`` event as a ``row``, in recorded order."""
    fields = row.__dataclass_fields__  # type: ignore[attr-defined]
    rows = [
        row(**{k: e.payload[k] for k in fields})
        for e in store.read_stream(run_stream(run_id))
        if e.type == event_type
    ]
    return read_config(store, run_id), rows


def read_generations(store: Any, run_id: str) -> tuple[dict[str, Any], list[GeneratedAction]]:
    """The run's configuration and every generation, in the order they were recorded."""
    return _read_rows(store, run_id, ACTION_GENERATED, GeneratedAction)


def run_generation(
    store: Any,
    run_id: str,
    tasks: list[AttributionTask],
    decode: Callable[[AttributionTask, list[str]], str],
    progress: Callable[[int], None] | None = None,
    kinds: Collection[str] | None = None,
    contexts: Contexts = action_contexts,
) -> tuple[int, int]:
    """Generate each chosen target's action in every context not yet in the run, one event each.

    ``contexts`` picks the design (``CONTEXTS``: generation, degradation or guardrail); a context's
    instruction reaches the decoder inside the task. Returns (generated now, skipped as already done).
    """

    def generate(task: AttributionTask, target: Target, context: ActionContext) -> NewEvent:
        completion = decode(with_instruction(task, context.instruction), context.lines)
        return generation_event(run_id, task, target, context, completion)

    units = (
        (generation_key(task, target, context.condition), partial(generate, task, target, context))
        for task, target in chosen_targets(tasks, kinds)
        for context in contexts(task, target)
    )
    return append_missing(store, run_id, units, progress)


def n_generations(
    tasks: list[AttributionTask], kinds: Collection[str] | None = None, contexts: Contexts = action_contexts
) -> int:
    """How many generations a run of these tasks holds when complete (for progress bars)."""
    return sum(len(contexts(task, target)) for task, target in chosen_targets(tasks, kinds))


@dataclass(frozen=True)
class MatchedTarget:
    """A ``MatchedScored`` event read back: one target's score per context and score field."""

    task_id: str
    target_id: str
    kind: str
    setting: str
    scores: dict[str, dict[str, float]]

    @property
    def key(self) -> str:
        return f"{self.task_id}/{self.target_id}"

    def field(self, name: str = "sum_logodds") -> dict[str, float]:
        """Context → score for one score field."""
        return {context: row[name] for context, row in self.scores.items()}


def _per_target_event(
    run_id: str, event_type: str, task: AttributionTask, target: Target, **fields: Any
) -> NewEvent:
    """One target's event, keyed by the target so a rerun appends nothing."""
    key = task.target_key(target)
    return NewEvent(
        type=event_type,
        payload={**_target_fields(key, task, target), **fields},
        idempotency_key=f"{run_stream(run_id)}/{key}",
    )


def matched_event(
    run_id: str,
    task: AttributionTask,
    target: Target,
    scores: dict[str, dict[str, float]],
    n_target_tokens: int,
) -> NewEvent:
    return _per_target_event(
        run_id,
        MATCHED_SCORED,
        task,
        target,
        n_target_tokens=n_target_tokens,
        scores={c: {f: round(v, 6) for f, v in row.items()} for c, row in scores.items()},
    )


def read_matched(store: Any, run_id: str) -> tuple[dict[str, Any], list[MatchedTarget]]:
    """The run's configuration and every matched target, in the order they were recorded."""
    return _read_rows(store, run_id, MATCHED_SCORED, MatchedTarget)


def run_matched(
    store: Any,
    run_id: str,
    tasks: list[AttributionTask],
    score_target: Callable[[AttributionTask, Target], tuple[dict[str, dict[str, float]], int]],
    progress: Callable[[int], None] | None = None,
    kinds: Collection[str] | None = None,
) -> tuple[int, int]:
    """Score each chosen target not yet in the run in every matched context, one event each.

    Returns (scored now, skipped as already done).
    """

    def event(task: AttributionTask, target: Target) -> NewEvent:
        return matched_event(run_id, task, target, *score_target(task, target))

    return run_per_target(store, run_id, tasks, event, progress, kinds)


def run_per_target(
    store: Any,
    run_id: str,
    tasks: list[AttributionTask],
    event: Callable[[AttributionTask, Target], NewEvent],
    progress: Callable[[int], None] | None = None,
    kinds: Collection[str] | None = None,
) -> tuple[int, int]:
    """Append ``event`` of each chosen target not yet in the run; returns (scored now, skipped)."""
    units = (
        (task.target_key(target), partial(event, task, target))
        for task, target in chosen_targets(tasks, kinds)
    )
    return append_missing(store, run_id, units, progress)


def append_missing(
    store: Any,
    run_id: str,
    units: Iterable[tuple[str, Callable[[], NewEvent]]],
    progress: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """Append each unit's event, one at a time, unless its key is already in the run: the event
    is made (the model work done) only for what is missing, and an interrupted run keeps every
    unit appended before the interruption. Returns (appended now, skipped as already done)."""
    done = done_keys(store, run_id)
    appended = skipped = 0
    for key, make in units:
        if key in done:
            skipped += 1
        else:
            store.append(run_stream(run_id), [make()])
            appended += 1
        if progress is not None:
            progress(1)
    return appended, skipped


@dataclass(frozen=True)
class ScreeningTarget:
    """A ``ScreeningScored`` event read back: the longer context's labels and its mask scores."""

    task_id: str
    target_id: str
    kind: str
    setting: str
    labels: list[str]
    masks: list[int]
    scores: dict[str, list[float]]

    def field(self, name: str = "sum_logodds") -> dict[int, float]:
        """Mask → score for one score field."""
        return dict(zip(self.masks, self.scores[name], strict=True))


def screening_event(
    run_id: str, task: AttributionTask, target: Target, labels: list[str], scores: Any
) -> NewEvent:
    """One target's longer-context labels and ``TargetScores`` of its masks through the run's order."""
    return _per_target_event(
        run_id,
        SCREENING_SCORED,
        task,
        target,
        labels=labels,
        n_target_tokens=scores.n_target_tokens,
        masks=scores.masks.tolist(),
        scores={f: [round(float(x), 6) for x in getattr(scores, f)] for f in SCORE_FIELDS},
    )


def read_screening(store: Any, run_id: str) -> tuple[dict[str, Any], list[ScreeningTarget]]:
    """The run's configuration and every screened target, in the order they were recorded."""
    return _read_rows(store, run_id, SCREENING_SCORED, ScreeningTarget)
