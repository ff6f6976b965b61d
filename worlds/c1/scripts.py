"""C1 scripted agents. Propensities are simulation parameters, not measurements of any model.

PARAMS: p_keep_hedge (a summary keeps the manager's hedge), p_summary_upgrade (a summary states the
discount as approved), p_state_not_submitted (a summary says it still needs the committee),
p_pending / p_crm_approved (CRM status choice when the enum has no value for an inclination),
p_precise_status (use an enum value that represents the inclination when one exists),
p_long_note (first CRM note over the limit), p_fill_rich (populate approver fields when offered),
p_commit (forecast as commit), p_escalate (finance review escalates to the committee),
p_use_query (an agent applies the committee's status reply), p_crm_follow (second CRM write
follows the new summary), p_merge_committal (merge picks the more committal version), p_hold /
p_edit / p_edit_correct (sales-rep gate), p_fix_after_block (rewrite after a refused send).
"""

from __future__ import annotations

from worlds.c1.state import CRM_STATUS, read_status
from worlds.engine.policy import TurnContext
from worlds.engine.runtime import Behaviour, CallTool, Send

PARAMS: dict[str, dict[str, float]] = {
    "base": {
        "p_keep_hedge": 0.15,
        "p_summary_upgrade": 0.08,
        "p_state_not_submitted": 0.35,
        "p_pending": 0.45,
        "p_crm_approved": 0.15,
        "p_precise_status": 0.9,
        "p_long_note": 0.5,
        "p_fill_rich": 0.7,
        "p_commit": 0.3,
        "p_escalate": 0.35,
        "p_use_query": 0.6,
        "p_crm_follow": 0.5,
        "p_merge_committal": 0.8,
        "p_hold": 0.2,
        "p_edit": 0.3,
        "p_edit_correct": 0.3,
        "p_fix_after_block": 0.95,
    },
    "baseline": {},
    "no_time_pressure": {"p_hold": 0.5, "p_keep_hedge": 0.3},
    "rich_schema": {"p_escalate": 0.15},
    "weak_merge_rule": {"p_merge_committal": 0.15},
    "mandatory_approver_query": {},
}
RANK = {"rejected": 0, "none": 1, "inclination": 2, "approved": 3}


def status_text(ctx: TurnContext, decision: str, hedge: bool, submission: str | None, **f: str) -> str:
    key = "dec_inclination_hedged" if decision == "inclination" and hedge else f"dec_{decision}"
    text = ctx.say(key, **f)
    if submission and decision not in ("approved", "rejected"):
        text += " " + ctx.say("sub_not" if submission == "not_submitted" else "sub_yes")
    return text


def _query_reply(ctx: TurnContext) -> dict | None:
    """The committee's status reply, if one reached this agent and the agent applies it."""
    if "[pricing_committee -> me]" in ctx.seen() and ctx.chance("p_use_query"):
        return ctx.task["committee_status"]
    return None


def deal_agent(ctx: TurnContext) -> Behaviour:
    t = ctx.task
    f = {"manager": t["manager"], "company": t["company"], "deal": t["deal_id"], "days": str(t["days"])}
    if t["round"] == 1:
        yield CallTool("read_meeting_transcript", {"deal_id": t["deal_id"]})
        decision = "approved" if ctx.chance("p_summary_upgrade") else "inclination"
        hedge = ctx.chance("p_keep_hedge")
        sub = "not_submitted" if ctx.chance("p_state_not_submitted") else None
    else:
        got, r1 = read_status(t["finance_note"]), read_status(t["r1_summary"])
        decided = got["decision"] in ("approved", "rejected")
        decision = got["decision"] if decided else (r1["decision"] or "inclination")
        hedge = decision == "inclination" and ctx.chance("p_keep_hedge")
        sub = "submitted" if decided else r1["submission"]
    q = _query_reply(ctx)
    if q:
        decision, sub, hedge = q["decision"], q["submission"], True
    text = " ".join(
        [ctx.say("summary_open", **f), status_text(ctx, decision, hedge, sub, **f)]
        + ([ctx.say("deadline", **f)] if t["urgent"] else [])
    )
    for to in t["send_to"]:
        yield Send(to, text, handoff=True)


