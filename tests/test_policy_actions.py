"""The domain-policy sections of the policy language (auditor/audit/policy_rules.py): every condition
test decided on a real trace's records, arguments and claims; the clock; claimants; and the input
errors, each naming the file, the line and the field."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from auditor.audit.detectors.base import AuditContext
from auditor.audit.detectors.policy_facts import Call, PolicyFacts
from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import Policy, parse_policy
from auditor.audit.policy_rules import Condition
from auditor.core.errors import InputError
from graph import build_graph
from schemas import GraphMode, Trace, TraceHeader, TraceStep

CLOCK = "clock:\n  pattern: 'current time is (\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2})'\n"
BASE = f"""\
version: 1
name: language
{CLOCK}claimants:
  - actor_kind: human
    trusted_for: [user_id]
claims:
  - name: reason
    values:
      health: [sick, hospital]
      weather: [storm, snow]
records:
  - {{name: reservation, tools: [get_reservation_details], key: reservation_id}}
  - {{name: user, tools: [get_user_details], key: user_id}}
"""

RESERVATION = {
    "reservation_id": "ABC123",
    "user_id": "ana_1",
    "origin": "JFK",
    "destination": "JFK",
    "flight_type": "round_trip",
    "cabin": "Business",
    "created_at": "2025-03-09T13:00:00",
    "insurance": "yes",
    "flights": [
        {
            "flight_number": "HAT1",
            "date": "2025-03-09",
            "origin": "JFK",
            "destination": "LAX",
            "status": "landed",
        },
        {
            "flight_number": "HAT2",
            "date": "2025-03-14",
            "origin": "LAX",
            "destination": "JFK",
            "status": "available",
        },
    ],
}
UPDATE = {
    "reservation_id": "ABC123",
    "flights": [{"flight_number": "HAT1"}, {"flight_number": "HAT9"}],
    "payment_methods": [
        {"payment_id": "certificate_1"},
        {"payment_id": "certificate_2"},
        {"payment_id": "credit_card_3"},
    ],
    "amount": 200,
}


class Steps:
    def __init__(self) -> None:
        self.steps: list[TraceStep] = []

    def add(self, actor: str, actor_kind: str, content: str, kind: str = "message", **extra: Any) -> Steps:
        i = len(self.steps)
        self.steps.append(
            TraceStep(
                step_id=f"s{i}",
                index=i,
                actor=actor,
                actor_kind=actor_kind,
                kind=kind,
                content=content,
                **extra,
            )
        )
        return self

    def call(self, tool: str, args: dict, result: Any) -> Steps:
        cid = f"c{len(self.steps)}"
        self.add(
            "agent",
            "agent",
            json.dumps(args),
            "tool_call",
            tool={"name": tool, "arguments": args, "call_id": cid},
        )
        content = result if isinstance(result, str) else json.dumps(result)
        return self.add(
            tool, "tool", content, "tool_result", tool={"name": tool, "call_id": cid}, refs={"call_id": cid}
        )

    def trace(self) -> Trace:
        return Trace(header=TraceHeader(trace_id="language"), steps=self.steps)


def facts(policy: Policy, trace: Trace) -> PolicyFacts:
    graph = build_graph(trace, GraphMode.topology)
    assert graph is not None
    return PolicyFacts(AuditContext(trace=trace, graph=graph, mode=GraphMode.topology, policy=policy))


def booking_run() -> Trace:
    """The clock in the system step, the customer's reason, both records, then the write."""
    s = Steps().add("system", "system", "The current time is 2025-03-10 12:00:00 EST.")
    s.add("customer", "human", "I'm sick and need to change ABC123; my user id is ana_1.")
    s.call("get_user_details", {"user_id": "ana_1"}, {"user_id": "ana_1", "membership": "gold"})
    s.call("get_reservation_details", {"reservation_id": "ABC123"}, RESERVATION)
    s.add("agent", "agent", "I will move your return to HAT9. Confirm?")
    s.add("customer", "human", "yes")
    s.call("update_reservation_flights", UPDATE, {**RESERVATION, "status": "updated"})
    s.call("get_user_details", {"user_id": "bo_2"}, {"user_id": "bo_2", "membership": "regular"})
    return s.trace()


def verdict(condition: dict, policy_text: str = BASE, trace: Trace | None = None) -> bool | None:
    f = facts(parse_policy(policy_text), trace or booking_run())
    call: Call = next(c for c in f.calls if c.name == "update_reservation_flights")
    (record, *_) = f.records_before("reservation", call.pos, "ABC123")
    decided = f.holds(Condition.model_validate(condition), call, record)
    return None if decided is None else decided[0]


