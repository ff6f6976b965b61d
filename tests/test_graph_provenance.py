"""Provenance: value extraction, first appearance, carriage across hops, merge points, labels."""

from __future__ import annotations

import pytest

from graph import InteractionGraph, build_graph
from graph.values import amounts_match, extract_all, extract_mentions
from tests.graph_fixtures import invoice_trace, make_trace


@pytest.fixture(scope="module")
def invoice() -> InteractionGraph:
    g = build_graph(invoice_trace(), "annotated")
    assert g is not None
    return g


def _one(text: str, kind: str):  # -> Mention
    found = [m for m in extract_mentions(text) if m.kind == kind]
    assert found, f"no {kind} in {text!r}"
    return found[0]


@pytest.mark.parametrize(
    ("text", "value", "quantum", "currency"),
    [
        ("total $2,437,910", 2437910, 10, "USD"),
        ("about 2.44M", 2440000, 10000, None),
        ("USD 2.4 million", 2400000, 100000, "USD"),
        ("€1,200.50 due", 1200.5, 0.01, "EUR"),
        ("budget 10k dollars", 10000, 10000, "USD"),
    ],
)
def test_amounts_are_normalised_with_their_precision(
    text: str, value: float, quantum: float, currency: str
) -> None:
    m = _one(text, "amount")
    assert m.value == pytest.approx(value) and m.quantum == pytest.approx(quantum) and m.currency == currency


def test_amounts_match_within_rounding_only() -> None:
    exact, rounded, coarse = (_one(t, "amount") for t in ("$2,437,910", "2.44M", "USD 2.4 million"))
    assert amounts_match(exact, rounded) and amounts_match(exact, coarse) and amounts_match(rounded, coarse)
    assert not amounts_match(exact, _one("$2,537,910", "amount"))
    assert not amounts_match(_one("EUR 2.44M", "amount"), exact)  # currencies conflict
    assert not [
        m for m in extract_mentions("step 4471 of 2024") if m.kind == "amount"
    ]  # bare numbers skipped


def test_ids_emails_dates_statuses_hedges_attributions() -> None:
    text = (
        "Per the Finance Team, INV-4471 is not yet approved; mail Bob@Example.com by March 15, 2024.\n"
        "Tentatively, PO-77 was signed off on 3/15/2024 (source: CFO office)."
    )
    ms = extract_mentions(text)
    by_kind = {(m.kind, m.norm) for m in ms}
    assert {("id", "INV-4471"), ("id", "PO-77"), ("email", "bob@example.com")} <= by_kind
    assert [m.norm for m in ms if m.kind == "date"] == ["2024-03-15", "2024-03-15"]
    statuses = [m for m in ms if m.kind == "status"]
    assert [(s.norm, s.anchor, s.line) for s in statuses] == [
        ("not_approved", "INV-4471", 0),
        ("approved", "PO-77", 1),
    ]
    first_line, second_line = statuses
    assert first_line.attributions == ("finance team",) and first_line.hedges == ()
    assert second_line.hedges == ("tentatively",) and second_line.attributions == ("cfo office",)
    assert not [m for m in extract_mentions("billed per hour, 5 per cent") if m.attributions]


def test_ascii_and_unicode_text_extract_alike() -> None:
    """ASCII text runs the passes compiled with re.ASCII; a non-ASCII character anywhere in the
    trace switches all of it to the Unicode ones. Both must find the same values."""
    steps = [
        "Per the Finance Team, INV-4471 is not yet approved; ticket #20931 totals $2,437,910.",
        "PO-77 pending approval since 2024-03-15, probably 2.44M according to the controller.",
        "unapproved_x and x_approved and 12,000EUR and reference ABC-12x, signed off 3/15/2024.",
    ]
    ascii_found = extract_all(steps)
    unicode_found = extract_all([*steps, "café"])  # é: the whole blob is no longer ASCII
    assert ascii_found == unicode_found[:3] and unicode_found[3] == ()
    by_kind = {(m.kind, m.norm) for found in ascii_found for m in found}
    assert {("id", "INV-4471"), ("id", "#20931"), ("id", "PO-77"), ("id", "ABC-12X")} <= by_kind
    assert ("status", "approved") in by_kind  # after '_': a word start for the phrase rules
    assert [m.norm for m in ascii_found[2] if m.kind == "status"] == ["approved", "approved"]
    assert ascii_found[1][-1].attributions == ("controller",)


def test_first_appearance_of_a_value_in_any_spelling(invoice: InteractionGraph) -> None:
    for spelling in ("$2,437,910", "2.44M", "USD 2.4 million"):
        first = invoice.value_first_appearance(spelling)
        assert first is not None and first.step_id == "s0" and first.surface == "$2,437,910"
        assert first.edge_refs == ("e:s0:0",)
    status = invoice.value_first_appearance("approved")
    assert status is not None and status.step_id == "s3" and status.surface == "approved"
    assert invoice.value_first_appearance("$9,999,999") is None


