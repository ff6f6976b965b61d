"""The triggers that make the event table append-only, and the check that they are still whole.

The refusal of changes lives in the database itself, so that no code path (ours or a stray SQL
session) can rewrite history without first dropping, disabling or rewriting a trigger. The store's
migrations create them (``migrations/store/versions``; the statements here are the same text, so
that a trigger can be compared and restored); afterwards every open checks them and a missing or
altered one is reported, never silently re-created: re-creating it would hide that someone
removed it. ``auditor store guard`` restores them on purpose.

SQLite: ``INSERT OR REPLACE`` (and ``REPLACE``) delete a conflicting row without firing DELETE
triggers (unless ``recursive_triggers`` is on, which a stray session need not set), so inserts are
guarded too: an event must take the next position and may collide with no stored event on any
unique key. That refuses upserts and ``ON CONFLICT`` clauses as well. PostgreSQL has no REPLACE; its
``ON CONFLICT DO UPDATE`` and ``MERGE`` fire the row UPDATE/DELETE trigger, and ``DO NOTHING``
changes nothing.

Any other trigger on the event table, and (PostgreSQL) any rule on it, is refused as well: a
``BEFORE INSERT`` trigger that ``RAISE(IGNORE)``s, or a ``RULE … DO INSTEAD NOTHING``, drops events
without an error, and one that edits ``NEW`` changes them as they are written. The store's guards
are the only triggers the table may carry.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection

APPEND_ONLY_MESSAGE = "events are append-only: UPDATE and DELETE are refused"
INSERT_MESSAGE = "events are append-only: an insert must take the next position and replace no event"

_SQLITE = {
    "events_refuse_update": f"""CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END""",
    "events_refuse_delete": f"""CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END""",
    "events_refuse_overwrite": f"""CREATE TRIGGER events_refuse_overwrite BEFORE INSERT ON events
        WHEN NEW.global_position IS NOT (SELECT COALESCE(MAX(global_position), 0) + 1 FROM events)
          OR EXISTS (SELECT 1 FROM events
                     WHERE stream_id = NEW.stream_id AND stream_version = NEW.stream_version)
          OR EXISTS (SELECT 1 FROM events WHERE idempotency_key = NEW.idempotency_key)
        BEGIN SELECT RAISE(ABORT, '{INSERT_MESSAGE}'); END""",
}

# The store revision that added a guard after the first: a store behind it lacks the guard by
# design (auditor store upgrade adds it), so an inspection of such a store does not expect it.
_ADDED_BY = {"events_refuse_overwrite": "0002"}

_PG_FUNCTION = "auditor_events_refuse_change"
_PG_BODY = f" BEGIN RAISE EXCEPTION '{APPEND_ONLY_MESSAGE}'; END "
# pg_trigger.tgtype bits: ROW 1, BEFORE 2, INSERT 4, DELETE 8, UPDATE 16, TRUNCATE 32
_PG_TYPES = {"events_refuse_change": 1 | 2 | 8 | 16, "events_refuse_truncate": 2 | 32}
_PG = [
    f"CREATE OR REPLACE FUNCTION {_PG_FUNCTION}() RETURNS trigger AS $${_PG_BODY}$$ LANGUAGE plpgsql",
    "DROP TRIGGER IF EXISTS events_refuse_change ON events",
    f"""CREATE TRIGGER events_refuse_change BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION {_PG_FUNCTION}()""",
    "DROP TRIGGER IF EXISTS events_refuse_truncate ON events",
    f"""CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION {_PG_FUNCTION}()""",
]


UNKNOWN = "is not one of the store's guards (it could drop or change events as they are written)"


@dataclass(frozen=True)
class GuardProblem:
    """One guard that is not as it was created, or a trigger or rule on the event table that is no
    guard at all: its name, what is wrong, and which kind of object it is."""

    trigger: str
    problem: str
    kind: str = "trigger"

    def __str__(self) -> str:
        return f"{self.kind} {self.trigger} {self.problem}"

    @property
    def unknown(self) -> bool:
        return self.problem == UNKNOWN


def _squeeze(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def install_guards(conn: Connection) -> list[str]:
    """Create the guards that are missing or altered (all of them on a new database) and drop every
    other trigger and rule on the event table; returns their names. Callers other than the first
    initialisation must have checked the chain first."""
    problems = check_guards(conn)
    quote = conn.dialect.identifier_preparer.quote
    postgres = conn.dialect.name == "postgresql"
    on_events = " ON events" if postgres else ""
    for p in problems:
        if p.unknown:
            conn.execute(text(f"DROP {p.kind.upper()} IF EXISTS {quote(p.trigger)}{on_events}"))
        elif not postgres:
            conn.execute(text(f"DROP TRIGGER IF EXISTS {p.trigger}"))
            conn.execute(text(_SQLITE[p.trigger]))
    if postgres and any(not p.unknown for p in problems):
        for stmt in _PG:  # the function and both triggers, replaced together
            conn.execute(text(stmt))
    return sorted({p.trigger for p in problems})


def check_guards(conn: Connection, applied: Collection[str] | None = None) -> list[GuardProblem]:
    """Every expected trigger that is missing, disabled or no longer refuses what it should, then
    every other trigger or rule on the event table. ``applied`` are the store revisions the
    database has (None: all, a store at head)."""
    if conn.dialect.name == "postgresql":
        return _check_postgres(conn)
    stored = dict(
        conn.execute(
            text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND lower(tbl_name) = 'events'")
        ).all()
    )
    problems = []
    for name, sql in _SQLITE.items():
        if applied is not None and _ADDED_BY.get(name, "0001") not in applied:
            continue
        if name not in stored:
            problems.append(GuardProblem(name, "is missing"))
        elif _squeeze(stored[name]) != _squeeze(sql):
            problems.append(GuardProblem(name, "was altered"))
    problems += [GuardProblem(name, UNKNOWN) for name in sorted(stored) if name not in _SQLITE]
    return problems


def on_events(conn: Connection) -> list[str]:
    """Every trigger (and, PostgreSQL, rule) on the event table, named: what verify lists."""
    if conn.dialect.name == "postgresql":
        query = (
            "SELECT 'trigger ' || tgname FROM pg_trigger WHERE tgrelid = to_regclass('events') "
            "AND NOT tgisinternal UNION ALL SELECT 'rule ' || rulename FROM pg_rewrite "
            "WHERE ev_class = to_regclass('events') AND rulename <> '_RETURN'"
        )
    else:
        query = "SELECT 'trigger ' || name FROM sqlite_master WHERE type = 'trigger' AND lower(tbl_name) = 'events'"
    return sorted(conn.execute(text(query)).scalars())


def _check_postgres(conn: Connection) -> list[GuardProblem]:
    rows = conn.execute(
        text(
            "SELECT t.tgname, t.tgenabled, t.tgtype, t.tgqual IS NULL, "
            "COALESCE(array_length(t.tgattr::int2[], 1), 0), p.proname, p.prosrc "
            "FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid "
            "WHERE t.tgrelid = to_regclass('events') AND NOT t.tgisinternal"
        )
    ).all()
    found = {r[0]: r for r in rows}
    problems = []
    for name, tgtype in _PG_TYPES.items():
        row = found.get(name)
        if row is None:
            problems.append(GuardProblem(name, "is missing"))
            continue
        _, enabled, actual_type, unconditional, columns, function, body = row
        if enabled not in ("O", "A"):  # D: disabled; R: fires only on replicas
            problems.append(GuardProblem(name, "is disabled"))
        elif actual_type != tgtype or not unconditional or columns:
            problems.append(GuardProblem(name, "was altered (events, timing or condition)"))
        elif function != _PG_FUNCTION or _squeeze(body) != _squeeze(_PG_BODY):
            problems.append(GuardProblem(name, f"calls a function that no longer refuses ({function})"))
    problems += [GuardProblem(name, UNKNOWN) for name in sorted(found) if name not in _PG_TYPES]
    rules = conn.execute(
        text(
            "SELECT rulename FROM pg_rewrite WHERE ev_class = to_regclass('events') "
            "AND rulename <> '_RETURN' ORDER BY rulename"
        )
    ).scalars()
    problems += [GuardProblem(name, UNKNOWN, "rule") for name in rules]
    return problems
