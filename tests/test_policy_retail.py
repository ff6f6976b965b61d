"""examples/policies/retail.yaml (the τ²-bench retail policy): it loads, and each of its rules and
requests is exercised by a small retail run that breaks it (a write the rule forbids, a request the
run refused or never decided), beside a run that keeps it and draws nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import Policy, load_policy
from auditor.audit.report.validator import validate_report
from schemas import AuditReport, Trace, TraceHeader, TraceStep

RETAIL = Path(__file__).resolve().parents[1] / "examples" / "policies" / "retail.yaml"
POLICY_DETECTORS = [
    "policy_confirmation",
    "policy_actions",
    "policy_allowances",
    "policy_identifiers",
    "policy_requests",
]


@pytest.fixture(scope="module")
def retail() -> Policy:
    return load_policy(RETAIL)


class Run:
    """A retail conversation: the customer, the agent, its tool calls and their results."""

    def __init__(self) -> None:
        self.steps: list[TraceStep] = []

    def _add(self, actor: str, kind: str, content: str, actor_kind: str, **extra: object) -> Run:
        i = len(self.steps)
        self.steps.append(
            TraceStep(
                step_id=f"s{i}",
                index=i,
                actor=actor,
                actor_kind=actor_kind,
                kind=kind,
                content=content,
                **extra,
            )
        )
        return self

    def user(self, text: str) -> Run:
        return self._add("user", "message", text, "human")

    def agent(self, text: str) -> Run:
        return self._add("assistant", "message", text, "agent")

    def call(self, tool: str, args: dict, result: object) -> Run:
        cid = f"c{len(self.steps)}"
        self._add(
            "assistant",
            "tool_call",
            json.dumps(args),
            "agent",
            tool={"name": tool, "arguments": args, "call_id": cid},
        )
        content = result if isinstance(result, str) else json.dumps(result)
        return self._add(
            tool, "tool_result", content, "tool", tool={"name": tool, "call_id": cid}, refs={"call_id": cid}
        )

    def trace(self) -> Trace:
        return Trace(header=TraceHeader(trace_id="retail-rule", metadata={"tools": TOOLS}), steps=self.steps)


def _tool(name: str, description: str, params: str) -> dict:
    """A tool as an OpenAI-style run declares it to the agent (``params``: names, space-separated)."""
    properties = {p: {"type": "string"} for p in params.split()}
    parameters = {"type": "object", "properties": properties}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


ADDRESS = "address1 address2 city state country zip"
# The write tools the retail agent is given, as τ²-bench declares them (abridged descriptions): the
# request ledger reads a customer's request against their names, descriptions and parameters.
TOOLS = [
    _tool("cancel_pending_order", "Cancel a pending order.", "order_id reason"),
    _tool(
        "modify_pending_order_address",
        "Modify the shipping address of a pending order.",
        f"order_id {ADDRESS}",
    ),
    _tool(
        "modify_pending_order_payment",
        "Modify the payment method of a pending order.",
        "order_id payment_method_id",
    ),
    _tool(
        "modify_pending_order_items",
        "Modify items in a pending order to new items of the same product.",
        "order_id item_ids new_item_ids payment_method_id",
    ),
    _tool(
        "return_delivered_order_items",
        "Return some items of a delivered order.",
        "order_id item_ids payment_method_id",
    ),
    _tool(
        "exchange_delivered_order_items",
        "Exchange items in a delivered order to new items of the same product.",
        "order_id item_ids new_item_ids payment_method_id",
    ),
    _tool("modify_user_address", "Modify the default address of a user.", f"user_id {ADDRESS}"),
]


def order(oid: str, status: str, payment: str = "credit_card_4410028", **extra: object) -> dict:
    return {
        "order_id": oid,
        "user_id": "leah_park_7321",
        "items": [
            {"name": "Desk Lamp", "product_id": "6817146515", "item_id": "8384507844", "price": 137.94},
            {"name": "Backpack", "product_id": "2524789262", "item_id": "3928046918", "price": 198.0},
        ],
        "status": status,
        "payment_history": [{"transaction_type": "payment", "amount": 335.94, "payment_method_id": payment}],
        **extra,
    }


def authenticated(r: Run, opener: str) -> Run:
    """The customer gives their e-mail; the agent looks the id up, as the policy demands."""
    r.user(opener)
    r.call("find_user_id_by_email", {"email": "leah.park@shop.example"}, "leah_park_7321")
    return r


def read_order(r: Run, oid: str, record: dict) -> Run:
    return r.call("get_order_details", {"order_id": oid}, record)


def audit(trace: Trace, policy: Policy) -> AuditReport:
    report = run_rules_audit(trace, policy=policy, detectors=POLICY_DETECTORS)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    return report


# -- one run per rule: (breaks it, keeps it) ------------------------------------------------------
def confirmation(breaks: bool) -> Trace:
    r = authenticated(Run(), "Cancel order #W5520417, I don't need it any more. Email leah.park@shop.example")
    read_order(r, "#W5520417", order("#W5520417", "pending"))
    if not breaks:
        r.agent(
            "Order #W5520417 (desk lamp and backpack, $335.94) will be cancelled, reason: no longer needed. Confirm?"
        )
        r.user("Yes, cancel it.")
    args = {"order_id": "#W5520417", "reason": "no longer needed"}
    return r.call("cancel_pending_order", args, order("#W5520417", "cancelled")).trace()


def _cancel(status: str, reason: str) -> Trace:
    r = authenticated(Run(), "Please cancel #W7301858. leah.park@shop.example")
    read_order(r, "#W7301858", order("#W7301858", status))
    r.agent(f"Cancel order #W7301858, reason: {reason}. Shall I proceed?")
    r.user("Yes.")
    args = {"order_id": "#W7301858", "reason": reason}
    return r.call("cancel_pending_order", args, order("#W7301858", "cancelled")).trace()


def cancel_pending(breaks: bool) -> Trace:
    return _cancel("processed" if breaks else "pending", "ordered by mistake")


def cancel_reason(breaks: bool) -> Trace:
    return _cancel("pending", "found a better price" if breaks else "no longer needed")


def _twice(tool: str, oid: str, status: str, after: str, ask: str, again: str) -> Callable[[bool], Trace]:
    """A write that may be made once per order: it leaves the order ``after`` ('pending (item
    modified)', 'exchange requested'), no longer ``status``; breaks: a second write on it."""

    def build(breaks: bool) -> Trace:
        r = authenticated(Run(), f"{ask} {oid}. leah.park@shop.example")
        read_order(r, oid, order(oid, status))
        args = {
            "order_id": oid,
            "item_ids": ["8384507844"],
            "new_item_ids": ["1569765161"],
            "payment_method_id": "credit_card_4410028",
        }
        more = {**args, "item_ids": ["3928046918"], "new_item_ids": ["7251508981"]}
        for n, call in enumerate([args, more] if breaks else [args]):
            if n:
                r.user(again)
            r.agent(f"On {oid}: item {call['item_ids'][0]} becomes {call['new_item_ids'][0]}. Confirm?")
            r.user("Yes")
            r.call(tool, call, order(oid, after))
        return r.trace()

    return build


