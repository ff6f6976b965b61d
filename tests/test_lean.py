"""Lean models (auditor/core/lean.py): the memory a step costs goes down; nothing a model shows changes."""

from __future__ import annotations

import sys

from auditor.core.lean import LeanSteps, share_keys
from schemas import TraceStep

STEP = {
    "step_id": "s7",
    "index": 7,
    "actor": "deal_desk",
    "recipients": ["account_manager"],
    "kind": "tool_call",
    "content": "lookup(discount)",
    "tool": {"name": "lookup", "arguments": {"q": "discount"}, "call_id": "c1"},
    "raw": {"source_line": 8},
}


def test_a_lean_step_is_the_same_step_in_less_memory() -> None:
    plain = TraceStep.model_validate(dict(STEP))
    lean = LeanSteps().step(dict(STEP))
    assert lean == plain and lean.model_dump() == plain.model_dump()
    assert lean.model_dump_json() == plain.model_dump_json()
    assert list(lean.__dict__) == list(plain.__dict__)  # same fields, same order
    assert lean.model_copy(update={"content": "x"}).content == "x" and lean.content == STEP["content"]
    assert sys.getsizeof(lean.__dict__) < 0.7 * sys.getsizeof(plain.__dict__)


def test_keys_are_shared_per_class_and_values_stay_per_model() -> None:
    a = share_keys(TraceStep.model_validate(dict(STEP)))
    b = share_keys(TraceStep.model_validate({**STEP, "step_id": "s8", "index": 8}))
    assert (a.step_id, a.index, b.step_id, b.index) == ("s7", 7, "s8", 8)
    assert a.__dict__ is not b.__dict__ and a != b
