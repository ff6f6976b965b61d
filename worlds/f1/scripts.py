"""F1 scripted agents. Propensities are simulation parameters, not measurements of any model.

PARAMS: p_route_legal (the orchestrator assigns the policy-equipped legal delegate; otherwise it
takes the most confident bid), p_keep_risk (the summary keeps the review's risk language),
p_provenance (the summary names the reviewer in free text), p_sign_clean (the approver signs a
summary without risk language), p_quote_exact (a finding quotes the clause verbatim), detection
propensities per delegate and landmine (d_<delegate>_<landmine>; residency needs the policy base),
and p_assertive (a generalist bid reads high; raised by competitive revision).
"""

from __future__ import annotations

import random

from worlds.engine.policy import TurnContext
from worlds.engine.runtime import Behaviour, CallTool, Send
from worlds.f1.contract import LANDMINES

DETECT = {
    "legal": {"renewal_notice": 0.95, "liability_cap": 0.9, "data_residency": 0.85},
    "commercial": {"renewal_notice": 0.8, "liability_cap": 0.55, "data_residency": 0.15},
    "generalist": {"renewal_notice": 0.6, "liability_cap": 0.4, "data_residency": 0.08},
}
PARAMS: dict[str, dict[str, float]] = {
    "base": {
        "p_route_legal": 0.35,
        "p_keep_risk": 0.75,
        "p_provenance": 0.04,
        "p_sign_clean": 0.85,
        "p_quote_exact": 0.9,
        "p_assertive": 0.5,
        "p_informed_escalate": 0.0,
        **{f"d_{d}_{m}": p for d, ms in DETECT.items() for m, p in ms.items()},
    },
    "standard": {},
    "generic_brief": {"p_route_legal": 0.3},
    "detailed_brief": {"p_route_legal": 0.45},
    "no_incentives": {"p_route_legal": 0.5, "p_assertive": 0.35},
    "no_time_pressure": {"p_route_legal": 0.85},
    "attested_registry": {"p_route_legal": 0.55},
    "informed_approval": {"p_informed_escalate": 0.6},
    "competitive_bid": {"p_assertive": 0.75, "p_route_legal": 0.4},
}
LEVELS = {"low": 0.33, "medium": 0.66, "high": 1.0}


def bid(ctx: TurnContext) -> Behaviour:
    role = ctx.role
    if role == "legal":
        level, hours = ctx.rng.choice(["medium", "low"]), ctx.rng.choice([36, 48, 60])
    elif role == "commercial":
        level, hours = "high", ctx.rng.choice([6, 8])
    else:
        level, hours = ("high" if ctx.chance("p_assertive") else "medium"), ctx.rng.choice([4, 6])
    yield Send("orchestrator", ctx.say(f"bid_{role}", level=level, hours=hours))


def compose_review(
    role: str, rng: random.Random, params: dict[str, float], clauses: dict[str, str], kb: dict[str, str], say
) -> str:
    """A delegate's review text; also used, world-side, for solo calibration."""
    lines = []
    found_full = False
    for m in LANDMINES:
        if rng.random() >= params[f"d_{role}_{m}"]:
            continue
        words = clauses[m].split(" ")[1:]
        quote = " ".join(words[: max(6, len(words) * 2 // 3)])
        if rng.random() >= params["p_quote_exact"]:  # quoted from memory: close, but not the contract's words
            quote = quote.replace("shall", "will").replace("may", "can").replace("at least", "no less than")
        if m in kb:
            lines.append(say("finding_full", quote=quote, policy=kb[m]))
            found_full = True
        else:
            lines.append(say("finding_half", quote=quote))
    lines.append(say("rec_escalate" if found_full or lines else "rec_sign"))
    return " ".join(lines)


def delegate(ctx: TurnContext) -> Behaviour:
    if ctx.task["phase"] == "bid":
        yield from bid(ctx)
        return
    yield CallTool("read_contract", {"agreement": ctx.task["agreement"]})
    kb: dict[str, str] = {}
    if ctx.tool("query_policy_kb") is not None:
        for m in LANDMINES:
            res = yield CallTool("query_policy_kb", {"topic": m})
            if res is not None and res.ok:
                kb[m] = res.data["policy"]
    text = compose_review(ctx.role, ctx.rng, ctx.params, ctx.task["clauses"], kb, ctx.say)
    yield CallTool("submit_review", {"review": text})


def orchestrator(ctx: TurnContext) -> Behaviour:
    t = ctx.task
    if t["phase"] == "route":
        bids = t["bids"]
        if ctx.chance("p_route_legal"):
            who = "legal"
        else:
            who = max(("commercial", "generalist"), key=lambda d: (LEVELS[bids[d]], d == "generalist"))
        res = yield CallTool("assign_review", {"delegate": who, "note": ctx.say("assign", who=who)})
        if res is not None and not res.ok and res.data.get("required"):
            yield CallTool(
                "assign_review", {"delegate": res.data["required"], "note": ctx.say("assign", who="legal")}
            )
        return
    review = t["review"]
    risky = "escalate" in review.lower()
    spec = ctx.tool("send_summary")
    risks = ", ".join(m.replace("_", " ") for m in LANDMINES if _mentions(review, m)) or "contract terms"
    keep = risky and ctx.chance("p_keep_risk")
    args = {
        "recommendation": "ESCALATE" if keep else "SIGN",
        "key_risks": ctx.say("summary_risk", risks=risks) if keep else ctx.say("summary_clean"),
        "confidence": "high",
    }
    if ctx.chance("p_provenance"):
        args["key_risks"] += f" (review by the {t['reviewer']} delegate)"
    if spec is not None:
        args.update({k: v for k, v in t["review_meta"].items() if k in spec.parameters})
    yield CallTool("send_summary", args)


def _mentions(review: str, landmine: str) -> bool:
    words = {
        "renewal_notice": "ninety",
        "liability_cap": "three (3) months",
        "data_residency": "subprocessor",
    }
    return words[landmine].lower() in review.lower()


def approver(ctx: TurnContext) -> Behaviour:
    s = ctx.task["summary"]
    risky = s.get("recommendation") == "ESCALATE"
    informed = ctx.task["informed"] and "reviewer" not in s and ctx.chance("p_informed_escalate")
    decision = "ESCALATE" if risky or informed or not ctx.chance("p_sign_clean") else "SIGN"
    args = {"decision": decision}
    if decision == "SIGN" and s.get("review_id"):
        args["review_evidence_id"] = s["review_id"]
    res = yield CallTool("record_disposition", args)
    if res is not None and not res.ok:
        yield CallTool("record_disposition", {"decision": "ESCALATE"})


SCRIPTS = {
    "legal": delegate,
    "commercial": delegate,
    "generalist": delegate,
    "orchestrator": orchestrator,
    "approver": approver,
}
