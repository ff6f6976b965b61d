"""The graph drawing for the HTML report: graph.draw's swimlane with the cited edges highlighted.

The SVG is embedded as a data URI inside an ``<img>``: the page stays self-contained, and nothing
in the drawing (participant names come from the trace) can run as script. matplotlib is the
optional ``draw`` extra; without it the page says so instead of failing.
"""

from __future__ import annotations

import base64
import html
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from schemas import AuditReport, GraphMode, Trace

if TYPE_CHECKING:
    from graph import InteractionGraph

_INSTALL = 'install the drawing extra: pip install "agent-auditor[draw]"'
CONTEXT = 5  # steps drawn either side of the cited stretch of a long trace


def cited_edges(report: AuditReport) -> list[str]:
    """Every edge a finding cites: boundaries, evidence units and propagation hops, in order."""
    refs: dict[str, None] = {}
    for f in report.findings:
        refs[f.boundary_edge] = None
        refs.update((u.edge_ref, None) for u in f.evidence)
        refs.update((h.edge_ref, None) for h in f.propagation_path if h.edge_ref)
    return list(refs)


def step_window(total: int, positions: Sequence[int], max_steps: int) -> tuple[int, int]:
    """The [start, stop) positions to draw: the whole trace when it fits, else the stretch of the
    cited positions with a little context (cut at ``max_steps`` from its start)."""
    if total <= max_steps:
        return 0, total
    if not positions:
        return 0, max_steps
    start = max(0, min(positions) - CONTEXT)
    return start, min(total, max(positions) + CONTEXT + 1, start + max_steps)


def graph_figure(report: AuditReport, trace: Trace, graph: InteractionGraph | None) -> str:
    """A <figure> with the swimlane drawing (or a note saying why there is none)."""
    if not trace.steps:
        return '<p class="note">No graph drawing: the trace has no steps.</p>'
    try:
        from graph.draw import MAX_STEPS, draw_swimlane

        if graph is None:
            from graph import build_graph

            graph = build_graph(trace, GraphMode.topology)
            assert graph is not None
        highlight = [ref for ref in cited_edges(report) if ref in graph.edges]
        positions = [graph.edges[ref].pos for ref in highlight]
        start, stop = step_window(len(trace.steps), positions, MAX_STEPS)
        with tempfile.TemporaryDirectory(prefix="auditor-draw-") as tmp:
            path = Path(tmp) / "graph.svg"
            draw_swimlane(graph, path, highlight=highlight, steps=(start, stop))
            svg = path.read_bytes()
    except ImportError as exc:
        return f'<p class="note">No graph drawing: {html.escape(str(exc))} ({_INSTALL}).</p>'
    data = base64.b64encode(svg).decode("ascii")
    cited = ", ".join(highlight) or "none"
    shown = f"steps {start}-{stop - 1} of {len(trace.steps)}"
    alt = f"Swimlane drawing of {shown} of trace {report.trace_id}; highlighted edges: {cited}"
    return (
        '<figure><div class="graph-scroll" tabindex="0" role="region" aria-label="Graph drawing, scrollable">'
        f'<img src="data:image/svg+xml;base64,{data}" alt="{html.escape(alt)}"></div>'
        f"<figcaption>Who passed what to whom, in step order ({shown}). Highlighted in red: the edges "
        f"the findings cite ({html.escape(cited)}).</figcaption></figure>"
    )
