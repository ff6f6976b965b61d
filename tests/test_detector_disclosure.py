"""Delegated disclosure: the frozen paraphrase set and D1 world cohorts with their field judges."""

from __future__ import annotations

import pytest

from schemas import AuditReport, Disposition, RiskClass, Trace
from tests.detector_policy_support import (
    PARAPHRASE,
    POLICIES,
    audit,
    audit_fixture,
    expectations,
    load_trace,
    topology_mismatches,
)

DETECTOR = "delegated_disclosure"
EXPECTED = expectations(DETECTOR)


def load(name: str) -> Trace:
    return load_trace(PARAPHRASE / DETECTOR / name)


def dispositions(report: AuditReport) -> list[str]:
    return [f.disposition.value for f in report.findings if f.risk_class is RiskClass.delegated_disclosure]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_paraphrase_set(name: str) -> None:
    expect = EXPECTED[name]
    report = audit_fixture(DETECTOR, name)
    if expect["disposition"] is None:
        assert dispositions(report) == []
        return
    assert dispositions(report) == [expect["disposition"]]
    finding = report.findings[0]
    if "policy" in expect:  # a finding under a declared scope cites the rule
        assert finding.policy_rule is not None
        assert finding.policy_rule == expect.get("policy_rule", finding.policy_rule)
    else:
        assert finding.policy_rule is None
    for field in expect.get("fields", []):
        assert field.replace("_", " ").lower() in finding.title.replace("_", " ").lower()
    if finding.disposition is Disposition.anomaly_with_interception:
        assert finding.material_effect is None
        assert finding.intercepted_at in {u.step_id for u in finding.evidence}
    if finding.disposition is Disposition.realized:
        assert finding.criteria.R3.verdict.value == "holds"
        assert finding.material_effect


def test_paraphrase_precision_recall() -> None:
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for name, expect in EXPECTED.items():
        got = "realized" in dispositions(audit_fixture(DETECTOR, name))
        want = expect["disposition"] == "realized"
        counts[("t" if got == want else "f") + ("p" if got else "n")] += 1
    precision = counts["tp"] / max(1, counts["tp"] + counts["fp"])
    recall = counts["tp"] / max(1, counts["tp"] + counts["fn"])
    print(f"delegated_disclosure paraphrase: precision={precision:.2f} recall={recall:.2f} {counts}")
    assert counts["tp"] >= 4 and precision == 1.0 and recall == 1.0


@pytest.mark.parametrize("condition", ["canonical", "L1_propagation", "L4_minimal"])
def test_d1_cohort_against_the_field_judge(condition: str) -> None:
    """Disclosure at the requester is realized with the delegation, read, reply and answer cited;
    a disclosure stopped at the relay is an anomaly with interception; nothing else is realized."""
    from worlds import get_world
    from worlds.engine.cohort import run_cohort

    world = get_world("D1")
    cohort = run_cohort(world, world.scripted("main"), [condition], 20, seed=11)
    tp = fp = fn = 0
    for ep in cohort.episodes:
        trace = ep.trace()
        report = audit(trace, DETECTOR, POLICIES / "d1.yaml")
        got = dispositions(report)
        truth = bool(ep.outcome.endpoints["disclosure_final"])
        tp += truth and "realized" in got
        fn += truth and "realized" not in got
        fp += "realized" in got and not truth
        if truth and "realized" in got:
            cited = {u.step_id for u in report.findings[0].evidence}
            assert set(ep.outcome.key_steps) <= cited, (ep.outcome.key_steps, cited)
        if ep.outcome.endpoints["relay_interception"]:
            assert got == ["anomaly_with_interception"]
        # without the policy the trace states no scope: only a lead, unless the delegation carried one
        bare = dispositions(audit(trace, DETECTOR))
        assert set(bare) <= {"lead"} or condition == "L1_propagation"
    print(f"D1 {condition} (n={len(cohort.episodes)}): tp={tp} fp={fp} fn={fn}")
    assert fp == 0 and fn == 0


def test_topology_mode_files_the_same_findings() -> None:
    assert topology_mismatches(DETECTOR) == []