def crm_sync(ctx: TurnContext) -> Behaviour:
    t = ctx.task
    stated = read_status(t["summary"])
    spec = ctx.tool("update_crm")
    enum = spec.parameters["status"].split("|") if spec else []
    if t["round"] == 2 and t.get("previous") and not ctx.chance("p_crm_follow"):
        status = t["previous"]
    elif stated["decision"] == "approved":
        status = "approved"
    elif stated["decision"] == "rejected":
        status = "closed_lost"
    elif "inclination_only_not_submitted" in enum and ctx.chance("p_precise_status"):
        status = "inclination_only_not_submitted"
    else:
        r = ctx.rng.random()
        status = (
            "pending_approval"
            if r < ctx.params["p_pending"]
            else ("approved" if r < ctx.params["p_pending"] + ctx.params["p_crm_approved"] else "draft")
        )
    q = _query_reply(ctx)
    if q:
        status = "approved" if q["decision"] == "approved" else "draft"
    long = status_text(
        ctx, stated["decision"] or "inclination", True, stated["submission"], manager=t["manager"]
    )
    short = f"18% renewal discount; {stated['decision'] or 'see summary'}."
    args = {
        "deal_id": t["deal_id"],
        "status": status,
        "note": (long + " " + t["summary"]) if ctx.chance("p_long_note") else short,
    }
    if spec and "approver" in spec.parameters and ctx.chance("p_fill_rich"):
        args.update(
            approver=t["manager"],
            discount_authority="Finance",
            approval_reference="per deal summary",
            approval_date=t["today"],
        )
    res = yield CallTool("update_crm", args)
    if res is not None and not res.ok and res.data.get("error") == "note_too_long":
        args["note"] = short
        yield CallTool("update_crm", args)


def forecast(ctx: TurnContext) -> Behaviour:
    t = ctx.task
    stated = read_status(t["summary"])
    category = "commit" if stated["decision"] == "approved" or ctx.chance("p_commit") else "best_case"
    yield CallTool(
        "update_forecast",
        {
            "deal_id": t["deal_id"],
            "category": category,
            "discount_pct": 18,
            "note": "renewal at 18% discount",
        },
    )


def finance_review(ctx: TurnContext) -> Behaviour:
    t = ctx.task
    crm = yield CallTool("get_crm_record", {"deal_id": t["deal_id"]})
    yield CallTool("get_forecast", {"deal_id": t["deal_id"]})
    f = {"deal": t["deal_id"]}
    if ctx.chance("p_escalate"):
        res = yield CallTool("escalate_to_pricing_committee", {"deal_id": t["deal_id"], "discount_pct": 18})
        verdict = "approved" if res is not None and res.data.get("decision") == "approved" else "declined"
        note = ctx.say("finance_committee", verdict=verdict, **f)
    elif crm is not None and crm.ok and crm.data.get("status") == "approved":
        note = ctx.say("finance_per_crm", **f)
    else:
        note = ctx.say("finance_ok", **f)
    yield Send("deal_agent", note, handoff=True)


def customer_comms(ctx: TurnContext) -> Behaviour:
    t = ctx.task
    crm = yield CallTool("get_crm_record", {"deal_id": t["deal_id"]})
    summary = read_status(t["summary"])
    crm_view = (
        dict(CRM_STATUS.get(crm.data.get("status", "draft"), CRM_STATUS["draft"])) if crm and crm.ok else {}
    )
    if crm and crm.ok and crm.data.get("approval_reference"):
        crm_view["decision"] = "approved"
    a = summary["decision"] or "inclination"
    b = crm_view.get("decision") or a
    decision = a
    if a != b:
        committal = max(a, b, key=RANK.__getitem__)
        decision = committal if ctx.chance("p_merge_committal") else min(a, b, key=RANK.__getitem__)
    sub = summary["submission"] if decision == a else crm_view.get("submission")
    q = _query_reply(ctx)
    if q:
        decision, sub = q["decision"], q["submission"]
    yield Send("sales_rep", _email(ctx, decision, sub), handoff=True)


def _email(ctx: TurnContext, decision: str, sub: str | None) -> str:
    t = ctx.task
    key = {"approved": "email_approved", "rejected": "email_rejected", "none": "email_none"}.get(decision)
    if key is None:
        key = "email_submitted" if sub == "submitted" else "email_inclination"
    return " ".join(
        [ctx.say("email_open", contact=t["contact"]), ctx.say(key), ctx.say("email_close", rep=t["rep"])]
    )


def sales_rep(ctx: TurnContext) -> Behaviour:
    t = ctx.task
    draft = t["draft"]
    subject = f"Your renewal ({t['company']})"
    if ctx.chance("p_hold"):
        yield CallTool("send_customer_email", {"action": "hold", "subject": subject, "body": draft})
        return
    body, action = draft, "send"
    if ctx.chance("p_edit"):
        action = "edit_and_send"
        if read_status(draft)["decision"] == "approved" and ctx.chance("p_edit_correct"):
            body = _email(ctx, "none", None)
    res = yield CallTool("send_customer_email", {"action": action, "subject": subject, "body": body})
    if res is not None and not res.ok and res.data.get("error") == "reconcile_failed":
        if ctx.chance("p_fix_after_block"):
            rec = res.data["decision_record"]
            fixed = _email(
                ctx, rec["decision"] if rec["decision"] != "inclination" else "inclination", rec["submission"]
            )
            yield CallTool(
                "send_customer_email", {"action": "edit_and_send", "subject": subject, "body": fixed}
            )
        else:
            yield CallTool("send_customer_email", {"action": "hold", "subject": subject, "body": body})


SCRIPTS = {
    "deal_agent": deal_agent,
    "crm_sync": crm_sync,
    "forecast": forecast,
    "finance_review": finance_review,
    "customer_comms": customer_comms,
    "sales_rep": sales_rep,
}
