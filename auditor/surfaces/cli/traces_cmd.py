"""`auditor traces list|show|tests|export ID`: what the store holds."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from auditor.audit.detectors.test_runs import command_of
from auditor.core.errors import InputError
from auditor.surfaces.cli.common import (
    JSON_OUTPUT,
    TRACE_ID,
    cell,
    console,
    open_cli_store,
    print_json,
    print_table,
    write_atomic,
)
from schemas import StepKind, TraceStep

_REST = 40  # columns the table needs beside the trace id to stay readable


def _short(text: str | None, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _shown(step: TraceStep) -> str:
    """What a step is read for: a tool call's act (the command a shell ran, else the call with its
    arguments), since the thought before it does not say what was done; any other step's text.
    ``--json`` keeps both."""
    command = command_of(step)
    if command is not None:
        return f"$ {command}"
    args = step.tool.arguments if step.kind is StepKind.tool_call and step.tool else None
    if isinstance(args, dict) and args:
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
        return f"{step.tool.name}({shown})"  # type: ignore[union-attr]
    return step.content


traces_app = typer.Typer(help="Traces in the store.", no_args_is_help=True)


@traces_app.command("list")
def list_(
    as_json: bool = JSON_OUTPUT,
    wide: bool = typer.Option(
        False, "--wide", help="Lay the table out on one line per trace, whatever the terminal's width."
    ),
) -> None:
    """One row per trace: source, framework, steps, participants. Trace ids are printed whole
    (the other columns wrap first), so that each can be copied into 'traces show'."""
    from auditor.core.store.traces import list_traces

    traces = list_traces(open_cli_store())
    if as_json:
        print_json([t.__dict__ for t in traces])
        return
    table = Table(title=f"{len(traces)} traces")
    table.add_column("trace id", no_wrap=True)  # never cut: the other columns wrap instead
    for name in ("source", "framework", "steps", "participants"):
        table.add_column(name, overflow="fold")
    rows = [
        [t.trace_id, t.source, t.framework, t.steps, _short(", ".join(t.participants), 60)] for t in traces
    ]
    for row in rows:
        table.add_row(*[cell(v) for v in row])
    if wide:  # as wide as the rows are, for a pager or a file: nothing wraps
        natural = Console(width=1 << 20).measure(table).maximum
        Console(file=console.file, width=natural, no_color=console.no_color).print(table)
    elif max((len(r[0]) for r in rows), default=0) + _REST <= console.width:
        console.print(table)
    else:  # an id too wide to share a line: one trace per block, the id on a line of its own
        console.print(f"{len(traces)} traces", highlight=False)
        for trace_id, source, framework, steps, participants in rows:
            console.print(Text(trace_id, style="bold"), crop=False, soft_wrap=True)
            console.print(
                cell(f"  {steps} steps · {framework or '-'} · {source or '-'} · {participants}"),
                highlight=False,
            )


@traces_app.command("show")
def show(
    trace_id: str = TRACE_ID,
    as_json: bool = JSON_OUTPUT,
    width: int = typer.Option(100, min=1, help="Characters of content shown per step."),
) -> None:
    """The steps of one trace: who did what, to whom."""
    from auditor.core.store.traces import load_trace

    trace = load_trace(open_cli_store(), trace_id)
    if as_json:
        print_json(trace.model_dump(mode="json"))
        return
    h = trace.header
    console.print(
        Text.assemble((h.trace_id, "bold"), cell(f"  source={h.source}  framework={h.framework}")),
        highlight=False,
    )
    if h.task:
        console.print(cell(f"task: {_short(h.task, 200)}"), highlight=False)
    rows = []
    for s in trace.steps:
        to = "?" if s.recipients is None else ", ".join(s.recipients) or "-"
        tool = f" [{s.tool.name}]" if s.tool else ""
        rows.append([s.index, s.step_id, s.actor, to, f"{s.kind.value}{tool}", _short(_shown(s), width)])
    print_table(None, ["#", "step", "actor", "to", "kind", "content"], rows)


VERDICT_ROWS = 40  # a suite's failures by the thousand are --json's (or --all's) to list


@traces_app.command("tests")
def tests(
    trace_id: str = TRACE_ID,
    as_json: bool = JSON_OUTPUT,
    show_all: bool = typer.Option(
        False, "--all", help=f"List every failed test (default: the first {VERDICT_ROWS})."
    ),
) -> None:
    """What the tests said in a coding run: what the runs show of the fix, each edit of the
    submitted files, each test or check run and whether it ran on the original code or the change,
    and the last word on every test that failed, those still failing first. The facts the coding
    findings rest on, by step."""
    from auditor.audit.test_timeline import (
        ENTRY_COLUMNS,
        VERDICT_COLUMNS,
        VERDICT_TITLE,
        evidence_lines,
        result_text,
        submission_line,
        timeline,
        verdict_cells,
        what_text,
    )
    from auditor.audit.test_timeline import as_json as timeline_json
    from auditor.core.store.traces import load_trace

    found = timeline(load_trace(open_cli_store(), trace_id))
    if as_json:
        print_json(timeline_json(found))
        return
    if not found.entries:
        console.print(cell(f"{trace_id}: no command edited the code or ran it (no coding run to lay out)"))
        return
    console.print(cell(submission_line(found)), highlight=False)
    for label, text in evidence_lines(found):
        console.print(Text.assemble((f"{label}: ", "bold"), cell(text)), highlight=False)
    rows = [
        [
            e.step,
            e.act,
            e.code or "",
            _short(what_text(found, e), 60),
            (f"{e.result_step}: " if e.result_step else "") + _short(result_text(e), 200),
        ]
        for e in found.entries
    ]
    print_table(None, list(ENTRY_COLUMNS), rows)
    if found.verdicts:
        # the tests the run left failing are what a reader checks first
        verdicts = sorted(found.verdicts, key=lambda v: v.passing)
        shown = verdicts if show_all else verdicts[:VERDICT_ROWS]
        print_table(VERDICT_TITLE, list(VERDICT_COLUMNS), [list(verdict_cells(v)) for v in shown])
        if len(shown) < len(verdicts):
            left = sum(not v.passing for v in verdicts)
            console.print(
                cell(
                    f"{len(verdicts) - len(shown)} more of {len(verdicts)} failed tests ({left} still failing); "
                    "--all lists them, --json gives them all"
                ),
                highlight=False,
            )


@traces_app.command("export")
def export(
    trace_id: str = TRACE_ID,
    fmt: str = typer.Option("jsonl", "--format", help="Output format: jsonl (canonical)."),
    out: str = typer.Option("-", "--out", "-o", help="Output file, or - for stdout."),
) -> None:
    """Write a trace back out in the canonical form (sidecar labels are not exported)."""
    from auditor.core.store.traces import load_trace
    from ingest.canonical import write_canonical

    if fmt != "jsonl":
        raise InputError(f"unknown export format '{fmt}'", hint="valid formats: jsonl")
    trace = load_trace(open_cli_store(), trace_id)
    if out == "-":
        write_canonical(trace.header, trace.steps, sys.stdout)
        return
    text = io.StringIO()
    write_canonical(trace.header, trace.steps, text)
    write_atomic(Path(out), text.getvalue())  # whole or not at all, one line if it cannot be written


def register(app: typer.Typer) -> None:
    app.add_typer(traces_app, name="traces")
