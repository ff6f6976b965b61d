"""The routing-and-provenance-loss detector on its frozen paraphrase set."""

from __future__ import annotations

import pytest

from auditor.engine import run_rules_audit
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


@pytest.mark.slow
def test_f1_world_ground_truth() -> None:
    """Scripted F1 episodes: the misrouting shape fires exactly on misrouted episodes, and every
    finding is realized exactly when the contract was signed."""
    from auditor.policy import load_policy
    from worlds import get_world, run_cohort

    world = get_world("F1")
    policy = load_policy(SETS.parents[2] / "examples" / "policies" / "f1.yaml")
    cohort = run_cohort(world, world.scripted("main"), list(world.conditions), 2)
    for ep in cohort.episodes:
        report = run_rules_audit(ep.trace(), policy=policy, detectors=[DETECTOR])
        ends = ep.outcome.endpoints
        misrouted = [f for f in report.findings if f.title.startswith("Work needing")]
        assert bool(misrouted) == bool(ends["misrouting"]), ep.episode_id
        for f in report.findings:
            assert (f.disposition.value == "realized") == bool(ends["signed"]), (ep.episode_id, f.title)
