"""Shared pieces of the generated-action tests: a scripted reply and the real-model run-and-resume."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from schemas.attribution import AttributionTask
from scoring.actions import canonical_value, parse_action
from scoring.datasets import build_dataset
from scoring.runs import (
    CONTEXTS,
    GeneratedAction,
    n_generations,
    read_generations,
    run_generation,
    run_stream,
    start_run,
)


def scripted_action(task: AttributionTask, correct: bool) -> str:
    """The reference action as JSON, or a wrong tool: a fake decoder's two replies."""
    ref = task.reference_action
    if correct:
        return json.dumps({"tool": ref.tool, "arguments": ref.arguments})
    return '{"tool": "nothing", "arguments": {}}'


def run_twice(score_cli: Any, args: list[str], run_id: str) -> tuple[dict[str, Any], list[GeneratedAction]]:
    """Run one tool target of agentaudit, check each outcome is the parser's verdict on its completion,
    then rerun and check the resume appends nothing."""
    store = score_cli.store
    first = score_cli(args)
    assert first.exit_code == 0, first.output
    config, rows = read_generations(store, run_id)
    reference = canonical_value(build_dataset("agentaudit")[0].reference_action.tool)
    for r in rows:
        action = parse_action(r.completion)
        assert r.correct == (action is not None and action.tool == reference)
    version = store.stream_version(run_stream(run_id))
    again = score_cli(args)
    assert again.exit_code == 0 and f"0 action(s) generated, {len(rows)} already" in again.output
    assert store.stream_version(run_stream(run_id)) == version
    return config, rows


def generate_resumably(
    store: Any,
    run_id: str,
    experiment: str,
    tasks: list[AttributionTask],
    decode: Callable[[AttributionTask, list[str]], str],
) -> list[GeneratedAction]:
    """Generate the tool targets of the first task, then of all (skipping those), then again
    (appending nothing); returns the run's one row per target and context."""
    start_run(store, run_id, {"dataset": "agentaudit", "model": "fake", "experiment": experiment})
    contexts = CONTEXTS[experiment]
    total, first = (n_generations(t, {"tool"}, contexts) for t in (tasks, tasks[:1]))
    assert run_generation(store, run_id, tasks[:1], decode, None, {"tool"}, contexts) == (first, 0)
    assert run_generation(store, run_id, tasks, decode, None, {"tool"}, contexts) == (total - first, first)
    version = store.stream_version(run_stream(run_id))
    assert run_generation(store, run_id, tasks, decode, None, {"tool"}, contexts) == (0, total)
    assert store.stream_version(run_stream(run_id)) == version
    _, rows = read_generations(store, run_id)
    assert len(rows) == total == len({(r.target_key, r.condition) for r in rows})
    return rows


def model_run_args(experiment: str, run_id: str) -> list[str]:
    """`auditor score run` on agentaudit's first tool target with the short decoding budget."""
    args = ["score", "run", "--dataset", "agentaudit", "--experiment", experiment, "--limit", "1"]
    return [*args, "--target-kind", "tool", "--max-new-tokens", "24", "--run-id", run_id]
