"""`auditor ingest FILE|-`: read a trace file and append it to the store, idempotently."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import typer

from auditor.cli.common import console, open_cli_store, print_json


def _spool_stdin() -> Path:
    """Copy stdin to a temporary file: the file is validated in full before anything is appended."""
    with tempfile.NamedTemporaryFile(prefix="auditor-stdin-", suffix=".jsonl", delete=False) as tmp:
        shutil.copyfileobj(sys.stdin.buffer, tmp)
    return Path(tmp.name)


def register(app: typer.Typer) -> None:
    @app.command("ingest")
    def ingest(
        path: str = typer.Argument(..., help="A canonical JSONL trace file, or - for stdin."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Append a trace to the store and print its id; the same file twice appends nothing new."""
        from auditor.traces import append_trace
        from ingest.canonical import iter_canonical, scan_canonical

        file = _spool_stdin() if path == "-" else Path(path)
        try:
            scan = scan_canonical(file)
            if path == "-" and scan.header.source == file.name:
                scan = type(scan)(scan.header.model_copy(update={"source": "stdin"}), scan.steps, scan.digest)
            summary = append_trace(open_cli_store(), scan.header, iter_canonical(file))
        finally:
            if path == "-":
                file.unlink(missing_ok=True)
        if as_json:
            print_json(summary.__dict__)
        else:
            console.print(
                f"{summary.trace_id}  ({summary.steps} steps; {summary.appended} events appended, "
                f"{summary.already_present} already present)"
            )
