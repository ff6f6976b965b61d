"""The validator resolves every evidence unit and names what fails, unit by unit."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from tests.conftest import REPO
from tests.damage import damaged
from tests.test_detector_state_drift import load

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"


@pytest.fixture(scope="module")
def audited():
    trace = load(EXAMPLE)
    return trace, run_rules_audit(trace).model_dump(mode="json")


def test_engine_report_validates(audited):
    trace, report = audited
    result = validate_report(report, trace)
    assert result.ok and result.resolved == len(result.units) >= 3


def test_allowed_normalisation_is_nfc_and_whitespace_only(audited):
    trace, report = audited
    bad = copy.deepcopy(report)
    unit = bad["findings"][0]["evidence"][1]
    unit["quote"] = "  " + unit["quote"].replace(" ", "\n  ") + " "
    assert validate_report(bad, trace).ok
    unit["quote"] = unit["quote"].upper()
    result = validate_report(bad, trace)
    assert not result.ok and result.units[1].problem == "quote is not verbatim in the step's content"


def test_each_broken_unit_is_named(audited):
    trace, report = audited
    bad = copy.deepcopy(report)
    ev = bad["findings"][0]["evidence"]
    ev[0]["step_id"] = "s99"
    ev[1]["edge_ref"] = "e:s00:0"
    bad["findings"][0]["first_anomalous_step"] = "nowhere"
    bad["severity"] = "x"
    result = validate_report(bad, trace)
    problems = [u.problem for u in result.units]
    assert "does not exist" in problems[0] and "is not an edge of step" in problems[1] and problems[2] is None
    assert any("first_anomalous_step 'nowhere'" in e for e in result.reference_errors)
    assert result.schema_errors  # additional property 'severity' at the root


def test_schema_errors_point_at_the_field(audited):
    trace, report = audited
    bad = copy.deepcopy(report)
    bad["findings"][0]["disposition"] = "maybe"
    result = validate_report(bad, trace)
    assert any(e.startswith("findings/0/disposition") for e in result.schema_errors)


def test_the_inlined_schema_finds_what_the_committed_one_finds(audited):
    """The validator checks against the committed schema with its references inlined (fast on a
    report of thousands of findings): for reports broken in every part, the same errors at the
    same places as the committed schema read as it is."""
    import json
    from importlib.resources import files

    import jsonschema

    from auditor.audit.report.validator import _validator

    committed = json.loads((files("schemas") / "json" / "audit_report_v3.schema.json").read_text())
    plain = jsonschema.Draft202012Validator(committed)
    _, report = audited
    breaks = [
        lambda r: r["findings"][0]["evidence"][0].update(quote=5),
        lambda r: r["findings"][0].update(severity="dire"),
        lambda r: r["findings"][0]["criteria"].pop("R2"),
        lambda r: r["findings"][0]["propagation_path"][0].update(extra=1),
        lambda r: r["repair_plan"].append({"item_id": 3}),
        lambda r: r.update(decision=None, graph_mode="cubist"),
        lambda r: r["outcome"].update(value="maybe") if r.get("outcome") else r.update(outcome=7),
        lambda r: r["attribution"].update(agent=[]) if r.get("attribution") else r.update(attribution="x"),
        lambda r: r.update(findings=[{"finding_id": 1}], risk_score="high"),
    ]
    for brk in breaks:
        bad = copy.deepcopy(report)
        brk(bad)

        def errors(v: jsonschema.Validator, doc: dict = bad) -> list[tuple[list, str]]:
            return sorted((list(e.absolute_path), e.message) for e in v.iter_errors(doc))

        assert errors(plain) and errors(_validator()) == errors(plain)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(rnd=st.randoms(use_true_random=False))
def test_a_damaged_report_is_judged_never_a_crash(audited, rnd):
    """Any value anywhere in a real report of another type, deleted, cut or doubled: the validator
    reports it (schema or reference errors), never raises. A list where a step id belongs made
    `auditor validate` a traceback (a list cannot be looked up)."""
    trace, report = audited
    result = validate_report(damaged(report, rnd), trace)
    assert isinstance(result.ok, bool) and result.to_dict()


def test_a_list_where_a_step_id_belongs_is_no_step(audited):
    trace, report = audited
    bad = copy.deepcopy(report)
    bad["findings"][0]["first_anomalous_step"] = ["s1"]
    bad["findings"][0]["evidence"][0]["step_id"] = {"id": "s1"}
    result = validate_report(bad, trace)
    assert not result.ok and any("is not a step of the trace" in e for e in result.reference_errors)
    assert not result.units[0].ok
