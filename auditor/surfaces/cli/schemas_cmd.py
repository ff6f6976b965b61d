"""`auditor schemas export`: write the contracts' JSON Schema files."""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.surfaces.cli.common import console, print_json

schemas_app = typer.Typer(
    help="The JSON Schema contracts (traces, events, V3 reports).", no_args_is_help=True
)


@schemas_app.command("export")
def export(
    out: Path = typer.Option(None, "--out", "-o", help="Directory (default: the package's schemas/json)."),
    as_json: bool = typer.Option(False, "--json", help="Print the written paths as JSON."),
) -> None:
    """Write one JSON Schema file per contract."""
    from schemas.export import SCHEMA_DIR, export_schemas

    paths = export_schemas(out or SCHEMA_DIR)
    if as_json:
        print_json([str(p) for p in paths])
    else:
        for p in paths:
            console.print(f"wrote {p}")


def register(app: typer.Typer) -> None:
    app.add_typer(schemas_app, name="schemas")
