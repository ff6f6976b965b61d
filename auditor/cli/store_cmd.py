"""`auditor store verify|stats`: the event store's integrity and size."""

from __future__ import annotations

import typer

from auditor.cli.common import console, open_cli_store, print_json, print_table


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="The append-only event store.", no_args_is_help=True)

    @group.command("verify")
    def verify(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
        """Walk the hash chain; name the first broken link and exit 1 if there is one."""
        from auditor.store import verify_chain

        report = verify_chain(open_cli_store())
        if as_json:
            print_json(report.__dict__)
        elif report.ok:
            console.print(f"[green]ok[/green]: {report.checked} events, hash chain intact")
        else:
            console.print(
                f"[red]broken[/red] at global position {report.broken_position}: {report.reason} "
                f"({report.checked} events verified before it)"
            )
        if not report.ok:
            raise typer.Exit(1)

    @group.command("stats")
    def stats(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
        """Events, streams and counts by event type."""
        data = open_cli_store().stats()
        if as_json:
            print_json(data)
            return
        console.print(
            f"{data['store']}: {data['events']} events in {data['streams']} streams "
            f"(last position {data['last_position']})"
        )
        print_table("events by type", ["type", "count"], [[t, n] for t, n in data["by_type"].items()])

    app.add_typer(group, name="store")
