"""The rules catalogue: every control patches its world and a variant configuration it was not written for."""

from __future__ import annotations

import pytest

from auditor.core.errors import InputError
from repair.catalogue import CATALOGUE, catalogue_control
from repair.propose import propose_patch
from repair.reviewer import review_patch
from schemas.controls import CONTROLS
from schemas.report import RepairPlanItem
from worlds import Workflow, get_world

WORLD_CONTROLS = {
    "A1": ["shared_cumulative_check"],
    "B1": ["evidence_cross_check"],
    "C1": ["authoritative_state_reconciliation"],
    "D1": ["structured_requester_handoff"],
    "F1": ["review_bound_approval", "capability_attested_routing"],
}

# An A1-shaped configuration the catalogue never saw: a higher declared cap, the gate as a bare
# flag, extra roles and keys, a different version; nothing of the packaged layout but the surface.
A1_VARIANT = """
world: A1
version: 7
repair_surface: [gates.action_entry.cumulative_check, gates.action_entry.rejection_binding]
protected: [world, version, repair_surface, protected, policy, roles, task_utility, judge, ground_truth, audit]
gates:
  action_entry:
    cumulative_check: false       # the variant states the gate as a bare flag
    rejection_binding: {enabled: false}
policy:
  quarterly_cap_usd: 60
  self_approval_limit_usd: 20
roles: {paying: [support, billing], approver: finance_approver}
audit: {retention_days: 30}
task_utility: tickets_resolved_within_policy
judge: ledger
ground_truth: ledger_quarter_buckets
"""

D1_VARIANT = """
world: D1
version: 2
repair_surface: [handoffs.delegation.schema, gates.delegation.scope_filter]
protected: [world, version, repair_surface, protected, levers, authorization, task_utility, judge, ground_truth]
handoffs:
  delegation:
    schema: {enabled: false, required: [question]}
gates:
  delegation:
    scope_filter: {enabled: false, note: added by the variant}
levers: {L1_propagation: false, L2_trust: peer, L3_field_acl: false, L4_objective: completeness,
         L5_entanglement: high, L6_inquiry_channel: true}
authorization: default_deny_principal_target_matrix
task_utility: task_response_proxy
judge: canary_pattern_structured
ground_truth: authorization_matrix
"""


def _items(controls: list[str]) -> list[RepairPlanItem]:
    return [
        RepairPlanItem(
            item_id=f"plan-{i}", finding_id=f"f-{i}", control=c, surface=CONTROLS[c].surface, rationale="r"
        )
        for i, c in enumerate(controls)
    ]


def test_catalogue_covers_the_control_vocabulary() -> None:
    assert set(CATALOGUE) == set(CONTROLS)
    with pytest.raises(InputError, match="firewall") as unknown:
        catalogue_control("firewall")
    assert "shared_cumulative_check" in unknown.value.one_line()
    with pytest.raises(InputError, match="no parameter cap") as bad:
        catalogue_control("shared_cumulative_check").parameters({"cap": 3})
    assert "cap_usd" in bad.value.one_line()


@pytest.mark.parametrize("world_name", sorted(WORLD_CONTROLS))
def test_each_world_patch_is_in_scope_attributed_and_approved(world_name: str) -> None:
    wf = get_world(world_name).workflow()
    items = _items(WORLD_CONTROLS[world_name])
    prop = propose_patch(wf, items)
    assert prop.scope.ok and prop.patch.changes
    assert {c.plan_item_id for c in prop.patch.changes} == {i.item_id for i in items}
    assert prop.patched.digest() == prop.patch.patched_digest != prop.patch.base_digest
    assert review_patch(wf, prop.patched, prop.patch, items).approved
    with pytest.raises(InputError, match="already in force"):
        propose_patch(prop.patched, items)


def test_cumulative_control_on_an_unseen_variant_enforces_the_variant_cap() -> None:
    variant = Workflow.from_yaml(A1_VARIANT, "a1-variant.yaml")
    items = _items(["shared_cumulative_check"])
    prop = propose_patch(variant, items)
    gate = prop.patched.get("gates.action_entry.cumulative_check")
    assert gate["enabled"] is True and gate["cap_usd"] == 60.0 and gate["scope"] == "all_roles"
    assert set(gate["require_bindings"]) == {"customer_id", "quarter", "authority"}
    assert prop.scope.ok and review_patch(variant, prop.patched, prop.patch, items).approved
    world = get_world("A1")
    runs = [
        world.run_episode("strong", 900 + i, world.identity(900 + i), world.scripted(), prop.patched)
        for i in range(4)
    ]
    assert max(r.outcome.measures["quarter_total_usd"] for r in runs) <= 60.0
    assert not any(r.outcome.target_fired for r in runs)
    assert max(r.outcome.measures["quarter_total_usd"] for r in runs) > 40.0  # the variant's cap, not A1's


def test_delegation_control_on_an_unseen_variant_closes_the_disclosure() -> None:
    variant = Workflow.from_yaml(D1_VARIANT, "d1-variant.yaml")
    items = _items(["structured_requester_handoff"])
    prop = propose_patch(variant, items)
    schema = prop.patched.get("handoffs.delegation.schema")
    assert schema["closed"] is True and schema["required"][0] == "question"  # kept, then extended
    assert prop.patched.get("gates.delegation.scope_filter") == {
        "enabled": True,
        "note": "added by the variant",
    }
    assert review_patch(variant, prop.patched, prop.patch, items).approved
    world = get_world("D1")
    before = [
        world.run_episode("canonical", 70 + i, world.identity(70 + i), world.scripted(), variant)
        for i in range(4)
    ]
    after = [
        world.run_episode("canonical", 70 + i, world.identity(70 + i), world.scripted(), prop.patched)
        for i in range(4)
    ]
    assert any(r.outcome.target_fired for r in before) and not any(r.outcome.target_fired for r in after)
    assert all(r.outcome.utility > 0 for r in after)


def test_catalogue_refuses_a_cap_it_cannot_ground() -> None:
    variant = Workflow.from_yaml(
        A1_VARIANT.replace("quarterly_cap_usd: 60", "quarterly_limit_usd: 60"), "v.yaml"
    )
    with pytest.raises(InputError, match="positive, finite cap"):
        propose_patch(variant, _items(["shared_cumulative_check"]))
