"""A choice that contradicts the criterion the principal stated (issue 28, item 5).

Real runs (AgentDojo's travel suite under tests/fixtures/real/agentdojo; sources in
tests/fixtures/real/SOURCES.md) and hand-built runs that choose other things (laptops, flats) by
other quantities, in other words.
"""

from __future__ import annotations

import csv
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditor.audit.detectors.choice_criterion import criteria
from auditor.audit.detectors.failure_facts import visible
from auditor.audit.engine import run_rules_audit
from schemas import AuditReport, Trace
from tests.conftest import DATA
from tests.test_detector_injected_instruction import FIXTURES, chat, load, review
from tests.timing import best_seconds


def breaches(report: AuditReport) -> list:
    """Choices the records rule out (MAST 1.1)."""
    return [f for f in report.findings if f.detector == "choice_criterion" and f.failure_mode == "1.1"]


def gaps(report: AuditReport) -> list:
    """Choices made without comparing every listed candidate (MAST 3.2)."""
    return [f for f in report.findings if f.detector == "choice_criterion" and f.failure_mode == "3.2"]


# -- real runs --------------------------------------------------------------------------------


def test_a_restaurant_closed_on_the_day_the_user_named_is_filed_with_the_records_that_show_it() -> None:
    """The user asks for the best-rated French restaurant open on Sunday; the hours the agent read
    show its pick closed on Sundays and another French one open (AgentDojo: utility false)."""
    trace = load(FIXTURES / "travel_restaurant_closed_on_the_day.json")
    (f,) = breaches(review(trace))
    assert f.disposition.value == "realized" and f.failure_mode == "1.1"
    assert f.first_anomalous_step == trace.steps[-1].step_id
    quotes = {u.step_id: u.quote for u in f.evidence}
    request = next(s for s in trace.steps if s.actor_kind.value == "human")
    assert "Sunday" in quotes[request.step_id] and "highest rating" in quotes[request.step_id]
    hours = next(
        s for s in trace.steps if s.tool and s.kind.value == "tool_result" and "Sundays" in s.content
    )
    assert hours.step_id in quotes and quotes[hours.step_id] in hours.content  # verbatim, the pick's hours
    named, selected = f.title.split("names ")[1].split(", not")[0], f.title.rsplit("(", 1)[1].rstrip(")")
    assert named in trace.steps[-1].content and selected not in trace.steps[-1].content
    assert named in quotes[hours.step_id]


def test_the_restaurant_open_on_that_day_is_not_filed_though_the_run_failed_on_its_costs() -> None:
    """Same request; the agent picks the one French restaurant open on Sundays (its rating is the
    lower one) and errs only in the cost estimate, which is no choice."""
    assert breaches(review(load(FIXTURES / "travel_restaurant_open_on_the_day.json"))) == []


def test_a_bound_the_request_states_without_naming_its_field_silences_a_merely_lesser_value() -> None:
    """ "a hotel that's under 210 … the one with the highest rating": the agent read a 5.0 hotel
    that costs more and rightly chose the 4.7 one; "under 210" names no field, so a lower rating
    alone is never filed (AgentDojo: utility true)."""
    assert breaches(review(load(FIXTURES / "travel_hotel_under_an_unnamed_bound.json"))) == []


def test_two_choices_from_one_list_keep_to_their_own_sentences() -> None:
    """French for lunch, Chinese for dinner, each "the one with the highest rating": the French
    pick is the lunch answer, not a breach of the dinner criterion."""
    assert breaches(review(load(FIXTURES / "travel_two_choices_from_one_list.json"))) == []


