"""`auditor graph build|show|export|draw TRACE_ID`: the interaction graph of a stored trace.

``build`` records a ``GraphBuilt`` event in stream ``graph-<trace_id>`` (payload: trace_id, mode,
digest, trace_digest, node and edge counts, node-link data) so an audit can cite the exact graph
it used; rebuilding the same graph appends nothing (the idempotency key holds the digest).
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import (
    JSON_OUTPUT,
    TRACE_ID,
    console,
    open_cli_store,
    print_json,
    print_table,
)
from schemas import NewEvent

if TYPE_CHECKING:
    from graph import InteractionGraph

MODES = ("annotated", "topology")


def graph_stream(trace_id: str) -> str:
    return f"graph-{trace_id}"


def _build(trace_id: str, mode: str) -> InteractionGraph:
    from auditor.core.store.traces import load_trace
    from graph import build_graph

    if mode not in MODES:
        raise InputError(
            f"unknown graph mode '{mode}'", field="--mode", hint=f"valid modes: {', '.join(MODES)}"
        )
    trace = load_trace(open_cli_store(), trace_id)
    try:
        ig = build_graph(trace, mode)
    except ValueError as exc:
        raise InputError(str(exc), field="steps", hint="re-import the trace with unique step ids") from exc
    assert ig is not None
    return ig


def _steps_window(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        a, b = text.split(":", 1)
        return int(a or 0), int(b) if b else 10**12
    except ValueError as exc:
        raise InputError(
            f"bad step range '{text}'", field="--steps", hint="use START:STOP, e.g. 0:200"
        ) from exc


EXPORT_FORMATS = {".graphml": "graphml", ".json": "json"}


def _export_format(target: Path, fmt: str | None) -> str:
    """The format a file is written in: --format, else its extension, else JSON. A --format that
    contradicts the extension is refused: a ``.graphml`` file holding JSON fools every reader."""
    valid = sorted(set(EXPORT_FORMATS.values()))
    if fmt is not None and fmt not in valid:
        raise InputError(
            f"unknown export format '{fmt}'", field="--format", hint=f"valid formats: {', '.join(valid)}"
        )
    implied = EXPORT_FORMATS.get(target.suffix.lower())
    if fmt is not None and implied is not None and fmt != implied:
        raise InputError(
            f"--format {fmt} does not match the file's extension {target.suffix}",
            path=str(target),
            field="--format",
            hint=f"name the file *.{fmt} or drop --format",
        )
    return fmt or implied or "json"


graph_app = typer.Typer(help="Interaction graphs of stored traces.", no_args_is_help=True)


MODE = typer.Option("annotated", "--mode", help="annotated (with the annotation layer) or topology.")


@graph_app.command("build")
def build(
    trace_id: str = TRACE_ID,
    mode: str = MODE,
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Build the graph and record it (GraphBuilt event, with its digest) in the store."""
    from auditor.core.store.traces import trace_digest
    from graph import graph_digest, graph_to_node_link

    ig = _build(trace_id, mode)
    data = graph_to_node_link(ig)
    digest = graph_digest(ig, data)
    payload = {
        "trace_id": trace_id,
        "mode": mode,
        "digest": digest,
        "trace_digest": trace_digest(ig.trace),
        "nodes": ig.g.number_of_nodes(),
        "edges": ig.g.number_of_edges(),
        "node_link": data,
    }
    event = NewEvent(type="GraphBuilt", payload=payload, idempotency_key=f"graph:{trace_id}:{mode}:{digest}")
    recorded = open_cli_store().append(graph_stream(trace_id), [event])[0]
    summary = {k: v for k, v in payload.items() if k != "node_link"}
    summary |= {"stream": recorded.stream_id, "stream_version": recorded.stream_version}
    if as_json:
        print_json(summary)
    else:
        console.print(
            f"graph of [bold]{trace_id}[/bold] ({mode}): {summary['nodes']} nodes, {summary['edges']} edges\n"
            f"digest {digest}\nrecorded as {recorded.stream_id} v{recorded.stream_version}"
        )


