"""Schema migrations (Alembic) for the two schemas that live in a store's database.

``STORE`` is the event store's own schema (events, projection positions, the append-only guards,
the traces view); ``INDEX`` is the server's search index, created only where ``auditor serve``
runs. Each has its own script directory under ``migrations/`` and its own version table, so a
store used without the server never holds the index's tables, and each history stays linear.

Every open requires each schema present in the database to be at this code's head: an empty
database is created at head through the migrations, a database behind head is refused until
``auditor store upgrade`` runs, and one ahead of the code (a newer auditor wrote it) is refused.
A database from a release before migrations (its tables, no version table) is taken as revision
0001 of each schema; the later revisions are written so that they also apply over whatever those
releases had already added at start (``IF NOT EXISTS``). A version table that holds no revision
(its row deleted, set to NULL, or doubled) was made by a migration and then changed: no release
leaves one so. Its revision is unknown, so every guard of head is expected, every command but the
store's inspection and repair refuses it, and the upgrade records the revision again only where
no guard is missing (a migration would re-create it unseen).

Opening a store at head reads the two version tables and nothing else: Alembic (a quarter of a
second to import) is loaded only to create, classify or migrate a schema that is not at head.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from auditor.core.errors import StoreError
from auditor.core.store.guards import GuardProblem, check_guards

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

_MIGRATIONS = Path(__file__).parent / "migrations"
_SCHEMA_LOCK = 727274  # PostgreSQL advisory lock: one process creates or migrates at a time
UPGRADE_HINT = (
    "run 'auditor store upgrade': it walks the hash chain, then migrates in one transaction; "
    "back the database up first"
)


@dataclass(frozen=True)
class SchemaState:
    """Where one schema of a database stands against this code's migrations."""

    name: str
    current: str | None  # the revision recorded (or taken, for a legacy database); None: absent
    head: str
    legacy: bool = False  # tables of a release before migrations, no version recorded
    known: bool = True  # False: a revision this code has no script for (a newer auditor's)
    applied: frozenset[str] | None = None  # the revisions up to ``current``; None: all (at head)
    damage: str | None = None  # how the version table fails to hold one revision; current: the base

    @property
    def absent(self) -> bool:
        return self.current is None

    @property
    def at_head(self) -> bool:
        return self.current == self.head and not self.legacy and self.damage is None

    @property
    def behind(self) -> bool:
        return self.current is not None and self.known and not self.at_head

    def describe(self) -> str:
        """The revision in words, for status lines and messages."""
        if self.absent:
            return "not created"
        if not self.known:
            return f"revision {self.current}, unknown to this auditor (a newer one wrote it)"
        if self.damage:
            return f"revision unknown: {self.damage} (removed or changed; no release leaves it so)"
        if self.legacy:
            return f"unversioned (a release before migrations; taken as revision {self.current})"
        return f"revision {self.current}"


class Schema:
    """One Alembic script directory and the version table that records how far a database got."""

    def __init__(self, name: str, directory: Path, version_table: str, legacy_table: str, head: str) -> None:
        self.name = name
        self.directory = directory
        self.version_table = version_table
        self.legacy_table = legacy_table  # its presence without a version marks a legacy database
        self.head = head  # the newest script's revision (a test holds the two together)

    @cached_property
    def script(self) -> ScriptDirectory:
        from alembic.script import ScriptDirectory

        return ScriptDirectory(str(self.directory))

    def state(self, conn: Connection) -> SchemaState:
        """This schema's revision in the database ``conn`` is connected to."""
        current, damage = self._recorded(conn)
        if current == self.head:
            return SchemaState(self.name, current, self.head)
        if damage:  # taken as the base to migrate from; every guard of head is expected
            return SchemaState(self.name, self.script.get_base(), self.head, damage=damage)
        legacy = current is None and inspect(conn).has_table(self.legacy_table)
        if current is None and not legacy:
            return SchemaState(self.name, None, self.head)
        from alembic.util import CommandError

        if legacy:
            current = self.script.get_base()
        try:
            self.script.get_revision(current)
        except CommandError:
            return SchemaState(self.name, current, self.head, known=False)
        applied = frozenset(r.revision for r in self.script.iterate_revisions(current, "base"))
        return SchemaState(self.name, current, self.head, legacy, applied=applied)

    def _recorded(self, conn: Connection) -> tuple[str | None, str | None]:
        """The revision the version table holds, or None and what is wrong with the table."""
        if not inspect(conn).has_table(self.version_table):
            return None, None
        rows = conn.execute(text(f"SELECT version_num FROM {self.version_table}")).scalars().all()
        if len(rows) == 1 and isinstance(rows[0], str) and rows[0]:
            return rows[0], None
        if not rows:
            held = "no revision"
        elif len(rows) > 1:
            held = f"{len(rows)} revisions ({', '.join(map(repr, rows))})"
        else:
            held = "a NULL revision" if rows[0] is None else f"the revision {rows[0]!r}"
        return None, f"its version table {self.version_table} holds {held}"

    def ensure(self, conn: Connection, where: str, *, allow_behind: bool = False) -> SchemaState:
        """Create the schema at head where it is absent; refuse it ahead of the code, and behind
        head unless ``allow_behind`` (an inspection that changes nothing)."""
        lock(conn)
        state = self.state(conn)
        if state.absent:
            self._run(conn, "upgrade")
            return self.state(conn)
        refuse_unless_usable(state, where, allow_behind=allow_behind)
        return state

    def upgrade(self, conn: Connection, where: str) -> tuple[SchemaState, SchemaState]:
        """Migrate to head (a legacy database is first recorded as the base revision); returns
        the states before and after. An absent schema stays absent: it is created where used."""
        lock(conn)
        before = self.state(conn)
        if before.absent or before.at_head:
            return before, before
        refuse_unless_usable(before, where, allow_behind=True)  # a newer auditor's schema
        if before.damage:  # recorded again from the base, in a version table as Alembic makes it
            conn.execute(text(f"DROP TABLE {self.version_table}"))
        if before.legacy or before.damage:
            self._run(conn, "stamp", before.current)
        self._run(conn, "upgrade")
        return before, self.state(conn)

    def _run(self, conn: Connection, name: str, revision: str = "head") -> None:
        """An Alembic command on ``conn``, inside its transaction (env.py reads both attributes)."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(self.directory))
        config.attributes["connection"] = conn
        config.attributes["version_table"] = self.version_table
        getattr(command, name)(config, revision)


def lock(conn: Connection) -> None:
    """Serialise schema work across processes (PostgreSQL; SQLite's write transaction, BEGIN
    IMMEDIATE, already does). Held until the caller's transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})