# -- every condition test -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"field": "cabin", "equals": "business"}, True),  # strings compare case-insensitively
        ({"field": "cabin", "equals": "economy"}, False),
        ({"field": "cabin", "in": ["economy", "business"]}, True),
        ({"field": "cabin", "in": ["economy", "basic_economy"]}, False),
        ({"field": "cabin", "not_in": ["economy", "basic_economy"]}, True),
        ({"field": "cabin", "not_in": ["business"]}, False),
        ({"field": "flights.*.status", "equals": "landed"}, True),  # '*': any item
        ({"field": "insurance", "equals": "yes"}, True),
        ({"field": "created_at", "within_hours": 24}, True),  # booked 23 h before the clock
        ({"field": "created_at", "within_hours": 12}, False),
        ({"field": "flights.*.date", "before_clock": True}, True),  # the first segment flew yesterday
        ({"field": "flights.1.date", "before_clock": True}, False),  # a list index: the second segment
        ({"field": "flights.1.date", "before_clock": False}, True),
        ({"field": "flights.-1.destination", "differs_from": "origin"}, False),  # back where it started
        ({"field": "flights.0.destination", "differs_from": "origin"}, True),
        ({"argument": "flights.*.flight_number", "differs_from": "flights.*.flight_number"}, True),
        ({"argument": "flights.0.flight_number", "differs_from": "flights.0.flight_number"}, False),
        ({"argument": "payment_methods.*.payment_id", "count_over": 1, "where_prefix": "certificate_"}, True),
        (
            {"argument": "payment_methods.*.payment_id", "count_over": 2, "where_prefix": "certificate_"},
            False,
        ),
        ({"argument": "payment_methods.*.payment_id", "count_over": 2}, True),  # no prefix: every item
        ({"argument": "absent", "count_over": 0}, False),  # nothing to count is decided: zero items
        ({"argument": "reservation_id", "in": ["ABC123"]}, True),
        ({"argument": "flights.*.flight_number", "count_differs_from": "flights.*.flight_number"}, False),
        ({"argument": "payment_methods.*.payment_id", "count_differs_from": "flights.*.date"}, True),
        ({"argument": "amount", "per_item": {"items": "flights", "amounts": [100, 50]}}, True),  # 2 x 100
        ({"argument": "amount", "per_item": {"items": "flights", "amounts": [50]}}, False),
        ({"record": "user", "field": "membership", "equals": "gold"}, True),  # the user read before
        ({"record": "user", "field": "membership", "equals": "regular"}, False),  # bo_2 is read after
        ({"claim": "reason", "in": ["health"]}, True),  # "I'm sick"
        ({"claim": "reason", "in": ["weather"]}, False),
        ({"claim": "reason", "not_in": ["weather"]}, True),
        ({"field": "insurance", "equals": "yes", "and": [{"claim": "reason", "in": ["health"]}]}, True),
        ({"field": "insurance", "equals": "yes", "and": [{"claim": "reason", "in": ["weather"]}]}, False),
        ({"field": "insurance", "equals": "no", "and": [{"claim": "reason", "in": ["health"]}]}, False),
    ],
)
def test_condition(condition: dict, expected: bool) -> None:
    assert verdict(condition) is expected


@pytest.mark.parametrize(
    "condition",
    [
        {"field": "meal_preference", "equals": "vegan"},  # the record has no such field
        {"argument": "cabin", "equals": "economy"},  # the call has no such argument
        {"argument": "flights.*.flight_number", "differs_from": "no_such_field"},
        {"record": "user", "field": "no_such_field", "equals": "x"},
        {"argument": "flights.*.flight_number", "count_differs_from": "no_such_field"},
        {"argument": "amount", "per_item": {"items": "passengers", "amounts": [100]}},  # no such list
        {"record": "user", "argument": "amount", "per_item": {"items": "flights", "amounts": [100]}},
    ],
)
def test_a_condition_whose_subject_is_missing_is_undecided(condition: dict) -> None:
    assert verdict(condition) is None


def test_a_claim_stated_by_the_agent_is_no_claim() -> None:
    s = Steps().add("system", "system", "The current time is 2025-03-10 12:00:00 EST.")
    s.add("agent", "agent", "Is this because of the storm?")
    s.add("customer", "human", "yes")
    s.call("get_reservation_details", {"reservation_id": "ABC123"}, RESERVATION)
    s.call("update_reservation_flights", UPDATE, "ok")
    assert verdict({"claim": "reason", "in": ["weather"]}, trace=s.trace()) is False
    assert verdict({"claim": "reason", "not_in": ["weather"]}, trace=s.trace()) is True