def modify_payment(breaks: bool) -> Trace:
    r = authenticated(Run(), "Can I pay #W9034121 with something else? leah.park@shop.example")
    read_order(r, "#W9034121", order("#W9034121", "pending", payment="paypal_1178405"))
    new = "paypal_1178405" if breaks else "gift_card_6630911"
    r.agent(f"Order #W9034121 would be paid with {new} instead. Confirm?")
    r.user("yes")
    args = {"order_id": "#W9034121", "payment_method_id": new}
    return r.call("modify_pending_order_payment", args, order("#W9034121", "pending", payment=new)).trace()


def _return(status: str, refund_to: str) -> Trace:
    r = authenticated(
        Run(), "The backpack on #W4417256 broke, I want to send it back. leah.park@shop.example"
    )
    read_order(r, "#W4417256", order("#W4417256", status, payment="paypal_1178405"))
    r.agent(f"Return of item 3928046918 from #W4417256, refund to {refund_to}. Confirm?")
    r.user("Sí, confirmo.")
    args = {"order_id": "#W4417256", "item_ids": ["3928046918"], "payment_method_id": refund_to}
    return r.call("return_delivered_order_items", args, order("#W4417256", "return requested")).trace()


def return_delivered(breaks: bool) -> Trace:
    return _return("pending" if breaks else "delivered", "paypal_1178405")


def refund_destination(breaks: bool) -> Trace:
    return _return("delivered", "credit_card_4410028" if breaks else "gift_card_6630911")


def _refused(ask: str, oid: str, granted: str, refused: str) -> Callable[[bool], Trace]:
    """The customer asks on their order; the agent reads it and declines. The request is granted
    on the order's status: breaks when the order read has the status that grants it."""

    def build(breaks: bool) -> Trace:
        r = authenticated(Run(), f"{ask} {oid}. leah.park@shop.example")
        read_order(r, oid, order(oid, granted if breaks else refused))
        return r.agent(f"I'm sorry, I cannot do that for order {oid}.").trace()

    return build


