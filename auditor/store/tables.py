"""Tables of the event store, and the triggers that make the event table append-only.

The refusal of UPDATE and DELETE lives in the database itself, so that no code path (ours or a
stray SQL session) can rewrite history without first dropping a trigger.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text, text
from sqlalchemy.engine import Connection

metadata = MetaData()

events = Table(
    "events",
    metadata,
    Column(
        "global_position", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False
    ),
    Column("stream_id", String(512), nullable=False),
    Column("stream_version", Integer, nullable=False),
    Column("type", String(200), nullable=False),
    Column("schema_version", Integer, nullable=False),
    Column("payload", Text, nullable=False),
    Column("metadata", Text, nullable=False),
    Column("idempotency_key", String(512), nullable=True),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Column("recorded_at", String(40), nullable=False),
    Index("ix_events_stream", "stream_id", "stream_version", unique=True),
    Index("ix_events_idempotency", "idempotency_key", unique=True),
    Index("ix_events_type", "type"),
)

projection_positions = Table(
    "projection_positions",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("position", BigInteger, nullable=False),
)

APPEND_ONLY_MESSAGE = "events are append-only: UPDATE and DELETE are refused"

_SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER IF NOT EXISTS events_refuse_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS events_refuse_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END""",
]

_POSTGRES_TRIGGERS = [
    f"""CREATE OR REPLACE FUNCTION auditor_events_refuse_change() RETURNS trigger AS $$
        BEGIN RAISE EXCEPTION '{APPEND_ONLY_MESSAGE}'; END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS events_refuse_change ON events",
    """CREATE TRIGGER events_refuse_change BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION auditor_events_refuse_change()""",
    "DROP TRIGGER IF EXISTS events_refuse_truncate ON events",
    """CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION auditor_events_refuse_change()""",
]


def create_schema(conn: Connection) -> None:
    """Create tables and append-only triggers; safe to run on every start, from many processes."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(727274)"))  # serialise concurrent first starts
        if conn.execute(text("SELECT to_regclass('events') IS NOT NULL")).scalar_one():
            metadata.create_all(conn)  # later tables (projection positions) may still be missing
            return
        metadata.create_all(conn)
        statements = _POSTGRES_TRIGGERS
    else:
        metadata.create_all(conn)
        statements = _SQLITE_TRIGGERS
    for stmt in statements:
        conn.execute(text(stmt))
