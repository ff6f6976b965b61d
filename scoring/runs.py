"""Scoring runs as events: one ``TargetScored`` event per target, so a run survives interruption.

Stream ``score-run-{run_id}`` opens with ``ScoreRunStarted`` (dataset, model, experiment,
device, dtype) and then holds one ``TargetScored`` per audited target with its labels and the
subset scores in three fields. Each target event carries an idempotency key, so a rerun skips
what exists and re-delivery appends nothing. The report is a projection of this stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from auditor.errors import InputError, NotFoundError
from schemas.attribution import AttributionTask
from schemas.events import NewEvent

RUN_STARTED = "ScoreRunStarted"
TARGET_SCORED = "TargetScored"
EXPERIMENTS = ("coalition",)
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
        old = {k: existing.payload.get(k) for k in ("dataset", "model", "experiment")}
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


def done_keys(store: Any, run_id: str) -> set[str]:
    return {e.payload["key"] for e in store.read_stream(run_stream(run_id)) if e.type == TARGET_SCORED}


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
            "key": key,
            "task_id": task.task_id,
            "target_id": target.target_id,
            "kind": target.kind.value,
            "setting": task.setting,
            "labels": target.labels(),
            "n_target_tokens": n_target_tokens,
            "masks": masks.tolist(),
            **{f: [round(float(x), 6) for x in fields[f]] for f in SCORE_FIELDS},
        },
        idempotency_key=f"{run_stream(run_id)}/{key}",
    )


def read_run(store: Any, run_id: str) -> tuple[dict[str, Any], Iterator[ScoredTarget]]:
    """The run's configuration and its scored targets, in the order they were recorded."""
    stream = run_stream(run_id)
    if store.stream_version(stream) == 0:
        raise NotFoundError(f"no scoring run {run_id!r}", hint="list runs with `auditor score runs`")
    events = store.read_stream(stream)
    config = next(iter(events)).payload

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
) -> tuple[int, int]:
    """Score every target not yet in the run; returns (scored now, skipped as already done)."""
    done = done_keys(store, run_id)
    scored = skipped = 0
    for task in tasks:
        todo = [i for i, t in enumerate(task.targets) if task.target_key(t) not in done]
        skipped += len(task.targets) - len(todo)
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
            progress(len(task.targets))
    return scored, skipped
