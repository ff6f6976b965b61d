"""The V3 report as SARIF 2.1.0, so findings show up in code-review tools.

One rule per risk class (with help text), one result per finding. A result's locations point at
the trace file: ``artifactLocation.uri`` is the trace's source (or ``<trace_id>.jsonl`` when the
header names none), percent-encoded into a URI reference; ``region.startLine`` is the step's line in the canonical JSONL export (the
header on line 1, the step at position i on line i + 2), ``region.snippet`` holds the evidence
quote, and a logical location names the step. The primary location is the evidence at the first
anomalous step; the other evidence units are related locations.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import quote

from auditor.audit.report.render_text import (
    CRITERION_TEXT,
    DISPOSITION_TEXT,
    RISK_TEXT,
    disposition_phrase,
    plan_items,
    step_positions,
    words,
)
from schemas import AuditReport, EvidenceUnit, Finding, RiskClass, Severity, Trace

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "agent-auditor"

LEVEL: dict[Severity, str] = {
    Severity.critical: "error",
    Severity.high: "error",
    Severity.medium: "warning",
    Severity.low: "note",
    Severity.info: "note",
}
_RULES = list(RiskClass)


def _tool_version() -> str:
    try:
        return version("agent-auditor")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0+unknown"


def _rule(rc: RiskClass) -> dict[str, Any]:
    text = RISK_TEXT[rc]
    return {
        "id": rc.value,
        "name": "".join(part.capitalize() for part in rc.value.split("_")),
        "shortDescription": {"text": text.title},
        "fullDescription": {"text": text.help},
        "help": {
            "text": f"{text.help} Each finding states criteria R1-R4 and a disposition derived from them.",
            "markdown": f"**{text.title}.** {text.help}\n\nCriteria: "
            + "; ".join(f"{k}: {v}" for k, v in CRITERION_TEXT.items()),
        },
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["interaction-risk", "multi-agent"]},
    }


def render_sarif(report: AuditReport, trace: Trace) -> str:
    """The SARIF log as indented JSON text."""
    uri = quote(trace.header.source or f"{report.trace_id}.jsonl", safe="/:@!$&'()*+,;=~")
    lines = {sid: pos + 2 for sid, pos in step_positions(trace).items()}
    run = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": _tool_version(),
                "semanticVersion": _tool_version(),
                "rules": [_rule(rc) for rc in _RULES],
            }
        },
        "automationDetails": {"id": f"agent-auditor/{report.trace_id}/{report.report_id}"},
        "artifacts": [{"location": {"uri": uri}}],
        "results": [_result(f, report, uri, lines) for f in report.findings],
        "properties": {
            "report_id": report.report_id,
            "trace_id": report.trace_id,
            "trace_digest": report.trace_digest,
            "engine": report.engine,
            "graph_mode": report.graph_mode.value,
            "decision": report.decision.value,
            "summary": report.summary,
            "notes": report.notes,
            "risk_score": report.risk_score,
            "outcome": report.outcome.model_dump(mode="json") if report.outcome else None,
            "attribution": (
                {
                    k: getattr(report.attribution, k)
                    for k in ("agent", "step_id", "step_index", "confidence", "strategy")
                }
                if report.attribution
                else None
            ),
            "region_lines": "canonical JSONL export: header on line 1, step at position i on line i + 2",
        },
    }
    if report.model:
        run["properties"]["model"] = report.model
    log = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _result(f: Finding, report: AuditReport, uri: str, lines: dict[str, int]) -> dict[str, Any]:
    primary = next((u for u in f.evidence if u.step_id == f.first_anomalous_step), f.evidence[0])
    others = [u for u in f.evidence if u is not primary]
    message = f"{f.title}. {RISK_TEXT[f.risk_class].title}, {disposition_phrase(f)}: {f.mechanism}" + (
        f" Material effect: {f.material_effect}." if f.material_effect else ""
    )
    result: dict[str, Any] = {
        "ruleId": f.risk_class.value,
        "ruleIndex": _RULES.index(f.risk_class),
        "level": LEVEL[f.severity],
        "message": {"text": message},
        "locations": [_location(primary, uri, lines, 0, report.trace_id)],
        "partialFingerprints": {"agentAuditorFinding/v1": f.finding_id},
        "properties": {
            "finding_id": f.finding_id,
            "disposition": f.disposition.value,
            "disposition_text": DISPOSITION_TEXT[f.disposition],
            "severity": f.severity.value,
            "confidence": f.confidence,
            "boundary_edge": f.boundary_edge,
            "first_anomalous_step": f.first_anomalous_step,
            "responsible_participant": f.responsible_participant,
            "intercepted_at": f.intercepted_at,
            "policy_rule": f.policy_rule,
            "failure_mode": f.failure_mode,
            "propagation_path": [h.model_dump() for h in f.propagation_path],
            "criteria": {k: {"verdict": c.verdict.value, "rationale": c.rationale} for k, c in f.criteria},
            "repair_plan": [
                {"control": i.control, "surface": i.surface, "rationale": i.rationale}
                for i in plan_items(report, f)
            ],
            "tags": [f.risk_class.value, words(f.disposition.value)],
        },
    }
    if others:
        result["relatedLocations"] = [
            _location(u, uri, lines, n, report.trace_id) for n, u in enumerate(others, start=1)
        ]
    return result


def _location(u: EvidenceUnit, uri: str, lines: dict[str, int], loc_id: int, trace_id: str) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri, "index": 0}}
    if u.step_id in lines:  # a region needs a line; a unit citing no step of the trace gets none
        physical["region"] = {"startLine": lines[u.step_id], "snippet": {"text": u.quote}}
    return {
        "id": loc_id,
        "physicalLocation": physical,
        "logicalLocations": [
            {"name": u.step_id, "fullyQualifiedName": f"{trace_id}/{u.step_id}", "kind": "element"}
        ],
        "message": {"text": f"step {u.step_id}, edge {u.edge_ref}"},
        "properties": {"edge_ref": u.edge_ref},
    }
