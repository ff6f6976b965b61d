"""Graph building: stable edge refs, unknown recipients, topology without annotation, modes."""

from __future__ import annotations

import pytest

from graph import FINAL_OUTPUT, UNKNOWN, AnnotationUnavailable, GraphQueryError, build_graph, graph_digest
from tests.graph_fixtures import invoice_trace, make_trace


def test_every_step_has_edges_and_refs_are_stable_across_rebuilds_and_modes() -> None:
    trace = invoice_trace()
    first, again, topo = (build_graph(trace, m) for m in ("annotated", "annotated", "topology"))
    assert first is not None and again is not None and topo is not None
    for step in trace.steps:
        refs = first.edges_of_step(step.step_id)
        assert refs and refs[0] == f"e:{step.step_id}:0"
        assert refs == again.edges_of_step(step.step_id) == topo.edges_of_step(step.step_id)
    assert graph_digest(first) == graph_digest(again)
    assert graph_digest(first) != graph_digest(topo)


def test_unknown_recipients_stay_unknown_and_consecutive_speakers_are_not_edges() -> None:
    trace = make_trace(
        "broadcast",
        [
            {"actor": "alice", "content": "hello all"},
            {"actor": "bob", "content": "hi alice"},
            {"actor": "bob", "kind": "tool_result", "tool": {"name": "search"}, "content": "3 hits"},
            {"actor": "carol", "kind": "state_write", "content": "wrote something"},
            {"actor": "carol", "kind": "handoff", "recipients": ["dave"], "content": "over to you"},
        ],
    )
    g = build_graph(trace, "topology")
    assert g is not None
    targets = [g.edge(g.edges_of_step(s.step_id)[0])["target"] for s in trace.steps]
    assert targets == [UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN, "dave"]
    assert not g.g.has_edge("alice", "bob") and not g.g.has_edge("bob", "carol")
    assert g.edge("e:s2:0")["source"] == "tool:search"
    assert g.g.nodes["dave"]["kind"] == "participant"  # named only as a recipient: kind not invented


def test_edge_rules_for_tools_documents_records_and_final_output() -> None:
    trace = make_trace(
        "kinds",
        [
            {
                "actor": "a",
                "kind": "tool_call",
                "tool": {"name": "lookup", "call_id": "k1"},
                "content": "lookup(x)",
            },
            {
                "actor": "lookup",
                "actor_kind": "tool",
                "kind": "tool_result",
                "refs": {"call_id": "k1"},
                "tool": {"name": "lookup", "call_id": "k1"},
                "content": "x=1",
            },
            {
                "actor": "a",
                "kind": "document_read",
                "tool": {"name": "read", "arguments": {"path": "policy.md"}},
                "content": "Refunds over $500 need approval.",
            },
            {"actor": "a", "kind": "state_write", "raw": {"record": "ledger"}, "content": "ledger += 1"},
            {"actor": "a", "kind": "final_output", "recipients": ["user"], "content": "done"},
            {"actor": "unknown", "content": "a participant literally named unknown"},
        ],
    )
    g = build_graph(trace, "topology")
    assert g is not None
    ends = {ref: (g.edge(ref)["source"], g.edge(ref)["target"]) for ref in g.edges}
    assert ends["e:s0:0"] == ("a", "tool:lookup")
    assert ends["e:s1:0"] == ("tool:lookup", "a")  # the call_id link names the caller
    assert g.edge("e:s1:0")["basis"] == "call_id"
    assert ends["e:s2:0"] == ("doc:policy.md", "a")
    assert ends["e:s3:0"] == ("a", "record:ledger")
    assert ends["e:s4:0"] == ("a", FINAL_OUTPUT) and ends["e:s4:1"] == ("a", "user")
    assert ends["e:s5:0"] == ("participant:unknown", UNKNOWN)
    assert g.node_of("unknown") == "participant:unknown"


def test_topology_mode_carries_no_annotation() -> None:
    g = build_graph(invoice_trace(), "topology")
    assert g is not None and g.annotations is None and g.provenance is None
    assert all("summary" not in attrs for *_, attrs in g.g.edges(keys=True, data=True))
    with pytest.raises(AnnotationUnavailable):
        g.value_propagation("$2,437,910")
    with pytest.raises(AnnotationUnavailable):
        g.merge_points()
    annotated = build_graph(invoice_trace(), "annotated")
    assert annotated is not None
    assert annotated.edge("e:s0:0")["summary"].startswith("According to the finance team")


def test_mode_none_and_bad_input() -> None:
    assert build_graph(invoice_trace(), "none") is None
    with pytest.raises(ValueError, match="valid: annotated, topology, none"):
        build_graph(invoice_trace(), "full")
    dup = make_trace("dup", [{"step_id": "x", "actor": "a"}, {"step_id": "x", "actor": "b"}])
    with pytest.raises(ValueError, match="step_id 'x' appears twice"):
        build_graph(dup, "topology")
    g = build_graph(invoice_trace(), "topology")
    assert g is not None
    with pytest.raises(GraphQueryError, match="no participant 'nobody'"):
        g.neighbours("nobody")
    with pytest.raises(GraphQueryError, match="step 'zz'"):
        g.edges_of_step("zz")