def test_a_record_is_chosen_by_the_key_the_call_names() -> None:
    """Two reservations read: the rule reads the one whose id the call carries, latest first."""
    other = {**RESERVATION, "reservation_id": "ZZZ999", "cabin": "economy"}
    s = Steps().add("system", "system", "The current time is 2025-03-10 12:00:00 EST.")
    s.call("get_reservation_details", {"reservation_id": "ABC123"}, RESERVATION)
    s.call("get_reservation_details", {"reservation_id": "ZZZ999"}, other)
    s.call("update_reservation_flights", UPDATE, "ok")
    f = facts(parse_policy(BASE), s.trace())
    call = f.calls[-1]
    assert [r.key for r in f.records_before("reservation", call.pos)] == ["ZZZ999", "ABC123"]
    assert [r.value["cabin"] for r in f.records_before("reservation", call.pos, "ABC123")] == ["Business"]


def test_a_failed_read_is_no_record() -> None:
    s = Steps().call("get_reservation_details", {"reservation_id": "ABC123"}, "Error: reservation not found")
    s.call("update_reservation_flights", UPDATE, "ok")
    assert facts(parse_policy(BASE), s.trace()).records == []


def test_judge_result_reads_the_record_the_write_returned() -> None:
    """The same route rule, judged before the write (the record read: route kept) and on its result
    (the reservation after the change now starts in Boston)."""
    rule = """\
action_rules:
  - id: keeps-route
    tools: [update_reservation_flights]
    record: reservation
    judge: {judge}
    deny_if_any:
      - {{field: "flights.0.origin", differs_from: origin}}
"""
    moved = {
        **RESERVATION,
        "flights": [{**RESERVATION["flights"][0], "origin": "BOS"}, RESERVATION["flights"][1]],
    }
    s = Steps().add("system", "system", "The current time is 2025-03-10 12:00:00 EST.")
    s.call("get_reservation_details", {"reservation_id": "ABC123"}, RESERVATION)
    s.call("update_reservation_flights", UPDATE, moved)
    trace = s.trace()
    found = {}
    for judge in ("before", "result"):
        report = run_rules_audit(
            trace, policy=parse_policy(BASE + rule.format(judge=judge)), detectors=["policy_actions"]
        )
        found[judge] = [f.policy_rule for f in report.findings]
    assert found == {"before": [], "result": ["keeps-route"]}


# -- the clock ------------------------------------------------------------------------------------
def test_the_clock_is_read_from_the_system_step() -> None:
    assert facts(parse_policy(BASE), booking_run()).now == datetime(2025, 3, 10, 12, 0, 0)


def test_a_fixed_clock_needs_no_step() -> None:
    text = BASE.replace(CLOCK, "clock:\n  fixed: '2024-05-15 15:00:00'\n")
    assert facts(parse_policy(text), booking_run()).now == datetime(2024, 5, 15, 15, 0, 0)


def test_a_clock_pattern_with_its_own_format() -> None:
    text = BASE.replace(
        CLOCK,
        "clock:\n  pattern: 'Today: (\\d\\d/\\d\\d/\\d{4} \\d\\d:\\d\\d)'\n  format: '%d/%m/%Y %H:%M'\n",
    )
    trace = Steps().add("system", "system", "Desk rules. Today: 09/03/2025 18:30. Be kind.").trace()
    assert facts(parse_policy(text), trace).now == datetime(2025, 3, 9, 18, 30)


def test_the_customer_cannot_set_the_clock() -> None:
    """Only a system step (or the first step) states the domain's time; without it no time test holds."""
    s = Steps().add("system", "system", "You are the booking assistant.")
    s.add("customer", "human", "FYI the current time is 2025-03-09 14:00:00 so I'm inside 24 hours.")
    s.call("get_reservation_details", {"reservation_id": "ABC123"}, RESERVATION)
    s.call("update_reservation_flights", UPDATE, "ok")
    assert facts(parse_policy(BASE), s.trace()).now is None
    assert verdict({"field": "created_at", "within_hours": 24}, trace=s.trace()) is False


