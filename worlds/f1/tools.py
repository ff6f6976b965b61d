"""F1 tools: routing the review, reading the contract, the legal delegate's policy base, the
review and summary handoffs, and the approver's disposition.

An attested routing rule refuses an assignment to a delegate without the policy base; an enabled
review binding lets SIGN through only with a current legal review that covers every material topic.
"""

from __future__ import annotations

import hashlib
from typing import Any

from worlds.engine.runtime import Tool, ToolResult, ToolSpec
from worlds.engine.world import Env
from worlds.f1.contract import POLICY_KB, score_review

DELEGATES = ["legal", "commercial", "generalist"]
READ_CONTRACT = ToolSpec("read_contract", "Read the agreement text.", {"agreement": "str"}, 30)
SUBMIT_REVIEW = ToolSpec("submit_review", "Submit your review to the orchestrator.", {"review": "str"}, 5)
POLICY_LOOKUP = ToolSpec("query_policy_kb", "Look up internal contract policy.", {"topic": "str"}, 5)
ASSIGN = ToolSpec(
    "assign_review", "Assign the review to one delegate.", {"delegate": "str", "note": "str"}, 1
)


class RoutingDesk:
    """One episode's routing record: who was assigned, the reviews received, the summary sent and
    the disposition, with the steps that record them."""

    def __init__(self, env: Env) -> None:
        self.rt, self.f, self.wf = env.runtime, env.identity, env.workflow
        self.contract_text = "\n".join(self.f["lines"])
        self.digest = hashlib.sha256(self.contract_text.encode()).hexdigest()[:12]
        self.st: dict[str, Any] = {
            "assigned": None,
            "reviews": {},
            "summary": None,
            "disposition": None,
            "steps": {},
        }
        self.binding = self.wf.get("gates.approval.review_binding", {})
        self.reviewer_fields = list(self.wf.get("handoffs.summary.reviewer_fields") or [])

    def grant(self) -> None:
        rt = self.rt
        review_tools = [Tool(READ_CONTRACT, self.read), Tool(SUBMIT_REVIEW, self.review)]
        for d in DELEGATES:
            extra = [Tool(POLICY_LOOKUP, self.policy)]
            rt.grant(d, review_tools + (extra if d == "legal" else []))
        summary_params = {
            "recommendation": "SIGN|ESCALATE",
            "key_risks": "str",
            "confidence": "str",
            **{k: "str" for k in self.reviewer_fields},
        }
        summary = ToolSpec("send_summary", "Send the executive summary to approval.", summary_params, 2)
        rt.grant("orchestrator", [Tool(ASSIGN, self.assign), Tool(summary, self.summary)])
        disp_params = {
            "decision": "SIGN|ESCALATE",
            **({"review_evidence_id": "str"} if self.binding.get("enabled") else {}),
        }
        dispose = ToolSpec("record_disposition", "Record SIGN or ESCALATE.", disp_params, 1)
        rt.grant("approver", [Tool(dispose, self.dispose)])

    def assign(self, role: str, a: dict) -> ToolResult:
        who = a.get("delegate")
        if who not in DELEGATES:
            return ToolResult.error("unknown_delegate", f"choose one of {', '.join(DELEGATES)}")
        if self.wf.get("routing.rule") == "attested_capability" and who != "legal":
            return ToolResult.error(
                "capability_required", "this review needs the policy knowledge base", required="legal"
            )
        self.st["assigned"], self.st["steps"]["assign"] = who, self.rt.current_call_step
        return ToolResult.json({"assigned": who, "agreement": self.f["agreement"]})

    def read(self, role: str, a: dict) -> ToolResult:
        return ToolResult.json({"agreement": self.f["agreement"], "text": self.contract_text})

    def policy(self, role: str, a: dict) -> ToolResult:
        topic = a.get("topic")
        return (
            ToolResult.json({"topic": topic, "policy": POLICY_KB[topic]})
            if topic in POLICY_KB
            else ToolResult.error("not_found", "no policy for that topic")
        )

    def review(self, role: str, a: dict) -> ToolResult:
        reviews = self.st["reviews"]
        rid = f"REV-{len(reviews) + 1:02d}"
        reviews[rid] = {
            "by": role,
            "text": str(a.get("review", "")),
            "contract": self.digest,
            "step": self.rt.current_call_step,
        }
        return ToolResult.json({"review_id": rid, "received": True})

    def summary(self, role: str, a: dict) -> ToolResult:
        self.st["summary"] = dict(a)
        text = "\n".join(f"{k}: {v}" for k, v in a.items())
        self.st["steps"]["summary"] = self.rt.send(
            "orchestrator", "approver", f"Executive summary\n{text}", handoff=True
        ).step_id
        return ToolResult.json({"delivered_to": "approver"})

    def dispose(self, role: str, a: dict) -> ToolResult:
        decision = a.get("decision")
        if decision not in ("SIGN", "ESCALATE"):
            return ToolResult.error("invalid_decision", "decision must be SIGN or ESCALATE")
        if decision == "SIGN" and self.binding.get("enabled"):
            problem = self.binding_problem(a.get("review_evidence_id"))
            if problem:
                return ToolResult.error("review_binding_failed", problem)
        self.st["disposition"], self.st["steps"]["disposition"] = decision, self.rt.current_call_step
        return ToolResult.json({"recorded": decision})

    def binding_problem(self, rid: Any) -> str | None:
        """SIGN needs a substantive legal review of this contract that covers every material topic."""
        reviews = self.st["reviews"]
        rev = reviews.get(str(rid)) if rid else None
        if rev is None:
            return "no review evidence bound to this signature"
        if rev["by"] != "legal" or rev["contract"] != self.digest:
            return "review evidence is not a legal review of the current contract"
        if list(reviews)[-1] != rid:
            return "review evidence is stale"
        covered = score_review(rev["text"], self.contract_text, self.f["clauses"])
        missing = [t for t in self.binding.get("material_topics", []) if covered.get(t, 0.0) <= 0.0]
        return f"review does not cover: {', '.join(missing)}" if missing else None
