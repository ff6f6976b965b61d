"""Validating against the audit's own cited edges (the review's way, without a second graph)
gives the same result, unit by unit, as validating against the trace's topology graph."""

from __future__ import annotations

import copy

from auditor.audit.engine import rules_audit
from auditor.audit.report.validator import validate_report
from tests.conftest import REPO
from tests.test_detector_state_drift import load

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"


def test_cited_edges_validate_as_the_topology_graph():
    trace = load(EXAMPLE)
    report, cited = rules_audit(trace)
    good = report.model_dump(mode="json")
    bad = copy.deepcopy(good)
    finding = bad["findings"][0]
    finding["evidence"][0]["edge_ref"] = "e:s00:0"  # an edge of another step
    finding["evidence"][1]["step_id"] = "s99"
    finding["boundary_edge"] = "e:nowhere:0"
    finding["intercepted_at"] = "nowhere"
    for body in (good, bad):
        assert validate_report(body, trace, cited).to_dict() == validate_report(body, trace).to_dict()
    result = validate_report(bad, trace, cited)
    problems = [u.problem for u in result.units[:2]]
    assert "is not an edge of step" in problems[0] and "does not exist" in problems[1]
    assert any("boundary_edge 'e:nowhere:0'" in e for e in result.reference_errors)
    assert any("intercepted_at 'nowhere'" in e for e in result.reference_errors)
    assert validate_report(good, trace, cited).ok
