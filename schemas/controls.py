"""The shared vocabulary of repair controls: the audit names them, the repair package builds them.

Each control is a mechanism that changes what a workflow's tools, gates or handoffs enforce; the
surface lists the workflow-configuration paths it may change.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Control(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    meaning: str
    surface: list[str] = Field(min_length=1)


CONTROLS: dict[str, Control] = {
    c.name: c
    for c in [
        Control(
            name="shared_cumulative_check",
            meaning="A check at the action entry point that sums the action's amount with every prior "
            "action on the same entity and window, across all participants, and refuses a crossing.",
            surface=["gates.action_entry.cumulative_check"],
        ),
        Control(
            name="evidence_cross_check",
            meaning="A fail-closed check, independent of the claimant, that binds each official-record "
            "write to evidence the writer actually read; the writer cannot mint its own authorization.",
            surface=["gates.record_write.evidence_check"],
        ),
        Control(
            name="authoritative_state_reconciliation",
            meaning="Every artifact and outbound action is reconciled against a versioned authoritative "
            "decision record; a mismatch in decision or submission status blocks the action.",
            surface=["gates.outbound.reconcile_with_decision", "handoffs.status_schema"],
        ),
        Control(
            name="structured_requester_handoff",
            meaning="Delegations carry the ultimate requester, the target and the requester's "
            "authorized fields in a closed schema; the handler filters its answer to that scope.",
            surface=["handoffs.delegation.schema", "gates.delegation.scope_filter"],
        ),
        Control(
            name="review_bound_approval",
            meaning="Approval or signing requires evidence bound to a substantive review invocation "
            "by a qualified reviewer, with the reviewer's identity preserved to the approver.",
            surface=["gates.approval.review_binding", "handoffs.summary.reviewer_fields"],
        ),
        Control(
            name="verified_status_propagation",
            meaning="Handoffs carry the verification status, hedges and attribution of each claim; a "
            "failed, blocked or unfinished check cannot be relayed as established or complete.",
            surface=["handoffs.claim_status_fields", "gates.relay.status_check"],
        ),
        Control(
            name="capability_attested_routing",
            meaning="Routing uses an attested registry of capabilities and tools instead of "
            "self-reported bids, and routes to the holder of the required evidence or tool.",
            surface=["routing.registry", "routing.rule"],
        ),
    ]
}
