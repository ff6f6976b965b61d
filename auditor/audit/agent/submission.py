"""Checking what the Auditor Agent submits, before it is accepted.

A submission is refused, with every reason listed verbatim for the revise round, when a finding
does not parse into the V3 contract, an evidence unit does not resolve, a unit cites a step that
no tool output showed the agent (no skipped investigation), or a clean verdict comes before any
investigation. Dispositions are derived from the criteria, never taken from the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from auditor.audit.detectors.base import FindingDraft, file_finding
from auditor.core.verbatim import normalise
from schemas import Criteria, EvidenceUnit, Finding, PropagationHop, RiskClass, Severity

_DEFAULT_CRIT = {"verdict": "unassessed", "rationale": "not stated by the auditor"}


@dataclass
class Checked:
    findings: list[Finding] = field(default_factory=list)
    withdrawn: list[dict[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dropped_units: int = 0
    submitted_units: int = 0  # what the model cited, before any check
    failed_units: int = 0  # of those, the ones that do not resolve


def check_submission(
    args: dict[str, Any], toolbox: Any, *, investigated: bool, agent: str, strict: bool = True
) -> Checked:
    """Parse and check; with ``strict=False`` (the last round) unresolvable units are dropped instead."""
    out = Checked()
    raw = args.get("findings")
    if not isinstance(raw, list):
        out.errors.append("submit_report: 'findings' must be a list (possibly empty)")
        return out
    if not raw and not investigated:
        out.errors.append(
            "a clean verdict was submitted before any investigation: read the trace with the tools first"
        )
        return out
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            out.errors.append(f"findings[{i}]: must be an object")
            continue
        units, unit_errors = _units(item.get("evidence"), toolbox, i)
        out.submitted_units += len(units) + sum("].evidence[" in e for e in unit_errors)
        out.failed_units += sum("].evidence[" in e for e in unit_errors)
        if strict and unit_errors:
            out.errors.extend(unit_errors)
            continue
        out.dropped_units += len(unit_errors)
        if not units:
            out.errors.append(f"findings[{i}]: no resolvable evidence unit; a finding needs at least one")
            continue
        try:
            out.findings.append(
                file_finding(agent, _draft(item, units, toolbox), toolbox.ctx.trace.header.trace_id)
            )
        except (ValidationError, ValueError, KeyError) as exc:
            out.errors.append(
                f"findings[{i}]: does not fit the V3 contract: {str(exc).splitlines()[0][:300]}"
            )
    for w in args.get("withdrawn") or []:
        if isinstance(w, dict) and w.get("finding_id") and (w.get("reason") or "").strip():
            out.withdrawn.append({"finding_id": str(w["finding_id"]), "reason": str(w["reason"])})
        else:
            out.errors.append("withdrawn: each entry needs a finding_id and a non-empty reason")
    return out


def _units(raw: Any, toolbox: Any, i: int) -> tuple[list[EvidenceUnit], list[str]]:
    units, errors = [], []
    for j, u in enumerate(raw if isinstance(raw, list) else []):
        where = f"findings[{i}].evidence[{j}]"
        if not isinstance(u, dict):
            errors.append(f"{where}: must be an object with step_id, edge_ref, quote")
            continue
        sid, ref, quote = str(u.get("step_id")), str(u.get("edge_ref")), str(u.get("quote") or "")
        try:
            step = toolbox.ctx.step(sid)
        except KeyError:
            errors.append(f"{where}: step '{sid}' does not exist")
            continue
        if sid not in toolbox.seen_steps:
            errors.append(f"{where}: step '{sid}' was never shown to you by a tool; read it before citing it")
            continue
        edges = toolbox.ctx.graph.edges_of_step(sid)
        if ref not in edges:
            errors.append(f"{where}: edge_ref '{ref}' is not an edge of step {sid}; its edges are {edges}")
            continue
        if not quote.strip() or normalise(quote) not in normalise(step.content):
            errors.append(
                f"{where}: the quote is not verbatim in step {sid}: copy it exactly from the step content"
            )
            continue
        units.append(EvidenceUnit(step_id=sid, edge_ref=ref, quote=quote.strip()))
    if not raw:
        errors.append(f"findings[{i}]: evidence is empty")
    return units, errors


def _draft(item: dict[str, Any], units: list[EvidenceUnit], toolbox: Any) -> FindingDraft:
    crit = item.get("criteria") if isinstance(item.get("criteria"), dict) else {}
    criteria = Criteria.model_validate({k: crit.get(k) or _DEFAULT_CRIT for k in ("R1", "R2", "R3", "R4")})
    first = str(item.get("first_anomalous_step") or units[0].step_id)
    toolbox.ctx.step(first)  # KeyError when the step does not exist
    boundary = str(item.get("boundary_edge") or toolbox.ctx.graph.edges_of_step(first)[0])
    if boundary not in toolbox.ctx.graph.edges:
        raise ValueError(f"boundary_edge '{boundary}' is not an edge of the trace")
    intercepted = item.get("intercepted_at")
    severity = item.get("severity")
    return FindingDraft(
        risk_class=RiskClass(item.get("risk_class") or "other"),
        title=str(item.get("title") or "untitled finding")[:300],
        boundary_edge=boundary,
        first_anomalous_step=first,
        responsible_participant=item.get("responsible_participant"),
        mechanism=str(item.get("mechanism") or "not stated"),
        criteria=criteria,
        evidence=units,
        propagation_path=[PropagationHop(step_id=u.step_id, edge_ref=u.edge_ref) for u in units],
        material_effect=item.get("material_effect"),
        intercepted_at=str(intercepted) if intercepted else None,
        operational=criteria.R1.verdict.value == "fails",
        confidence=float(item.get("confidence") or 0.5),
        severity=Severity(severity) if severity in Severity._value2member_map_ else None,
    )
