"""Tables of the event store, created once; the guards that keep them append-only are in guards.py."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text, text
from sqlalchemy.engine import Connection

from auditor.store.guards import GuardProblem, check_guards, install_guards

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


def create_schema(conn: Connection) -> list[GuardProblem]:
    """Create the tables, and the append-only guards only when the database had no event table yet;
    on an existing store, add the tables introduced later and return what is wrong with its guards
    (the caller refuses to open it). Safe to run on every start, from many processes."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(727274)"))  # serialise concurrent first starts
        exists = conn.execute(text("SELECT to_regclass('events') IS NOT NULL")).scalar_one()
    else:  # SQLite: the caller's write transaction (BEGIN IMMEDIATE) already serialises
        exists = conn.execute(
            text("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'")
        ).scalar_one()
    metadata.create_all(conn)
    if not exists:
        install_guards(conn)
        return []
    return check_guards(conn)
