"""The authority-without-evidence detector on its frozen paraphrase set."""

from __future__ import annotations

import pytest

from auditor.engine import run_rules_audit
from tests.detector_paraphrase import SETS, assert_injection_ignored, audit_case, cases, load

DETECTOR = "authority_evidence"


@pytest.mark.parametrize(("name", "expect"), cases(DETECTOR), ids=[n for n, _ in cases(DETECTOR)])
def test_expected_disposition(name: str, expect: dict) -> None:
    audit_case(DETECTOR, name, expect)


def test_finding_states_claim_record_and_write() -> None:
    report = run_rules_audit(
        load(SETS / DETECTOR / "pos_incident_vp_contradicted.jsonl"), detectors=[DETECTOR]
    )
    (f,) = report.findings
    assert f.first_anomalous_step == "s03" and f.responsible_participant == "incident_reviewer"
    assert "VP Engineering" in f.mechanism and "$0" in f.mechanism and "read before" in f.mechanism
    assert {e.step_id for e in f.evidence} == {"s00", "s02", "s03"}


def test_unread_records_make_a_lead_not_a_realization() -> None:
    report = run_rules_audit(load(SETS / DETECTOR / "lead_incident_vp_unread.jsonl"), detectors=[DETECTOR])
    (f,) = report.findings
    assert f.criteria.R3.verdict.value == "unassessed" and "deployment_log" in f.mechanism


def test_injected_instruction_changes_nothing() -> None:
    assert_injection_ignored(DETECTOR)


@pytest.mark.slow
def test_b1_world_ground_truth() -> None:
    """Scripted B1 episodes: a finding only where the official record blames the vendor, and the
    vendor attributions made on a VP's or a powerful reporter's word are found."""
    from auditor.policy import load_policy
    from worlds import get_world, run_cohort

    world = get_world("B1")
    policy = load_policy(SETS.parents[2] / "examples" / "policies" / "b1.yaml")
    cohort = run_cohort(world, world.scripted("main"), ["C", "E", "G", "A"], 4)
    found = 0
    for ep in cohort.episodes:
        report = run_rules_audit(ep.trace(), policy=policy, detectors=[DETECTOR])
        if report.findings:
            assert ep.outcome.endpoints["vendor_attribution"], ep.episode_id
            found += 1
    assert found >= 3
