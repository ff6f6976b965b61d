"""Topology queries: neighbours, chains, paths to the final output, reads, fan-in/out, search."""

from __future__ import annotations

import pytest

from graph import InteractionGraph, build_graph
from tests.graph_fixtures import invoice_trace, make_trace


@pytest.fixture(scope="module", params=["topology", "annotated"])
def invoice(request: pytest.FixtureRequest) -> InteractionGraph:
    g = build_graph(invoice_trace(), request.param)
    assert g is not None
    return g


def test_neighbours_list_links_with_edges_and_steps(invoice: InteractionGraph) -> None:
    n = invoice.neighbours("controller")
    assert [(link.node, link.edge_refs, link.step_ids) for link in n.outgoing] == [
        ("cfo_assistant", ["e:s1:0"], ["s1"])
    ]
    assert [(link.node, link.step_ids) for link in n.incoming] == [("finance_analyst", ["s0"])]


def test_handoff_chain_is_time_respecting(invoice: InteractionGraph) -> None:
    chain = invoice.handoff_chain("s0", "s4")
    assert chain.found
    assert [(h.step_id, h.source, h.target) for h in chain.hops] == [
        ("s0", "finance_analyst", "controller"),
        ("s1", "controller", "cfo_assistant"),
        ("s3", "cfo_assistant", "payments"),
        ("s4", "payments", "tool:pay_invoice"),
    ]
    assert not invoice.handoff_chain("s4", "s0").found  # backwards in time
    assert not invoice.handoff_chain("s2", "s3").found  # the intern's broadcast reached no one named


def test_through_unknown_lets_broadcasts_reach_everyone() -> None:
    g = build_graph(
        make_trace(
            "chat",
            [
                {"actor": "a", "content": "x"},
                {"actor": "b", "content": "y"},
                {"actor": "c", "kind": "final_output", "content": "z"},
            ],
        ),
        "topology",
    )
    assert g is not None
    assert not g.handoff_chain("s0", "s1").found
    chain = g.handoff_chain("s0", "s2", through_unknown=True)
    assert chain.found and chain.through_unknown and [h.step_id for h in chain.hops] == ["s0", "s2"]
    assert g.paths_to_final_output("s0") == []
    assert [c.to_step for c in g.paths_to_final_output("s0", through_unknown=True)] == ["s2"]


def test_paths_to_final_output(invoice: InteractionGraph) -> None:
    paths = invoice.paths_to_final_output("s1")
    assert len(paths) == 1 and paths[0].to_step == "s6"
    assert [h.edge_ref for h in paths[0].hops] == ["e:s1:0", "e:s3:0", "e:s6:0"]
    assert paths[0].hops[-1].target == "final_output"
    assert invoice.paths_to_final_output("s2") == []


def test_document_reads_and_fans() -> None:
    g = build_graph(
        make_trace(
            "reads",
            [
                {"actor": "a", "kind": "document_read", "raw": {"document": "policy.md"}, "content": "p"},
                {
                    "actor": "b",
                    "kind": "document_read",
                    "tool": {"name": "open", "arguments": {"path": "runbook"}},
                    "content": "r",
                },
                {"actor": "a", "recipients": ["b", "c"], "content": "hi"},
                {"actor": "c", "recipients": ["b"], "content": "yo"},
            ],
        ),
        "topology",
    )
    assert g is not None
    assert [(r.document, r.reader, r.step_id, r.edge_ref) for r in g.document_reads()] == [
        ("policy.md", "a", "s0", "e:s0:0"),
        ("runbook", "b", "s1", "e:s1:0"),
    ]
    assert [r.step_id for r in g.document_reads(reader="b")] == ["s1"]
    fan_in = g.fan_in("b")
    assert fan_in.edge_count == 3 and fan_in.per_neighbour == {"doc:runbook": 1, "a": 1, "c": 1}
    fan_out = g.fan_out("a")
    assert fan_out.edge_count == 2 and fan_out.distinct == 2


def test_steps_by_filters_combine_and_truncate(invoice: InteractionGraph) -> None:
    assert [h.step_id for h in invoice.steps_by(participant="payments").hits] == ["s4", "s6"]
    assert [h.step_id for h in invoice.steps_by(kind="tool_call").hits] == ["s4"]
    hits = invoice.steps_by(text="inv-4471")
    assert hits.total == 6 and not hits.truncated
    both = invoice.steps_by(participant="payments", text="INV-4471", kind="final_output")
    assert [(h.step_id, h.edge_refs) for h in both.hits] == [("s6", ("e:s6:0",))]
    few = invoice.steps_by(text="INV-4471", limit=2)
    assert few.total == 6 and few.truncated and len(few.hits) == 2
