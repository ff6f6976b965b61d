"""The request ledger (auditor/audit/detectors/request_ledger.py) on real τ-bench runs: requests read
from the customer's sentences against the tools' own words, and each request's state at the end
(decided, handed off, refused with a reason on the record, open); the `policy_requests` finding
for the requests left open."""

from __future__ import annotations

import pytest

from auditor.audit.detectors import AuditContext
from auditor.audit.detectors.policy_facts import PolicyFacts
from auditor.audit.detectors.request_ledger import RequestLedger
from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import Policy, load_policy, parse_policy
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from graph import build_graph
from schemas import GraphMode, Trace, TraceHeader, TraceStep
from tests.conftest import REPO
from tests.test_policy_requests import AIRLINE, TAU_RUNS, _real

pytestmark = pytest.mark.skipif(not TAU_RUNS.is_dir(), reason="τ-bench runs not present (../shared/data)")


@pytest.fixture(scope="module")
def airline() -> Policy:
    return load_policy(AIRLINE)


def _ledger(trace: Trace, policy: Policy) -> RequestLedger:
    ctx = AuditContext(
        trace=trace, graph=build_graph(trace, GraphMode.topology), mode=GraphMode.topology, policy=policy
    )
    return RequestLedger(PolicyFacts(ctx))


def _left_open(trace: Trace, policy: Policy) -> list:
    report = run_rules_audit(trace, policy=policy, detectors=["policy_requests"])
    assert validate_report(report.model_dump(mode="json"), trace).ok
    return [f for f in report.findings if "left open" in f.title]


def test_the_writes_are_told_apart_by_their_own_words(airline: Policy) -> None:
    writes = _ledger(_real("airline-task003-trial1"), airline).writes
    assert writes["cancel_reservation"] == ({"cancel"}, set())
    assert writes["update_reservation_baggages"] == (set(), {"baggages"})
    assert "reservation" not in writes["book_reservation"][1]  # every write shares it


def test_a_bag_asked_for_beside_a_flight_change_is_left_open(airline: Policy) -> None:
    """The customer asked for a later flight and one checked bag; the flights were changed, the bag
    listed in the proposal and never added, nothing refused or handed off."""
    trace = _real("airline-task003-trial1")
    entries = {e.request.tools: e for e in _ledger(trace, airline).entries}
    assert entries[("update_reservation_flights",)].state == "decided"
    bag = entries[("update_reservation_baggages",)]
    assert bag.state == "open" and bag.request.sentence == "Also, I need to add one checked bag."
    (finding,) = _left_open(trace, airline)
    assert finding.policy_rule == "baggage-request" and finding.failure_mode == "3.1"
    assert finding.evidence[0].quote == "Also, I need to add one checked bag."


def test_all_of_them_covers_every_reservation_the_user_record_lists(airline: Policy) -> None:
    """'Cancel all of my upcoming flights': some reservations were cancelled, two the user record
    lists were never read nor cancelled."""
    trace = _real("airline-task028-trial2")
    every = [e for e in _ledger(trace, airline).entries if e.request.every]
    assert every and all(e.state == "open" for e in every)
    assert set(every[0].open_items) == {"4XGCCM", "UDMOP1"}
    (finding,) = _left_open(trace, airline)
    assert "4XGCCM" in finding.mechanism and "UDMOP1" in finding.mechanism


def test_a_condition_is_no_request(airline: Policy) -> None:
    """'If that's not possible, I might need to cancel and rebook' asks for no cancellation."""
    ledger = _ledger(_real("airline-task010-trial1"), airline)
    assert not any(r.sentence.startswith("If that's not possible") for r in ledger.requests)
    assert ledger.tools_of("If that's not possible, I might need to cancel and rebook.") == ()
    assert ledger.tools_of("My flight was cancelled.") == ()
    assert ledger.tools_of("I don't want to cancel my trip.") == ()
    assert ledger.tools_of("Do you have any later flights?") == ()  # a question for information
    assert ledger.tools_of("Can you cancel my trip?") == ("cancel_reservation",)


def test_a_refusal_before_any_record_was_read_leaves_the_request_open(airline: Policy) -> None:
    """The agent could not look the reservation up and said so: no record was read, so no policy
    reason was stated; the change of the reservation stays open."""
    trace = _real("airline-task008-trial2")
    (entry,) = [
        e for e in _ledger(trace, airline).entries if "change my recent reservation" in e.request.sentence
    ]
    assert entry.state == "open" and len(entry.request.tools) > 1  # any write of the reservation
    assert len(_left_open(trace, airline)) == 1


def test_a_run_ending_on_the_customers_request_leaves_it_open(airline: Policy) -> None:
    """The same run cut after the customer asked for the bag: nobody answered."""
    trace = _real("airline-task003-trial1")
    asked = next(p for p, s in enumerate(trace.steps) if "add one checked bag" in s.content)
    cut = Trace(header=trace.header, steps=trace.steps[: asked + 1])
    entry = next(e for e in _ledger(cut, airline).entries if e.request.pos == asked)
    assert entry.state == "open" and entry.at is None
    (finding,) = _left_open(cut, airline)
    assert "unanswered" in finding.mechanism


def test_a_request_carried_out_or_refused_on_the_record_is_not_open(airline: Policy) -> None:
    """A passenger change refused after reading the reservation (a policy reason, even a wrong
    one) and a baggage request carried out are not left open."""
    refused = _ledger(_real("airline-task043-trial1"), airline).entries
    assert [e.state for e in refused if e.request.tools == ("update_reservation_passengers",)] == ["refused"]
    assert _left_open(_real("airline-task043-trial1"), airline) == []
    assert _left_open(_real("airline-task003-trial2"), airline) == []


@pytest.mark.parametrize("key", ["words: [cancel]", "affirmations: [yes]"])
def test_the_old_word_lists_are_refused_by_name(key: str) -> None:
    """Request words and yes words are read no more: a policy declaring them is told so."""
    text = AIRLINE.read_text(encoding="utf-8")
    anchor = "    tools: [cancel_reservation]\n    record: reservation\n"
    if key.startswith("affirmations"):
        anchor = "  - id: explicit-confirmation\n"
    assert anchor in text
    with pytest.raises(InputError) as err:
        parse_policy(text.replace(anchor, anchor + "    " + key + "\n", 1), "airline.yaml")
    assert key.split(":")[0] in str(err.value) and "line" in str(err.value)


def test_tools_described_in_the_system_prompt_tell_the_writes_apart() -> None:
    """Retail's two address writes share 'address'; the system prompt's lines naming them
    ('... shipping address of a pending order', '... default address of a user') tell a request
    for the default address from one for the order's."""
    retail = load_policy(REPO / "examples" / "policies" / "retail.yaml")
    prompt = (
        "Tools:\n- modify_pending_order_address: modify the shipping address of a pending order\n"
        "- modify_user_address: modify the default address of a user\n"
    )
    ask = "Please update my default address to 12 Pine St, Austin."

    def ledger(system: str) -> RequestLedger:
        steps = [
            TraceStep(step_id="s0", index=0, actor="system", actor_kind="system", content=system),
            TraceStep(step_id="s1", index=1, actor="user", actor_kind="human", content=ask),
        ]
        return _ledger(Trace(header=TraceHeader(trace_id="retail-prompt"), steps=steps), retail)

    assert ledger("You are a retail agent.").tools_of(ask) == ()
    assert ledger(prompt).tools_of(ask) == ("modify_user_address",)
    assert ledger(prompt).tools_of("Ship it to my new shipping address instead, please.") == (
        "modify_pending_order_address",
    )
