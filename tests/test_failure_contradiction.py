"""A shown failure always gets a finding (issue 33, item 5).

- A claim that contradicts a failure the trace shows (a tool span with status ERROR, then the
  agent's statement that the same action on the same object was done) is a finding at the claim
  citing both steps, compared by tool, action and arguments (``failure_contradiction``); the runs
  are emitted by the OpenTelemetry SDK, as the issue met them.
- A failure inferred from the trace that no detector explains is still named by an operational
  failure at the decisive step (see also tests/test_incident_review.py).
- On τ-bench's succeeded runs the new detector files nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import load_policy
from auditor.audit.report.validator import validate_report
from schemas import Disposition, StepKind, Trace
from tests.conftest import DATA, REPO

pytest.importorskip("opentelemetry.sdk")

TAU = DATA / "taubench" / "airline"


def _text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def refund_run(
    tmp_path: Path, calls: list[tuple[dict, str | None]], answer: str | None, tool: str = "issue_refund"
) -> Trace:
    """A support agent's run as its OpenTelemetry SDK spans: the customer's request, one tool span
    per (arguments, error) — status ERROR with that message, or a result when None — then the
    agent's answer; read back by the otel-genai importer."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    from auditor.audit.review import read_traces
    from tests.otel_toy_agent import json_body, provider

    memory = InMemorySpanExporter()
    tracer = provider(SimpleSpanProcessor(memory), service="refunds").get_tracer("support")
    with tracer.start_as_current_span("invoke_agent support") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "support")
        ask = "Please refund order 1234 in full, it arrived broken."
        root.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [_text(ask)]}]))
        for n, (args, error) in enumerate(calls):
            with tracer.start_as_current_span(f"execute_tool {tool}") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", tool)
                span.set_attribute("gen_ai.tool.call.id", f"call_{n}")
                span.set_attribute("gen_ai.tool.call.arguments", json.dumps(args))
                if error is None:
                    span.set_attribute("gen_ai.tool.call.result", json.dumps({"refunded": args}))
                else:
                    span.set_status(Status(StatusCode.ERROR, error))
        if answer is not None:  # None: the agent says nothing after its calls
            said = [{"role": "assistant", "parts": [_text(answer)]}]
            root.set_attribute("gen_ai.output.messages", json.dumps(said))
    path = tmp_path / "run.json"
    path.write_bytes(json_body(list(memory.get_finished_spans())))
    [(trace, _, importer)] = read_traces(path)
    assert importer == "otel-genai"
    return trace


def contradictions(trace: Trace) -> list:
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    return [f for f in report.findings if f.detector == "failure_contradiction"]


def test_a_refund_reported_done_after_the_refund_tool_failed_is_a_finding_citing_both(tmp_path: Path) -> None:
    trace = refund_run(
        tmp_path, [({"order_id": "1234", "amount": 250}, "403 amount exceeds agent limit")],
        "I have refunded order 1234 in full.",
    )  # fmt: skip
    [finding] = contradictions(trace)
    by_id = {s.step_id: s for s in trace.steps}
    claim = by_id[finding.first_anomalous_step]
    assert claim.actor == "support" and claim.content == "I have refunded order 1234 in full."
    assert finding.disposition is Disposition.realized  # the run's final word
    quotes = [(u.step_id, u.quote) for u in finding.evidence]
    failed = next(s for s in trace.steps if s.kind is StepKind.tool_result)
    assert (failed.step_id, "403 amount exceeds agent limit") in quotes
    assert (claim.step_id, "I have refunded order 1234 in full.") in quotes


def test_the_object_decides_an_earlier_refund_of_another_order_does_not_cover_this_one(
    tmp_path: Path,
) -> None:
    trace = refund_run(
        tmp_path,
        [({"order_id": "1111"}, None), ({"order_id": "1234"}, "403 amount exceeds agent limit")],
        "Both orders, 1111 and 1234, have been refunded.",
        tool="refund_order",
    )
    [finding] = contradictions(trace)
    assert "refund_order call failed" in finding.title