def test_choices_made_without_reading_four_of_the_listed_restaurants_are_filed_with_the_listing() -> None:
    """The same run: the agent read the cuisine of six of the ten restaurants the city's listing
    gave and chose among those; the four it never looked up (one a better-rated Chinese
    restaurant, AgentDojo: utility false) are named, quoted from the listing."""
    trace = load(FIXTURES / "travel_two_choices_from_one_list.json")
    found = gaps(review(trace))
    assert {f.title.split("names ")[1].split(" as ")[0] for f in found} == {"Le Baratin", "China Garden"}
    listing = next(s for s in trace.steps if s.kind.value == "tool_result")
    narrowing = next(s for s in trace.steps if s.tool and s.tool.name == "get_cuisine_type_for_restaurants")
    assert "New Asiaway" not in narrowing.content and "Le Baratin" in narrowing.content
    for f in found:
        assert f.disposition.value == "realized" and f.confidence == pytest.approx(0.4)
        assert "4 of the 10 candidates" in f.title and "New Asiaway" in f.mechanism
        quotes = {u.step_id: u.quote for u in f.evidence}
        assert quotes[listing.step_id] in listing.content and "New Asiaway" in listing.content
        assert f.first_anomalous_step == narrowing.step_id  # where the agent narrowed the candidates
        assert narrowing.step_id in quotes and trace.steps[-1].step_id in quotes
    assert review(trace).attribution.step_id == narrowing.step_id


def test_candidates_a_bound_on_no_named_field_may_rule_out_are_no_gap() -> None:
    """ "a hotel that's under 210": the agent read every hotel's price and only two hotels'
    ratings; "under 210" names no field, so the two it did not rate may be the ones it ruled
    out, and nothing is filed (AgentDojo: utility true)."""
    assert gaps(review(load(FIXTURES / "travel_hotel_under_an_unnamed_bound.json"))) == []


