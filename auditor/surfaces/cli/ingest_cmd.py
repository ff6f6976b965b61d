"""`auditor ingest FILE|DIR|-`: import traces into the store, idempotently, saying which importer read them.

A file is checked in full, then stored in one transaction: all of it or nothing. A pipe or FIFO
is read once (stdin too). A directory (with --recursive) is walked with a progress bar; each file
succeeds or fails on its own, and a summary table lists the files, traces, steps and every failure
with its reason (file, line, field); any failure makes the exit code 2.
"""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.core.errors import AuditorError, InputError
from auditor.surfaces.cli.common import (
    FORMAT_ALIAS,
    INPUT_FORMAT,
    JSON_OUTPUT,
    REDACT,
    REDACT_PATTERN,
    console,
    err_console,
    importer_name,
    input_file,
    open_cli_store,
    print_json,
    print_table,
    redaction,
)


def _ingest_file(
    path: Path,
    fmt: str,
    redact: bool,
    patterns: dict[str, str],
    as_json: bool,
    source: str | None,
    trace_id: str | None,
) -> None:
    from ingest import ingest_path

    summaries = ingest_path(
        open_cli_store(), path, fmt, redact=redact, patterns=patterns, source=source, trace_id=trace_id
    )
    if as_json:
        print_json(summaries[0].as_dict() if len(summaries) == 1 else [s.as_dict() for s in summaries])
        return
    err_console.print(f"importer: {summaries[0].importer} ({summaries[0].reason})")
    for s in summaries:
        console.print(
            f"{s.trace_id}  ({s.steps} steps; {s.appended} events appended, {s.already_present} already present"
            + ("; labels kept apart" if s.labels else "")
            + ")",
            markup=False,
            highlight=False,
        )


def _ingest_dir(
    root: Path, fmt: str, recursive: bool, redact: bool, patterns: dict[str, str], as_json: bool
) -> int:
    from rich.progress import Progress

    from ingest import ingest_path
    from ingest.pipeline import iter_files

    store = open_cli_store()
    files = list(iter_files(root, recursive))
    done: list[dict] = []
    failures: list[dict] = []
    skipped: list[dict] = []
    with Progress(console=err_console, transient=True, disable=as_json) as progress:
        task = progress.add_task("ingesting", total=len(files))
        for path in files:
            progress.update(task, description=path.name[:40])
            try:
                summaries = ingest_path(store, path, fmt, redact=redact, patterns=patterns)
            except AuditorError as exc:
                entry = {"path": str(path), "reason": exc.one_line()}
                (skipped if "no importer recognises" in str(exc) else failures).append(entry)
            except Exception as exc:  # an importer's own failure: this file fails, the walk goes on
                failures.append({"path": str(path), "reason": f"{type(exc).__name__}: {exc}"})
            else:
                done.append(
                    {
                        "path": str(path),
                        "importer": summaries[0].importer,
                        "traces": len(summaries),
                        "steps": sum(s.steps for s in summaries),
                        "appended": sum(s.appended for s in summaries),
                    }
                )
            progress.advance(task)
    totals = {
        "files": len(files),
        "imported": len(done),
        "traces": sum(d["traces"] for d in done),
        "steps": sum(d["steps"] for d in done),
        "appended": sum(d["appended"] for d in done),
        "skipped": len(skipped),
        "failures": len(failures),
    }
    if as_json:
        print_json({"totals": totals, "files": done, "skipped": skipped, "failures": failures})
    else:
        print_table(
            f"{root}",
            ["file", "importer", "traces", "steps", "appended"],
            [
                [Path(d["path"]).relative_to(root), d["importer"], d["traces"], d["steps"], d["appended"]]
                for d in done
            ],
        )
        print_table("summary", list(totals), [list(totals.values())])
        if skipped:
            print_table("skipped (not a known trace format)", ["file"], [[s["path"]] for s in skipped])
        if failures:
            print_table("failures", ["file", "reason"], [[f["path"], f["reason"]] for f in failures])
    return 2 if failures else 0


def ingest(
    path: str = typer.Argument(..., help="A trace file, a directory (with --recursive), or - for stdin."),
    input_format: str = INPUT_FORMAT,
    format_alias: str = FORMAT_ALIAS,
    recursive: bool = typer.Option(False, "--recursive", "-r", help="Ingest every file under a directory."),
    redact: bool = REDACT,
    redact_pattern: list[str] = REDACT_PATTERN,
    as_json: bool = JSON_OUTPUT,
    trace_id: str = typer.Option(
        None,
        "--trace-id",
        help="Store the input's one trace under this new id (a trace id holds one history: "
        "other content under a stored id is refused).",
    ),
) -> None:
    """Append traces to the store and print their ids; the same input twice appends nothing new,
    other content under a stored trace id is refused (exit 2)."""
    from ingest import names

    fmt = importer_name(input_format, format_alias)
    if fmt != "auto" and fmt not in names():
        raise InputError(
            f"unknown importer '{fmt}'",
            field="--input-format",
            hint=f"valid importers: auto, {', '.join(names())}",
        )
    redact, patterns = redaction(redact, redact_pattern)
    target = Path(path)
    if path != "-" and target.is_dir() and recursive:
        if trace_id is not None:
            raise InputError("--trace-id names one trace; it cannot apply to a directory", field="--trace-id")
        code = _ingest_dir(target, fmt, recursive, redact, patterns, as_json)
        if code:
            raise typer.Exit(code)
        return
    with input_file(target, from_stdin=path == "-") as file:
        _ingest_file(file, fmt, redact, patterns, as_json, "stdin" if path == "-" else None, trace_id)


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