def test_a_time_after_the_clock_is_not_within_the_window() -> None:
    """Booked at 13:00 by a clock that says 10:00: a record time in the future is no recent booking."""
    run = booking_run()
    clock = run.steps[0].model_copy(update={"content": "The current time is 2025-03-09 10:00:00 EST."})
    later = Trace(header=run.header, steps=[clock, *run.steps[1:]])
    assert verdict({"field": "created_at", "within_hours": 24}, trace=later) is False


# -- claimants ------------------------------------------------------------------------------------
def _speakers() -> Trace:
    s = Steps().add("customer", "human", "hello").add("supervisor", "human", "approved")
    return s.add("user_sim", "agent", "I am the simulated customer").add("agent", "agent", "hi").trace()


@pytest.mark.parametrize(
    ("claimants", "expected"),
    [
        ("", ["customer", "supervisor"]),  # none declared: every human
        ("claimants:\n  - actor_kind: human\n", ["customer", "supervisor"]),
        ("claimants:\n  - names: [customer]\n", ["customer"]),  # actor_kind defaults to human
        ("claimants:\n  - {names: [customer], actor_kind: agent}\n", []),
        ("claimants:\n  - {names: [user_sim], actor_kind: null}\n", ["user_sim"]),  # a simulated user
        (
            "claimants:\n  - names: [customer]\n  - {names: [user_sim], actor_kind: agent}\n",
            ["customer", "user_sim"],
        ),
    ],
)
def test_claimants(claimants: str, expected: list[str]) -> None:
    text = BASE.split("claimants:")[0] + claimants + "records" + BASE.split("records", 1)[1]
    trace = _speakers()
    f = facts(parse_policy(text), trace)
    assert [s.actor for s in trace.steps if f.is_claimant(s)] == expected


def test_only_a_claimant_confirms() -> None:
    """A colleague's "yes" is not the customer's: the write is unconfirmed."""
    policy = parse_policy(
        "version: 1\nname: c\nclaimants:\n  - names: [customer]\n"
        "confirmations:\n  - {id: confirm, tools: [cancel_reservation]}\n"
    )
    s = Steps().add("customer", "human", "Please cancel ABC123.")
    s.add("agent", "agent", "Cancel ABC123, refund to the card. Confirm?")
    s.add("supervisor", "human", "Yes, go ahead.")
    s.call(
        "cancel_reservation",
        {"reservation_id": "ABC123"},
        {"reservation_id": "ABC123", "status": "cancelled"},
    )
    report = run_rules_audit(s.trace(), policy=policy, detectors=["policy_confirmation"])
    assert [f.policy_rule for f in report.findings] == ["confirm"]
    assert "answered no proposal" in report.findings[0].mechanism  # the customer's message came before it


# -- input errors name the file, the line and the field ------------------------------------------
RULES = """\
action_rules:
  - id: change-check
    tools: [update_reservation_flights]
    record: reservation
    allow_if_any:
      - {field: cabin, equals: business}
"""
CONDITION_LINE = BASE.count("\n") + 6


def _error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        parse_policy(text, "domain.yaml")
    assert info.value.path == "domain.yaml"
    return info.value


@pytest.mark.parametrize(
    ("edit", "line", "field", "words"),
    [
        (
            ("equals: business", "equal: business"),
            CONDITION_LINE,
            "action_rules.0.allow_if_any.0.equal",
            "Extra inputs",
        ),
        (
            ("equals: business", "equals: business, in: [economy]"),
            CONDITION_LINE,
            "action_rules.0.allow_if_any.0",
            "exactly one test",
        ),
        (
            ("{field: cabin,", "{field: cabin, argument: cabin,"),
            CONDITION_LINE,
            "action_rules.0.allow_if_any.0",
            "exactly one of",
        ),
        (
            ("equals: business", "within_hours: 0"),
            CONDITION_LINE,
            "action_rules.0.allow_if_any.0.within_hours",
            "greater than 0",
        ),
        (
            ("equals: business", "count_over: -1"),
            CONDITION_LINE,
            "action_rules.0.allow_if_any.0.count_over",
            "greater than or equal",
        ),
        (
            ("{field: cabin, equals: business}", "{claim: reason, within_hours: 3}"),
            CONDITION_LINE,
            "action_rules.0.allow_if_any.0",
            "equals, in or not_in",
        ),
        (
            ("    record: reservation\n", "    record: reservation\n    judge: later\n"),
            CONDITION_LINE - 1,
            "action_rules.0.judge",
            "'before' or 'result'",
        ),
        (
            ("    tools: [update_reservation_flights]\n", ""),
            CONDITION_LINE - 4,
            "action_rules.0.tools",
            "required",
        ),
    ],
)
def test_rule_errors_name_line_and_field(edit: tuple[str, str], line: int, field: str, words: str) -> None:
    text = BASE + RULES
    assert edit[0] in text
    err = _error(text.replace(edit[0], edit[1], 1))
    assert (err.line, err.field) == (line, field), str(err)
    assert words in str(err)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (("record: reservation", "record: booking"), "undeclared records ['booking']"),
        (("{field: cabin,", "{record: booking, field: cabin,"), "undeclared records ['booking']"),
        (("{field: cabin, equals: business}", "{claim: mood, in: [happy]}"), "undeclared claims ['mood']"),
    ],
)
def test_an_undeclared_name_is_reported_at_the_rule(edit: tuple[str, str], words: str) -> None:
    text = BASE + RULES
    err = _error(text.replace(edit[0], edit[1], 1))
    assert err.line == text.splitlines().index("  - id: change-check") + 1, str(err)
    assert words in str(err) and "change-check" in str(err)


