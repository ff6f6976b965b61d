"""The airline policy's requests and compensation rules (examples/policies/airline.yaml) on real
τ-bench runs and on small runs: a request never decided, a request the policy grants but the agent
refused, a certificate nobody asked for, and a certificate of the wrong amount."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import Policy, load_policy
from auditor.audit.report.validator import validate_report
from schemas import AuditReport, Finding, Trace, TraceHeader, TraceStep
from tests.conftest import DATA, REPO

AIRLINE = REPO / "examples" / "policies" / "airline.yaml"
TAU_RUNS = DATA / "taubench" / "airline" / "runs"
needs_runs = pytest.mark.skipif(not TAU_RUNS.is_dir(), reason="τ-bench runs not present (../shared/data)")


@pytest.fixture(scope="module")
def airline() -> Policy:
    return load_policy(AIRLINE)


def _review(trace: Trace, policy: Policy, detectors: list[str]) -> AuditReport:
    report = run_rules_audit(trace, policy=policy, detectors=detectors)
    check = validate_report(report.model_dump(mode="json"), trace)
    assert check.ok, check.to_dict()
    return report


def _real(name: str) -> Trace:
    from ingest import open_traces

    (imported,) = open_traces(TAU_RUNS / f"{name}.json")
    return Trace(header=imported.header, steps=list(imported.steps()))


def _requests(name: str, policy: Policy) -> list[Finding]:
    return _review(_real(name), policy, ["policy_requests"]).findings


@needs_runs
def test_a_passenger_change_refused_on_a_basic_economy_booking(airline: Policy) -> None:
    """The agent read 3RK2T9 and refused a name change citing the basic economy flight rule; the
    policy lets every reservation change its passengers."""
    (finding,) = _requests("airline-task043-trial1", airline)
    assert finding.policy_rule == "passenger-change-request" and finding.disposition.value == "realized"
    assert finding.failure_mode == "1.1" and finding.responsible_participant == "assistant"
    quotes = " | ".join(u.quote for u in finding.evidence)
    assert '"reservation_id": "3RK2T9"' in quotes and "change the passenger name" in quotes


@needs_runs
def test_the_same_request_carried_out_draws_nothing(airline: Policy) -> None:
    assert _requests("airline-task043-trial0", airline) == []


@needs_runs
def test_a_run_that_never_read_a_record_left_the_request_undecided(airline: Policy) -> None:
    (finding,) = _requests("airline-task008-trial2", airline)
    assert finding.failure_mode == "3.1" and finding.disposition.value == "realized"
    assert "left open" in finding.title
    trace = _real("airline-task008-trial2")
    last_agent = [s for s in trace.steps if s.actor == "assistant" and s.kind.value == "message"][-1]
    assert finding.first_anomalous_step == last_agent.step_id


@needs_runs
def test_a_handoff_passes_the_request_on(airline: Policy) -> None:
    """Transferred to a human without a record read: the request was passed on, not dropped."""
    assert _requests("airline-task018-trial3", airline) == []


@needs_runs
def test_a_certificate_nobody_asked_for(airline: Policy) -> None:
    """The customer complained about a delay and never asked for compensation; the $200 is 50 per
    passenger of the four-passenger reservation read, so the amount itself is not filed. No flight
    status was read: the delay rests on the customer's word (the facts were never confirmed)."""
    report = _review(_real("airline-task037-trial0"), airline, ["policy_actions"])
    rules = sorted(f.policy_rule or "" for f in report.findings)
    assert rules == ["compensation-facts-confirmed", "compensation-only-on-request"]
    assert all(f.disposition.value == "realized" for f in report.findings)
    unconfirmed = next(f for f in report.findings if f.policy_rule == "compensation-facts-confirmed")
    assert unconfirmed.title == (
        "send_certificate without reading the flight record that rule compensation-facts-confirmed depends on"
    )


def _certificate_run(amount: int, ask: str, status: str | None = "cancelled") -> Trace:
    """A certificate after the user and reservation reads and, unless ``status`` is None, a read of
    the flight's status (get_flight_status answers with the bare status)."""
    reservation = {
        "reservation_id": "K2PL9Q",
        "user_id": "ivy_chen_12",
        "cabin": "business",
        "insurance": "no",
        "flights": [{"flight_number": "HAT9", "date": "2024-05-14", "status": "cancelled"}],
        "passengers": [{"first_name": "Ivy", "last_name": "Chen"}, {"first_name": "Bo", "last_name": "Chen"}],
    }
    user = {"user_id": "ivy_chen_12", "membership": "regular"}
    rows: list[tuple[str, str, str, dict]] = [
        ("system", "system", "The current time is 2024-05-15 15:00:00 EST.", {}),
        ("user", "human", f"The airline cancelled my flight on K2PL9Q, I'm ivy_chen_12. {ask}", {}),
    ]
    reads: list[tuple[str, dict, Any]] = [
        ("get_user_details", {"user_id": "ivy_chen_12"}, user),
        ("get_reservation_details", {"reservation_id": "K2PL9Q"}, reservation),
    ]
    if status is not None:
        reads.append(("get_flight_status", {"flight_number": "HAT9", "date": "2024-05-14"}, status))
    certificate = ("send_certificate", {"user_id": "ivy_chen_12", "amount": amount}, "Certificate added")
    for i, (tool, args, result) in enumerate([*reads, certificate]):
        call = {"name": tool, "arguments": args, "call_id": f"c{i}"}
        rows.append(("assistant", "agent", json.dumps(args), {"kind": "tool_call", "tool": call}))
        content = result if isinstance(result, str) else json.dumps(result)
        rows.append(
            (
                tool,
                "tool",
                content,
                {
                    "kind": "tool_result",
                    "tool": {"name": tool, "call_id": f"c{i}"},
                    "refs": {"call_id": f"c{i}"},
                },
            )
        )
    steps = [
        TraceStep(step_id=f"s{i}", index=i, actor=a, actor_kind=k, content=c, **extra)
        for i, (a, k, c, extra) in enumerate(rows)
    ]
    return Trace(header=TraceHeader(trace_id=f"cert-{amount}"), steps=steps)


@pytest.mark.parametrize(
    ("amount", "ask", "status", "rules"),
    [
        (200, "Can I get some compensation?", "cancelled", []),  # $100 x 2 passengers, asked for
        (150, "Can I get some compensation?", "cancelled", ["compensation-amount"]),
        (200, "That was awful.", "cancelled", ["compensation-only-on-request"]),
        # the facts: no status read, or one that shows no disruption
        (200, "Can I get some compensation?", None, ["compensation-facts-confirmed"]),
        (200, "Can I get some compensation?", "on time", ["compensation-facts-confirmed"]),
    ],
)
def test_certificate_amount_request_and_facts(
    amount: int, ask: str, status: str | None, rules: list[str], airline: Policy
) -> None:
    report = _review(_certificate_run(amount, ask, status), airline, ["policy_actions"])
    assert sorted(f.policy_rule or "" for f in report.findings) == rules


def test_the_airline_policy_declares_a_request_for_every_write(airline: Policy) -> None:
    writes = {t for c in airline.confirmations for t in c.tools} | {"send_certificate"}
    assert writes <= {t for r in airline.requests for t in r.tools}
    assert airline.handoffs == ["transfer_to_human_agents"]
