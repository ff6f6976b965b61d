"""The five domain-policy detectors (confirmation, action rules, allowances, identifiers, requests)
on their frozen paraphrase sets: synthetic customer-service runs, each audited under the policy
beside it."""

from __future__ import annotations

import json

import pytest

from tests.detector_paraphrase import SETS, assert_injection_ignored, audit_case, cases, load
from tests.detector_policy_support import topology_mismatches

DETECTORS = [
    "policy_confirmation",
    "policy_actions",
    "policy_allowances",
    "policy_identifiers",
    "policy_requests",
]
CASES = [(d, name, expect) for d in DETECTORS for name, expect in cases(d)]


@pytest.mark.parametrize(("detector", "name", "expect"), CASES, ids=[f"{d}/{n}" for d, n, _ in CASES])
def test_paraphrase_case(detector: str, name: str, expect: dict) -> None:
    report = audit_case(detector, name, expect)
    if expect["disposition"] is None:
        return
    hits = [f for f in report.findings if f.disposition.value == expect["disposition"]]
    if "policy_rule" in expect:
        assert expect["policy_rule"] in [f.policy_rule for f in hits], [f.policy_rule for f in hits]
    trace = load(SETS / detector / name)
    for f in hits:
        if f.intercepted_at is not None:  # the refusing result answers the flagged call
            refusal = trace.step(f.intercepted_at)
            call = trace.step(f.first_anomalous_step)
            assert refusal.refs is not None and call.tool is not None
            assert refusal.refs.call_id == call.tool.call_id


@pytest.mark.parametrize("detector", DETECTORS)
def test_each_set_has_five_positives_five_negatives_and_one_policy(detector: str) -> None:
    expected = json.loads((SETS / detector / "expected.json").read_text())
    positives = sum(e["disposition"] is not None for e in expected.values())
    assert positives >= 5 and len(expected) - positives >= 5
    assert sorted(expected) == sorted(p.name for p in (SETS / detector).glob("*.jsonl"))
    assert {e["policy"] for e in expected.values()} == {"desk_policy.yaml"}


@pytest.mark.parametrize("detector", DETECTORS)
def test_sets_use_a_human_customer_and_tool_calls_with_results(detector: str) -> None:
    """The sets have the shape of a customer-service run: a human customer, an agent's tool calls,
    each answered by a result that refers to its call id."""
    named = cases(detector)
    assert named, detector
    for name, _ in named:
        steps = load(SETS / detector / name).steps
        assert any(s.actor == "user" and s.actor_kind.value == "human" for s in steps), name
        calls = {s.tool.call_id for s in steps if s.kind.value == "tool_call" and s.tool is not None}
        answered = {s.refs.call_id for s in steps if s.kind.value == "tool_result" and s.refs is not None}
        assert calls and calls == answered, name


@pytest.mark.parametrize("detector", DETECTORS)
def test_findings_do_not_depend_on_the_annotation_layer(detector: str) -> None:
    assert topology_mismatches(detector) == []


@pytest.mark.parametrize("detector", DETECTORS)
def test_injected_instruction_changes_nothing(detector: str) -> None:
    assert_injection_ignored(detector)
