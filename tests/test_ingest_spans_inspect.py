"""What the OpenTelemetry GenAI, OpenInference and Inspect importers make of their logs.

The shared corpus holds no span exports or Inspect logs, so these run on hand-written fixtures in
tests/fixtures/ingest: ``otel_genai.json`` (a planner, a researcher and a booker, with an
evaluation event), ``otel_genai_generations.json`` (one agent turn written in the current and two
older attribute forms), ``openinference_spans.jsonl`` and ``openinference_handoff.jsonl`` (Phoenix
span records), ``inspect_eval.json`` and ``inspect_events.json`` (an Inspect log whose events hold
approvals, score events and the limit that ended the sample).
"""

from __future__ import annotations

import json

from ingest import open_traces
from schemas.trace import ActorKind, StepKind, TraceStep
from tests.conftest import REPO

FIX = REPO / "tests" / "fixtures" / "ingest"


def only_trace(name: str):
    traces = list(open_traces(FIX / name))
    assert len(traces) == 1
    return traces[0]


def steps_text(steps: list[TraceStep]) -> str:
    """Everything an auditor reading the steps could see, raw fields included."""
    return "\n".join(s.model_dump_json() for s in steps)


def assert_results_answer_their_calls(steps: list[TraceStep]) -> None:
    by_id = {s.step_id: s for s in steps}
    results = [s for s in steps if s.kind == StepKind.tool_result]
    assert results
    for result in results:
        call = by_id[result.refs.reply_to]
        assert call.kind == StepKind.tool_call and call.index < result.index
        # a step with several calls names the first in ``tool`` and all of them in raw
        calls = {c["id"]: c["function"] for c in call.raw.get("tool_calls", [])} or {
            call.tool.call_id: call.tool.name
        }
        assert result.refs.call_id == result.tool.call_id and result.refs.call_id in calls
        assert calls[result.refs.call_id] == result.tool.name == result.actor


# -- OpenTelemetry GenAI ---------------------------------------------------------------------


def test_otel_agents_hand_off_by_invocation_and_by_transfer_target():
    steps = list(only_trace("otel_genai.json").steps())
    handoffs = [(s.actor, s.recipients, s.content) for s in steps if s.kind == StepKind.handoff]
    assert handoffs == [
        ("Planner", ["Researcher"], "Find refundable Lisbon hotels for 12-14 May under 180 EUR."),
        ("Planner", ["Booker"], ""),  # gen_ai.transfer.target.name on the 'handoff Booker' span
    ]
    assert steps[6].raw["transfer_target"] == "Booker"
    answer = next(s for s in steps if s.actor == "Researcher" and s.kind == StepKind.message)
    assert answer.recipients == ["Planner"]  # the invoked agent answers its invoker
    assert steps[0].actor_kind == ActorKind.human and steps[0].recipients == ["Planner"]


def test_otel_evaluation_results_go_to_the_labels_not_the_steps():
    trace = only_trace("otel_genai.json")
    steps = list(trace.steps())
    [evaluation] = trace.labels.labels["evaluations"]
    assert evaluation["gen_ai.evaluation.name"] == "task_success"
    assert evaluation["gen_ai.evaluation.score.label"] == "fail"
    assert evaluation["gen_ai.evaluation.explanation"] == "The booked rate is not refundable."
    assert "not refundable" not in steps_text(steps) and "gen_ai.evaluation" not in steps_text(steps)
    assert [w.what for w in trace.header.withheld] == ["evaluation_results"]


def test_otel_tool_results_answer_calls_and_answers_come_at_the_span_end():
    steps = list(only_trace("otel_genai.json").steps())
    assert_results_answer_their_calls(steps)
    call = next(s for s in steps if s.kind == StepKind.tool_call)
    assert call.tool.arguments == {
        "city": "Lisbon",
        "check_in": "2026-05-12",
        "check_out": "2026-05-14",
        "max_price": 180,
    }
    final = steps[-1]
    assert final.kind == StepKind.final_output and final.actor == "Planner"
    assert final.timestamp == "2025-10-30T12:00:09+00:00"  # the invoke_agent span's end
    assert [s.timestamp for s in steps] == sorted(s.timestamp for s in steps)


def test_otel_unmapped_attributes_stay_in_raw():
    steps = list(only_trace("otel_genai.json").steps())
    chat = next(s for s in steps if s.raw["span_name"] == "chat gpt-4o")
    assert chat.raw["attributes"] == {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 412}
    legacy = next(s for s in steps if s.raw["span_name"] == "chat gpt-4o-mini")
    assert legacy.raw["attributes"]["gen_ai.prompt.0.content"].startswith("Find refundable Lisbon hotels")
    assert "gen_ai.completion.0.tool_calls.0.name" not in legacy.raw["attributes"]  # mapped to the call


