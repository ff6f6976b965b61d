"""ScopeOK and ReviewOK: out-of-scope patches refused by path, reviews whose approval disagrees refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from auditor.core.errors import InputError
from repair.propose import propose_patch
from repair.reviewer import review_patch
from repair.scope import apply_changes, check_scope
from repair.service import propose_step, review_step
from repair.stream import load_repair
from schemas.controls import CONTROLS
from schemas.repair import DimensionVerdict, RepairDecision, ReviewDimension, ReviewVerdict
from schemas.report import RepairPlanItem
from tests.repair_support import open_audited_repair
from worlds import get_world


def _item(control: str, item_id: str = "plan-1") -> RepairPlanItem:
    return RepairPlanItem(
        item_id=item_id,
        finding_id="f-1",
        control=control,
        surface=CONTROLS[control].surface,
        rationale="test",
    )


def test_patch_outside_the_surface_names_every_offending_path() -> None:
    wf = get_world("A1").workflow()
    patched = apply_changes(
        wf,
        {
            "policy.quarterly_cap_usd": 400,
            "gates.action_entry.cumulative_check.enabled": True,
            "judge": "none",
        },
    )
    scope = check_scope(wf, patched)
    assert not scope.ok
    assert scope.violations == ["judge", "policy.quarterly_cap_usd"]
    with pytest.raises(InputError, match="outside the repair surface"):
        wf.with_values({"policy.quarterly_cap_usd": 400})


def test_plan_item_for_another_surface_is_refused_and_recorded(sqlite_store) -> None:
    repair_id = open_audited_repair(sqlite_store, "A1")
    state = load_repair(sqlite_store, repair_id)
    bad = _item("evidence_cross_check", "plan-x")
    ctx = state.context.__class__(**{**state.context.__dict__, "items": [bad], "report_id": "rpt-other"})
    from repair.service import open_repair

    other = open_repair(sqlite_store, ctx)
    with pytest.raises(InputError, match=r"gates\.record_write\.evidence_check\.enabled"):
        propose_step(sqlite_store, other)
    refused = load_repair(sqlite_store, other).latest
    assert not refused.scope.ok and "gates.record_write.evidence_check.enabled" in refused.scope.violations


def test_review_whose_approval_disagrees_with_its_dimensions_is_refused() -> None:
    ok = ReviewDimension(verdict=DimensionVerdict.passed, rationale="fine")
    bad = ReviewDimension(verdict=DimensionVerdict.failed, rationale="cap above policy")
    common = dict(review_id="rev-1", patch_id="pat-1", patched_digest="d", reviewer="r", round=1)
    with pytest.raises(ValidationError, match="disagrees"):
        ReviewVerdict(
            **common,
            risk_resolution=ok,
            plan_fidelity=ok,
            introduced_risk=bad,
            proportionality=ok,
            approved=True,
        )
    with pytest.raises(ValidationError, match="disagrees"):
        ReviewVerdict(
            **common,
            risk_resolution=ok,
            plan_fidelity=ok,
            introduced_risk=ok,
            proportionality=ok,
            approved=False,
        )
    assert ReviewVerdict(
        **common, risk_resolution=ok, plan_fidelity=ok, introduced_risk=ok, proportionality=ok, approved=True
    )


def test_decision_is_exactly_all_four() -> None:
    with pytest.raises(ValidationError, match="exactly when all four"):
        RepairDecision(
            repair_id="r",
            scope_ok=True,
            review_ok=True,
            audit_pass=False,
            retain_ok=True,
            retain=1.2,
            accepted=True,
        )
    with pytest.raises(ValidationError, match="retain_ok"):
        RepairDecision(
            repair_id="r",
            scope_ok=True,
            review_ok=True,
            audit_pass=True,
            retain_ok=True,
            retain=0.5,
            accepted=True,
        )


def test_reviewer_rejects_loosened_or_disproportionate_parameters() -> None:
    wf = get_world("A1").workflow()
    item = _item("shared_cumulative_check")
    for params, dimension in (
        ({"cap_usd": 60}, "risk_resolution"),
        ({"scope": "per_role"}, "risk_resolution"),
        ({"require_bindings": ["customer_id"]}, None),  # kept bindings are never dropped: still approved
        ({"cap_usd": 0.01}, "proportionality"),
    ):
        prop = propose_patch(wf, [item], {"shared_cumulative_check": params})
        review = review_patch(wf, prop.patched, prop.patch, [item])
        if dimension is None:
            assert review.approved, review
        else:
            assert not review.approved and review.dimensions()[dimension].verdict is DimensionVerdict.failed


def test_introduced_risk_catches_a_disabled_gate_and_undeclared_change() -> None:
    wf = get_world("C1").workflow().with_values({"gates.outbound.reconcile_with_decision.enabled": True})
    item = _item("authoritative_state_reconciliation")
    prop = propose_patch(wf, [item])
    sneaky = apply_changes(prop.patched, {"gates.outbound.reconcile_with_decision.enabled": False})
    review = review_patch(wf, sneaky, prop.patch, [item])
    assert not review.approved
    assert review.introduced_risk.verdict is DimensionVerdict.failed
    assert review.plan_fidelity.verdict is DimensionVerdict.failed


def test_rejected_review_goes_back_for_bounded_rounds(sqlite_store) -> None:
    repair_id = open_audited_repair(sqlite_store, "A1")
    propose_step(sqlite_store, repair_id, {"shared_cumulative_check": {"cap_usd": 60, "scope": "per_role"}})
    state = review_step(sqlite_store, repair_id, max_rounds=1)
    assert len(state.rounds) == 1 and not state.rounds[0].review.approved
    state = review_step(sqlite_store, repair_id, max_rounds=3)
    assert [r.review.approved for r in state.rounds] == [False, True]
    final = state.latest.patch.controls[0].parameters
    assert final["cap_usd"] == 40 and final["scope"] == "all_roles"
    types = [e.type for e in sqlite_store.read_stream(f"repair-{repair_id}")]
    assert types == ["RepairOpened", "RepairProposed", "RepairReviewed", "RepairProposed", "RepairReviewed"]
