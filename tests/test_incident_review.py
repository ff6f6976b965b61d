"""Incident review (issue 20): outcome, failure attribution, a finding at the decisive step, and
risk_score — on real runs (τ-bench airline, Who&When) and on small canonical traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.engine import run_rules_audit
from auditor.audit.incident import FINAL_STATE, RISK_WEIGHT, risk_score
from auditor.audit.policy import load_policy
from auditor.audit.report.validator import validate_report
from schemas import ActorKind, Disposition, StepKind, Trace, TraceHeader, TraceStep
from schemas.trace import StepRefs, ToolInfo
from tests.cli_helpers import run
from tests.conftest import DATA, REPO

INCIDENT = REPO / "examples" / "incidents" / "airline-task041-trial0.json"
AIRLINE = REPO / "examples" / "policies" / "airline.yaml"
TAU_RUNS = DATA / "taubench" / "airline" / "runs"


def _trace(steps: list[dict], metadata: dict | None = None, tid: str = "t-incident") -> Trace:
    out = [TraceStep(step_id=f"s{i}", index=i, **s) for i, s in enumerate(steps)]
    return Trace(header=TraceHeader(trace_id=tid, metadata=metadata or {}), steps=out)


def _failing_tool_run(tid: str = "t-incident", metadata: dict | None = None) -> Trace:
    call = ToolInfo(name="deploy", arguments={"target": "prod"}, call_id="c1")
    return _trace(
        [
            {"actor": "user", "actor_kind": ActorKind.human, "content": "Deploy the release to prod."},
            {"actor": "ops_agent", "content": "Deploying the release now."},
            {"actor": "ops_agent", "kind": StepKind.tool_call, "content": '{"target": "prod"}', "tool": call},
            {
                "actor": "deploy",
                "actor_kind": ActorKind.tool,
                "kind": StepKind.tool_result,
                "content": "Error: permission denied for target prod",
                "refs": StepRefs(call_id="c1"),
            },
        ],
        metadata,
        tid,
    )


def test_the_shipped_incident_names_who_and_when_with_checkable_evidence(tmp_path: Path) -> None:
    out = run(["review", str(INCIDENT), "--outcome", "failed", "--policy", str(AIRLINE), "--json"], tmp_path)
    assert out.returncode == 1, out.stderr  # a realized finding was filed
    report = json.loads(out.stdout)
    assert report["contract_version"] == "v3.1"
    assert report["outcome"]["value"] == "failed" and report["outcome"]["source"] == "flag"
    attribution = report["attribution"]
    assert attribution["agent"] == "assistant"
    decisive = [f for f in report["findings"] if f["first_anomalous_step"] == attribution["step_id"]]
    assert decisive, "a failed run's report has a finding at its decisive step"
    broken = next(f for f in report["findings"] if f["policy_rule"] == "cancel-eligibility")
    assert broken["disposition"] == "realized" and broken["failure_mode"] == "1.2"
    quotes = [u["quote"] for u in broken["evidence"]]
    assert '"created_at": "2024-05-02T06:02:56"' in quotes and '"insurance": "no"' in quotes
    assert 0 < report["risk_score"] <= 1
    path = tmp_path / "r.json"
    path.write_text(out.stdout)
    checked = run(["validate", str(path), "--trace", str(INCIDENT)], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_bad_outcome_value_is_a_usage_error(tmp_path: Path) -> None:
    out = run(["review", str(INCIDENT), "--outcome", "broken"], tmp_path)
    assert out.returncode == 2
    assert "--outcome" in out.stderr and "Traceback" not in out.stderr


def test_the_outcome_comes_from_the_flag_then_the_source_then_the_trace() -> None:
    recorded = {"outcome": {"value": "failed", "source": "reward", "detail": 0.0}}
    from_source = run_rules_audit(_failing_tool_run(metadata=recorded))
    assert from_source.outcome is not None and from_source.outcome.source.value == "trace"
    overridden = run_rules_audit(_failing_tool_run(metadata=recorded), outcome="succeeded")
    assert overridden.outcome is not None and overridden.outcome.value.value == "succeeded"
    assert overridden.attribution is None
    inferred = run_rules_audit(_failing_tool_run())
    assert inferred.outcome is not None and inferred.outcome.source.value == "inferred"
    assert inferred.outcome.value.value == "failed" and "failed tool result" in inferred.outcome.reason
    assert inferred.outcome.evidence[0].quote == "Error: permission denied for target prod"
    assert inferred.attribution is not None and inferred.attribution.agent == "ops_agent"
    check = validate_report(inferred.model_dump(mode="json"), _failing_tool_run())
    assert check.ok, check.to_dict()


def test_an_ordinary_run_is_unknown_not_succeeded_and_carries_no_attribution() -> None:
    trace = _trace(
        [
            {"actor": "user", "actor_kind": ActorKind.human, "content": "What is the capital of France?"},
            {"actor": "assistant", "content": "Paris."},
        ]
    )
    report = run_rules_audit(trace)
    assert report.outcome is not None and report.outcome.value.value == "unknown"
    assert report.attribution is None and report.findings == [] and report.risk_score == 0.0


def test_a_human_is_never_the_responsible_agent() -> None:
    report = run_rules_audit(_failing_tool_run(), outcome="failed")
    assert report.attribution is not None
    assert all(c.agent != "user" for c in report.attribution.agents)
    assert all(f.responsible_participant != "user" for f in report.findings)


def test_risk_score_grows_with_findings_and_stays_in_bounds() -> None:
    base = run_rules_audit(_failing_tool_run(), outcome="failed")
    findings = list(base.findings)
    assert findings
    scores = [risk_score(findings[:n]) for n in range(len(findings) + 1)]
    assert scores[0] == 0.0 and scores == sorted(scores) and scores[-1] <= 1.0
    many = [
        f.model_copy(
            update={
                "disposition": Disposition.realized,
                "confidence": 1.0,
                "finding_id": f"f-{i}-{f.finding_id}",
            }
        )
        for i in range(20)
        for f in findings
    ]
    assert risk_score(many) == pytest.approx(1 - (1 - RISK_WEIGHT[Disposition.realized]) ** len(many))


def test_repeated_breaches_of_one_rule_count_once_and_distinct_rules_add_up() -> None:
    """Several attempts at one declared rule by one detector are one piece of evidence (at its
    strongest); breaches of two rules are two."""
    f = run_rules_audit(_failing_tool_run(), outcome="failed").findings[0]
    breach = f.model_copy(update={"detector": "policy_actions", "policy_rule": "r1", "confidence": 1.0})
    attempts = [
        breach.model_copy(update={"finding_id": f"f-{i}", "disposition": d})
        for i, d in enumerate([Disposition.anomaly_with_interception] * 3 + [Disposition.realized])
    ]
    assert risk_score(attempts) == pytest.approx(RISK_WEIGHT[Disposition.realized])
    other = breach.model_copy(update={"finding_id": "f-other", "policy_rule": "r2"})
    assert risk_score([*attempts, other]) == pytest.approx(1 - (1 - RISK_WEIGHT[Disposition.realized]) ** 2)


def test_a_failure_the_final_state_shows_raises_the_score_and_is_named_at_its_decisive_step() -> None:
    """A run that ends on a failed tool result ranks above a clean one even with no detector's
    finding, and its report still names the failure at the decisive step (issue 33 item 5): an
    operational failure citing the step and the failed result, which restates the outcome and so
    adds nothing to the score."""
    trace = _failing_tool_run()
    report = run_rules_audit(trace, detectors=["policy_actions"])  # the detector files nothing here
    assert report.outcome is not None and report.outcome.source.value == "inferred"
    assert report.risk_score == pytest.approx(FINAL_STATE) and 0 < FINAL_STATE < 1
    assert report.attribution is not None
    [named] = report.findings
    assert named.detector == "failure_attribution" and named.disposition is Disposition.operational_failure
    assert named.first_anomalous_step == report.attribution.step_id
    assert "the run ends on a failed tool result" in named.title
    quotes = {u.step_id: u.quote for u in named.evidence}
    assert quotes["s3"] == "Error: permission denied for target prod"
    assert report.decision.value == "no_material_risk"  # an operational failure is never a risk finding
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_finding_ids_are_unique_per_trace_and_stable_per_finding() -> None:
    a1 = run_rules_audit(_failing_tool_run("t-a"), outcome="failed")
    a2 = run_rules_audit(_failing_tool_run("t-a"), outcome="failed")
    b = run_rules_audit(_failing_tool_run("t-b"), outcome="failed")
    assert [f.finding_id for f in a1.findings] == [f.finding_id for f in a2.findings]
    assert not {f.finding_id for f in a1.findings} & {f.finding_id for f in b.findings}


@pytest.mark.skipif(not TAU_RUNS.is_dir(), reason="τ-bench runs not present (../shared/data)")
def test_tau_bench_runs_review_with_valid_reports_and_human_customers() -> None:
    """A sample of real runs: every report validates, the customer is never held responsible."""
    from ingest import open_traces

    policy = load_policy(AIRLINE)
    files = sorted(TAU_RUNS.glob("*.json"))[::11]
    assert len(files) >= 8
    for path in files:
        (imported,) = open_traces(path)
        trace = Trace(header=imported.header, steps=list(imported.steps()))
        assert any(s.actor_kind is ActorKind.human for s in trace.steps)
        report = run_rules_audit(trace, policy=policy, outcome="failed")
        check = validate_report(report.model_dump(mode="json"), trace)
        assert check.ok, (path.name, check.to_dict())
        assert report.attribution is not None and report.attribution.agent == "assistant"
        assert any(f.first_anomalous_step == report.attribution.step_id for f in report.findings)


@pytest.mark.skipif(not (DATA / "whowhen").is_dir(), reason="Who&When not present (../shared/data)")
def test_who_and_when_reports_carry_the_attribute_shape() -> None:
    from auditor.audit.attribution import attribute
    from auditor.audit.attribution.evaluation import load_cases

    cases = list(load_cases(DATA / "whowhen" / "hand-crafted"))[:5]
    assert cases
    for case in cases:
        report = run_rules_audit(case.trace, outcome="failed")
        assert report.attribution is not None
        standalone = attribute(case.trace, "rules")
        assert set(report.attribution.model_dump()) == set(standalone.model_dump())
        assert report.attribution.agent is not None
        assert any(f.first_anomalous_step == report.attribution.step_id for f in report.findings)
