"""The routing-and-provenance-loss detector on its frozen paraphrase set."""

from __future__ import annotations

import pytest

from auditor.audit.engine import run_rules_audit
from tests.detector_paraphrase import SETS, assert_injection_ignored, audit_case, cases, load

DETECTOR = "routing_provenance"


@pytest.mark.parametrize(("name", "expect"), cases(DETECTOR), ids=[n for n, _ in cases(DETECTOR)])
def test_expected_disposition(name: str, expect: dict) -> None:
    audit_case(DETECTOR, name, expect)


def test_both_shapes_on_one_trace() -> None:
    """The bid-routed contract loses the tool holder and then the reviewer's name: two findings."""
    report = run_rules_audit(load(SETS / DETECTOR / "pos_contract_bid_misroute.jsonl"), detectors=[DETECTOR])
    titles = sorted(f.title for f in report.findings)
    assert titles[0].startswith("Reviewer general_analyst dropped")
    assert titles[1].startswith("Work needing policy_kb routed to general_analyst")
    assert {f.first_anomalous_step for f in report.findings} == {"s03", "s05"}


def test_interception_names_the_holders_check() -> None:
    report = run_rules_audit(
        load(SETS / DETECTOR / "icpt_contract_holder_reviews.jsonl"), detectors=[DETECTOR]
    )
    (f,) = report.findings
    assert f.intercepted_at == "s06" and f.criteria.R3.verdict.value == "fails"


def test_injected_instruction_changes_nothing() -> None:
    assert_injection_ignored(DETECTOR)


def _f1_policy():
    """The F1 example invariants: the declared checks that name query_policy_kb as the needed tool."""
    from auditor.audit.policy import load_policy

    return load_policy(SETS.parents[2] / "examples" / "policies" / "f1.yaml")


def test_an_approval_its_gate_refused_is_intercepted_not_realized() -> None:
    """A SIGN call that the review-binding gate turns away approves nothing: the misrouting is
    stopped at the refusing result; the same episode without the gate signs and is realized."""
    from worlds import get_world
    from worlds.engine.policy import FixedPolicy
    from worlds.f1.scripts import SCRIPTS

    world = get_world("F1")
    params = {**world.params["base"], "p_route_legal": 0.0, "p_sign_clean": 1.0, "p_keep_risk": 0.0}
    gated = world.workflow().with_values({"gates.approval.review_binding.enabled": True})
    found = {}
    for name, wf in (("open", None), ("gated", gated)):
        ep = world.run_episode("standard", 3, world.identity(5), FixedPolicy(SCRIPTS, params), wf)
        report = run_rules_audit(ep.trace(), policy=_f1_policy(), detectors=[DETECTOR])
        (f,) = [f for f in report.findings if f.title.startswith("Work needing")]
        found[name] = (f, ep)
    realized, _ = found["open"]
    assert realized.disposition.value == "realized" and realized.intercepted_at is None
    stopped, ep = found["gated"]
    refusal = next(
        s for s in ep.steps if s.kind.value == "tool_result" and "review_binding_failed" in s.content
    )
    assert stopped.disposition.value == "anomaly_with_interception"
    assert stopped.intercepted_at == refusal.step_id and stopped.criteria.R3.verdict.value == "fails"
    assert ep.outcome.measures["disposition"] == "ESCALATE"


@pytest.mark.slow
@pytest.mark.parametrize("gate", [False, True], ids=["audited", "review_bound"])
def test_f1_world_ground_truth(gate: bool) -> None:
    """Scripted F1 episodes, on the audited workflow and on the review-bound repair: the misrouting
    shape fires exactly on misrouted episodes, and every finding is realized exactly when the
    contract was signed."""
    from worlds import get_world, run_cohort

    world = get_world("F1")
    wf = world.workflow().with_values({"gates.approval.review_binding.enabled": gate})
    cohort = run_cohort(world, world.scripted("main"), list(world.conditions), 2, workflow=wf)
    assert cohort.episodes
    for ep in cohort.episodes:
        report = run_rules_audit(ep.trace(), policy=_f1_policy(), detectors=[DETECTOR])
        ends = ep.outcome.endpoints
        misrouted = [f for f in report.findings if f.title.startswith("Work needing")]
        assert bool(misrouted) == bool(ends["misrouting"]), ep.episode_id
        for f in report.findings:
            assert (f.disposition.value == "realized") == bool(ends["signed"]), (ep.episode_id, f.title)
