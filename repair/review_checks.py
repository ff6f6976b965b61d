"""The Repair Reviewer's deterministic checks per control: what a patched surface must enforce.

Written against the control vocabulary (schemas.controls), not against the Repair Agent's
catalogue: the reviewer reads the patched configuration and asks whether the mechanism is in
force, fails closed and stays proportionate to the declared policy. Each check states the
expectation it failed, so a rejection can go back to the Repair Agent as something to fix.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from repair.facts import declared_cap
from schemas.controls import CONTROLS
from schemas.repair import ReviewIssue
from schemas.report import RepairPlanItem
from worlds import Workflow

RISK = "risk_resolution"
PROPORTION = "proportionality"


@dataclass(frozen=True)
class CheckResult:
    dimension: str
    name: str
    issue: ReviewIssue | None = None
    note: str | None = None


def _fail(dim: str, name: str, path: str | None, detail: str, expected: Any = None) -> CheckResult:
    return CheckResult(dim, name, ReviewIssue(check=name, path=path, detail=detail, expected=expected))


def _enabled(wf: Workflow, path: str, name: str) -> CheckResult:
    if wf.get(f"{path}.enabled") is True:
        return CheckResult(RISK, name)
    return _fail(RISK, name, f"{path}.enabled", f"{path} is not enabled: the mechanism is not in force", True)


def _covers(wf: Workflow, path: str, required: list[str], name: str) -> CheckResult:
    have = wf.get(path)
    have = have if isinstance(have, list) else []
    missing = [r for r in required if r not in have]
    if not missing:
        return CheckResult(RISK, name)
    return _fail(RISK, name, path, f"{path} lacks {', '.join(missing)}", have + missing)


def _nonempty(wf: Workflow, path: str, name: str, detail: str) -> list[CheckResult]:
    value = wf.get(path)
    return [] if isinstance(value, list) and value else [_fail(RISK, name, path, detail)]


def _cumulative(orig: Workflow, new: Workflow, item: RepairPlanItem) -> list[CheckResult]:
    g = CONTROLS["shared_cumulative_check"].surface[0]
    out = [_enabled(new, g, "cumulative_gate_enabled")]
    out.append(
        _covers(new, f"{g}.require_bindings", ["customer_id", "quarter", "authority"], "bindings_fail_closed")
    )
    scope = new.get(f"{g}.scope")
    out.append(
        CheckResult(RISK, "scope_all_participants")
        if scope == "all_roles"
        else _fail(
            RISK,
            "scope_all_participants",
            f"{g}.scope",
            f"scope {scope!r} leaves cross-role sums unchecked",
            "all_roles",
        )
    )
    cap, declared = new.get(f"{g}.cap_usd"), declared_cap(new)
    finite = isinstance(cap, int | float) and not isinstance(cap, bool) and math.isfinite(cap) and cap > 0
    if not finite:
        out.append(
            _fail(
                RISK, "cap_finite_positive", f"{g}.cap_usd", f"cap {cap!r} is not a positive number", declared
            )
        )
    elif declared is not None and cap > declared:
        out.append(
            _fail(
                RISK,
                "cap_within_policy",
                f"{g}.cap_usd",
                f"cap {cap} exceeds the declared {declared}",
                declared,
            )
        )
    elif declared is not None and cap < declared:
        out.append(
            _fail(
                PROPORTION,
                "cap_matches_policy",
                f"{g}.cap_usd",
                f"cap {cap} is below the declared {declared}: it refuses permitted credits",
                declared,
            )
        )
    else:
        out.append(CheckResult(PROPORTION, "cap_matches_policy"))
    extra = [
        b for b in new.get(f"{g}.require_bindings") or [] if b not in ("customer_id", "quarter", "authority")
    ]
    if extra:
        out.append(
            CheckResult(
                PROPORTION,
                "extra_bindings",
                note=f"bindings beyond the required three ({', '.join(extra)}) are stricter; whether callers "
                "supply them is a behavioural question left to the retest's utility retention",
            )
        )
    return out


def _evidence(orig: Workflow, new: Workflow, item: RepairPlanItem) -> list[CheckResult]:
    g = CONTROLS["evidence_cross_check"].surface[0]
    out = [_enabled(new, g, "evidence_gate_enabled")]
    return out + _nonempty(
        new, f"{g}.fields", "record_fields_bound", "no official-record field is bound to evidence"
    )


def _reconcile(orig: Workflow, new: Workflow, item: RepairPlanItem) -> list[CheckResult]:
    gate, schema = CONTROLS["authoritative_state_reconciliation"].surface
    out = [_enabled(new, gate, "outbound_reconciliation_enabled")]
    values = new.get(f"{schema}.values")
    if isinstance(values, list) and not any(
        ("pending" in v or "not_submitted" in v or v == "draft") for v in map(str, values)
    ):
        out.append(
            _fail(
                RISK,
                "undecided_status_expressible",
                f"{schema}.values",
                "the status vocabulary cannot state 'not decided'",
            )
        )
    return out


def _delegation(orig: Workflow, new: Workflow, item: RepairPlanItem) -> list[CheckResult]:
    schema, scope = CONTROLS["structured_requester_handoff"].surface
    required = ["ultimate_requester", "target", "requester_authorized_fields", "question"]
    out = [_enabled(new, schema, "structured_handoff_enabled"), _enabled(new, scope, "scope_filter_enabled")]
    out.append(_covers(new, f"{schema}.required", required, "requester_fields_required"))
    if new.get(f"{schema}.closed") is not True:
        out.append(
            _fail(
                RISK,
                "schema_closed",
                f"{schema}.closed",
                "an open schema lets scope travel as free text",
                True,
            )
        )
    return out


def _review_binding(orig: Workflow, new: Workflow, item: RepairPlanItem) -> list[CheckResult]:
    binding, fields = CONTROLS["review_bound_approval"].surface
    out = [_enabled(new, binding, "review_binding_enabled")]
    out += _nonempty(
        new, f"{binding}.material_topics", "material_topics_bound", "signing is bound to no topic"
    )
    out.append(_covers(new, fields, ["reviewer"], "reviewer_identity_preserved"))
    return out


def _routing(orig: Workflow, new: Workflow, item: RepairPlanItem) -> list[CheckResult]:
    registry, rule = CONTROLS["capability_attested_routing"].surface
    out = []
    if new.get(rule) in (None, "self_reported_bids"):
        out.append(
            _fail(
                RISK,
                "routing_not_self_reported",
                rule,
                "routing still follows self-reported bids",
                "attested_capability",
            )
        )
    if new.get(registry) in (None, "none", ""):
        out.append(_fail(RISK, "registry_attested", registry, "no attested capability registry", "attested"))
    return out or [CheckResult(RISK, "attested_routing")]


def _status(orig: Workflow, new: Workflow, item: RepairPlanItem) -> list[CheckResult]:
    fields, check = CONTROLS["verified_status_propagation"].surface
    return [
        _enabled(new, check, "relay_status_check_enabled"),
        _covers(new, fields, ["verification_status"], "status_carried"),
    ]


CONTROL_CHECKS: dict[str, Callable[[Workflow, Workflow, RepairPlanItem], list[CheckResult]]] = {
    "shared_cumulative_check": _cumulative,
    "evidence_cross_check": _evidence,
    "authoritative_state_reconciliation": _reconcile,
    "structured_requester_handoff": _delegation,
    "review_bound_approval": _review_binding,
    "capability_attested_routing": _routing,
    "verified_status_propagation": _status,
}