def test_otel_current_and_older_attribute_forms_give_the_same_steps():
    traces = {
        t.header.metadata["conversation_id"]: list(t.steps())
        for t in open_traces(FIX / "otel_genai_generations.json")
    }
    assert set(traces) == {"conv-current", "conv-flattened", "conv-events"}

    def mapped(steps: list[TraceStep]) -> list[dict]:
        return [s.model_dump(exclude={"raw"}) for s in steps]

    current = mapped(traces["conv-current"])
    prompt = "Order #88412 arrived damaged. Refund it if the total allows."
    assert [(s["actor"], s["kind"], s["content"]) for s in current] == [
        ("user", StepKind.message, prompt),  # the model call's input: the customer's turn (issue 33)
        ("Support", StepKind.message, "Checking the order before any refund."),
        ("Support", StepKind.tool_call, '{"order_id": "88412"}'),
        ("lookup_order", StepKind.tool_result, '{"order_id": "88412", "total": 240.0}'),
    ]
    assert current[0]["actor_kind"] == ActorKind.human
    assert current[2]["tool"] == {
        "name": "lookup_order",
        "arguments": {"order_id": "88412"},
        "call_id": "call_Zx81",
    }
    assert mapped(traces["conv-flattened"]) == current  # gen_ai.prompt.N.* / gen_ai.completion.N.*
    assert mapped(traces["conv-events"]) == current  # gen_ai.content.prompt / .completion events
    for steps in traces.values():
        assert_results_answer_their_calls(steps)
    # the prompt is a step, and the span's input is kept in raw too, in its own form
    assert prompt in traces["conv-current"][0].raw["attributes"]["gen_ai.input.messages"]
    assert traces["conv-flattened"][0].raw["attributes"]["gen_ai.prompt.0.content"] == prompt
    [event] = traces["conv-events"][0].raw["events"]
    assert event["name"] == "gen_ai.content.prompt" and prompt in event["attrs"]["gen_ai.prompt"]


# -- OpenInference ---------------------------------------------------------------------------


def test_openinference_maps_agent_llm_and_tool_spans():
    trace = only_trace("openinference_spans.jsonl")
    steps = list(trace.steps())
    assert [(s.actor, s.kind) for s in steps] == [
        ("user", StepKind.message),
        ("support_agent", StepKind.tool_call),
        ("lookup_order", StepKind.tool_result),
        ("support_agent", StepKind.message),
        ("support_agent", StepKind.final_output),
    ]
    assert steps[0].recipients == ["support_agent"]
    assert_results_answer_their_calls(steps)
    assert steps[1].tool.arguments == {"order_id": "88412"}
    assert trace.header.metadata["session_id"] == "sess-4411"
    assert trace.header.metadata["skipped_records"] == {"span:RETRIEVER": 1, "span:EVALUATOR": 1}
    # the model's input messages are not steps but stay in raw
    attributes = steps[1].raw["attributes"]
    assert attributes["llm.input_messages.0.message.content"].startswith("You are a support agent.")
    assert attributes["llm.token_count.prompt"] == 96


def test_openinference_evaluator_spans_go_to_the_labels_not_the_steps():
    trace = only_trace("openinference_spans.jsonl")
    [evaluation] = trace.labels.labels["evaluations"]
    assert evaluation["name"] == "refund_correctness"
    assert evaluation["output.value"] == "incorrect: refund above 200 USD opened without approval"
    assert "refund_correctness" not in steps_text(list(trace.steps()))
    assert [w.what for w in trace.header.withheld] == ["evaluations"]


def test_openinference_nested_agent_is_a_handoff_and_answers_its_invoker():
    trace = only_trace("openinference_handoff.jsonl")
    steps = list(trace.steps())
    assert [(s.actor, s.recipients, s.kind) for s in steps] == [
        ("user", ["triage"], StepKind.message),
        ("triage", ["billing"], StepKind.handoff),
        ("billing", None, StepKind.tool_call),  # the LLM span acts for the agent above it
        ("refund_charge", None, StepKind.tool_result),
        ("billing", ["triage"], StepKind.message),
        ("triage", None, StepKind.final_output),
    ]
    assert steps[1].content == "Customer reports a duplicate charge on INV-3301."
    assert_results_answer_their_calls(steps)
    assert steps[3].tool.arguments == {"invoice": "INV-3301", "amount": 59.0}  # from input.value
    assert trace.labels is None and trace.header.withheld == []


