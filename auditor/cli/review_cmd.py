"""`auditor review PATH|-` and `auditor validate REPORT --trace TRACE`: the main job and its check."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from auditor.cli.common import (
    INPUT_FORMAT,
    REDACT,
    REDACT_PATTERN,
    console,
    err_console,
    open_cli_store,
    output_target,
    print_json,
    redaction,
    spool_stdin,
    write_atomic,
)

FORMATS = ("summary", "json", "md", "html", "sarif")


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


def _render(outcome, fmt: str) -> str:  # type: ignore[no-untyped-def]
    if fmt == "json":
        return outcome.report.model_dump_json(indent=2) + "\n"
    from auditor.report.render import render

    return render(outcome.report, outcome.trace, fmt)


def _print_summary(outcome) -> None:  # type: ignore[no-untyped-def]
    """The terminal summary, laid out for 80 columns and up; trace content is never markup."""
    from auditor.report.render_summary import print_summary

    print_summary(console, outcome.report, outcome.trace, outcome.validation, outcome.importer)


def register(app: typer.Typer) -> None:
    @app.command("review")
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
        detectors: str = typer.Option(
            None, "--detectors", help="Comma-separated detector names (default: all)."
        ),
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
        from auditor.errors import InputError
        from auditor.report.disposition import ACTIONABLE
        from auditor.review import review_file
        from schemas import GraphMode

        fmt = fmt or ("json" if as_json else ("json" if output and output.suffix == ".json" else "summary"))
        if fmt not in FORMATS:
            raise InputError(
                f"unknown format '{fmt}'", field="--format", hint=f"use one of {', '.join(FORMATS)}"
            )
        try:
            mode = GraphMode(graph)
        except ValueError:
            raise InputError(
                f"unknown graph mode '{graph}'", field="--graph", hint="annotated, topology or none"
            ) from None
        from auditor.incident import OUTCOMES

        if outcome is not None and outcome not in OUTCOMES:
            raise InputError(
                f"unknown outcome '{outcome}'", field="--outcome", hint="failed, succeeded or unknown"
            )
        if output is not None and str(output) != "-":
            output_target(output)  # refused before anything is stored
        redact, patterns = redaction(redact, redact_pattern)
        loaded_policy = None
        if policy is not None:
            from auditor.policy import load_policy

            loaded_policy = load_policy(policy)
        agent = None
        if engine == "agent":
            from auditor.agent import CONTRACTS
            from auditor.agent.loop import Budget
            from auditor.review import AgentOptions

            if contract not in CONTRACTS:
                raise InputError(f"unknown contract '{contract}'", field="--contract", hint="v3 or naive")
            if seed_findings not in (None, "rules"):
                raise InputError("--seed-findings takes only 'rules'", field="--seed-findings")
            agent = AgentOptions(
                model, contract, seed_findings, Budget(max_tool_calls, max_tokens, max_seconds)
            )
        file = spool_stdin() if path == "-" else Path(path)
        try:
            with _frozen_heap(), _phase_line(quiet=as_json) as phases:
                outcomes = review_file(
                    open_cli_store(),
                    file,
                    fmt=input_format,
                    mode=mode,
                    engine=engine,
                    policy=loaded_policy,
                    detectors=[d.strip() for d in detectors.split(",")] if detectors else None,
                    agent=agent,
                    redact=redact,
                    patterns=patterns,
                    source="stdin" if path == "-" else None,
                    trace_id=trace_id,
                    outcome=outcome,
                    phases=phases,
                )
        finally:
            if path == "-":
                file.unlink(missing_ok=True)
        if not outcomes:
            raise InputError("the input holds no trace: nothing was audited, nothing written", path=str(path))
        if output is not None:
            out_fmt = fmt if fmt != "summary" else "json"
            texts = [_render(o, out_fmt) for o in outcomes]
            if out_fmt == "json" and len(texts) > 1:
                write_atomic(
                    output, json.dumps([o.report.model_dump(mode="json") for o in outcomes], indent=2) + "\n"
                )
            else:
                write_atomic(output, "\n".join(texts))
        if quiet or str(output) == "-":
            pass
        elif output is not None:  # the report went to a file: the terminal still gets the summary
            if not as_json:
                for o in outcomes:
                    _print_summary(o)
            console.print(f"wrote {output} ({out_fmt}, {len(outcomes)} report(s))", highlight=False)
        else:
            for o in outcomes:
                if fmt == "summary":
                    _print_summary(o)
                elif fmt == "json" and as_json and len(outcomes) > 1:
                    pass
                else:
                    typer.echo(_render(o, fmt), nl=False)
            if as_json and len(outcomes) > 1:
                print_json([o.report.model_dump(mode="json") for o in outcomes])
        if any(f.disposition in ACTIONABLE for o in outcomes for f in o.report.findings):
            raise typer.Exit(1)

    @app.command("validate")
    def validate(
        report: Path = typer.Argument(..., help="A V3 report (JSON) from any engine."),
        trace: str = typer.Option(
            ..., "--trace", help="The audited trace: a file, or a trace id in the store."
        ),
        input_format: str = INPUT_FORMAT,
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Check a report: JSON Schema, then every evidence unit resolves (step, edge, verbatim quote)."""
        from rich.markup import escape

        from auditor.errors import InputError
        from auditor.report.validator import validate_report

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
            from auditor.review import read_traces

            traces = {t.header.trace_id: t for t, _, _ in read_traces(Path(trace), input_format)}
            only = next(iter(traces.values())) if len(traces) == 1 else None
            pairs = [(r, traces.get(str(r.get("trace_id"))) or only) for r in reports]
        else:
            from auditor.traces import load_trace

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
