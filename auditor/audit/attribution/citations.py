"""Evidence units for attribution candidates, resolvable by construction (the audit's citation rule:
the step exists, the edge is one of its edges, the quote stands verbatim in its content)."""

from __future__ import annotations

from auditor.audit.detectors.base import AuditContext
from schemas import EvidenceUnit, GraphMode, Trace

QUOTE_LIMIT = 200


class Citer:
    """Builds evidence units over the audit's graph when one is given (a review: a second graph of
    a large trace would cost as much memory as the first), else over a topology graph of its own,
    built once, on first use."""

    def __init__(self, trace: Trace, ctx: AuditContext | None = None) -> None:
        self.trace = trace
        self._ctx = ctx

    @property
    def ctx(self) -> AuditContext:
        if self._ctx is None:
            from graph import build_graph

            graph = build_graph(self.trace, GraphMode.topology)
            assert graph is not None
            self._ctx = AuditContext(trace=self.trace, graph=graph, mode=GraphMode.topology)
        return self._ctx

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
