"""The rules Repair Agent's catalogue: each control a parameterised change to a workflow's surface.

A control reads the surface node it is given (whatever shape the configuration gives it), keeps
the settings it does not own, and turns the mechanism on with its parameters. Nothing here knows
a world's name: the same control patches any configuration that exposes the surface. The
parameters' defaults come from the configuration itself where it declares them (a declared policy
cap), otherwise from the control.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from auditor.core.errors import InputError
from repair.facts import declared_cap
from schemas.controls import CONTROLS
from schemas.report import RiskClass
from worlds import Workflow

Changes = dict[str, Any]


def _node(wf: Workflow, path: str) -> dict[str, Any]:
    """The surface node as a mapping (a bare flag or a missing node becomes an empty mapping)."""
    value = wf.get(path)
    return dict(value) if isinstance(value, dict) else {}


def _union(existing: Any, required: list[str]) -> list[str]:
    """Keep what is there, add what the control requires, in a stable order."""
    have = [str(x) for x in existing] if isinstance(existing, list) else []
    return have + [x for x in required if x not in have]


def _gate(path: str, settings: dict[str, Any], wf: Workflow) -> Changes:
    """Leaf changes that enable the gate at ``path`` with ``settings``; a non-mapping node is replaced."""
    current = wf.get(path)
    if not isinstance(current, dict):
        return {path: {"enabled": True, **settings}}
    wanted = {"enabled": True, **settings}
    return {f"{path}.{k}": v for k, v in wanted.items() if current.get(k, _ABSENT) != v}


_ABSENT = object()


def _cumulative(wf: Workflow, surface: list[str], p: dict[str, Any]) -> Changes:
    cap = p.get("cap_usd")
    if cap is None:
        cap = declared_cap(wf) or _node(wf, surface[0]).get("cap_usd")
    if not isinstance(cap, int | float) or not math.isfinite(cap) or cap <= 0:
        raise InputError(
            "the cumulative check needs a positive, finite cap",
            field="cap_usd",
            hint="declare policy.<name>_cap in the workflow or pass --param cap_usd=N",
        )
    node = _node(wf, surface[0])
    settings = {
        "cap_usd": cap,
        "window": p["window"],
        "scope": p["scope"],
        "require_bindings": _union(node.get("require_bindings"), list(p["require_bindings"])),
    }
    return _gate(surface[0], settings, wf)


def _evidence(wf: Workflow, surface: list[str], p: dict[str, Any]) -> Changes:
    node = _node(wf, surface[0])
    return _gate(surface[0], {"fields": _union(node.get("fields"), list(p["fields"]))}, wf)


def _reconcile(wf: Workflow, surface: list[str], p: dict[str, Any]) -> Changes:
    gate, schema = surface
    changes = _gate(gate, {}, wf)
    values = wf.get(f"{schema}.values")
    if isinstance(values, list):
        merged = _union(values, list(p["undecided_statuses"]))
        if merged != values:
            changes[f"{schema}.values"] = merged
    return changes


def _delegation(wf: Workflow, surface: list[str], p: dict[str, Any]) -> Changes:
    schema, scope = surface
    node = _node(wf, schema)
    changes = _gate(
        schema, {"required": _union(node.get("required"), list(p["required"])), "closed": True}, wf
    )
    changes.update(_gate(scope, {}, wf))
    return changes


def _review_binding(wf: Workflow, surface: list[str], p: dict[str, Any]) -> Changes:
    binding, fields = surface
    node = _node(wf, binding)
    topics = _union(node.get("material_topics"), list(p["material_topics"]))
    if not topics:
        raise InputError(
            "a review binding needs at least one material topic",
            field="material_topics",
            hint="declare gates…review_binding.material_topics or pass --param material_topics=a,b",
        )
    changes = _gate(binding, {"material_topics": topics}, wf)
    current = wf.get(fields)
    merged = _union(current, list(p["reviewer_fields"]))
    if merged != current:
        changes[fields] = merged
    return changes


def _routing(wf: Workflow, surface: list[str], p: dict[str, Any]) -> Changes:
    registry, rule = surface
    return {
        path: value for path, value in ((registry, p["registry"]), (rule, p["rule"])) if wf.get(path) != value
    }


def _status_propagation(wf: Workflow, surface: list[str], p: dict[str, Any]) -> Changes:
    fields, check = surface
    changes = _gate(check, {}, wf)
    current = wf.get(fields)
    merged = _union(current, list(p["claim_fields"]))
    if merged != current:
        changes[fields] = merged
    return changes


@dataclass(frozen=True)
class CatalogueControl:
    """One catalogue entry: the vocabulary's control, the risk classes it answers, how it builds."""

    name: str
    risk_classes: tuple[RiskClass, ...]
    defaults: dict[str, Any]
    build: Callable[[Workflow, list[str], dict[str, Any]], Changes] = field(repr=False)

    @property
    def surface(self) -> list[str]:
        return list(CONTROLS[self.name].surface)

    def parameters(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        unknown = sorted(set(overrides or {}) - set(self.defaults))
        if unknown:
            raise InputError(
                f"control {self.name} has no parameter {', '.join(unknown)}",
                field="--param",
                hint=f"its parameters: {', '.join(sorted(self.defaults)) or 'none'}",
            )
        return {**self.defaults, **(overrides or {})}

    def changes(self, wf: Workflow, params: dict[str, Any]) -> Changes:
        return self.build(wf, self.surface, params)


CATALOGUE: dict[str, CatalogueControl] = {
    c.name: c
    for c in [
        CatalogueControl(
            "shared_cumulative_check",
            (RiskClass.cumulative_action,),
            {
                "cap_usd": None,
                "window": "calendar_quarter",
                "scope": "all_roles",
                "require_bindings": ["customer_id", "quarter", "authority"],
            },
            _cumulative,
        ),
        CatalogueControl(
            "evidence_cross_check",
            (RiskClass.authority_without_evidence,),
            {"fields": ["root_cause", "executive_summary"]},
            _evidence,
        ),
        CatalogueControl(
            "authoritative_state_reconciliation",
            (RiskClass.information_state_drift,),
            {"undecided_statuses": ["inclination_only_not_submitted"]},
            _reconcile,
        ),
        CatalogueControl(
            "structured_requester_handoff",
            (RiskClass.delegated_disclosure,),
            {"required": ["ultimate_requester", "target", "requester_authorized_fields", "question"]},
            _delegation,
        ),
        CatalogueControl(
            "review_bound_approval",
            (RiskClass.routing_provenance_loss,),
            {"material_topics": [], "reviewer_fields": ["reviewer", "review_id"]},
            _review_binding,
        ),
        CatalogueControl(
            "capability_attested_routing",
            (RiskClass.routing_provenance_loss,),
            {"registry": "attested", "rule": "attested_capability"},
            _routing,
        ),
        CatalogueControl(
            "verified_status_propagation",
            (RiskClass.unverified_relay,),
            {"claim_fields": ["verification_status", "hedges", "attribution"]},
            _status_propagation,
        ),
    ]
}


def catalogue_control(name: str) -> CatalogueControl:
    if name not in CATALOGUE:
        raise InputError(
            f"no catalogue control named {name!r}", hint=f"known controls: {', '.join(sorted(CATALOGUE))}"
        )
    return CATALOGUE[name]
