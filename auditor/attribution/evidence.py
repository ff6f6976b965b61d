"""Evidence units for attribution candidates, resolvable by construction (the audit's citation rule:
the step exists, the edge is one of its edges, the quote stands verbatim in its content)."""

from __future__ import annotations

from functools import cached_property

from auditor.detectors.base import AuditContext
from schemas import EvidenceUnit, GraphMode, Trace

QUOTE_LIMIT = 200


class Citer:
    """Builds evidence units over a trace's topology graph (built once, on first use)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    @cached_property
    def ctx(self) -> AuditContext:
        from graph import build_graph

        graph = build_graph(self.trace, GraphMode.topology)
        assert graph is not None
        return AuditContext(trace=self.trace, graph=graph, mode=GraphMode.topology)

    def cite(self, step_id: str, needle: str | None = None) -> list[EvidenceUnit]:
        """One unit quoting the line around ``needle`` (or the step's first line with substance);
        none for a step with no content."""
        content = self.ctx.step(step_id).content
        if needle and needle in content:
            quote = self.ctx.sentence_around(step_id, needle, limit=QUOTE_LIMIT)
        else:
            line = next((ln.strip() for ln in content.splitlines() if len(ln.strip()) > 2), content.strip())
            quote = line[:QUOTE_LIMIT].strip()
        if not quote or quote not in content:
            return []
        return [self.ctx.unit(step_id, quote)]