def refuse_unless_usable(state: SchemaState, where: str, *, allow_behind: bool = False) -> None:
    """A StoreError when this code cannot use the schema as it stands."""
    if not state.known:
        raise StoreError(
            f"the {state.name} at {where} is at schema revision {state.current}, which this auditor "
            f"does not know (its newest is {state.head}): a newer auditor wrote it",
            hint="upgrade auditor to open it; an older auditor never changes a newer schema",
        )
    if state.damage and not allow_behind:
        raise StoreError(
            f"the {state.name} at {where} has lost its schema revision: {state.damage}; a release "
            "before migrations has no version table, so it was removed or changed",
            hint="run 'auditor store verify' with your checkpoints to see what else changed, then "
            "'auditor store upgrade' (it records the revision again where no guard is missing); "
            "see docs/store.md",
        )
    if state.behind and not allow_behind:
        raise StoreError(
            f"the {state.name} at {where} has schema {state.describe()}, behind this auditor's "
            f"revision {state.head}",
            hint=UPGRADE_HINT,
        )


def schema_states(conn: Connection) -> list[SchemaState]:
    """Both schemas of the database, the store's first."""
    return [STORE.state(conn), INDEX.state(conn)]


@dataclass(frozen=True)
class Upgrade:
    """What ``auditor store upgrade`` found and did: each schema's states before and after, the
    guard problems found before migrating (against the revision the store holds) and after, and
    the guards the migrations created. ``refused``: nothing was migrated, because the revision is
    unknown and a guard is missing, which a migration from the base would re-create unseen."""

    steps: list[tuple[SchemaState, SchemaState]]
    found: list[GuardProblem]
    created: list[str]
    problems: list[GuardProblem]
    refused: bool = False


def upgrade_all(conn: Connection, where: str, *, create_index: bool = False) -> Upgrade:
    """Both schemas to head inside the caller's transaction (``auditor store upgrade``, which
    walked the chain first). A migration adds the guards of its revision but never re-creates one
    that an earlier revision made; a store whose revision is unknown is migrated only when every
    guard of head is in place. An absent index is created only with ``create_index`` (a server
    whose role may not create tables)."""
    state = STORE.state(conn)
    found = check_guards(conn, state.applied)
    if state.damage and found:
        return Upgrade([], found, [], found, refused=True)
    missing = {p.trigger for p in check_guards(conn) if not p.unknown}
    try:
        store = STORE.upgrade(conn, where)
        index = INDEX.upgrade(conn, where)
        if create_index and index[0].absent:
            index = (index[0], INDEX.ensure(conn, where))
    except DBAPIError as exc:
        raise StoreError(
            f"the upgrade of {where} failed: {exc.orig}",
            hint="nothing was changed (the upgrade runs in one transaction); see docs/store.md",
        ) from exc
    problems = check_guards(conn)
    created = sorted(missing - {p.trigger for p in problems})
    return Upgrade([store, index], found, created, problems)


def run_environment(context: Any) -> None:
    """The body of each script directory's env.py: migrate on the connection ``Schema`` hands
    over, inside its transaction, recording versions in that schema's own table."""
    config = context.config
    context.configure(
        connection=config.attributes["connection"], version_table=config.attributes["version_table"]
    )
    with context.begin_transaction():
        context.run_migrations()


STORE = Schema("event store", _MIGRATIONS / "store", "alembic_version_store", "events", head="0003")
INDEX = Schema("server index", _MIGRATIONS / "index", "alembic_version_index", "server_traces", head="0003")
