"""Every world: every condition runs offline and deterministically, labels stay out of the trace,
the held-out template family changes the wording, and the repair surface speaks the CONTROLS vocabulary."""

from __future__ import annotations

import pytest

from schemas import CONTROLS
from worlds import get_world, list_worlds

SURFACES = {path for control in CONTROLS.values() for path in control.surface}


def test_all_five_worlds_are_registered() -> None:
    assert list_worlds() == ["A1", "B1", "C1", "D1", "F1"]


@pytest.mark.parametrize("name", ["A1", "B1", "C1", "D1", "F1"])
def test_world_contract(name: str) -> None:
    world = get_world(name)
    ident = world.identity(7)
    for cond in world.conditions:
        a = world.run_episode(cond, 21, ident, world.scripted())
        b = world.run_episode(cond, 21, ident, world.scripted())
        assert a.trace_jsonl() == b.trace_jsonl(), cond
        assert a.outcome.valid, (cond, a.outcome.invalid_reason)
        assert all(s.recipients for s in a.steps), "every step names its recipients"
        header = a.header.model_dump_json()
        assert cond not in a.header.metadata.values() and not any(x in header for x in a.outcome.secrets)
        assert set(a.outcome.endpoints) == set(world.endpoints) and world.primary in world.endpoints
        assert a.outcome.utility >= 0.0 and a.source_digest == world.source_digest()
        calls = {s.tool.call_id for s in a.steps if s.kind.value == "tool_call"}
        results = {s.refs.call_id for s in a.steps if s.kind.value == "tool_result"}
        assert calls == results
    held = world.run_episode(world.canonical_conditions[0], 21, ident, world.scripted("heldout"))
    main = world.run_episode(world.canonical_conditions[0], 21, ident, world.scripted("main"))
    assert held.trace_jsonl() != main.trace_jsonl() and held.spec.policy_digest != main.spec.policy_digest
    wf = world.workflow()
    assert set(wf.repair_surface) & SURFACES
    assert {"judge", "ground_truth", "task_utility"} <= set(wf.protected)
