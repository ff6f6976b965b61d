"""Projections: views rebuilt from events, each tracking the last global position it applied.

The tracking position is written in the same transaction as the projection's effect, so a view
is never ahead of or behind what it says it has applied. Processes that share a store (several
server workers, a CLI beside them) may catch up the same view at once: each write takes the
view's lock and applies only what no one has applied since it looked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from sqlalchemy import select, text
from sqlalchemy.engine import Connection

from auditor.core.store.eventstore import EventStore
from auditor.core.store.tables import projection_positions
from schemas.events import RecordedEvent


class Projection(Protocol):
    """A view of the event log with its own tables."""

    name: str
    event_types: tuple[str, ...]

    def create(self, conn: Connection) -> None:
        """Make sure the view's tables stand at this code's schema (their migrations create them
        where they are absent; a schema behind or ahead is refused)."""

    def reset(self, conn: Connection) -> None:
        """Remove everything the view holds, before a rebuild."""

    def apply(self, conn: Connection, events: Iterable[RecordedEvent]) -> None:
        """Apply events in global order."""


def tracked_position(conn: Connection, name: str) -> int:
    row = conn.execute(
        select(projection_positions.c.position).where(projection_positions.c.name == name)
    ).first()
    return row[0] if row else 0


def _set_position(conn: Connection, name: str, position: int) -> None:
    updated = conn.execute(
        projection_positions.update().where(projection_positions.c.name == name).values(position=position)
    ).rowcount
    if not updated:
        conn.execute(projection_positions.insert().values(name=name, position=position))


def _lock(conn: Connection, name: str) -> None:
    """Hold the view's lock until the transaction ends (PostgreSQL; SQLite's write transactions
    already exclude each other)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"projection:{name}"})


def catch_up(store: EventStore, projection: Projection, batch: int = 2000) -> int:
    """Apply every event after the tracked position; returns how many events were applied."""
    with store.write_transaction() as conn:
        _lock(conn, projection.name)
        projection.create(conn)
        start = tracked_position(conn, projection.name) + 1
    applied = 0
    pending: list[RecordedEvent] = []
    last_seen = start - 1
    for ev in store.read_all(from_position=start):
        last_seen = ev.global_position
        if ev.type in projection.event_types:
            pending.append(ev)
        if len(pending) >= batch:
            applied += _commit(store, projection, pending, last_seen)
            pending = []
    if pending or last_seen >= start:
        applied += _commit(store, projection, pending, last_seen)
    return applied


def _commit(store: EventStore, projection: Projection, pending: list[RecordedEvent], position: int) -> int:
    with store.write_transaction() as conn:
        _lock(conn, projection.name)
        done = tracked_position(conn, projection.name)  # another process may have got further
        if done >= position:
            return 0
        fresh = [ev for ev in pending if ev.global_position > done]
        projection.apply(conn, fresh)
        _set_position(conn, projection.name, position)
    return len(fresh)


def rebuild(store: EventStore, projection: Projection) -> int:
    """Drop the view's content and apply every event from position 1."""
    with store.write_transaction() as conn:
        _lock(conn, projection.name)
        projection.create(conn)
        projection.reset(conn)
        _set_position(conn, projection.name, 0)
    return catch_up(store, projection)
