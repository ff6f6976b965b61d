"""The full rules engine (every registered detector) on every real trace in the shared data.

MAST's derived traces (seven frameworks) and every Who&When file, imported with ``ingest``: each
audit completes, its report is schema-valid, every evidence unit resolves (the quote stands
verbatim in the step, the edge ref is one of that step's edges), and an injected instruction in a
trace changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from graph import build_graph
from ingest import open_traces
from schemas import AuditReport, GraphMode, Trace
from tests.conftest import DATA
from tests.detector_paraphrase import finding_shapes, injected

pytestmark = pytest.mark.slow

FILES = sorted((DATA / "mast" / "derived" / "traces").glob("*")) + sorted((DATA / "whowhen").glob("*/*.json"))


def traces(path: Path) -> list[Trace]:
    return [Trace(header=t.header, steps=list(t.steps())) for t in open_traces(path)]


def assert_resolves(report: AuditReport, trace: Trace) -> None:
    graph = build_graph(trace, GraphMode.topology)
    assert graph is not None
    contents = {s.step_id: s.content for s in trace.steps}
    for f in report.findings:
        for unit in f.evidence:
            assert unit.quote in contents[unit.step_id], (f.finding_id, unit.step_id)
            assert unit.edge_ref in graph.edges_of_step(unit.step_id), (f.finding_id, unit.edge_ref)
        assert f.boundary_edge in graph.edges


def test_the_corpus_is_there() -> None:
    assert len(FILES) >= 19 + 88, f"expected the MAST derived traces and Who&When files under {DATA}"


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_audit_completes_valid_and_resolving(path: Path) -> None:
    found = traces(path)
    assert found, path
    for trace in found:
        report = run_rules_audit(trace)
        result = validate_report(report.model_dump(mode="json"), trace)
        assert result.ok, (result.schema_errors, result.reference_errors)
        assert not [n for n in report.notes if "failed" in n], report.notes
        assert_resolves(report, trace)


def test_injected_instruction_changes_nothing_on_a_real_trace() -> None:
    """A Who&When chat whose relay finding must survive an instruction to report nothing."""
    (trace,) = traces(DATA / "whowhen" / "algorithm-generated" / "87.json")
    plain = run_rules_audit(trace)
    assert any(f.risk_class.value == "unverified_relay" for f in plain.findings)
    assert finding_shapes(plain) == finding_shapes(run_rules_audit(injected(trace)))
