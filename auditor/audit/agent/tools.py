"""The Auditor Agent's tools: plain functions over the trace, its graph and the detectors.

The toolset depends on the graph mode (the seed's ablation arms): ``none`` has no graph tools,
``topology`` has graph navigation but no annotation tools (provenance, merge points), ``annotated``
has all. Every result is JSON-able, names step ids and edge refs, and records which steps the agent
has actually been shown (citations must come from those).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

from auditor.audit.detectors import AuditContext, available_detectors, file_finding, load_detector
from auditor.core.verbatim import normalise
from schemas import GraphMode

MAX_CONTENT = 4000


@dataclass
class ToolBox:
    ctx: AuditContext
    seen_steps: set[str] = field(default_factory=set)

    # -- the tools -------------------------------------------------------------------------------
    def read_steps(
        self, step_ids: list[str] | None = None, start: int | None = None, end: int | None = None
    ) -> Any:
        steps = self.ctx.trace.steps
        if step_ids:
            chosen = [s for s in steps if s.step_id in set(step_ids)]
        else:
            lo = max(0, int(start or 0))
            chosen = steps[lo : min(len(steps), int(end if end is not None else lo + 10), lo + 25)]
        out = []
        for s in chosen:
            self.seen_steps.add(s.step_id)
            out.append(
                {
                    "step_id": s.step_id,
                    "index": s.index,
                    "actor": s.actor,
                    "recipients": s.recipients,
                    "kind": s.kind.value,
                    "edge_refs": self.ctx.graph.edges_of_step(s.step_id),
                    "tool": s.tool.model_dump(mode="json") if s.tool else None,
                    "content": s.content[:MAX_CONTENT]
                    + ("…[truncated]" if len(s.content) > MAX_CONTENT else ""),
                }
            )
        return out

    def search_trace(self, text: str, limit: int = 20) -> Any:
        needle = normalise(text).lower()
        hits = []
        for s in self.ctx.trace.steps:
            content = normalise(s.content).lower()
            at = content.find(needle)
            if needle and at >= 0:
                hits.append(
                    {"step_id": s.step_id, "actor": s.actor, "snippet": s.content[max(0, at - 80) : at + 160]}
                )
                self.seen_steps.add(s.step_id)
            if len(hits) >= limit:
                break
        return {"matches": hits}

    def graph_query(
        self,
        query: str,
        participant: str | None = None,
        from_step: str | None = None,
        to_step: str | None = None,
        step: str | None = None,
    ) -> Any:
        g = self.ctx.graph
        handlers: dict[str, Callable[[], Any]] = {
            "neighbours": lambda: g.neighbours(participant or ""),
            "fan_in": lambda: g.fan_in(participant or ""),
            "fan_out": lambda: g.fan_out(participant or ""),
            "handoff_chain": lambda: g.handoff_chain(from_step or "", to_step or ""),
            "paths_to_final_output": lambda: g.paths_to_final_output(step or from_step or ""),
            "document_reads": lambda: g.document_reads(),
            "participants": lambda: sorted(g.participants),
        }
        if self.ctx.annotated:
            handlers["merge_points"] = lambda: g.merge_points(participant)
        if query not in handlers:
            return {"error": f"unknown query '{query}'; valid: {sorted(handlers)}"}
        return _plain(handlers[query]())

    def provenance(self, value: str) -> Any:
        prop = self.ctx.graph.value_propagation(value, limit=50)
        self.seen_steps.update(h.step_id for h in prop.hops)
        return _plain(prop)

    def run_detector(self, name: str) -> Any:
        detector = load_detector(name)
        if detector.needs_annotations and not self.ctx.annotated:
            return {"error": f"detector {name} needs the annotated graph"}
        findings = [
            file_finding(name, d, self.ctx.trace.header.trace_id).model_dump(mode="json")
            for d in detector.detect(self.ctx)
        ]
        for f in findings:
            self.seen_steps.update(u["step_id"] for u in f["evidence"])
        return {"detector": name, "findings": findings}

    def validate_citations(self, units: list[dict[str, Any]]) -> Any:
        results = []
        for u in units:
            sid, ref, quote = u.get("step_id"), u.get("edge_ref"), u.get("quote") or ""
            try:
                ok_edge = ref in self.ctx.graph.edges_of_step(str(sid))
                ok_quote = bool(quote.strip()) and normalise(quote) in normalise(
                    self.ctx.step(str(sid)).content
                )
            except (KeyError, LookupError):
                results.append({"unit": u, "ok": False, "problem": f"step {sid} does not exist"})
                continue
            problem = (
                None
                if ok_edge and ok_quote
                else ("edge_ref is not an edge of the step" if not ok_edge else "quote is not verbatim")
            )
            results.append({"unit": u, "ok": problem is None, "problem": problem})
        return results

    # -- the OpenAI-style specs ------------------------------------------------------------------
    def specs(self) -> list[dict[str, Any]]:
        mode = self.ctx.mode
        names = ["read_steps", "search_trace", "run_detector", "validate_citations", "submit_report"]
        if mode is not GraphMode.none:
            names.insert(2, "graph_query")
        if mode is GraphMode.annotated:
            names.insert(3, "provenance")
        return [SPECS[n] for n in names]

    def call(self, name: str, args: dict[str, Any]) -> Any:
        allowed = {s["function"]["name"] for s in self.specs()} - {"submit_report"}
        if name not in allowed:
            return {"error": f"tool '{name}' is not available here; available: {sorted(allowed)}"}
        try:
            return getattr(self, name)(**args)
        except (TypeError, ValueError, LookupError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _fn(
    name: str, description: str, properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required or []},
        },
    }


_UNIT = {
    "type": "object",
    "properties": {
        "step_id": {"type": "string"},
        "edge_ref": {"type": "string"},
        "quote": {"type": "string"},
    },
    "required": ["step_id", "edge_ref", "quote"],
}
_CRIT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["holds", "fails", "unassessed"]}, "rationale": {"type": "string"}},
}

SPECS: dict[str, dict[str, Any]] = {
    "read_steps": _fn(
        "read_steps",
        "Read steps by id, or a range by index (at most 25): actor, recipients, kind, edge_refs, content.",
        {
            "step_ids": {"type": "array", "items": {"type": "string"}},
            "start": {"type": "integer"},
            "end": {"type": "integer"},
        },
    ),
    "search_trace": _fn(
        "search_trace", "Find steps whose content contains a text.", {"text": {"type": "string"}}, ["text"]
    ),
    "graph_query": _fn(
        "graph_query",
        "Interaction-graph queries: neighbours, fan_in, fan_out, handoff_chain, paths_to_final_output, document_reads, participants, merge_points (annotated only).",
        {
            "query": {"type": "string"},
            "participant": {"type": "string"},
            "from_step": {"type": "string"},
            "to_step": {"type": "string"},
            "step": {"type": "string"},
        },
        ["query"],
    ),
    "provenance": _fn(
        "provenance",
        "Where a value (amount, id, e-mail, date, status) first appeared and how each later step carried it.",
        {"value": {"type": "string"}},
        ["value"],
    ),
    "run_detector": _fn(
        "run_detector",
        f"Run a rules detector and see its findings. Names: {', '.join(available_detectors())}.",
        {"name": {"type": "string"}},
        ["name"],
    ),
    "validate_citations": _fn(
        "validate_citations",
        "Check evidence units before submitting.",
        {"units": {"type": "array", "items": _UNIT}},
        ["units"],
    ),
    "submit_report": _fn(
        "submit_report",
        "Submit the audit once. findings may be empty (a clean verdict) only after investigation.",
        {
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "risk_class": {"type": "string"},
                        "title": {"type": "string"},
                        "boundary_edge": {"type": "string"},
                        "first_anomalous_step": {"type": "string"},
                        "responsible_participant": {"type": "string"},
                        "mechanism": {"type": "string"},
                        "material_effect": {"type": "string"},
                        "intercepted_at": {"type": "string"},
                        "criteria": {
                            "type": "object",
                            "properties": {k: _CRIT for k in ("R1", "R2", "R3", "R4")},
                        },
                        "severity": {"type": "string"},
                        "confidence": {"type": "number"},
                        "evidence": {"type": "array", "items": _UNIT},
                    },
                },
            },
            "withdrawn": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"finding_id": {"type": "string"}, "reason": {"type": "string"}},
                },
            },
            "summary": {"type": "string"},
        },
        ["findings"],
    ),
}
