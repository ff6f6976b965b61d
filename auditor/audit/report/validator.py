"""The report validator: JSON Schema first, then every evidence unit must resolve.

A unit resolves when its step exists in the trace, its edge ref is one of that step's edges in the
trace's canonical interaction graph, and its quote stands verbatim in the step's content
(``auditor.core.verbatim``: Unicode NFC and runs of whitespace collapsed to one space, on both the quote
and the content; nothing else, no case folding, no punctuation changes).
The validator also checks reports made elsewhere (another engine, a model), unit by unit.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Protocol

from auditor.core.verbatim import normalise
from schemas import Finding, Trace

if TYPE_CHECKING:
    from graph.model import InteractionGraph


class EdgeIndex(Protocol):
    """What validation reads of the trace's graph: its edge refs, and each step's."""

    edges: Container[str]

    def edges_of_step(self, step_id: str) -> list[str]: ...


@dataclass(frozen=True)
class CitedEdges:
    """The part of an audit's graph that its own report cites (each cited step's edge refs, and
    the cited boundary edges that exist), kept when the graph is dropped: the review validates
    its report against the graph it audited instead of building a second one."""

    steps: dict[str, list[str]]
    edges: frozenset[str]

    @classmethod
    def of(cls, graph: InteractionGraph, findings: Iterable[Finding]) -> CitedEdges:
        steps: dict[str, list[str]] = {}
        boundaries: set[str] = set()
        for finding in findings:
            boundaries.add(finding.boundary_edge)
            for unit in finding.evidence:
                if unit.step_id not in steps and unit.step_id in graph.step_pos:
                    steps[unit.step_id] = graph.edges_of_step(unit.step_id)
        return cls(steps, frozenset(b for b in boundaries if b in graph.edges))

    def edges_of_step(self, step_id: str) -> list[str]:
        return self.steps[step_id]


@dataclass(frozen=True)
class UnitResult:
    finding_id: str
    index: int
    step_id: str
    edge_ref: str
    ok: bool
    problem: str | None = None


@dataclass
class ValidationResult:
    schema_errors: list[str] = field(default_factory=list)
    reference_errors: list[str] = field(default_factory=list)
    units: list[UnitResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.schema_errors and not self.reference_errors and all(u.ok for u in self.units)

    @property
    def resolved(self) -> int:
        return sum(u.ok for u in self.units)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "schema_errors": self.schema_errors,
            "reference_errors": self.reference_errors,
            "units_total": len(self.units),
            "units_resolved": self.resolved,
            "units": [u.__dict__ for u in self.units],
        }


@cache
def _validator():  # -> jsonschema validator for the committed V3 schema
    import jsonschema

    # the committed schema file (schemas/json), read without importing every exported contract
    schema = json.loads(
        (files("schemas") / "json" / "audit_report_v3.schema.json").read_text(encoding="utf-8")
    )
    return jsonschema.Draft202012Validator(_inline(schema, schema.get("$defs", {})))


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with each ``$ref`` to its ``$defs`` replaced by the definition (the V3 schema
    has no recursive definition): the same checks and messages, without a reference lookup at
    every finding, unit and hop of a report (a third of the time on a report of 17,000 findings).
    A reference with keywords of its own beside it stays a reference (the root keeps ``$defs``)."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: value if key == "$defs" else _inline(value, defs) for key, value in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and len(out) == 1:
        return _inline(defs[ref.removeprefix("#/$defs/")], defs)
    return out


def validate_report(report: dict[str, Any], trace: Trace, graph: EdgeIndex | None = None) -> ValidationResult:
    """``graph``: the trace's graph (or the ``CitedEdges`` of the report's own audit) when the
    caller has it; else the trace's topology graph is built here."""
    from graph import build_graph

    result = ValidationResult()
    for err in sorted(_validator().iter_errors(report), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        result.schema_errors.append(f"{where}: {err.message}")
    if report.get("trace_id") not in (None, trace.header.trace_id):
        result.reference_errors.append(
            f"report audits trace '{report.get('trace_id')}', not '{trace.header.trace_id}'"
        )
    if graph is None:
        graph = build_graph(trace, "topology")
        assert graph is not None
    cited = _cited_steps(report)
    steps = {s.step_id: s for s in trace.steps if s.step_id in cited}
    contents: dict[str, str] = {}
    for f_index, finding in enumerate(_list(report.get("findings"))):
        fid = str(finding.get("finding_id", f"#{f_index}")) if isinstance(finding, dict) else f"#{f_index}"
        if not isinstance(finding, dict):
            continue
        for name in ("first_anomalous_step", "intercepted_at"):
            sid = finding.get(name)
            if sid is not None and not _is_step(sid, steps):
                result.reference_errors.append(f"finding {fid}: {name} '{sid}' is not a step of the trace")
        boundary = finding.get("boundary_edge")
        if isinstance(boundary, str) and boundary not in graph.edges:
            result.reference_errors.append(
                f"finding {fid}: boundary_edge '{boundary}' is not an edge of the trace"
            )
        for hop in _list(finding.get("propagation_path")):
            if isinstance(hop, dict) and not _is_step(hop.get("step_id"), steps):
                result.reference_errors.append(
                    f"finding {fid}: propagation step '{hop.get('step_id')}' not in trace"
                )
        for u_index, unit in enumerate(_list(finding.get("evidence"))):
            result.units.append(_resolve(fid, u_index, unit, steps, graph, contents))
    return result


def _cited_steps(report: dict[str, Any]) -> set[str]:
    """Every step id the report's findings name: only those steps are looked up in the trace."""
    cited: set[str] = set()
    for finding in _list(report.get("findings")):
        if not isinstance(finding, dict):
            continue
        named = [finding.get(name) for name in ("first_anomalous_step", "intercepted_at")]
        for item in _list(finding.get("propagation_path")) + _list(finding.get("evidence")):
            if isinstance(item, dict):
                named.append(item.get("step_id"))
        cited.update(n for n in named if isinstance(n, str))
    return cited


def _is_step(value: Any, steps: dict[str, Any]) -> bool:
    """Whether a cited id names a step: a step id is text (the schema check reports any other type;
    here it is no step, never a crash)."""
    return isinstance(value, str) and value in steps


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _resolve(fid: str, index: int, unit: Any, steps, graph, contents: dict[str, str]) -> UnitResult:  # type: ignore[no-untyped-def]
    if not isinstance(unit, dict):
        return UnitResult(fid, index, "?", "?", False, "evidence unit is not an object")
    step_id, edge_ref, quote = unit.get("step_id"), unit.get("edge_ref"), unit.get("quote")
    sid, eref = str(step_id), str(edge_ref)
    if not _is_step(step_id, steps):
        return UnitResult(fid, index, sid, eref, False, f"step '{sid}' does not exist in the trace")
    if not isinstance(edge_ref, str) or edge_ref not in graph.edges_of_step(step_id):
        edges = ", ".join(graph.edges_of_step(step_id))
        return UnitResult(
            fid, index, sid, eref, False, f"edge '{eref}' is not an edge of step {sid} ({edges})"
        )
    if not isinstance(quote, str) or not quote.strip():
        return UnitResult(fid, index, sid, eref, False, "quote is empty")
    if step_id not in contents:
        contents[step_id] = normalise(steps[step_id].content)
    if normalise(quote) not in contents[step_id]:
        return UnitResult(fid, index, sid, eref, False, "quote is not verbatim in the step's content")
    return UnitResult(fid, index, sid, eref, True)
