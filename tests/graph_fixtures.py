"""Handcrafted traces for the graph tests: an invoice approval relayed over four hops."""

from __future__ import annotations

from typing import Any

from schemas import Trace, TraceHeader, TraceStep


def make_trace(trace_id: str, steps: list[dict[str, Any]], **header: Any) -> Trace:
    """A Trace from short step dicts: ids and indices filled in from the position."""
    built = [TraceStep(step_id=s.pop("step_id", f"s{i}"), index=i, **s) for i, s in enumerate(steps)]
    return Trace(header=TraceHeader(trace_id=trace_id, **header), steps=built)


def invoice_trace() -> Trace:
    """analyst -> controller -> cfo_assistant -> payments, with the value drifting on the way."""
    return make_trace(
        "invoice-relay",
        [
            {
                "actor": "finance_analyst",
                "recipients": ["controller"],
                "content": "According to the finance team, invoice INV-4471 totals $2,437,910 and is "
                "submitted for approval. I'd lean towards paying it this week.",
            },
            {
                "actor": "controller",
                "recipients": ["cfo_assistant"],
                "content": "Invoice INV-4471 totals 2.44M, submitted for approval. I'd lean towards paying it.",
            },
            {"actor": "intern", "content": "Lunch is at noon."},
            {
                "actor": "cfo_assistant",
                "recipients": ["payments"],
                "content": "INV-4471 for 2.44M is approved, please pay it.",
            },
            {
                "actor": "payments",
                "kind": "tool_call",
                "tool": {"name": "pay_invoice", "arguments": {"invoice": "INV-4471"}, "call_id": "c1"},
                "content": "pay_invoice(INV-4471, USD 2.4 million)",
            },
            {
                "actor": "bank_api",
                "actor_kind": "tool",
                "kind": "tool_result",
                "refs": {"call_id": "c1"},
                "tool": {"name": "pay_invoice", "call_id": "c1"},
                "content": "paid INV-4471 USD 2.4 million",
            },
            {"actor": "payments", "kind": "final_output", "content": "Paid INV-4471: 2.44M, approved."},
        ],
        metadata={"policies": [{"name": "payments-policy.md", "available_to": ["payments"]}]},
    )
