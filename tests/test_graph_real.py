"""Every real trace in ../shared/data (MAST/MAD and Who&When) imports and builds, in both modes."""

from __future__ import annotations

import pytest

from graph import UNKNOWN, build_graph, graph_digest, graph_to_node_link
from ingest import open_traces
from schemas import StepKind, Trace
from tests.conftest import DATA

ROOTS = [DATA / "mast" / "derived" / "traces", DATA / "whowhen"]
FILES = sorted(p for r in ROOTS if r.is_dir() for p in r.rglob("*") if p.suffix in (".json", ".txt"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not FILES, reason="real data not present (../shared/data)"),
]


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    return [Trace(header=t.header, steps=list(t.steps())) for f in FILES for t in open_traces(f)]


def test_every_real_trace_builds_with_unknowns_kept_unknown(traces: list[Trace]) -> None:
    assert len(traces) >= 100  # 19 MAST/MAD + 88 Who&When files
    for trace in traces:
        annotated, topology = build_graph(trace, "annotated"), build_graph(trace, "topology")
        assert annotated is not None and topology is not None
        for step in trace.steps:
            refs = annotated.edges_of_step(step.step_id)
            assert refs == topology.edges_of_step(step.step_id), step.step_id
            assert refs == [f"e:{step.step_id}:{n}" for n in range(len(refs))]
            if step.kind in (StepKind.message, StepKind.handoff) and not step.recipients:
                assert [annotated.edge(r)["target"] for r in refs] == [UNKNOWN], (
                    trace.header.trace_id,
                    step.step_id,
                )
            if step.recipients:
                targets = {annotated.g.nodes[annotated.edge(r)["target"]]["name"] for r in refs}
                assert set(step.recipients) <= targets | {"final_output"}
        assert topology.annotations is None
        assert all("summary" not in d for *_, d in topology.g.edges(keys=True, data=True))
        assert "annotations" not in graph_to_node_link(topology)


def test_digests_are_stable_across_rebuilds(traces: list[Trace]) -> None:
    sample = traces[::10]
    assert sample
    for trace in sample:
        first, again = build_graph(trace, "annotated"), build_graph(trace, "annotated")
        assert first is not None and again is not None
        assert graph_digest(first) == graph_digest(again)


def test_magentic_one_addressed_messages_become_edges(traces: list[Trace]) -> None:
    addressed = [(t, s) for t in traces for s in t.steps if s.recipients and s.kind == StepKind.message]
    assert addressed, "the Magentic-One traces name recipients ('Orchestrator (-> WebSurfer)')"
    trace, step = addressed[0]
    g = build_graph(trace, "topology")
    assert g is not None
    assert g.edge(g.edges_of_step(step.step_id)[0])["basis"] == "explicit"


def test_label_cues_are_found_the_same_one_stretch_at_a_time(
    traces: list[Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The annotation layer searches the lower-cased text a stretch of steps at a time (a whole
    trace's copy would cost as much memory as its content): any stretch finds the same cued steps
    as one pass over the whole trace, including non-ASCII text."""
    from graph import annotate

    graphs = [build_graph(t, "topology") for t in traces]
    whole = [annotate._cued(g) for g in graphs]
    assert sum(map(len, whole)) > 100 and any(not t.steps[0].content.isascii() for t in traces if t.steps)
    for stretch in (1, 7, 64):
        monkeypatch.setattr(annotate, "CUE_STRETCH", stretch)
        assert [annotate._cued(g) for g in graphs] == whole
