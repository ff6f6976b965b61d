"""The audit's cost record (§16.5): deterministic model-request counts beside wall time and device.

A *model request* is one prompt the design asks the model for: one teacher-forced subset prompt
of one target (a coalition or screening mask, a matched context) or one generated action. The
counts follow from the stored events alone, so they reproduce on any machine; wall time does not
(batching, loading and devices differ), so each ``auditor score run`` invocation appends one
``ScoreRunSession`` event with its own requests, scoring seconds, model-load seconds and device,
and the record reports both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from schemas.events import NewEvent
from scoring.runs import (
    ACTION_GENERATED,
    MATCHED_SCORED,
    PROXY_SCORED,
    SCREENING_SCORED,
    TARGET_SCORED,
    read_config,
    run_stream,
)

RUN_SESSION = "ScoreRunSession"
RESULTS = (TARGET_SCORED, SCREENING_SCORED, MATCHED_SCORED, ACTION_GENERATED, PROXY_SCORED)
T = TypeVar("T")


def requests_of(event_type: str, payload: dict[str, Any]) -> int:
    """Model requests behind one stored event (0 for events that are not model results)."""
    if event_type in (TARGET_SCORED, SCREENING_SCORED):
        return len(payload["masks"])
    if event_type == MATCHED_SCORED:
        return len(payload["scores"])
    if event_type == ACTION_GENERATED:
        return 1
    if event_type == PROXY_SCORED:
        return int(payload["n_requests"])  # 0 for a target without an Invalid factor: never asked
    return 0


def count_requests(events: Iterable[Any]) -> tuple[int, int]:
    """(result records, model requests) over stored events."""
    records = requests = 0
    for e in events:
        records += e.type in RESULTS
        requests += requests_of(e.type, e.payload)
    return records, requests


def session_event(
    run_id: str, version: int, requests: int, seconds: float, load_seconds: float, device: str
) -> NewEvent:
    """One invocation's cost; keyed by the stream version it ends at, so each session is recorded once."""
    return NewEvent(
        type=RUN_SESSION,
        payload={
            "run_id": run_id,
            "requests": requests,
            "seconds": round(seconds, 3),
            "load_seconds": round(load_seconds, 3),
            "device": device,
        },
        idempotency_key=f"{run_stream(run_id)}/session/{version}",
    )


@dataclass(frozen=True)
class RunCost:
    """A run's deterministic workload and the measured time of the sessions that produced it."""

    run_id: str
    experiment: str
    model: str
    dataset: str
    records: int
    requests: int
    sessions: int
    seconds: float | None  # scoring time summed over sessions; None when none was recorded
    load_seconds: float | None
    devices: list[str]

    @property
    def requests_per_second(self) -> float | None:
        return self.requests / self.seconds if self.seconds else None


def run_cost(store: Any, run_id: str) -> RunCost:
    events = list(store.read_stream(run_stream(run_id)))
    config = read_config(store, run_id)
    records, requests = count_requests(events)
    sessions = [e.payload for e in events if e.type == RUN_SESSION]
    return RunCost(
        run_id,
        config.get("experiment", "coalition"),
        config.get("model", "?"),
        config.get("dataset", "?"),
        records,
        requests,
        len(sessions),
        sum(s["seconds"] for s in sessions) if sessions else None,
        sum(s["load_seconds"] for s in sessions) if sessions else None,
        sorted({s["device"] for s in sessions}),
    )


def all_costs(store: Any) -> list[RunCost]:
    """Every scoring run's cost record, in run-id order."""
    return [run_cost(store, s.removeprefix("score-run-")) for s in sorted(store.list_streams("score-run-"))]


@dataclass
class Session:
    """What one invocation spends on loading the model (kept apart from scoring time)."""

    load_seconds: float = 0.0

    def load(self, loader: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return loader()
        finally:
            self.load_seconds += time.perf_counter() - start


@contextmanager
def recorded_session(store: Any, run_id: str, device: str) -> Iterator[Session]:
    """Time one invocation and append its ``ScoreRunSession`` when it added results, even when it
    stops early (an interrupted run keeps what it scored, and what that cost)."""
    stream = run_stream(run_id)
    before = store.stream_version(stream)
    session = Session()
    start = time.perf_counter()
    try:
        yield session
    finally:
        after = store.stream_version(stream)
        if after > before:
            _, requests = count_requests(store.read_stream(stream, from_version=before + 1))
            seconds = time.perf_counter() - start - session.load_seconds
            store.append(
                stream, [session_event(run_id, after, requests, seconds, session.load_seconds, device)]
            )