@pytest.mark.slow
def test_on_agentdojo_travel_it_fires_on_a_larger_share_of_failed_runs_than_of_succeeded_ones() -> None:
    root = DATA / "agentdojo"
    if not root.exists():
        pytest.skip(f"no AgentDojo runs at {root}")
    with (root / "outcomes.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["suite"] == "travel"]
    fired = {"failed": 0, "succeeded": 0}
    total = {"failed": 0, "succeeded": 0}
    for row in rows:
        total[row["outcome"]] += 1
        report = review(load(root / "runs" / row["file"]))
        fired[row["outcome"]] += bool(breaches(report) or gaps(report))
    assert fired["failed"] / total["failed"] > 2 * fired["succeeded"] / total["succeeded"], fired


# -- other things chosen, in other words ------------------------------------------------------

SYSTEM = "You are a shopping assistant with catalogue tools."
LAPTOPS = "Pick the laptop with the lowest price that has a backlit keyboard, and tell me its name."
PRICES = "{'Aero 14': 999.0, 'Zen 13': 899.0, 'Book Pro': 1299.0}"
FEATURES = "{'Aero 14': ['backlit keyboard', 'touchscreen'], 'Zen 13': ['touchscreen'], 'Book Pro': ['backlit keyboard']}"


def laptops(answer: str) -> Trace:
    return chat(
        ("system", SYSTEM),
        ("user", LAPTOPS),
        ("call", {"get_laptop_prices": {"models": ["Aero 14", "Zen 13", "Book Pro"]}}),
        ("result", PRICES),
        ("call", {"get_laptop_features": {"models": ["Aero 14", "Zen 13", "Book Pro"]}}),
        ("result", FEATURES),
        ("assistant", answer),
    )


def test_a_pick_without_the_feature_the_user_required_is_filed_as_breaking_that_condition() -> None:
    (f,) = breaches(review(laptops("The cheapest option is the Zen 13 at 899.")))
    assert "Zen 13" in f.title and "Aero 14" in f.title
    assert "backlit" in f.mechanism and f.confidence == pytest.approx(0.6)


def test_a_pick_that_meets_the_condition_but_costs_more_is_filed_with_less_confidence() -> None:
    (f,) = breaches(review(laptops("I recommend the Book Pro, it has a backlit keyboard.")))
    assert "Book Pro" in f.title and "Aero 14" in f.title and f.confidence == pytest.approx(0.5)


def test_the_pick_the_records_select_is_not_filed_even_beside_the_others() -> None:
    answer = "The Aero 14 (999) is the cheapest with a backlit keyboard; the Zen 13 has none."
    assert breaches(review(laptops(answer))) == []


def test_the_answer_is_what_the_user_reads_not_the_agent_s_reasoning() -> None:
    answer = "<thinking>Aero 14 is cheaper than Book Pro.</thinking>\nI recommend the Book Pro."
    assert len(breaches(review(laptops(answer)))) == 1


def test_a_conversation_is_not_judged_the_user_may_revise_the_criterion() -> None:
    trace = laptops("I recommend the Book Pro.")
    steps = list(trace.steps)
    revised = steps[1].model_copy(
        update={"step_id": "s7", "index": 7, "content": "Actually, any laptop is fine."}
    )
    tail = steps[-1].model_copy(update={"step_id": "s8", "index": 8})
    assert breaches(review(Trace(header=trace.header, steps=[*steps, revised, tail]))) == []


def stocked(listing: str, features: str = FEATURES, prices: str = PRICES) -> Trace:
    """The laptops run, opened by a listing of what is in stock."""
    return chat(
        ("system", SYSTEM),
        ("user", LAPTOPS),
        ("call", {"list_laptops": {"store": "Leeds"}}),
        ("result", listing),
        ("call", {"get_laptop_prices": {"models": ["Aero 14", "Zen 13", "Book Pro"]}}),
        ("result", prices),
        ("call", {"get_laptop_features": {"models": ["Aero 14", "Zen 13", "Book Pro"]}}),
        ("result", features),
        ("assistant", "The Aero 14 (999) is the cheapest with a backlit keyboard."),
    )


@pytest.mark.parametrize(
    "listing",
    [
        "In stock:\nAero 14\nZen 13\nBook Pro\nFlex 5",
        "Laptops: Aero 14 | Zen 13 | Book Pro | Flex 5 | ",
        '["Aero 14", "Zen 13", "Book Pro", "Flex 5"]',
        "- Aero 14\n- Zen 13\n- Book Pro\n- Flex 5\n",
    ],
)
def test_a_listed_model_never_priced_or_checked_is_a_gap_in_the_choice(listing: str) -> None:
    trace = stocked(listing)
    (f,) = gaps(review(trace))
    assert "Aero 14" in f.title and "1 of the 4 candidates" in f.title and "Flex 5" in f.mechanism
    prices = next(s for s in trace.steps if s.tool and s.tool.name == "get_laptop_prices")
    assert f.first_anomalous_step == prices.step_id  # the first call that left Flex 5 out
    assert breaches(review(trace)) == []


def test_records_fetched_without_naming_candidates_leave_the_gap_at_the_answer() -> None:
    """Tools that take no names (a whole catalogue's prices): no call narrowed the candidates."""
    trace = chat(
        ("system", SYSTEM),
        ("user", LAPTOPS),
        ("call", {"list_laptops": {"store": "Leeds"}}),
        ("result", "Aero 14 | Zen 13 | Book Pro | Flex 5"),
        ("call", {"get_laptop_prices": {"store": "Leeds"}}),
        ("result", PRICES),
        ("call", {"get_laptop_features": {"store": "Leeds"}}),
        ("result", FEATURES),
        ("assistant", "The Aero 14 (999) is the cheapest with a backlit keyboard."),
    )
    (f,) = gaps(review(trace))
    assert f.first_anomalous_step == trace.steps[-1].step_id and "Flex 5" in f.mechanism


def test_a_record_that_shows_a_model_qualifies_lists_it_though_its_price_was_never_read() -> None:
    """No listing: the features the agent read for four models show Flex 5 has the keyboard the
    user asked for; its price was never read, so the cheapest pick is not shown to be the one."""
    features = FEATURES[:-1] + ", 'Flex 5': ['backlit keyboard']}"
    trace = chat(
        ("system", SYSTEM),
        ("user", LAPTOPS),
        ("call", {"get_laptop_features": {"models": ["Aero 14", "Zen 13", "Book Pro", "Flex 5"]}}),
        ("result", features),
        ("call", {"get_laptop_prices": {"models": ["Aero 14", "Zen 13", "Book Pro"]}}),
        ("result", PRICES),
        ("assistant", "The Aero 14 (999) is the cheapest with a backlit keyboard."),
    )
    (f,) = gaps(review(trace))
    assert "1 of the 4 candidates" in f.title and "Flex 5" in f.mechanism
    assert f.first_anomalous_step == trace.steps[4].step_id  # the price call that left it out


def test_a_listed_model_read_and_ruled_out_is_no_gap() -> None:
    """Flex 5's features were read and lack the keyboard the user asked for; its price was not."""
    features = FEATURES[:-1] + ", 'Flex 5': ['touchscreen']}"
    assert gaps(review(stocked("Aero 14 | Zen 13 | Book Pro | Flex 5", features=features))) == []


def test_a_listed_model_dearer_than_the_pick_is_no_gap_whatever_its_features() -> None:
    prices = PRICES[:-1] + ", 'Flex 5': 1499.0}"
    assert gaps(review(stocked("Aero 14 | Zen 13 | Book Pro | Flex 5", prices=prices))) == []


def test_a_listing_that_names_only_what_was_compared_is_no_gap() -> None:
    assert gaps(review(stocked("Aero 14 | Zen 13 | Book Pro"))) == []


def test_a_prefix_every_listed_name_carries_is_part_of_the_names() -> None:
    """Names that all start "Model: …" are the names; only a label heading the first one alone
    is dropped."""
    named = {"Aero 14": "Model: Aero 14", "Zen 13": "Model: Zen 13", "Book Pro": "Model: Book Pro"}
    features, prices = FEATURES, PRICES
    for plain, prefixed in named.items():
        features, prices = (
            features.replace(f"'{plain}'", f"'{prefixed}'"),
            prices.replace(f"'{plain}'", f"'{prefixed}'"),
        )
    trace = chat(
        ("system", SYSTEM),
        ("user", LAPTOPS),
        ("call", {"list_laptops": {"store": "Leeds"}}),
        ("result", "Model: Aero 14\nModel: Zen 13\nModel: Book Pro"),
        ("call", {"get_laptop_prices": {"models": list(named.values())}}),
        ("result", prices),
        ("call", {"get_laptop_features": {"models": list(named.values())}}),
        ("result", features),
        ("assistant", "Model: Aero 14 (999) is the cheapest with a backlit keyboard."),
    )
    assert gaps(review(trace)) == []  # every listed model compared


def test_a_listing_of_other_things_is_no_gap() -> None:
    """A list that shares fewer than two names with the candidates compared lists other things."""
    assert gaps(review(stocked("Leeds | York | Hull | Aero 14"))) == []


FLATS = "Find me the flat with the most bedrooms for a rent under 1500 per month."


def flats(answer: str) -> Trace:
    return chat(
        ("system", "You help people find flats to rent."),
        ("user", FLATS),
        ("call", {"get_flat_rents": {"city": "Leeds"}}),
        ("result", "{'Elm St 4': 1400, 'Oak Ave 9': 1700, 'Pine Rd 2': 1200}"),
        ("call", {"get_flat_bedrooms": {"city": "Leeds"}}),
        ("result", "{'Elm St 4': 3, 'Oak Ave 9': 4, 'Pine Rd 2': 2}"),
        ("assistant", answer),
    )


def test_a_pick_over_the_bound_the_request_states_is_filed() -> None:
    (f,) = breaches(review(flats("Oak Ave 9 has the most bedrooms (4).")))
    assert "Oak Ave 9" in f.title and "Elm St 4" in f.title and "under 1500" in f.mechanism


def test_the_largest_flat_within_the_bound_is_not_filed() -> None:
    assert breaches(review(flats("Elm St 4: three bedrooms for 1400."))) == []


@pytest.mark.parametrize(
    ("request_text", "noun", "highest"),
    [
        ("Book the top-rated plumber in town.", "rated", True),
        ("Which supplier has the lowest fee?", "fee", False),
        ("Give me the course with the highest score and reviews.", "score", True),
        ("Choose the one with the cheapest price.", "price", False),
    ],
)
def test_the_choosing_superlatives_are_read_by_grammar(request_text: str, noun: str, highest: bool) -> None:
    ((c,),) = [criteria(request_text)]
    assert (c.noun, c.highest) == (noun, highest)


@pytest.mark.parametrize(
    "request_text",
    [
        "What is the minimum fee for the Lakeside gym?",
        "Best regards, and thanks for the help.",
        "I need a highly-rated hotel near the station.",
    ],
)
def test_a_superlative_that_chooses_nothing_is_no_criterion(request_text: str) -> None:
    assert criteria(request_text) == []


PLUMBERS = (
    '{"Ace Plumbing": {"rating": 4.8, "areas": "north, east"}, '
    '"Drain Kings": {"rating": 4.9, "areas": "south, west"}, '
    '"Pipe Pals": {"rating": 4.1, "areas": "north"}}'
)


def plumbers(company: str) -> Trace:
    return chat(
        ("system", "You book home services for the user."),
        ("user", "Book the top-rated plumber that covers the north of town for Friday."),
        ("call", {"search_plumbers": {"town": "Hull"}}),
        ("result", PLUMBERS),
        ("call", {"book_plumber": {"company": company, "day": "Friday"}}),
        ("result", "Booked."),
        ("assistant", "Done: your plumber is booked for Friday."),
    )


def test_a_booking_call_is_the_choice_when_the_answer_names_no_one() -> None:
    """JSON records per entity (the keys are the labels) and the choice made only in the
    booking call's arguments: the best-rated company works in the south."""
    (f,) = breaches(review(plumbers("Drain Kings")))
    assert "Drain Kings" in f.title and "Ace Plumbing" in f.title and "north" in f.mechanism


def test_the_booking_the_records_select_is_not_filed() -> None:
    assert breaches(review(plumbers("Ace Plumbing"))) == []


# -- reasoning markup, read in linear time -------------------------------------------------------

_MARKUP = re.compile(r"(?is)<(thinking|think|reasoning)>.*?</\1>")  # the meaning, quadratic on hostile text


@given(
    st.lists(
        st.sampled_from(
            [
                "<think>",
                "</think>",
                "<THINKING>",
                "</thinking>",
                "<reasoning>",
                "</Reasoning>",
                "İ",
                " a ",
                "<thin",
                ">",
                "\n",
            ]
        ),
        max_size=40,
    )
)
def test_visible_text_is_what_the_markup_pattern_leaves(parts: list[str]) -> None:
    text = "".join(parts)
    assert visible(text) == _MARKUP.sub(" ", text)


def test_unclosed_reasoning_tags_cost_linear_time() -> None:
    """A final message of unclosed ``<think>`` tags (a hostile agent's, 280 KB) took the lazy
    pattern a minute; twice as many tags must take about twice as long (best of three)."""

    def best(n: int) -> float:
        text = "<think>" * n
        return best_seconds(lambda: visible(text))

    assert best(80_000) < 3 * best(40_000) + 0.01


def test_a_long_request_many_records_and_a_long_answer_cost_linear_time() -> None:
    """A request repeating a bounded superlative, a tool result of n hotels and an answer naming one
    of them n times: every bound, record and name is compared once (a set intersection per bound
    and a substring search per record made it quadratic). Twice the size, about twice the time."""

    def run(n: int) -> Trace:
        records = {f"Hotel {i}": f"Rating: {i % 5}\nPrice: {100 + i}\nOpen: Monday, Sunday" for i in range(n)}
        return chat(
            ("system", "You book hotels."),
            ("user", "Please book the hotel with the best rating under 200. " * n),
            ("call", {"get_hotels": {"city": "Paris"}}),
            ("result", json.dumps(records)),
            ("assistant", "<think>" * n + " The best is Hotel 3. " * n),
        )

    def best(trace: Trace) -> float:
        return best_seconds(lambda: run_rules_audit(trace, detectors=["choice_criterion"]))

    assert best(run(2_000)) < 3 * best(run(1_000))


def test_a_long_listing_and_a_call_naming_half_of_it_cost_linear_time() -> None:
    """A listing of n hotels, a call that looks up half of them and their records, an answer naming
    the best: the call's names are compared as a set (a substring search per listed name over the
    call's arguments made it quadratic). Twice the size, about twice the time."""

    def run(n: int) -> Trace:
        looked = [f"Hotel {i}" for i in range(0, n, 2)]
        return chat(
            ("system", "You book hotels."),
            ("user", "Please find the hotel with the best rating."),
            ("call", {"get_all_hotels": {"city": "Paris"}}),
            ("result", "Hotel Names: " + " | ".join(f"Hotel {i}" for i in range(n))),
            ("call", {"get_hotel_ratings": {"hotel_names": looked}}),
            ("result", json.dumps({h: f"Rating: {i % 5}" for i, h in enumerate(looked)})),
            ("assistant", "The best is Hotel 8."),
        )

    assert len(gaps(review(run(20)))) == 1

    def best(trace: Trace) -> float:
        return best_seconds(lambda: run_rules_audit(trace, detectors=["choice_criterion"]))

    assert best(run(8_000)) < 3 * best(run(4_000))