def test_a_failure_only_the_final_state_shows_is_named_citing_the_failed_result(tmp_path: Path) -> None:
    """The run ends on the failed tool span (status ERROR), the agent says nothing: the report names
    the tool's failure from the span's status (its message holds no failure word), citing the
    failed result, and attributes the run to the call. (A failure no detector names gets the
    decisive step's own finding: tests/test_incident_review.py.)"""
    trace = refund_run(tmp_path, [({"order_id": "1234"}, "403 amount exceeds agent limit")], None)
    report = run_rules_audit(trace)
    assert report.outcome is not None and report.outcome.source.value == "inferred"
    assert report.attribution is not None
    [named] = report.findings
    assert (
        named.disposition is Disposition.operational_failure
        and named.responsible_participant == "issue_refund"
    )
    call = next(s for s in trace.steps if s.kind is StepKind.tool_call)
    assert report.attribution.step_id == call.step_id
    result = next(s for s in trace.steps if s.kind is StepKind.tool_result)
    assert (result.step_id, "403 amount exceeds agent limit") in [
        (u.step_id, u.quote) for u in named.evidence
    ]
    assert report.decision.value == "no_material_risk"
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_a_refusal_in_the_result_body_is_a_failure_too() -> None:
    """No error status: the tool answers with an error object (a refusal), as chat logs carry it."""
    from schemas import ActorKind, TraceHeader, TraceStep
    from schemas.trace import StepRefs, ToolInfo

    call = ToolInfo(name="cancel_reservation", arguments={"reservation_id": "ZK81Q4"}, call_id="c1")
    steps = [
        TraceStep(step_id="s0", index=0, actor="customer", actor_kind=ActorKind.human, content="Cancel ZK81Q4."),
        TraceStep(step_id="s1", index=1, actor="agent", kind=StepKind.tool_call, content='{"reservation_id": "ZK81Q4"}', tool=call),
        TraceStep(step_id="s2", index=2, actor="cancel_reservation", actor_kind=ActorKind.tool, kind=StepKind.tool_result,
                  content='{"error": "reservation ZK81Q4 has a flown segment"}', refs=StepRefs(call_id="c1")),
        TraceStep(step_id="s3", index=3, actor="agent", content="Reservation ZK81Q4 has been cancelled."),
        TraceStep(step_id="s4", index=4, actor="customer", actor_kind=ActorKind.human, content="Thanks."),
    ]  # fmt: skip
    [finding] = contradictions(Trace(header=TraceHeader(trace_id="t-refusal"), steps=steps))
    assert finding.first_anomalous_step == "s3" and finding.disposition is Disposition.realized
    assert [u.step_id for u in finding.evidence] == ["s2", "s3"]


@pytest.mark.parametrize(
    ("calls", "answer"),
    [
        # the failure is reported as it is
        (
            [({"order_id": "1234"}, "403 amount exceeds agent limit")],
            "Order 1234 was not refunded: it exceeds my limit.",
        ),
        # a retry of the same call succeeded before the claim
        (
            [({"order_id": "1234"}, "503 service unavailable"), ({"order_id": "1234"}, None)],
            "Order 1234 has been refunded.",
        ),
        # another object: the claim is about an order the failed call did not name
        ([({"order_id": "1234"}, "403 amount exceeds agent limit")], "Order 9876 has been refunded."),
        # a plan, not a claim
        (
            [({"order_id": "1234"}, "503 service unavailable")],
            "Once order 1234 is refunded you will get an e-mail.",
        ),
    ],
)
def test_no_contradiction_where_the_trace_shows_none(tmp_path: Path, calls: list, answer: str) -> None:
    assert contradictions(refund_run(tmp_path, calls, answer)) == []


@pytest.mark.skipif(not TAU.is_dir(), reason="τ-bench runs not present (../shared/data)")
def test_no_finding_on_any_succeeded_tau_bench_run() -> None:
    """The detector's false alarms: τ-bench's succeeded airline runs, under the airline policy."""
    import csv

    from ingest import open_traces

    policy = load_policy(REPO / "examples" / "policies" / "airline.yaml")
    with (TAU / "outcomes.csv").open() as f:
        succeeded = [row["file"] for row in csv.DictReader(f) if row["outcome"] == "succeeded"]
    assert len(succeeded) >= 20
    for name in succeeded:
        (imported,) = open_traces(TAU / "runs" / name)
        trace = Trace(header=imported.header, steps=list(imported.steps()))
        report = run_rules_audit(trace, policy=policy, detectors=["failure_contradiction"])
        assert report.findings == [] or all(f.detector == "failure_attribution" for f in report.findings), (
            name
        )


@pytest.mark.parametrize(
    ("sentence", "value", "named"),
    [
        ("I refunded $150 to your card.", "150", True),
        ("I refunded $1500 to your card.", "150", False),  # a longer number is another amount
        ("Order #W1234567 is cancelled.", "#W1234567", True),
        ("Order #W12345678 is cancelled.", "#W1234567", False),
        ("Reservation ZFA04Y (for 2 passengers) is updated.", "ZFA04Y", True),
        ("Flights on 2024-05-01, as asked.", "2024-05-01", True),
        ("Flights on 2024-05-011.", "2024-05-01", False),
    ],
)
def test_a_value_is_named_whole_not_inside_a_longer_id(sentence: str, value: str, named: bool) -> None:
    from auditor.audit.detectors.failure_contradiction import names

    assert names(sentence, value) is named
