"""The cost record: request counts follow from the stored events; sessions carry time and device."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.cost import RUN_SESSION, all_costs, recorded_session, requests_of, run_cost
from scoring.datasets import build_dataset
from scoring.runs import (
    ACTION_GENERATED,
    MATCHED_SCORED,
    SCORE_FIELDS,
    SCREENING_SCORED,
    run_stream,
    start_run,
    target_event,
)


def test_requests_per_event_type() -> None:
    assert requests_of("TargetScored", {"masks": list(range(256))}) == 256
    assert requests_of(SCREENING_SCORED, {"masks": list(range(299))}) == 299
    assert requests_of(MATCHED_SCORED, {"scores": {key: {} for key in "abcdefghijk"}}) == 11
    assert requests_of(ACTION_GENERATED, {}) == 1
    assert requests_of("ScoreRunStarted", {"run_id": "r"}) == 0
    assert requests_of(RUN_SESSION, {"requests": 5}) == 0  # a session is not itself a request


def test_sessions_record_new_requests_and_survive_an_interruption(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    tasks = build_dataset("agentaudit")[:2]
    start_run(sqlite_store, "c", {"dataset": "agentaudit", "model": "m", "experiment": "coalition"})
    game = dict.fromkeys(SCORE_FIELDS, np.zeros(256))

    def score(task):  # type: ignore[no-untyped-def]
        events = [target_event("c", task, i, np.arange(256), game, 2) for i in range(3)]
        sqlite_store.append(run_stream("c"), events)

    with recorded_session(sqlite_store, "c", "cpu") as session:
        session.load(lambda: None)
        score(tasks[0])
    with recorded_session(sqlite_store, "c", "cpu"):  # resumed with nothing to do: no session
        pass
    with pytest.raises(KeyboardInterrupt), recorded_session(sqlite_store, "c", "cuda"):
        score(tasks[1])
        raise KeyboardInterrupt
    sessions = [e.payload for e in sqlite_store.read_stream(run_stream("c")) if e.type == RUN_SESSION]
    assert [(s["requests"], s["device"]) for s in sessions] == [(768, "cpu"), (768, "cuda")]
    cost = run_cost(sqlite_store, "c")
    assert (cost.records, cost.requests, cost.sessions, cost.devices) == (6, 1536, 2, ["cpu", "cuda"])
    assert cost.seconds is not None and cost.seconds >= 0 and cost.requests_per_second is not None
    assert [c.run_id for c in all_costs(sqlite_store)] == ["c"]
