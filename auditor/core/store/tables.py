"""Tables of the event store, as the code reads and writes them. The migrations create them
(``migrations/store/versions``; a test holds the two together); the guards that keep the event
table append-only are in guards.py."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text

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


def clip(value: Any, column: Column) -> Any:
    """A value as ``column`` holds it: text cut at the column's length. PostgreSQL refuses a
    longer one, and a projection would stop at that event for every reader after it (a framework
    of 300 characters, from a file or an OTLP resource, made every listing fail)."""
    length = getattr(column.type, "length", None)
    return value[:length] if length and isinstance(value, str) else value
