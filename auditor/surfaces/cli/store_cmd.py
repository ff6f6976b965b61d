"""`auditor store verify|checkpoint|keygen|guard|upgrade|status|stats`: the event store's
integrity, schema and size."""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.core.errors import InputError, VerificationFailed
from auditor.surfaces.cli.common import JSON_OUTPUT, console, open_cli_store, print_json, print_table, state

_KEY_FILE = typer.Option(
    None,
    "--key-file",
    envvar="AUDITOR_CHECKPOINT_KEY_FILE",
    help="The checkpoint signing key (a file the database's hosts cannot read).",
)


_UNANCHORED = (
    "not anchored: without --checkpoints, a chain rewritten or cut short by someone with write "
    "access also reads intact (docs/store.md)"
)


_STORE_URL = typer.Option(None, "--store", help="Store URL (as the global --store; this one wins).")


def _inspection_store(url: str | None = None):  # -> auditor.core.store.EventStore
    """The store opened even when its guards are gone or its schema is behind this code's (it is
    then only read): verify, guard and upgrade must see such a store."""
    from auditor.core.store import open_store

    return open_store(url or state.store_url, require_guards=False, allow_behind=True)


def _behind_note(store) -> str | None:  # type: ignore[no-untyped-def]
    """A line saying the schema is behind and what to run, when it is."""
    from auditor.core.store.migrate import UPGRADE_HINT

    if not store.schema.behind:
        return None
    return f"schema: {store.schema.describe()}, behind revision {store.schema.head}: {UPGRADE_HINT}"


def _verify(store, checkpoints: Path | None, key_file: Path | None):  # type: ignore[no-untyped-def]
    """The chain walked against the checkpoint file when one is named; an unreadable signature or
    an empty file fails verification like a broken link does."""
    from auditor.core.store import ChainReport, verify_chain
    from auditor.core.store.anchors import load_key, read_checkpoints

    if checkpoints is None:
        return verify_chain(store)
    key = load_key(key_file)
    try:
        anchors = read_checkpoints(checkpoints, key)
    except VerificationFailed as exc:
        return ChainReport(0, False, None, exc.one_line())
    if not anchors:
        return ChainReport(0, False, None, f"{checkpoints} holds no checkpoint")
    return verify_chain(store, anchors)


def _verified_or_exit(store, checkpoints: Path | None, key_file: Path | None, what: str):  # type: ignore[no-untyped-def]
    """The chain's report, or exit 1 naming ``what`` is refused: a change to the schema or guards
    is made only over a chain that verifies."""
    report = _verify(store, checkpoints, key_file)
    if not report.chain_ok:
        _print_report(report, checkpoints)
        console.print(f"[red]refused[/red]: {what} only over an intact chain")
        raise typer.Exit(1)
    return report


def _print_report(report, checkpoints: Path | None) -> None:  # type: ignore[no-untyped-def]
    if report.ok:
        console.print(
            f"[green]ok[/green]: {report.checked} events, hash chain intact, guards in place "
            f"({', '.join(report.on_events)}; no other trigger or rule on events)"
        )
        if report.anchor is not None:
            plural = "" if report.checkpoints == 1 else "s"
            console.print(
                f"anchored: matches {report.checkpoints} checkpoint{plural} in {checkpoints} (latest: "
                f"event {report.anchor.position}, signed {report.anchor.created_at})"
            )
        else:
            console.print(_UNANCHORED)
    elif report.broken_position is None:
        console.print(f"[red]broken[/red]: {report.reason}")
    else:
        console.print(
            f"[red]broken[/red] at global position {report.broken_position}: {report.reason} "
            f"({report.checked} events verified before it)"
        )


store_app = typer.Typer(help="The append-only event store.", no_args_is_help=True)