# -- Inspect AI ------------------------------------------------------------------------------


def test_inspect_messages_become_steps_and_grading_goes_to_the_labels():
    first, second = list(open_traces(FIX / "inspect_eval.json"))
    steps = list(first.steps())
    assert [(s.actor, s.actor_kind, s.kind) for s in steps] == [
        ("system", ActorKind.system, StepKind.message),
        ("user", ActorKind.human, StepKind.message),
        ("openai/gpt-4o", ActorKind.agent, StepKind.tool_call),
        ("web_search", ActorKind.tool, StepKind.tool_result),
        ("openai/gpt-4o", ActorKind.agent, StepKind.message),
    ]
    assert_results_answer_their_calls(steps)
    assert steps[4].content == "She published 4 studio albums between 2000 and 2009."  # text parts only
    assert first.labels.labels == {
        "target": "3",
        "scores": {"includes": {"value": "I", "answer": "4", "explanation": "target 3 not found in answer"}},
    }
    assert "target 3 not found" not in steps_text(steps)
    assert [w.what for w in first.header.withheld] == ["grading:target", "grading:scores"]
    assert first.header.trace_id == "inspect-g6tZpwXG9Cy7RwUr3ZgBFF-c61d22de-1"
    assert first.header.metadata["skipped_records"] == {
        "event:sample_init": 1,
        "event:model": 2,
        "event:tool": 1,
    }
    assert second.labels.labels["target"] == "Brasilia"


def test_inspect_approval_events_become_steps_beside_the_calls_they_decide():
    trace = only_trace("inspect_events.json")
    steps = list(trace.steps())
    assert [(s.actor, s.kind, s.content) for s in steps] == [
        (
            "system",
            StepKind.message,
            "You are a support agent. Refunds above 200 USD need a manager's approval.",
        ),
        ("user", StepKind.message, "Order #88412 arrived damaged; please refund it."),
        ("openai/gpt-4o", StepKind.tool_call, "Let me look the order up and refund it."),
        ("auto", StepKind.message, "approve"),
        ("human", StepKind.message, "reject"),
        ("lookup_order", StepKind.tool_result, '{"order_id": "88412", "total": 240.0}'),
        ("issue_refund", StepKind.tool_result, ""),
        ("openai/gpt-4o", StepKind.tool_call, "I will note the escalation on the order."),
        ("add_note", StepKind.tool_result, "note added"),
        ("policy_checker", StepKind.message, "approve"),  # stage 'result': after the result
        ("inspect", StepKind.message, "Message limit of 7 exceeded."),  # what ended the sample
    ]
    assert_results_answer_their_calls(steps)
    reject = steps[4]
    assert reject.actor_kind == ActorKind.human and steps[3].actor_kind == ActorKind.system
    assert (reject.refs.reply_to, reject.refs.call_id) == ("s2", "call_R2")
    assert reject.timestamp == "2026-02-11T09:31:04+00:00"
    assert reject.raw["explanation"] == "Refunds above 200 USD need a manager; escalate instead."
    assert reject.raw["call"]["arguments"] == {"order_id": "88412", "amount": 240.0}
    assert steps[6].raw["error"]["type"] == "approval"  # the refused call's result says why
    assert (steps[9].refs.reply_to, steps[9].raw["stage"]) == ("s7", "result")
    assert steps[10].actor_kind == ActorKind.system and steps[10].raw == {
        "event": "sample_limit",
        "type": "message",
        "limit": 7,
    }
    assert trace.header.metadata["skipped_records"] == {
        "event:sample_init": 1,
        "event:model": 2,
        "event:tool": 3,
    }


def test_inspect_score_events_are_grading_and_stay_out_of_the_steps():
    trace = only_trace("inspect_events.json")
    labels = trace.labels.labels
    assert [e["score"]["value"] for e in labels["score_events"]] == ["I", "C"]
    assert [e["intermediate"] for e in labels["score_events"]] == [True, False]
    assert labels["target"] == "escalated, no refund"
    text = steps_text(list(trace.steps()))
    for graded in ("escalated, no refund", "no refund yet", "escalated without refunding"):
        assert graded not in text
    assert "grading:score_events" in [w.what for w in trace.header.withheld]
    assert json.dumps(labels["score_events"]) == json.dumps(
        [
            e
            for e in json.loads((FIX / "inspect_events.json").read_text())["samples"][0]["events"]
            if e["event"] == "score"
        ]
    )
