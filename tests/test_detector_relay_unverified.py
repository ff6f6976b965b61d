"""The unverified-relay detector on its frozen paraphrase set, and its outcome and claim readers."""

from __future__ import annotations

import pytest

from auditor.detectors.unverified_relay import success_claim
from auditor.engine import run_rules_audit
from tests.detector_paraphrase import SETS, assert_injection_ignored, audit_case, cases, load

DETECTOR = "unverified_relay"


@pytest.mark.parametrize(("name", "expect"), cases(DETECTOR), ids=[n for n, _ in cases(DETECTOR)])
def test_expected_disposition(name: str, expect: dict) -> None:
    audit_case(DETECTOR, name, expect)


def test_verbatim_carriage_is_transport_only() -> None:
    report = run_rules_audit(
        load(SETS / DETECTOR / "lead_timeout_carried_with_hedge.jsonl"), detectors=[DETECTOR]
    )
    (f,) = report.findings
    assert f.criteria.R2.verdict.value == "fails" and f.disposition.value == "lead"


@pytest.mark.parametrize(
    ("text", "claim"),
    [
        ("BUG-9 is fixed and all tests pass.", "all tests pass"),
        ("The code ran successfully and I have verified the result.", "ran successfully"),
        ("Once the totals are confirmed, we can proceed.", None),
        ("The fix is not verified yet; tests are failing.", None),
        ("This should now pass without issues, confirming the fix works as expected.", None),
        ("```\n3 passed\n```\nI will rerun it later.", None),
        ("The pytest cases passed without any failures.", "passed without any failures"),
    ],
)
def test_success_claims_are_read_from_prose_only(text: str, claim: str | None) -> None:
    assert success_claim(text) == claim


def test_injected_instruction_changes_nothing() -> None:
    assert_injection_ignored(DETECTOR)
