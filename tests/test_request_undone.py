"""A request of the principal's one turn that the run ended without acting on (issue 28, item 5).

Real runs (AgentDojo's banking suite under tests/fixtures/real/agentdojo, a Vercel AI SDK run under
tests/fixtures/real/vercel-ai; sources in tests/fixtures/real/SOURCES.md) and hand-built runs that
ask for other actions through other tools, in other words.
"""

from __future__ import annotations

import csv

import pytest

from auditor.audit.detectors.request_undone import action_requests
from ingest import open_traces
from schemas import AuditReport, Trace
from tests.conftest import DATA, REPO
from tests.test_detector_injected_instruction import FIXTURES, chat, load, review

SYSTEM = "You are an assistant with calendar, e-mail and file tools."


def undone(report: AuditReport) -> list:
    return [f for f in report.findings if f.detector == "request_undone"]


# -- real runs --------------------------------------------------------------------------------


def test_a_bill_left_unpaid_after_declining_an_injection_is_filed_with_both_quotes() -> None:
    """The agent refused the instruction planted in the bill and then asked its user for the
    amount: the one request ("pay the bill") was never carried out (AgentDojo: utility false)."""
    trace = load(FIXTURES / "banking_pay_bill_injected_declined.json")
    (f,) = undone(review(trace))
    assert f.disposition.value == "realized" and f.failure_mode == "3.1"
    assert f.first_anomalous_step == trace.steps[-1].step_id
    request = next(s for s in trace.steps if s.actor_kind.value == "human")
    quotes = {u.step_id: u.quote for u in f.evidence}
    assert "pay the bill" in quotes[request.step_id]
    assert quotes[trace.steps[-1].step_id] in trace.steps[-1].content


def test_the_same_bill_paid_is_not_filed() -> None:
    assert undone(review(load(FIXTURES / "banking_pay_bill_clean.json"))) == []


def test_a_text_the_user_asked_to_be_written_is_the_answer_not_an_undone_action() -> None:
    """ "Write a haiku about programming." and the agent's haiku: composing is answering."""
    traces = [
        Trace(header=i.header, steps=list(i.steps()))
        for i in open_traces(REPO / "tests" / "fixtures" / "real" / "vercel-ai" / "ai-generateText.json")
    ]
    asked = [t for t in traces if any(s.content == "Write a haiku about programming." for s in t.steps)]
    assert asked
    for trace in asked:
        assert undone(review(trace)) == []


@pytest.mark.slow
def test_on_agentdojo_it_fires_on_a_larger_share_of_failed_runs_than_of_succeeded_ones_in_each_suite() -> (
    None
):
    root = DATA / "agentdojo"
    if not root.exists():
        pytest.skip(f"no AgentDojo runs at {root}")
    with (root / "outcomes.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for suite in sorted({r["suite"] for r in rows}):
        fired = {"failed": 0, "succeeded": 0}
        total = {"failed": 0, "succeeded": 0}
        for row in (r for r in rows if r["suite"] == suite):
            total[row["outcome"]] += 1
            fired[row["outcome"]] += bool(undone(review(load(root / "runs" / row["file"]))))
        assert fired["failed"] / total["failed"] > fired["succeeded"] / total["succeeded"], (suite, fired)


# -- the grammar, on other words --------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "verbs"),
    [
        ("Please reschedule my dentist appointment to Friday.", [("reschedule",)]),
        ("Could you also invite Dana to the kickoff meeting?", [("invite",)]),
        ("Open the shared folder and delete the old drafts.", [("delete",)]),
        ("Set up a weekly transfer of 40 to my savings account.", [("set",)]),
        ("Go ahead and cancel it if the price went up.", [("cancel",)]),
        ("Invite her to the channel, then post the agenda there.", [("invite", "post")]),
        ("I need you to transfer the deposit today.", [("transfer",)]),
        ("Tell me the cheapest flight and recommend a hotel near the venue.", []),
        ("What is my balance? Can you check the last five payments?", []),
        ("Question: which of these statements holds? Express your answer as a letter.", []),
        ("During the first week of May, the museum hosted an exhibit. Find its name.", []),
        ("Please don't send anything yet.", []),
    ],
)
def test_which_sentences_ask_for_an_action(message: str, verbs: list[tuple[str, ...]]) -> None:
    assert [r.verbs for r in action_requests(message)] == verbs


def test_a_request_the_agent_answered_with_a_question_is_undone() -> None:
    trace = chat(
        ("system", SYSTEM),
        ("user", "Please forward the latest invoice to accounting@firm.example."),
        ("call", {"search_emails": {"query": "invoice"}}),
        ("result", "1 result: 'Invoice March' from billing@vendor.example"),
        (
            "assistant",
            "I found the March invoice. Should I forward it now, or do you want to review it first?",
        ),
    )
    (f,) = undone(review(trace))
    assert "'forward'" in f.title and f.confidence == pytest.approx(0.6)


def test_the_answer_is_quoted_by_what_the_user_reads_not_its_reasoning_markup() -> None:
    """A reply that opens with ``<thinking>`` (Claude's habit in AgentDojo) was quoted by its first
    line, the tag alone: the quote is now the first line the user reads."""
    question = "Before I can send the payment, could you tell me today's date?"
    trace = chat(
        ("system", SYSTEM),
        ("user", "Please send Spotify the difference for the March payment."),
        ("call", {"get_most_recent_transactions": {"n": 100}}),
        ("result", "- amount: 50.0\n  subject: Spotify Premium"),
        ("assistant", f"<thinking>\nThe date is unknown; ask for it.\n</thinking>\n\n{question}"),
    )
    (f,) = undone(review(trace))
    assert f.evidence[-1].quote == question


def test_a_request_carried_out_by_any_write_is_not_filed() -> None:
    trace = chat(
        ("system", SYSTEM),
        ("user", "Please forward the latest invoice to accounting@firm.example."),
        ("call", {"search_emails": {"query": "invoice"}}),
        ("result", "1 result: 'Invoice March' (id 17)"),
        ("call", {"send_email": {"to": "accounting@firm.example", "attachment_id": "17"}}),
        ("result", "sent"),
        ("assistant", "Forwarded the March invoice to accounting."),
    )
    assert undone(review(trace)) == []


def test_a_conditional_request_counts_with_less_confidence() -> None:
    trace = chat(
        ("system", SYSTEM),
        ("user", "Look up the weather in Oslo. If it will rain, add an umbrella reminder to my calendar."),
        ("call", {"get_weather": {"city": "Oslo"}}),
        ("result", "Rain expected all day."),
        ("assistant", "It will rain in Oslo tomorrow."),
    )
    (f,) = undone(review(trace))
    assert f.confidence == pytest.approx(0.4)


def test_a_conversation_of_several_turns_is_left_to_the_request_ledger() -> None:
    trace = chat(
        ("system", SYSTEM),
        ("user", "Please delete the duplicate contact for Sam."),
        ("assistant", "There are two Sams. Which one?"),
        ("user", "The one without a phone number."),
        ("assistant", "Understood, I will keep both for now."),
    )
    assert undone(review(trace)) == []
