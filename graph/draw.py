"""Swimlane drawing: one lane per participant (and tool, document, sink), x = step index, one
arrow per edge. The picture people look at before they read a table.

matplotlib is imported here only (install the ``draw`` extra); the Agg canvas is used directly,
so drawing never touches pyplot's global state or needs a display. Traces longer than
``max_steps`` are windowed: pass ``steps=(start, stop)`` to pick the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from graph.model import FINAL_OUTPUT, UNKNOWN, GraphQueryError

if TYPE_CHECKING:
    from graph.model import InteractionGraph

MAX_STEPS = 500
CHANNEL_COLOURS = {
    "message": "#4c72b0",
    "handoff": "#8172b2",
    "tool_call": "#55a868",
    "tool_result": "#64b5cd",
    "document_read": "#ccb974",
    "state_write": "#937860",
    "final_output": "#222222",
}
HIGHLIGHT = "#d62728"
_KIND_ORDER = {"tool": 1, "document": 2, "record": 3, "unknown": 4, "sink": 5}


@dataclass(frozen=True, slots=True)
class DrawInfo:
    """What was drawn: the step window, the lanes, and how many edges were highlighted."""

    path: str
    first_step: int
    last_step: int
    total_steps: int
    lanes: list[str]
    edges: int
    highlighted: int


def resolve_highlight(ig: InteractionGraph, items: list[str]) -> set[str]:
    """Edge refs to highlight: each item is an edge ref or a step id (all of that step's edges)."""
    refs: set[str] = set()
    for item in items:
        if item in ig.edges:
            refs.add(item)
        elif item in ig.step_pos:
            refs.update(ig.edges_of_step(item))
        else:
            raise GraphQueryError(
                f"highlight '{item}' is neither a step id nor an edge ref of '{ig.trace_id}'"
            )
    return refs


def _lanes(ig: InteractionGraph, refs: list[str]) -> list[str]:
    """Lanes in order: participants by first appearance, then tools, documents, records, sinks."""
    seen: dict[str, int] = {}
    for ref in refs:
        rec = ig.edges[ref]
        for node in (rec.source, rec.target):
            seen.setdefault(node, len(seen))
    kind = ig.g.nodes

    def key(node: str) -> tuple[int, int]:
        return (_KIND_ORDER.get(kind[node]["kind"], 0), seen[node])

    return sorted(seen, key=key)


def draw_swimlane(
    ig: InteractionGraph,
    path: str | Path,
    highlight: list[str] | None = None,
    steps: tuple[int, int] | None = None,
    max_steps: int = MAX_STEPS,
) -> DrawInfo:
    """Render the graph (or a window of ``steps`` positions [start, stop)) to SVG or PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("svg", "png"):
        raise ValueError(f"cannot draw to '{path.name}': use a .svg or .png file name")
    total = len(ig.trace.steps)
    start, stop = steps if steps is not None else (0, min(total, max_steps))
    start, stop = max(0, start), min(total, stop)
    if stop <= start:
        raise ValueError(f"empty step window {start}:{stop} (the trace has {total} steps)")
    marked = resolve_highlight(ig, highlight or [])
    refs = [r for pos in range(start, stop) for r in ig.step_edges[pos]]
    lanes = _lanes(ig, refs)
    y = {node: len(lanes) - 1 - i for i, node in enumerate(lanes)}
    n = stop - start
    fig = Figure(figsize=(min(max(8.0, 2.5 + n * 0.14), 80.0), max(3.0, 1.2 + 0.42 * len(lanes))))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for node, yy in y.items():
        faint = node in (UNKNOWN, FINAL_OUTPUT) or ig.g.nodes[node]["kind"] in ("tool", "document", "record")
        ax.axhline(yy, color="#dddddd" if faint else "#bbbbbb", lw=0.8, zorder=0)
    for pos in range(start, stop):
        step_refs = ig.step_edges[pos]
        for k, ref in enumerate(step_refs):
            rec = ig.edges[ref]
            x = pos + (k - (len(step_refs) - 1) / 2) * 0.18
            hot = ref in marked
            colour = HIGHLIGHT if hot else CHANNEL_COLOURS.get(rec.channel, "#777777")
            y0, y1 = y[rec.source], y[rec.target]
            if y0 == y1:  # an edge to oneself: a small loop mark
                ax.plot([x], [y0], marker="o", ms=5, color=colour, zorder=3)
                continue
            ax.annotate(
                "",
                xy=(x, y1),
                xytext=(x, y0),
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": colour,
                    "lw": 2.2 if hot else 0.9,
                    "shrinkA": 2,
                    "shrinkB": 2,
                    "alpha": 1.0 if hot else 0.75,
                },
                zorder=4 if hot else 2,
            )
            if hot:
                ax.text(
                    x,
                    max(y0, y1) + 0.25,
                    ig.trace.steps[pos].step_id,
                    color=HIGHLIGHT,
                    fontsize=7,
                    ha="center",
                    rotation=60,
                )
    labels = [
        node if ig.g.nodes[node]["kind"] in ("tool", "document", "record") else ig.g.nodes[node]["name"]
        for node in y
    ]
    ax.set_yticks(list(y.values()), labels)
    ax.set_ylim(-0.8, len(lanes) - 0.2)
    ax.set_xlim(start - 0.8, stop - 0.2)
    ax.set_xlabel("step index")
    window = "" if (start, stop) == (0, total) else f" (steps {start}-{stop - 1} of {total})"
    name = ig.trace_id if len(ig.trace_id) <= 48 else ig.trace_id[:47] + "…"
    ax.set_title(f"{name}: who talked to whom{window}", fontsize=10)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles = [
        ax.plot([], [], color=c, lw=2, label=ch.replace("_", " "))[0]
        for ch, c in CHANNEL_COLOURS.items()
        if any(ig.edges[r].channel == ch for r in refs)
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format=fmt, dpi=110)
    tmp.replace(path)
    return DrawInfo(str(path), start, stop - 1, total, lanes, len(refs), len(marked & set(refs)))