def test_propagation_across_hops_classifies_each_carriage(invoice: InteractionGraph) -> None:
    prop = invoice.value_propagation("$2,437,910")
    assert prop.found and prop.kind == "amount"
    hops = {h.step_id: h for h in prop.hops}
    assert list(hops) == ["s0", "s1", "s3", "s4", "s5", "s6"]  # s2 (lunch) never carried it
    assert hops["s0"].carriage == "origin" and hops["s0"].route == "origin"
    # hop 1: analyst -> controller: $2,437,910 re-written as 2.44M, the attribution dropped
    assert hops["s1"].source_step == "s0" and hops["s1"].route == "edge" and hops["s1"].via_edge == "e:s0:0"
    assert set(hops["s1"].changes) == {"transformed", "attribution_dropped"}
    assert hops["s1"].dropped_attributions == ["finance team"]
    assert hops["s1"].surface == "2.44M"
    # hop 2: controller -> cfo_assistant: 'submitted for approval' became 'approved', the hedge gone
    assert hops["s3"].source_step == "s1" and hops["s3"].carriage == "status_changed"
    assert set(hops["s3"].changes) == {"status_changed", "hedge_dropped"}
    assert (hops["s3"].status_from, hops["s3"].status) == ("submitted_for_approval", "approved")
    assert hops["s3"].status_upgraded and hops["s3"].dropped_hedges == ["i'd lean towards"]
    # hop 3: cfo_assistant -> payments, who pays it as USD 2.4 million through the tool
    assert hops["s4"].source_step == "s3" and hops["s4"].carriage == "transformed"
    # the tool's result returns the same text: verbatim, delivered over the tool-call edge
    assert hops["s5"].carriage == "verbatim" and hops["s5"].changes == [] and hops["s5"].route == "edge"
    assert hops["s6"].source_step == "s5"


def test_status_and_plain_text_propagation(invoice: InteractionGraph) -> None:
    prop = invoice.value_propagation("submitted for approval")
    assert prop.kind == "status" and prop.hops[0].step_id == "s0"
    changed = [h for h in prop.hops if "status_changed" in h.changes]
    assert [h.step_id for h in changed] == ["s3"]
    text = invoice.value_propagation("Lunch is at noon")
    assert text.kind == "text" and [h.step_id for h in text.hops] == ["s2"]
    assert not invoice.value_propagation("nothing like this").found


def test_unknown_route_when_no_edge_delivered_the_value() -> None:
    g = build_graph(
        make_trace(
            "chat",
            [
                {"actor": "a", "content": "Order ORD-9 is approved."},
                {"actor": "b", "content": "ORD-9 is approved, shipping now."},
            ],
        ),
        "annotated",
    )
    assert g is not None
    hop = g.value_propagation("ORD-9").hops[1]
    assert hop.route == "unknown_route" and hop.source_step == "s0" and hop.carriage == "verbatim"


def test_merge_points_find_conflicting_versions_received() -> None:
    g = build_graph(
        make_trace(
            "merge",
            [
                {
                    "actor": "ops",
                    "recipients": ["lead"],
                    "content": "INV-7 is approved. INV-7 total $1,200,000",
                },
                {"actor": "audit", "recipients": ["lead"], "content": "INV-7 is rejected. INV-7 total 1.2M"},
                {"actor": "finance", "recipients": ["lead"], "content": "INV-7 total $950,000"},
                {"actor": "x", "content": "INV-7 is pending"},  # broadcast: reaches no one in particular
            ],
        ),
        "annotated",
    )
    assert g is not None
    points = {p.fact: p for p in g.merge_points("lead")}
    status = points["status of INV-7"]
    assert [(v.value, v.senders) for v in status.versions] == [("approved", ["ops"]), ("rejected", ["audit"])]
    amount = points["total of INV-7"]
    assert len(amount.versions) == 2  # $1,200,000 and 1.2M agree; $950,000 conflicts
    assert amount.versions[0].step_ids == ["s0", "s1"] and amount.versions[1].step_ids == ["s2"]
    assert g.merge_points("ops") == []


def test_authority_permission_and_unconsulted_obligations(invoice: InteractionGraph) -> None:
    g = build_graph(
        make_trace(
            "labels",
            [
                {
                    "actor": "bob",
                    "recipients": ["ap"],
                    "content": "I am the CFO. I approve the wire of $50,000.",
                },
                {
                    "actor": "ap",
                    "kind": "document_read",
                    "raw": {"document": "wire-policy.md"},
                    "content": "Only the treasury team can release wires. Salary data is confidential.",
                },
                {"actor": "ap", "kind": "tool_call", "tool": {"name": "wire"}, "content": "wire $50,000"},
                {"actor": "clerk", "kind": "tool_call", "tool": {"name": "wire"}, "content": "wire again"},
            ],
            metadata={"policies": ["wire-policy.md"], "roles": {"ap": "Accounts payable clerk"}},
        ),
        "annotated",
    )
    assert g is not None and g.annotations is not None
    bases = {(a.participant, a.basis) for a in g.annotations.authority}
    assert {("bob", "title"), ("bob", "claim"), ("ap", "role_card")} <= bases
    claim = next(a for a in g.annotations.authority if a.basis == "title")
    assert claim.step_id == "s0" and claim.edge_ref == "e:s0:0" and claim.quote in g.trace.steps[0].content
    perms = {(p.subject, p.allowed) for p in g.annotations.permission}
    assert {("treasury team", True), ("*", False)} <= perms
    unread = [(o.participant, o.document, o.acted_step) for o in g.annotations.obligations]
    assert unread == [("clerk", "wire-policy.md", "s3")]  # ap read it before acting; clerk never did
    assert [(o.participant, o.acted_step) for o in invoice.annotations.obligations] == [("payments", "s4")]
