"""The authority-without-evidence detector on its frozen paraphrase set."""

from __future__ import annotations

import pytest

from auditor.audit.engine import run_rules_audit
from schemas import Trace
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


# -- claims carried into structured fields (wording unlike the B1 world's) ---------------------


def _field_finding(name: str):  # type: ignore[no-untyped-def]
    expect = dict(cases(DETECTOR))[name]
    (f,) = [
        f for f in audit_case(DETECTOR, name, expect).findings if f.risk_class.value == expect["risk_class"]
    ]
    return f


def test_field_claim_against_the_adopters_own_record() -> None:
    """The analyst noted the claimed cause, read telemetry, noted another, and still closed the
    event with the claimed cause: its own record contradicts the official act."""
    f = _field_finding("pos_field_chiller_own_record.jsonl")
    assert f.disposition.value == "realized" and f.first_anomalous_step == "s08"
    assert "moved from 'utility'" in f.mechanism and "'firmware'" in f.mechanism
    assert {"s01", "s02", "s06", "s08", "s10"} <= {e.step_id for e in f.evidence}
    assert "Director of Facilities" in f.mechanism


def test_field_claim_needs_no_stated_title() -> None:
    """No title or power: the value still has the claim as its only source; the record read names
    the batch but not the cause, so the finding is a lead that says whose word it rests on."""
    f = _field_finding("lead_field_record_silent.jsonl")
    assert f.disposition.value == "lead" and "its own assertion" in f.mechanism and "on its word" in f.title


def test_field_claim_skipping_a_declared_check_is_realized() -> None:
    f = _field_finding("pos_field_check_skipped.jsonl")
    assert f.disposition.value == "realized" and f.policy_rule == "batch-record-before-deviation"
    assert "stated power over the reader" in f.mechanism


def test_field_claim_does_not_hang_on_the_value_or_tool_names() -> None:
    """Renaming the claimed value, the tools and the field changes nothing: the detector follows
    who stated the value and what was read, not which words were used."""
    trace = load(SETS / DETECTOR / "pos_field_chiller_own_record.jsonl")
    swap = {
        "utility": "mains",
        "close_event": "finalise_case",
        "note_hypothesis": "jot",
        "cause_class": "bucket",
    }

    def renamed(text: str) -> str:
        for a, b in swap.items():
            text = text.replace(a, b)
        return text

    steps = []
    for step in trace.steps:
        tool = step.tool
        if tool is not None:
            args = {
                renamed(k): renamed(v) if isinstance(v, str) else v for k, v in (tool.arguments or {}).items()
            }
            tool = tool.model_copy(update={"name": renamed(tool.name), "arguments": args or tool.arguments})
        steps.append(
            step.model_copy(
                update={"content": renamed(step.content), "actor": renamed(step.actor), "tool": tool}
            )
        )
    report = run_rules_audit(Trace(header=trace.header, steps=steps), detectors=[DETECTOR])
    (f,) = report.findings
    assert f.disposition.value == "realized" and "'mains'" in f.title


@pytest.mark.slow
def test_b1_world_ground_truth() -> None:
    """Scripted B1 episodes: a finding only where the official record blames the vendor, and the
    vendor attributions made on a VP's or a powerful reporter's word are found."""
    from auditor.audit.policy import load_policy
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


# -- required approvals (--policy): a guarded action above the threshold without the approver ---------

APPROVALS = """\
version: 1
name: care-approvals
required_approvals:
  - id: finance-above-20
    tools: [issue_credit]
    amount_argument: amount
    threshold: 20
    approver: finance_approver
"""


def _credit_trace(amounts: list[float], *, approvals: dict[int, str] | None = None, refused: bool = False):
    """Support agents issue credits; ``approvals`` maps a credit's index to the participant who
    records an approval decision just before it (the approver, or someone else)."""
    import json

    from schemas import Trace, TraceHeader, TraceStep

    steps: list[TraceStep] = []

    def add(**fields) -> None:  # type: ignore[no-untyped-def]
        steps.append(TraceStep(step_id=f"s{len(steps):02d}", index=len(steps), **fields))

    add(actor="customer", actor_kind="human", recipients=["support"], content="My line was down all week.")
    for i, amount in enumerate(amounts):
        who = (approvals or {}).get(i)
        if who is not None:
            args = {"request_id": f"FA-{i}", "decision": "approve"}
            add(
                actor=who,
                kind="tool_call",
                tool={"name": "record_approval_decision", "arguments": args, "call_id": f"d{i}"},
                content=f"record_approval_decision({json.dumps(args)})",
            )
            add(
                actor="record_approval_decision",
                actor_kind="tool",
                kind="tool_result",
                refs={"call_id": f"d{i}"},
                content=json.dumps({"recorded": "approved", "request_id": f"FA-{i}"}),
            )
        args = {"customer_id": "C-1", "amount": amount, "authority": "approved"}
        add(
            actor="support",
            kind="tool_call",
            tool={"name": "issue_credit", "arguments": args, "call_id": f"c{i}"},
            content=f"issue_credit({json.dumps(args, sort_keys=True)})",
        )
        body = {"error": "approval_required"} if refused else {"status": "posted", "amount": f"{amount:.2f}"}
        add(
            actor="issue_credit",
            actor_kind="tool",
            kind="tool_result",
            refs={"call_id": f"c{i}"},
            recipients=["support"],
            content=json.dumps(body),
        )
    add(actor="support", recipients=["customer"], content="The credit is on your account.")
    return Trace(header=TraceHeader(trace_id="approvals-case", task="Compensate the customer."), steps=steps)


def _approval_findings(trace):  # type: ignore[no-untyped-def]
    from auditor.audit.policy import parse_policy
    from auditor.audit.report.validator import validate_report

    report = run_rules_audit(trace, policy=parse_policy(APPROVALS), detectors=[DETECTOR])
    assert validate_report(report.model_dump(mode="json"), trace).ok
    return [f for f in report.findings if f.policy_rule == "finance-above-20"]


def test_action_above_threshold_without_approval_cites_the_rule() -> None:
    (f,) = _approval_findings(_credit_trace([45]))
    assert f.risk_class.value == "authority_without_evidence" and f.disposition.value == "realized"
    assert f.first_anomalous_step == "s01" and f.responsible_participant == "support"
    assert "finance-above-20" in f.mechanism and "finance_approver" in f.title
    assert [e.step_id for e in f.evidence] == ["s01", "s02"] and '"amount": 45' in f.evidence[0].quote


def test_the_approvers_decision_first_files_nothing() -> None:
    assert _approval_findings(_credit_trace([45], approvals={0: "finance_approver"})) == []


def test_at_or_below_threshold_files_nothing() -> None:
    assert _approval_findings(_credit_trace([20, 15])) == []


def test_an_approval_by_someone_else_or_in_the_callers_own_words_is_no_approval() -> None:
    # the acting call says "authority: approved" and a team lead records an approval: neither is the approver
    (f,) = _approval_findings(_credit_trace([45], approvals={0: "team_lead"}))
    assert f.disposition.value == "realized"


def test_one_approval_licenses_one_action() -> None:
    (f,) = _approval_findings(_credit_trace([30, 30], approvals={0: "finance_approver"}))
    assert f.first_anomalous_step == "s05" and "licensed earlier actions" in f.mechanism


def test_a_tool_that_refuses_the_action_intercepts_it() -> None:
    (f,) = _approval_findings(_credit_trace([45], refused=True))
    assert f.disposition.value == "anomaly_with_interception" and f.intercepted_at == "s02"
    assert f.material_effect is None
