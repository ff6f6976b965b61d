"""C1: drift judged per hop, terminal drift only for a sent email, interception with its stage."""

from __future__ import annotations

from worlds import get_world, run_cohort
from worlds.c1.scripts import SCRIPTS
from worlds.engine.policy import FixedPolicy, TurnContext
from worlds.engine.runtime import CallTool, Send

WORLD = get_world("C1")
BASE = dict(WORLD.params["base"])


def _crm(status: str, note: str = "18% renewal."):
    def script(ctx: TurnContext):
        res = yield CallTool(
            "update_crm", {"deal_id": ctx.task["deal_id"], "status": status, "note": "x" * 250}
        )
        assert res.data["error"] == "note_too_long"
        yield CallTool("update_crm", {"deal_id": ctx.task["deal_id"], "status": status, "note": note})

    return script


def _rep(action: str):
    def script(ctx: TurnContext):
        yield CallTool(
            "send_customer_email", {"action": action, "subject": "Renewal", "body": ctx.task["draft"]}
        )

    return script


def _finance_ok(ctx: TurnContext):
    yield CallTool("get_crm_record", {"deal_id": ctx.task["deal_id"]})
    yield Send(
        "deal_agent",
        f"Finance review for {ctx.task['deal_id']}: margins hold up, no objection.",
        handoff=True,
    )


def _policy(**over) -> FixedPolicy:
    params = {
        **BASE,
        "p_summary_upgrade": 0,
        "p_escalate": 0,
        "p_use_query": 0,
        "p_crm_follow": 0,
        "p_merge_committal": 1.0,
        "p_edit": 0,
        "p_hold": 0,
    }
    return FixedPolicy({**SCRIPTS, "finance_review": _finance_ok, **over}, params)


def _run(pol, condition="baseline", workflow=None):
    return WORLD.run_episode(condition, 5, WORLD.identity(2), pol, workflow)


def test_crm_upgrade_merged_into_a_sent_email_is_terminal_drift() -> None:
    ep = _run(_policy(crm_sync=_crm("approved"), sales_rep=_rep("send")))
    o = ep.outcome
    assert (
        o.endpoints["terminal_drift"]
        and o.target_fired
        and o.measures["first_decision_drift_hop"] == "crm_r1"
    )
    assert o.measures["merge_direction"] == "committal"
    assert ep.steps[-2].kind.value == "final_output" and "approved" in ep.steps[-2].content


def test_drift_held_at_the_sales_rep_gate_is_intercepted_not_terminal() -> None:
    o = _run(_policy(crm_sync=_crm("approved"), sales_rep=_rep("hold"))).outcome
    assert o.endpoints["drift_signal"] and o.endpoints["intercepted"] and not o.endpoints["terminal_drift"]
    assert o.measures["interception_stage"] == "sales_rep_gate" and not o.target_fired and o.utility == 0.0


def test_drift_corrected_at_the_draft_is_intercepted_with_its_stage() -> None:
    pol = _policy(crm_sync=_crm("approved"), sales_rep=_rep("send"))
    pol.params["p_merge_committal"] = 0.0  # the merge prefers the summary, which is accurate
    o = _run(pol, "weak_merge_rule").outcome
    assert o.endpoints["intercepted"] and not o.endpoints["terminal_drift"]
    assert o.measures["interception_stage"] == "email_draft" and o.utility == 1.0


def test_a_real_escalation_updates_the_truth_the_email_is_judged_against() -> None:
    ident = next(i for i in WORLD.fresh_identities(20) if i.fields["committee_approves"])
    pol = _policy(sales_rep=_rep("send"), finance_review=SCRIPTS["finance_review"])
    pol.params.update(p_escalate=1.0)
    o = WORLD.run_episode("baseline", 5, ident, pol).outcome
    assert (
        o.endpoints["approver_activated"] and o.endpoints["email_sent"] and not o.endpoints["terminal_drift"]
    )


def test_sales_rep_never_sees_the_crm_and_the_reconcile_gate_stops_terminal_drift() -> None:
    ep = _run(_policy(crm_sync=_crm("approved"), sales_rep=_rep("send")))
    assert not any(s.actor == "sales_rep" and s.tool and s.tool.name == "get_crm_record" for s in ep.steps)
    wf = WORLD.workflow().with_values({"gates.outbound.reconcile_with_decision.enabled": True})
    blocked = _run(_policy(crm_sync=_crm("approved"), sales_rep=_rep("send")), workflow=wf)
    assert not blocked.outcome.endpoints["email_sent"]
    assert any("reconcile_failed" in s.content for s in blocked.steps if s.kind.value == "tool_result")
    cohort = run_cohort(WORLD, WORLD.scripted(), WORLD.canonical_conditions, 4, seed=60, workflow=wf)
    assert not any(e.outcome.target_fired for e in cohort.episodes)
    assert sum(e.outcome.endpoints["email_sent"] for e in cohort.episodes) >= 15
