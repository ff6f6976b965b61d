"""The append-only event store on SQLAlchemy Core: SQLite embedded, PostgreSQL in production.

Appends are serialised (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``LOCK TABLE … IN EXCLUSIVE MODE``),
which keeps the global order gap-free and equal to commit order, and lets each event's hash chain
to the one before it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import create_engine, event, func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from auditor.errors import ConcurrencyError, StoreError
from auditor.store.hashing import GENESIS_HASH, canonical_json, event_hash
from auditor.store.tables import create_schema, events
from schemas.events import NewEvent, RecordedEvent

DEFAULT_STORE_URL = "sqlite:///auditor.db"
_READ_BATCH = 2000


def resolve_url(url: str | None) -> str:
    """The store URL from the argument, then AUDITOR_STORE, then a SQLite file in the working dir."""
    url = url or os.environ.get("AUDITOR_STORE") or DEFAULT_STORE_URL
    if "://" not in url:  # a bare path means a SQLite file
        url = f"sqlite:///{Path(url).expanduser()}"
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def _make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True)


class EventStore:
    """Append, read and verify events. No update, no delete: the database refuses those too."""

    def __init__(self, url: str | None = None) -> None:
        self.url = resolve_url(url)
        try:
            self.engine = _make_engine(self.url)
            with self.write_transaction() as conn:
                create_schema(conn)
        except (OperationalError, DBAPIError) as exc:
            raise StoreError(
                f"cannot open the event store at {self.safe_url}: {exc.orig}",
                hint="check --store / AUDITOR_STORE and that the database is running",
            ) from exc
        self.dialect = self.engine.dialect.name

    @property
    def safe_url(self) -> str:
        """The URL without its password, for messages."""
        return self.engine.url.render_as_string(hide_password=True) if hasattr(self, "engine") else self.url

    @contextmanager
    def write_transaction(self) -> Iterator[Connection]:
        """A connection inside a write transaction (SQLite: BEGIN IMMEDIATE)."""
        with self.engine.connect().execution_options(write=True) as conn, conn.begin():
            yield conn

    def close(self) -> None:
        self.engine.dispose()

    # -- appending -------------------------------------------------------------------------
    def append(
        self, stream_id: str, new_events: Sequence[NewEvent], expected_version: int | None = None
    ) -> list[RecordedEvent]:
        """Append events to one stream in one transaction.

        ``expected_version`` is the stream's current version as the caller saw it (0 for a new
        stream); None skips the check. Events whose idempotency key is already stored are not
        appended again: their original record is returned in their place.
        """
        if not new_events:
            return []
        try:
            with self.write_transaction() as conn:
                return self._append_in(conn, stream_id, new_events, expected_version)
        except (OperationalError, DBAPIError) as exc:
            if isinstance(exc.orig, Exception) and "unique" in str(exc.orig).lower():
                raise ConcurrencyError(
                    stream_id, expected_version or -1, self.stream_version(stream_id)
                ) from exc
            raise StoreError(f"append to '{stream_id}' failed: {exc.orig}") from exc

    def _append_in(
        self, conn: Connection, stream_id: str, new_events: Sequence[NewEvent], expected: int | None
    ) -> list[RecordedEvent]:
        if self.dialect == "postgresql":
            conn.exec_driver_sql("LOCK TABLE events IN EXCLUSIVE MODE")
        keys = [e.idempotency_key for e in new_events if e.idempotency_key]
        existing: dict[str, RecordedEvent] = {}
        if keys:
            for chunk_start in range(0, len(keys), 500):
                chunk = keys[chunk_start : chunk_start + 500]
                rows = conn.execute(select(events).where(events.c.idempotency_key.in_(chunk))).mappings()
                existing.update({r["idempotency_key"]: _row_to_event(r) for r in rows})
        fresh = [e for e in new_events if not (e.idempotency_key and e.idempotency_key in existing)]
        if not fresh:
            return [existing[e.idempotency_key] for e in new_events]  # type: ignore[index]
        version = conn.execute(
            select(func.coalesce(func.max(events.c.stream_version), 0)).where(events.c.stream_id == stream_id)
        ).scalar_one()
        if expected is not None and version != expected:
            raise ConcurrencyError(stream_id, expected, version)
        last = conn.execute(
            select(events.c.global_position, events.c.hash).order_by(events.c.global_position.desc()).limit(1)
        ).first()
        position, prev = (last[0], last[1]) if last else (0, GENESIS_HASH)
        recorded_at = datetime.now(UTC).isoformat(timespec="microseconds")
        rows, out, seen = [], [], set()
        for e in fresh:
            if e.idempotency_key and e.idempotency_key in seen:
                continue  # the same key twice in one batch is one event
            if e.idempotency_key:
                seen.add(e.idempotency_key)
            position += 1
            version += 1
            payload_json = canonical_json(e.payload)
            metadata_json = canonical_json(e.metadata)
            digest = event_hash(
                prev,
                global_position=position,
                stream_id=stream_id,
                stream_version=version,
                type=e.type,
                schema_version=e.schema_version,
                payload_json=payload_json,
                metadata_json=metadata_json,
                idempotency_key=e.idempotency_key,
                recorded_at=recorded_at,
            )
            row = {
                "global_position": position,
                "stream_id": stream_id,
                "stream_version": version,
                "type": e.type,
                "schema_version": e.schema_version,
                "payload": payload_json,
                "metadata": metadata_json,
                "idempotency_key": e.idempotency_key,
                "prev_hash": prev,
                "hash": digest,
                "recorded_at": recorded_at,
            }
            rows.append(row)
            prev = digest
            out.append(RecordedEvent.model_construct(**{**row, "payload": e.payload, "metadata": e.metadata}))
        conn.execute(events.insert(), rows)
        by_key = {r.idempotency_key: r for r in out if r.idempotency_key}
        by_key.update(existing)
        fresh_iter = iter(out)
        result = []
        for e in new_events:
            if e.idempotency_key and e.idempotency_key in by_key:
                result.append(by_key[e.idempotency_key])
            else:
                result.append(next(fresh_iter))
        return result

    # -- reading ---------------------------------------------------------------------------
    def stream_version(self, stream_id: str) -> int:
        with self.engine.connect() as conn:
            return conn.execute(
                select(func.coalesce(func.max(events.c.stream_version), 0)).where(
                    events.c.stream_id == stream_id
                )
            ).scalar_one()

    def read_stream(self, stream_id: str, from_version: int = 1) -> Iterator[RecordedEvent]:
        query = (
            select(events)
            .where(events.c.stream_id == stream_id, events.c.stream_version >= from_version)
            .order_by(events.c.stream_version)
        )
        yield from self._iter(query, events.c.stream_version, from_version)

    def read_all(self, from_position: int = 1, types: Sequence[str] | None = None) -> Iterator[RecordedEvent]:
        query = select(events).where(events.c.global_position >= from_position)
        if types:
            query = query.where(events.c.type.in_(list(types)))
        yield from self._iter(
            query.order_by(events.c.global_position), events.c.global_position, from_position
        )

    def _iter(self, query, column, start: int) -> Iterator[RecordedEvent]:  # type: ignore[no-untyped-def]
        """Page through results so that huge streams are never held in memory at once."""
        cursor = start
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(query.where(column >= cursor).limit(_READ_BATCH)).mappings().all()
            for r in rows:
                yield _row_to_event(r)
            if len(rows) < _READ_BATCH:
                return
            cursor = rows[-1][column.name] + 1

    def last_position(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.coalesce(func.max(events.c.global_position), 0))).scalar_one()

    def list_streams(self, prefix: str = "") -> list[str]:
        with self.engine.connect() as conn:
            q = select(events.c.stream_id).where(events.c.stream_version == 1)
            if prefix:
                q = q.where(events.c.stream_id.startswith(prefix, autoescape=True))
            return [r[0] for r in conn.execute(q.order_by(events.c.global_position))]

    def stats(self) -> dict[str, object]:
        with self.engine.connect() as conn:
            total = conn.execute(select(func.count()).select_from(events)).scalar_one()
            streams = conn.execute(select(func.count(func.distinct(events.c.stream_id)))).scalar_one()
            by_type = conn.execute(
                select(events.c.type, func.count()).group_by(events.c.type).order_by(events.c.type)
            ).all()
        return {
            "store": self.safe_url,
            "events": total,
            "streams": streams,
            "last_position": self.last_position(),
            "by_type": {t: n for t, n in by_type},
        }

    def raw_sql(self, sql: str) -> None:
        """Run a statement outside the API (tests use it to prove the triggers refuse changes)."""
        with self.write_transaction() as conn:
            conn.exec_driver_sql(sql)


def _row_to_event(r) -> RecordedEvent:  # type: ignore[no-untyped-def]
    return RecordedEvent.model_construct(
        global_position=r["global_position"],
        stream_id=r["stream_id"],
        stream_version=r["stream_version"],
        type=r["type"],
        schema_version=r["schema_version"],
        payload=json.loads(r["payload"]),
        metadata=json.loads(r["metadata"]),
        idempotency_key=r["idempotency_key"],
        prev_hash=r["prev_hash"],
        hash=r["hash"],
        recorded_at=r["recorded_at"],
    )