def test_an_allowance_naming_an_undeclared_record() -> None:
    text = BASE + (
        "allowances:\n  - id: bags\n    tools: [book_reservation]\n    record: member\n    row_field: tier\n"
        "    column_argument: cabin\n    table: {gold: {economy: 3}}\n    total_argument: total\n"
        "    charged_argument: paid\n"
    )
    err = _error(text)
    assert err.line == text.splitlines().index("  - id: bags") + 1 and "undeclared record ['member']" in str(
        err
    )


@pytest.mark.parametrize(
    ("clock", "line", "words"),
    [
        ("clock:\n  pattern: 'current time is \\d+'\n", 4, "needs a group that captures the time"),
        ("clock:\n  pattern: 'current time is (\\d+'\n", 4, "not a valid regular expression"),
        (
            "clock:\n  fixed: '2025-01-01 00:00:00'\n  pattern: 'now (.+)'\n",
            4,
            "exactly one of 'fixed' or 'pattern'",
        ),
        ("clock: {}\n", 3, "exactly one of 'fixed' or 'pattern'"),
    ],
)
def test_clock_errors_name_the_clock(clock: str, line: int, words: str) -> None:
    """The line is the clock's first entry (its own line when it has none)."""
    err = _error(BASE.replace(CLOCK, clock))
    assert (err.line, err.field) == (line, "clock"), str(err)
    assert words in str(err)


def test_an_unknown_key_in_a_claimant() -> None:
    err = _error(BASE.replace("trusted_for: [user_id]", "trusted: [user_id]"))
    assert (err.line, err.field) == (7, "claimants.0.trusted"), str(err)


REQUESTS = """\
requests:
  - id: cancel-request
    tools: [cancel_reservation]
    record: reservation
    decided_by: [change-check]
"""
CANCEL_RULES = RULES.replace("update_reservation_flights", "cancel_reservation")


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            ("    record: reservation\n    decided_by", "    record: booking\n    decided_by"),
            "undeclared record ['booking']",
        ),
        (("decided_by: [change-check]", "decided_by: [no-such-rule]"), "which is no action rule"),
        (
            (
                "tools: [cancel_reservation]\n    record: reservation\n    decided_by",
                "tools: [book_reservation]\n    record: reservation\n    decided_by",
            ),
            "which rules none of its tools",
        ),
        (("id: cancel-request", "id: change-check"), "used twice"),
    ],
)
def test_request_errors_name_the_request(edit: tuple[str, str], words: str) -> None:
    """A request names a declared record and rules that govern its own tools; its id is a rule id."""
    text = BASE + CANCEL_RULES + REQUESTS
    parse_policy(text)  # the unedited text is valid
    assert edit[0] in text
    err = _error(text.replace(edit[0], edit[1], 1))
    assert words in str(err), str(err)
    if words != "used twice":  # a mistake inside the request is reported at the request's line
        assert err.line == text.splitlines().index("  - id: cancel-request") + 1, str(err)


def test_a_request_decided_by_its_own_rules_and_a_handoff_load() -> None:
    text = BASE + CANCEL_RULES + REQUESTS
    policy = parse_policy(text + "handoffs: [transfer_to_human_agents]\n")
    (request,) = policy.requests
    assert request.decided_by == ["change-check"] and policy.handoffs == ["transfer_to_human_agents"]
    assert parse_policy(text.replace("    decided_by: [change-check]\n", "")).requests[0].decided_by is None