@graph_app.command("show")
def show(
    trace_id: str = TRACE_ID,
    mode: str = MODE,
    as_json: bool = JSON_OUTPUT,
) -> None:
    """A summary table: each node's kind, steps, fan-in and fan-out, and its busiest links."""
    ig = _build(trace_id, mode)
    rows = []
    for node, attrs in ig.g.nodes(data=True):
        fan_in = Counter(ig.edges[r].source for r in ig.in_edges.get(node, []))
        fan_out = Counter(ig.edges[r].target for r in ig.out_edges.get(node, []))
        top = ", ".join(f"{n}×{c}" for n, c in fan_out.most_common(3))
        rows.append(
            [
                node,
                attrs["kind"],
                len(ig.by_actor.get(node, [])),
                sum(fan_in.values()),
                sum(fan_out.values()),
                top,
            ]
        )
    extra = {}
    if ig.annotations is not None and ig.provenance is not None:
        extra = {
            "authority_labels": len(ig.annotations.authority),
            "permission_labels": len(ig.annotations.permission),
            "unconsulted_obligations": len(ig.annotations.obligations),
            "instructions_in_data": len(ig.annotations.instructions),
            "merge_points": len(ig.provenance.merge_points),
            "values_tracked": len(ig.provenance.exact)
            + sum(len(group[0]) for group in ig.provenance.amounts.values()),
        }
    if as_json:
        cols = ["node", "kind", "steps", "fan_in", "fan_out", "top_out"]
        print_json(
            {"trace_id": trace_id, "mode": mode, "nodes": [dict(zip(cols, r, strict=True)) for r in rows]}
            | extra
        )
        return
    print_table(
        f"{trace_id} ({mode}): {ig.g.number_of_nodes()} nodes, {ig.g.number_of_edges()} edges",
        ["node", "kind", "steps", "in", "out", "busiest out-links"],
        rows,
    )
    for key, value in extra.items():
        console.print(f"{key.replace('_', ' ')}: {value}")
    for span in ig.annotations.instructions if ig.annotations is not None else []:
        console.print(
            f"  instruction to the agent at {span.step_id} ({'; '.join(span.signals)}): ",
            Text(" … ".join(" ".join(d.split()) for d in span.directives)[:300]),
        )


@graph_app.command("export")
def export(
    trace_id: str = TRACE_ID,
    fmt: str = typer.Option(
        None, "--format", help="graphml or json (node-link); default: from the extension, else json."
    ),
    out: str = typer.Option(..., "--out", "-o", help="Output file."),
    mode: str = MODE,
) -> None:
    """Write the graph as GraphML or node-link JSON."""
    from graph import graph_to_node_link, write_graphml

    target = Path(out)
    fmt = _export_format(target, fmt)
    ig = _build(trace_id, mode)
    if not target.parent.is_dir():
        raise InputError("the output folder does not exist", path=str(target.parent), field="--out")
    if fmt == "graphml":
        write_graphml(ig, target)
    else:
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(graph_to_node_link(ig), ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(target)
    console.print(f"wrote {target} ({fmt}, {ig.g.number_of_edges()} edges)")


@graph_app.command("draw")
def draw(
    trace_id: str = TRACE_ID,
    out: str = typer.Option(..., "--out", "-o", help="Image file: .svg or .png."),
    highlight: list[str] = typer.Option([], "--highlight", help="Step id or edge ref to highlight (repeat)."),
    steps: str = typer.Option(None, "--steps", help="Step window START:STOP (default: the first 500)."),
    mode: str = typer.Option("topology", "--mode", help="annotated or topology (the picture is the same)."),
) -> None:
    """A swimlane picture: one lane per participant, x = step index, highlighted edges in red."""
    from graph import GraphQueryError
    from graph.draw import draw_swimlane

    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("drawing needs matplotlib", hint="pip install 'agent-auditor[draw]'")
    ig = _build(trace_id, mode)
    try:
        info = draw_swimlane(ig, out, highlight=highlight, steps=_steps_window(steps))
    except GraphQueryError as exc:
        raise InputError(str(exc), field="--highlight", hint=f"see 'auditor traces show {trace_id}'") from exc
    except ValueError as exc:
        raise InputError(str(exc), field="--out/--steps") from exc
    except FileNotFoundError as exc:
        raise InputError("cannot write the image", path=out, field="--out") from exc
    console.print(
        f"wrote {info.path}: steps {info.first_step}-{info.last_step} of {info.total_steps}, "
        f"{len(info.lanes)} lanes, {info.edges} edges, {info.highlighted} highlighted"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(graph_app, name="graph")
