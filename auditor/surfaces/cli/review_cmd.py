"""`auditor review PATH|-` and `auditor validate REPORT --trace TRACE`: the main job and its check."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import (
    INPUT_FORMAT,
    JSON_OUTPUT,
    REDACT,
    REDACT_PATTERN,
    console,
    err_console,
    input_file,
    open_cli_store,
    print_json,
    write_atomic,
)
from auditor.surfaces.cli.review_request import AgentRequest, ReviewRequest

if TYPE_CHECKING:
    from auditor.audit.review import ReviewOutcome


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """The objects alive before the audit (the loaded modules) stay out of the collector's scans
    while it runs: each collection of the audit's many new objects would otherwise walk them
    again. They return to normal collection afterwards (the command may run in a longer-lived
    process, as under a test runner)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def _phase_line(quiet: bool) -> Iterator[Callable[[str], None]]:
    """A transient line on a terminal's stderr naming the review's phase and the time spent: a
    trace of a million steps takes minutes. Nothing is drawn for --json or off a terminal."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("reviewing: {task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=quiet) as progress:
        task = progress.add_task("starting", total=None)
        yield lambda phase: progress.update(task, description=phase)


def _print_summary(outcome: ReviewOutcome) -> None:
    """The terminal summary, laid out for 80 columns and up; trace content is never markup."""
    from auditor.audit.report.render_summary import print_summary

    print_summary(console, outcome.report, outcome.trace, outcome.validation, outcome.importer)


def review(
    path: str = typer.Argument(..., help="A trace file in any known format, or - for stdin."),
    input_format: str = INPUT_FORMAT,
    graph: str = typer.Option("annotated", "--graph", help="annotated | topology | none"),
    engine: str = typer.Option(
        "rules", "--engine", help="rules (embedded, no model) | agent (LLM Auditor Agent)"
    ),
    model: str = typer.Option(
        "local/smollm2", "--model", help="agent: any litellm model name, local/<dir>, replay/<cassette>"
    ),
    contract: str = typer.Option(
        "v3", "--contract", help="agent: v3 (schema, tools, validation) | naive (free text)"
    ),
    seed_findings: str = typer.Option(
        None, "--seed-findings", help="agent: 'rules' to start from the rules findings"
    ),
    max_tool_calls: int = typer.Option(30, "--max-tool-calls", help="agent budget"),
    max_tokens: int = typer.Option(200_000, "--max-tokens", help="agent budget (input + output tokens)"),
    max_seconds: float = typer.Option(
        600.0, "--max-seconds", help="agent budget (wall time of model and tool calls)"
    ),
    policy: Path = typer.Option(None, "--policy", help="Declared invariants (YAML)."),
    detectors: str = typer.Option(None, "--detectors", help="Comma-separated detector names (default: all)."),
    output: Path = typer.Option(
        None,
        "--output",
        "-o",
        help="Write the report here (written whole or not at all; a symlink is followed, a device refused; - is stdout).",
    ),
    fmt: str = typer.Option(None, "--format", "-f", help="summary | json | md | html | sarif"),
    as_json: bool = typer.Option(False, "--json", help="Print the report(s) as JSON."),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        help="Print nothing (with -o, the summary is printed unless this is given).",
    ),
    redact: bool = REDACT,
    redact_pattern: list[str] = REDACT_PATTERN,
    trace_id: str = typer.Option(
        None,
        "--trace-id",
        help="Store the input's one trace under this new id (other content under a stored id is refused).",
    ),
    outcome: str = typer.Option(
        None,
        "--outcome",
        help="failed | succeeded | unknown: how the run ended (default: as the source recorded it, "
        "else decided from the trace). A failed run's report names who did it and when.",
    ),
) -> None:
    """Audit a trace: store it, build its graph, run the detectors, validate and file a V3 report.

    The report is computed from the trace as stored; a file with other content than the stored
    trace of its id is refused (exit 2) unless --trace-id stores it under a new id.
    Exit 0 when nothing beyond leads and operational failures is filed, 1 when a realized finding,
    an anomaly with interception or an adjacent risk is filed, 2 on bad input."""
    from auditor.audit.report.disposition import ACTIONABLE

    request = ReviewRequest.checked(
        path=path,
        input_format=input_format,
        graph=graph,
        engine=engine,
        agent=AgentRequest(model, contract, seed_findings, max_tool_calls, max_tokens, max_seconds),
        policy=policy,
        detectors=detectors,
        output=output,
        fmt=fmt,
        as_json=as_json,
        quiet=quiet,
        redact=redact,
        redact_pattern=redact_pattern,
        trace_id=trace_id,
        outcome=outcome,
    )
    outcomes = _reviewed(request)
    if request.output is not None:
        from auditor.audit.report.render import render_reports

        write_atomic(
            request.output, render_reports([(o.report, o.trace) for o in outcomes], request.file_format)
        )
    _show(request, outcomes)
    if any(f.disposition in ACTIONABLE for o in outcomes for f in o.report.findings):
        raise typer.Exit(1)


def _reviewed(request: ReviewRequest) -> list[ReviewOutcome]:
    """Store and audit the input (stdin spooled to a file first, removed afterwards); an input
    that holds no trace is an input error."""
    from auditor.audit.review import review_file

    with (
        input_file(request.path, request.from_stdin) as file,
        _frozen_heap(),
        _phase_line(quiet=request.as_json) as phases,
    ):
        outcomes = review_file(
            open_cli_store(),
            file,
            fmt=request.input_format,
            mode=request.mode,
            engine=request.engine,
            policy=request.policy,
            detectors=request.detectors,
            agent=request.agent,
            redact=request.redact,
            patterns=request.patterns,
            source="stdin" if request.from_stdin else None,
            trace_id=request.trace_id,
            outcome=request.outcome,
            phases=phases,
        )
    if not outcomes:
        raise InputError(
            "the input holds no trace: nothing was audited, nothing written", path=str(request.path)
        )
    return outcomes


def _show(request: ReviewRequest, outcomes: list[ReviewOutcome]) -> None:
    """What the terminal gets: the summary, or the report(s) in the asked format; after a written
    report, the summary (not with --json) and what was written; nothing with -q or -o -."""
    from auditor.audit.report.render import render

    output = request.output
    if request.quiet or str(output) == "-":
        return
    if output is not None:  # the report went to a file: the terminal still gets the summary
        if not request.as_json:
            for o in outcomes:
                _print_summary(o)
        console.print(f"wrote {output} ({request.file_format}, {len(outcomes)} report(s))", highlight=False)
        return
    several_as_json = request.as_json and len(outcomes) > 1
    for o in outcomes:
        if request.fmt == "summary":
            _print_summary(o)
        elif not (request.fmt == "json" and several_as_json):
            typer.echo(render(o.report, o.trace, request.fmt), nl=False)
    if several_as_json:
        print_json([o.report.model_dump(mode="json") for o in outcomes])


def validate(
    report: Path = typer.Argument(..., help="A V3 report (JSON) from any engine."),
    trace: str = typer.Option(..., "--trace", help="The audited trace: a file, or a trace id in the store."),
    input_format: str = INPUT_FORMAT,
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Check a report: JSON Schema, then every evidence unit resolves (step, edge, verbatim quote)."""
    from auditor.audit.report.validator import validate_report

    if not report.is_file():
        raise InputError("no such report file", path=str(report))
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a JSON report: {exc}", path=str(report)) from exc
    reports = data if isinstance(data, list) else [data]
    if not reports or not all(isinstance(r, dict) for r in reports):
        raise InputError(
            "a report file holds one JSON report object, or an array of them (review -o on a "
            "multi-trace file)",
            path=str(report),
        )
    if Path(trace).is_file():
        from auditor.audit.review import read_traces

        traces = {t.header.trace_id: t for t, _, _ in read_traces(Path(trace), input_format)}
        only = next(iter(traces.values())) if len(traces) == 1 else None
        pairs = [(r, traces.get(str(r.get("trace_id"))) or only) for r in reports]
    else:
        from auditor.core.store.traces import load_trace

        store = open_cli_store()
        pairs = [(r, load_trace(store, trace)) for r in reports]
    missing = [str(r.get("trace_id")) for r, t in pairs if t is None]
    if missing:
        raise InputError(
            f"the trace file holds no trace {missing[0]!r} that the report audits",
            path=trace,
            field="trace_id",
        )
    results = [validate_report(r, t) for r, t in pairs]
    if as_json:
        dicts = [r.to_dict() for r in results]
        print_json(dicts if isinstance(data, list) else dicts[0])
    else:
        for (rep, _), result in zip(pairs, results, strict=True):
            if len(results) > 1:
                console.print(
                    f"[bold]{escape(str(rep.get('report_id')))}[/bold] ({escape(str(rep.get('trace_id')))})"
                )
            for e in result.schema_errors:
                console.print(f"[red]schema[/red] {escape(e)}")
            for e in result.reference_errors:
                console.print(f"[red]reference[/red] {escape(e)}")
            for u in result.units:
                mark = "[green]ok[/green]" if u.ok else f"[red]FAIL[/red] {escape(str(u.problem))}"
                console.print(
                    f"{u.finding_id} unit {u.index} ({escape(u.step_id)}, {escape(u.edge_ref)}): {mark}"
                )
            verdict = "[green]valid[/green]" if result.ok else "[red]invalid[/red]"
            console.print(f"{verdict}: {result.resolved}/{len(result.units)} evidence units resolve")
    if not all(r.ok for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("review")(review)
    app.command("validate")(validate)
