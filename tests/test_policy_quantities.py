"""Quantities compared (issue 30 item 3) on real τ-bench runs: a charge against the quote the
customer accepted, a customer's claim against the record read, and a flight's time of day (not only
its date) against the domain's clock."""

from __future__ import annotations

import json

import pytest

from auditor.audit.policy import Policy, load_policy
from schemas import Finding, Trace, TraceHeader, TraceStep
from tests.test_policy_requests import AIRLINE, TAU_RUNS, _real, _review

pytestmark = pytest.mark.skipif(not TAU_RUNS.is_dir(), reason="τ-bench runs not present (../shared/data)")


@pytest.fixture(scope="module")
def airline() -> Policy:
    return load_policy(AIRLINE)


def _quantities(trace: Trace, policy: Policy) -> list[Finding]:
    return _review(trace, policy, ["policy_quantities"]).findings


def _charged(trace: Trace, step_id: str, old: str, new: str) -> Trace:
    """The run with the amount the write's result records replaced (its last occurrence)."""
    steps = []
    for s in trace.steps:
        if s.step_id == step_id:
            at = s.content.rindex(old)
            s = s.model_copy(update={"content": s.content[:at] + new + s.content[at + len(old) :]})
        steps.append(s)
    return Trace(header=trace.header, steps=steps)


def test_a_charge_above_every_amount_quoted_is_filed(airline: Policy) -> None:
    """task003-trial3: the flight change the customer accepted (fares of $142 and $170 quoted)
    charged $59 to the gift card: no finding. The same run charging $340 is a charge nobody agreed to."""
    trace = _real("airline-task003-trial3")
    assert _quantities(trace, airline) == []
    (finding,) = _quantities(_charged(trace, "s38", '"amount": 59', '"amount": 340'), airline)
    assert finding.first_anomalous_step == "s37" and finding.disposition.value == "realized"
    assert "charged $340" in finding.title and "$170" in finding.title
    assert any('"amount": 340' in u.quote and u.step_id == "s38" for u in finding.evidence)


def test_a_refund_the_quote_told_otherwise(airline: Policy) -> None:
    """task022-trial1: the agent told the customer the upgrade left $234 to pay from the gift card;
    the flight change went through and the reservation gave $114 back. The accepted quote accounts
    for no such refund."""
    (finding,) = _quantities(_real("airline-task022-trial1"), airline)
    assert (
        finding.title == "update_reservation_flights refunded $114; the accepted proposal quoted $224, $234"
    )
    assert finding.first_anomalous_step == "s34" and finding.disposition.value == "realized"
    quotes = [u.quote for u in finding.evidence]
    assert '{"payment_id": "gift_card_9823297", "amount": -114}' in quotes
    assert any("remaining cost of $234" in q for q in quotes)


@pytest.mark.parametrize(
    ("run", "why"),
    [
        ("airline-task007-trial3", "the refund quoted ($2544)"),
        ("airline-task022-trial2", "quoted per passenger ($38 x 3)"),
        ("airline-task003-trial1", "the new flights' fares quoted ($112, $130)"),
        ("airline-task003-trial2", "the new flights' total quoted ($242)"),
        ("airline-task008-trial1", "a cancellation gives back all that was paid"),
        (
            "airline-task019-trial3",
            "a bag added after a flight change: judged against what the change returned",
        ),
    ],
)
def test_refunds_the_quote_accounts_for(run: str, why: str, airline: Policy) -> None:
    assert _quantities(_real(run), airline) == [], why


def test_a_refund_unlike_its_quote_on_a_run_that_had_it_right(airline: Policy) -> None:
    """task007-trial3 with the record's refund changed from $2544 (quoted) to $2044."""
    trace = _charged(_real("airline-task007-trial3"), "s27", '"amount": -2544', '"amount": -2044')
    (finding,) = _quantities(trace, airline)
    assert "refunded $2044" in finding.title and "$2544" in finding.title


def test_the_agent_taking_the_customers_tier_over_the_record(airline: Policy) -> None:
    """task037-trial0: the customer says they are a Gold member, the user record says regular, and
    the agent answers 'As a valued Gold member, I've issued a $200 certificate' after a write."""
    (finding,) = _quantities(_real("airline-task037-trial0"), airline)
    assert finding.title == "assistant took the customer's membership 'gold' over the record's 'regular'"
    quotes = [u.quote for u in finding.evidence]
    assert '"membership": "regular"' in quotes and any(
        q.startswith("As a valued Gold member") for q in quotes
    )
    assert finding.disposition.value == "realized"  # the certificate went through


def test_the_record_read_and_said_draws_nothing(airline: Policy) -> None:
    """Runs of the same task where the agent kept to the record (trial 1 and 2 succeeded)."""
    for name in ("airline-task037-trial1", "airline-task037-trial2", "airline-task003-trial2"):
        assert _quantities(_real(name), airline) == [], name


def _cancel_run(departure: str) -> Trace:
    """A cancellation of a booking whose first flight is dated today (clock 15:00); the flight's
    status, read before, gives its departure time."""
    reservation = {
        "reservation_id": "T0DAY1",
        "user_id": "ivy_chen_12",
        "cabin": "business",
        "insurance": "no",
        "created_at": "2024-05-01T10:00:00",
        "flights": [
            {"flight_number": "HAT045", "date": "2024-05-15", "origin": "PHX", "destination": "SEA"},
            {"flight_number": "HAT194", "date": "2024-05-16", "origin": "SEA", "destination": "BOS"},
        ],
    }
    status = {"flight_number": "HAT045", "date": "2024-05-15", "scheduled_departure_time_est": departure,
              "scheduled_arrival_time_est": "23:30:00"}  # fmt: skip
    rows: list[tuple[str, str, str, dict]] = [
        ("system", "system", "The current time is 2024-05-15 15:00:00 EST.", {}),
        ("user", "human", "Please cancel T0DAY1, my plans changed.", {}),
    ]
    calls = [
        ("get_reservation_details", {"reservation_id": "T0DAY1"}, reservation),
        ("get_flight_status", {"flight_number": "HAT045", "date": "2024-05-15"}, status),
        ("cancel_reservation", {"reservation_id": "T0DAY1"}, {**reservation, "status": "cancelled"}),
    ]
    for i, (tool, args, result) in enumerate(calls):
        call = {"name": tool, "arguments": args, "call_id": f"c{i}"}
        rows.append(("assistant", "agent", json.dumps(args), {"kind": "tool_call", "tool": call}))
        extra = {
            "kind": "tool_result",
            "tool": {"name": tool, "call_id": f"c{i}"},
            "refs": {"call_id": f"c{i}"},
        }
        rows.append((tool, "tool", json.dumps(result), extra))
    steps = [
        TraceStep(step_id=f"s{i}", index=i, actor=a, actor_kind=k, content=c, **extra)
        for i, (a, k, c, extra) in enumerate(rows)
    ]
    return Trace(header=TraceHeader(trace_id=f"today-{departure}"), steps=steps)


@pytest.mark.parametrize(("departure", "flown"), [("06:00:00", True), ("20:00:00", False)])
def test_a_flight_that_left_this_morning_has_flown(departure: str, flown: bool, airline: Policy) -> None:
    """The reservation gives the date only; the flight's status gives the time. Left at 06:00 of
    today (clock 15:00): flown, the cancellation breaks cancel-unflown-only; leaving at 20:00: not."""
    rules = [f.policy_rule for f in _review(_cancel_run(departure), airline, ["policy_actions"]).findings]
    assert ("cancel-unflown-only" in rules) is flown