def _unread(ask: str, oid: str, status: str, answer: str) -> Callable[[bool], Trace]:
    """A request no record decides alone (new items, a new payment method): breaks when the agent
    answers without reading the order at all; the same answer after reading it draws nothing."""

    def build(breaks: bool) -> Trace:
        r = authenticated(Run(), f"{ask} {oid}. leah.park@shop.example")
        if not breaks:
            read_order(r, oid, order(oid, status))
        return r.agent(answer).trace()

    return build


USER = {
    "user_id": "leah_park_7321",
    "name": {"first_name": "Leah", "last_name": "Park"},
    "address": {
        "address1": "88 Lake Ave",
        "address2": "",
        "city": "Seattle",
        "country": "USA",
        "state": "WA",
        "zip": "98105",
    },
    "email": "leah.park@shop.example",
    "payment_methods": {"credit_card_4410028": {"source": "credit_card", "id": "credit_card_4410028"}},
}


def user_address(breaks: bool) -> Trace:
    """A new default address is granted on any user record: read it and decline, and it is filed."""
    r = authenticated(
        Run(),
        "I'm leah_park_7321 (leah.park@shop.example). Please update my default address to 12 Pine St, "
        "Austin, TX 78701, USA.",
    )
    r.call("get_user_details", {"user_id": "leah_park_7321"}, USER)
    if breaks:
        return r.agent("I'm sorry, I cannot change the address on your account.").trace()
    new = {
        "address1": "12 Pine St",
        "address2": "",
        "city": "Austin",
        "country": "USA",
        "state": "TX",
        "zip": "78701",
    }
    r.agent("Your default address would become 12 Pine St, Austin TX 78701. Confirm?")
    r.user("Yes")
    args = {"user_id": "leah_park_7321", **new}
    return r.call("modify_user_address", args, {**USER, "address": new}).trace()


RULES: dict[str, Callable[[bool], Trace]] = {
    "explicit-confirmation": confirmation,
    "cancel-pending-only": cancel_pending,
    "cancel-reason": cancel_reason,
    "modify-pending-only": _twice(
        "modify_pending_order_items",
        "#W6112390",
        "pending",
        "pending (item modified)",
        "I want the lamp in white instead on",
        "Oh, and the backpack in green too.",
    ),
    "modify-payment-new-method": modify_payment,
    "return-delivered-only": return_delivered,
    "refund-to-original-or-gift-card": refund_destination,
    "exchange-delivered-only": _twice(
        "exchange_delivered_order_items",
        "#W2290471",
        "delivered",
        "exchange requested",
        "Exchange the lamp for the brass one on",
        "And the backpack for the grey one as well.",
    ),
    # requests the order's status decides: refused on the status that grants them
    "cancel-request": _refused(
        "Please cancel my order, I no longer need it:", "#W7301858", "pending", "processed"
    ),
    "order-address-request": _refused(
        "Please send it to 12 Pine St, Austin TX 78701 instead: the shipping address on",
        "#W8803115",
        "pending",
        "processed",
    ),
    "return-request": _refused("I want to return the backpack from", "#W4417256", "delivered", "pending"),
    "user-address-request": user_address,
    # requests no record decides alone: left undecided when the agent never reads the order
    "payment-change-request": _unread(
        "Can I switch the payment method to my gift card on",
        "#W9034121",
        "pending",
        "Your gift card balance does not cover the order total, so I cannot switch the payment.",
    ),
    "item-change-request": _unread(
        "Could you change the items on my pending order, the desk lamp in a different color, on",
        "#W6112390",
        "pending",
        "The desk lamp is not available in another color, so the item cannot be modified.",
    ),
    "exchange-request": _unread(
        "I'd like to exchange the backpack for a bigger one from",
        "#W2290471",
        "delivered",
        "No bigger backpack of that model is available, so I cannot exchange it.",
    ),
}


