"""`auditor tokens create|list|revoke`: API tokens for `auditor serve`, stored hashed as events."""

from __future__ import annotations

import typer

from auditor.surfaces.cli.common import JSON_OUTPUT, console, open_cli_store, print_json, print_table

tokens_app = typer.Typer(
    help="API tokens for 'auditor serve' (stored hashed, shown once).", no_args_is_help=True
)


@tokens_app.command("create")
def create(
    name: str = typer.Option(..., "--name", help="Who or what uses the token."),
    scope: list[str] = typer.Option(
        ["read"], "--scope", help="read, ingest, repair, metrics, review (repeat or comma-separate)."
    ),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Mint a token; its plain text is printed once and never stored."""
    from auditor.surfaces.server.tokens import create_token

    plain, record = create_token(open_cli_store(), name, scope)
    if as_json:
        print_json({**record.public(), "token": plain})
        return
    console.print(f"token {record.token_id} ({record.name}; scopes {', '.join(record.scopes)}):")
    console.print(plain, markup=False, highlight=False)
    console.print("[dim]Store it now: only its hash is kept.[/dim]")


@tokens_app.command("list")
def list_(as_json: bool = JSON_OUTPUT) -> None:
    """Every token: id, name, scopes, created, revoked (never the token itself)."""
    from auditor.surfaces.server.tokens import load_tokens

    records = [r.public() for r in load_tokens(open_cli_store()).values()]
    if as_json:
        print_json(records)
        return
    print_table(
        f"{len(records)} tokens",
        ["id", "name", "scopes", "created", "revoked"],
        [
            [r["token_id"], r["name"], ", ".join(r["scopes"]), r["created_at"], r["revoked_at"]]
            for r in records
        ],
    )


@tokens_app.command("revoke")
def revoke(token_id: str = typer.Argument(..., help="Token id (see 'auditor tokens list').")) -> None:
    """Revoke a token: the server refuses it from its next request."""
    from auditor.surfaces.server.tokens import revoke_token

    record = revoke_token(open_cli_store(), token_id)
    console.print(f"token {record.token_id} ({record.name}) revoked at {record.revoked_at}")


def register(app: typer.Typer) -> None:
    app.add_typer(tokens_app, name="tokens")
