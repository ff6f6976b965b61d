"""`auditor evidence report`: the whole evidence set regenerated from the store (all runs, all cohorts).

`auditor score report RUN` stays the one-run summary; this writes every table as Markdown
(`evidence.md`), one CSV per table and PNG figures, or prints the tables as JSON.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import console, err_console, open_cli_store, print_json, print_table, state

if TYPE_CHECKING:
    from auditor.surfaces.evidence_report import Table


def _check_out(out: Path) -> None:
    """An --out that cannot become a folder is the user's one-line mistake, found before any work."""
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", path=str(out), hint="choose another --out")
    anchor = next(p for p in out.resolve().parents if p.exists())  # the set is staged beside --out
    if not anchor.is_dir() or not os.access(anchor, os.W_OK | os.X_OK):
        raise InputError(f"cannot write in {anchor}", path=str(out), hint="choose a writable --out")


def _note(table: Table) -> str:
    """The terminal's short word on a table; evidence.md carries the whole placeholder."""
    if table.empty is not None:
        return table.empty.split(";")[0]
    return "simulation" if table.simulation else ""


evidence_app = typer.Typer(
    help="The whole evidence set, regenerated from the event store.", no_args_is_help=True
)


@evidence_app.command("report")
def report(
    out: Path = typer.Option(Path("evidence"), "--out", help="Folder for evidence.md, CSV and PNG."),
    resamples: int = typer.Option(
        20_000, "--resamples", min=100, help="Bootstrap and noise-floor resamples."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the tables as JSON (nothing is written)."),
) -> None:
    """Every table: attribution audit, world evidence, repair retests, each with its denominators."""
    from rich.progress import Progress

    from auditor.surfaces.evidence_report import BUILDERS, Evidence, build_tables

    if not as_json:
        _check_out(out)
    store = open_cli_store()
    if next(iter(store.read_all()), None) is None:
        raise InputError(
            "the store holds no events", hint="record runs first (auditor score run, auditor world run)"
        )
    with Progress(console=err_console, transient=True, disable=as_json) as bar:
        job = bar.add_task("building evidence tables", total=len(BUILDERS))
        tables = build_tables(Evidence(store, resamples), lambda name: bar.advance(job))
    if as_json:
        print_json({"tables": [t.as_json() for t in tables]})
        return
    from auditor.surfaces.evidence_report.render import write_evidence

    try:
        write_evidence(tables, out, state.store_url or "sqlite:///auditor.db")
    except OSError as exc:
        raise InputError(f"cannot write the evidence set: {exc.strerror}", path=str(out)) from exc
    print_table(
        "evidence set",
        ["table", "rows", "source", "note"],
        [[t.key, len(t.rows), t.source, _note(t)] for t in tables],
    )
    empty = sum(t.empty is not None for t in tables)
    console.print(f"{len(tables)} tables ({empty} with no runs behind them) written to {out / 'evidence.md'}")


def register(app: typer.Typer) -> None:
    app.add_typer(evidence_app, name="evidence")