@store_app.command("verify")
def verify(
    checkpoints: Path = typer.Option(
        None,
        "--checkpoints",
        envvar="AUDITOR_CHECKPOINT_FILE",
        help="Hold the chain against the signed checkpoints in this file (needs the key).",
    ),
    key_file: Path = _KEY_FILE,
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Walk the hash chain, check it against the checkpoints and the append-only guards; name
    the first problem and exit 1 if there is one."""
    store = _inspection_store()
    report = _verify(store, checkpoints, key_file)
    if as_json:
        print_json(report.to_json())
    else:
        _print_report(report, checkpoints)
        if note := _behind_note(store):
            console.print(note)
    if not report.ok:
        raise typer.Exit(1)


@store_app.command("checkpoint")
def checkpoint(
    file: Path = typer.Option(
        None,
        "--file",
        envvar="AUDITOR_CHECKPOINT_FILE",
        help="The checkpoint file to append to (kept outside the database).",
    ),
    key_file: Path = _KEY_FILE,
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Sign the chain's head (position, hash) and append it to the checkpoint file, after
    checking that the events since the latest checkpoint chain onto it."""
    from auditor.core.store.anchors import load_key, take_checkpoint

    if file is None:
        raise InputError(
            "no checkpoint file named",
            field="--file",
            hint="pass --file FILE or set AUDITOR_CHECKPOINT_FILE (outside the database's reach)",
        )
    key = load_key(key_file)
    store = open_cli_store()
    taken = take_checkpoint(store, file, key)
    position = store.last_position()
    if as_json:
        print_json({"written": taken is not None, "file": str(file), **(taken.__dict__ if taken else {})})
    elif taken is not None:
        console.print(f"checkpoint: event {taken.position}, hash {taken.hash[:16]}…, appended to {file}")
    elif position == 0:
        console.print("the store is empty: nothing to anchor")
    else:
        console.print(f"nothing new: the head (event {position}) is already anchored in {file}")


@store_app.command("keygen")
def keygen(path: Path = typer.Argument(..., help="The key file to create (must not exist).")) -> None:
    """Create a random checkpoint key, readable by its owner only."""
    from auditor.core.store.anchors import generate_key

    kid = generate_key(path)
    console.print(
        f"wrote a new checkpoint key to {path} (key id {kid}); keep it where the database's "
        "writers cannot read it"
    )


@store_app.command("guard")
def guard(
    checkpoints: Path = typer.Option(
        None, "--checkpoints", envvar="AUDITOR_CHECKPOINT_FILE", help="Verify against these first."
    ),
    key_file: Path = _KEY_FILE,
) -> None:
    """Restore missing or altered append-only triggers, once the chain verifies (a store
    created before a guard existed gets it this way too)."""
    from auditor.core.store.guards import install_guards

    store = _inspection_store()
    if store.schema.behind and not store.schema.damage:  # unknown revision: every guard of head
        console.print(
            f"[red]refused[/red]: the schema is {store.schema.describe()}, behind revision "
            f"{store.schema.head}: run 'auditor store upgrade' first (it adds the guards of later revisions)"
        )
        raise typer.Exit(1)
    report = _verified_or_exit(store, checkpoints, key_file, "the guards are restored")
    with store.write_transaction() as conn:
        restored = install_guards(conn)
    if restored:
        console.print(f"restored: {', '.join(restored)} ({report.checked} events verified)")
    else:
        console.print("the guards are in place: nothing to restore")
    if report.anchor is None:
        console.print(_UNANCHORED)
    if note := _behind_note(store):
        console.print(note)


@store_app.command("upgrade")
def upgrade(
    url: str = _STORE_URL,
    checkpoints: Path = typer.Option(
        None, "--checkpoints", envvar="AUDITOR_CHECKPOINT_FILE", help="Verify against these first."
    ),
    key_file: Path = _KEY_FILE,
    index: bool = typer.Option(
        False, "--index", help="Also create the server's search index where it is absent."
    ),
) -> None:
    """Migrate the store's schema (and the server index's, where the server made one) to this
    auditor's revision, after walking the hash chain; print each schema's from → to."""
    from auditor.core.store.migrate import upgrade_all

    store = _inspection_store(url)
    if store.schema.behind:  # migrations add guards: only over a chain that verifies
        _verified_or_exit(store, checkpoints, key_file, "the schema is upgraded")
    with store.write_transaction() as conn:
        done = upgrade_all(conn, store.safe_url, create_index=index)
    if done.refused:
        console.print(
            f"{store.schema.name}: {store.schema.describe()}; found: "
            + "; ".join(map(str, done.found))
            + "\n[red]refused[/red]: not upgraded, since a migration from the base revision would "
            "re-create what is missing and hide that it was removed; run 'auditor store verify' with "
            "your checkpoints, then 'auditor store guard', then upgrade again (docs/store.md)"
        )
        raise typer.Exit(1)
    for before, after in done.steps:
        if after.absent:
            console.print(f"{before.name}: not created (made at revision {after.head} where it is used)")
        elif before.absent:
            console.print(f"{before.name}: created at revision {after.current}")
        elif before == after:
            console.print(f"{before.name}: at revision {after.current}, nothing to do")
        else:
            console.print(f"{before.name}: {before.describe()} → revision {after.current}")
    if done.created:
        console.print(f"created by the migrations: trigger {', '.join(done.created)} (absent before)")
    if problems := done.problems:
        console.print(
            "[red]append-only guard lost[/red]: " + "; ".join(map(str, problems)) + " (not re-created: "
            "run 'auditor store verify' with your checkpoints, then 'auditor store guard'; docs/store.md)"
        )
        raise typer.Exit(1)


@store_app.command("status")
def status(
    url: str = _STORE_URL,
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Each schema's revision in the store's database against this auditor's; exit 1 when one
    is behind (run 'auditor store upgrade')."""
    from auditor.core.store.migrate import schema_states

    store = _inspection_store(url)
    with store.engine.connect() as conn:
        states = schema_states(conn)
    if as_json:
        print_json(
            {
                "store": store.safe_url,
                "schemas": [
                    {
                        "name": s.name,
                        "revision": None if s.damage else s.current,
                        "head": s.head,
                        "legacy": s.legacy,
                        "at_head": s.at_head,
                        "damage": s.damage,
                    }
                    for s in states
                ],
            }
        )
    else:
        for s in states:
            mark = "" if s.at_head or s.absent else f", behind revision {s.head}: run 'auditor store upgrade'"
            console.print(f"{s.name}: {s.describe()}{mark}")
    if any(s.behind for s in states):
        raise typer.Exit(1)


@store_app.command("stats")
def stats(as_json: bool = JSON_OUTPUT) -> None:
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


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")