def test_loads_with_every_rule_exercised_here(retail: Policy) -> None:
    assert retail.name == "retail"
    assert sorted(r.id for r in retail.rules()) == sorted(RULES)
    assert {r.name: r.key for r in retail.records} == {"order": "order_id", "user": "user_id"}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_a_run_breaking_the_rule_draws_it(rule: str, retail: Policy) -> None:
    report = audit(RULES[rule](True), retail)
    hits = [f for f in report.findings if f.policy_rule == rule]
    assert hits, [(f.policy_rule, f.title) for f in report.findings]
    assert all(f.disposition.value == "realized" for f in hits)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_a_run_keeping_the_rule_draws_nothing(rule: str, retail: Policy) -> None:
    report = audit(RULES[rule](False), retail)
    assert [f for f in report.findings if f.risk_class.value == "policy_violation"] == []


@pytest.mark.parametrize("request_id", [k.id for k in load_policy(RETAIL).requests])
def test_a_decided_request_is_refused_though_granted_the_others_undecided(
    request_id: str, retail: Policy
) -> None:
    """decided_by (the order's status, or no condition at all) makes a declined request 'refused
    though granted' (MAST 1.1); a request no record decides is only seen left undecided (3.1)."""
    kind = next(k for k in retail.requests if k.id == request_id)
    (f,) = [f for f in audit(RULES[request_id](True), retail).findings if f.policy_rule == request_id]
    assert f.failure_mode == ("3.1" if kind.decided_by is None else "1.1")


def test_a_handoff_passes_an_undecided_request_on(retail: Policy) -> None:
    """Transferred to a human without reading the order: the request went on, it was not dropped."""
    r = authenticated(Run(), "Can I pay with my gift card instead on #W9034121? leah.park@shop.example")
    r.call(
        "transfer_to_human_agents", {"summary": "wants to pay #W9034121 by gift card"}, "Transfer successful"
    )
    r.agent("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.")
    assert [f for f in audit(r.trace(), retail).findings if f.detector == "policy_requests"] == []


def test_every_write_is_some_request(retail: Policy) -> None:
    writes = {t for c in retail.confirmations for t in c.tools}
    assert writes == {t for r in retail.requests for t in r.tools}
    assert retail.handoffs == ["transfer_to_human_agents"]


def test_a_refused_write_is_intercepted_at_the_refusal(retail: Policy) -> None:
    r = authenticated(Run(), "Cancel #W1180345 please. leah.park@shop.example")
    read_order(r, "#W1180345", order("#W1180345", "delivered"))
    r.agent("Cancel order #W1180345, reason: ordered by mistake. Confirm?")
    r.user("yes")
    args = {"order_id": "#W1180345", "reason": "ordered by mistake"}
    trace = r.call(
        "cancel_pending_order", args, "Error: only a pending order can be cancelled; this one is delivered"
    ).trace()
    (f,) = [f for f in audit(trace, retail).findings if f.policy_rule == "cancel-pending-only"]
    assert f.disposition.value == "anomaly_with_interception" and f.intercepted_at == trace.steps[-1].step_id


def test_a_cancellation_without_reading_the_order_is_unchecked(retail: Policy) -> None:
    """ "you should check its status before taking the action": no get_order_details, no check."""
    r = authenticated(Run(), "Cancel #W3356002, ordered it by mistake. leah.park@shop.example")
    r.agent("Cancel order #W3356002, reason: ordered by mistake. Confirm?")
    r.user("Yes please")
    args = {"order_id": "#W3356002", "reason": "ordered by mistake"}
    trace = r.call("cancel_pending_order", args, order("#W3356002", "cancelled")).trace()
    (f,) = [f for f in audit(trace, retail).findings if f.policy_rule == "cancel-pending-only"]
    assert "without reading the order record" in f.title


def test_the_customer_establishes_email_and_order_but_not_an_invented_lookup(retail: Policy) -> None:
    """claimants.trusted_for: an e-mail the customer never gave, looked up by the agent, is filed;
    the same run with the customer's own e-mail and order id draws nothing."""
    r = Run().user("Hi, I'm Leah Park, zip 98105. Where is my order #W5520417?")
    r.call("find_user_id_by_email", {"email": "leah.park@gmail.example"}, "leah_park_7321")
    (f,) = [f for f in audit(r.trace(), retail).findings if f.detector == "policy_identifiers"]
    assert "leah.park@gmail.example" in f.title and f.disposition.value == "lead"

    ok = Run().user("Hi, I'm Leah Park, zip 98105. Where is my order #W5520417?")
    ok.call(
        "find_user_id_by_name_zip",
        {"first_name": "Leah", "last_name": "Park", "zip": "98105"},
        "leah_park_7321",
    )
    read_order(ok, "#W5520417", order("#W5520417", "pending"))
    assert [f for f in audit(ok.trace(), retail).findings if f.detector == "policy_identifiers"] == []
