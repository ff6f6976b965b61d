"""The append-only event store on SQLAlchemy Core: SQLite embedded, PostgreSQL in production.

Appends are serialised (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``LOCK TABLE … IN EXCLUSIVE MODE``),
which keeps the global order gap-free and equal to commit order, and lets each event's hash chain
to the one before it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy import create_engine, event, func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from auditor.errors import ConcurrencyError, StoreError
from auditor.store.guards import check_guards
from auditor.store.hashing import GENESIS_HASH, compact_json, event_hash
from auditor.store.migrate import INDEX, STORE, refuse_unless_usable
from auditor.store.tables import events
from schemas.events import EVENT_SCHEMA_VERSION, NewEvent, RecordedEvent

DEFAULT_STORE_URL = "sqlite:///auditor.db"
_READ_BATCH = 2000


class EncodedEvent(NamedTuple):
    """An event in its stored form (payload and metadata as JSON text) with the stream version its
    writer assigned: a batch writer appends many streams in one transaction without building a
    NewEvent and re-encoding its payload per event."""

    stream_id: str
    stream_version: int
    type: str
    payload_json: str
    metadata_json: str
    idempotency_key: str | None
    schema_version: int = EVENT_SCHEMA_VERSION


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
            # Switching to WAL takes a lock that SQLite's busy handler does not wait for: a
            # connection opened while another writes sees "database is locked". WAL persists in
            # the file, so only switch when it is not WAL yet, and retry briefly when busy.
            for attempt in range(50):
                try:
                    if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                        cur.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError:
                    if attempt == 49:
                        raise
                    time.sleep(0.1)
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=False, pool_size=5, pool_recycle=300)


class EventStore:
    """Append, read and verify events. No update, no delete: the database refuses those too."""

    def __init__(
        self, url: str | None = None, *, require_guards: bool = True, allow_behind: bool = False
    ) -> None:
        """Open the store; an empty database is created at this code's schema, through the
        migrations. A schema ahead of the code is refused, one behind it unless ``allow_behind``
        (inspection and ``store upgrade``, which change nothing on opening it). A store whose
        guards were dropped or altered is refused unless ``require_guards`` is False, which only
        inspection and repair (``store verify``, ``store guard``, ``store upgrade``) pass."""
        self.url = resolve_url(url)
        try:
            self.engine = _make_engine(self.url)
            with self.write_transaction() as conn:
                self.schema = STORE.ensure(conn, self.safe_url, allow_behind=allow_behind)
                refuse_unless_usable(INDEX.state(conn), self.safe_url, allow_behind=allow_behind)
                self.guard_problems = check_guards(conn, self.schema.applied)
        except (OperationalError, DBAPIError) as exc:
            self.close()
            raise StoreError(
                f"cannot open the event store at {self.safe_url}: {exc.orig}",
                hint="check --store / AUDITOR_STORE and that the database is running",
            ) from exc
        except StoreError:
            self.close()
            raise
        if self.guard_problems and require_guards:
            self.close()
            raise StoreError(
                f"the event store at {self.safe_url} has lost its append-only guard: "
                + "; ".join(map(str, self.guard_problems)),
                hint="it is not re-created silently: run 'auditor store verify' (with your checkpoints) "
                "to see whether history was changed, then 'auditor store guard' to restore it; "
                "see docs/store.md",
            )
        self.dialect = self.engine.dialect.name
        self._sql = _Sql(self.dialect)

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
        if hasattr(self, "engine"):
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
        dbapi = self.engine.dialect.loaded_dbapi
        raw = self.engine.raw_connection()  # the hot path talks to the driver directly
        try:
            # Optimistic first: most events are new, so insert without looking keys up; a
            # re-delivered key trips the unique index and the append is redone with the lookup.
            for look_up_keys in (False, True):
                cur = raw.cursor()
                if self.dialect == "sqlite":
                    cur.execute("BEGIN IMMEDIATE")
                try:
                    result = self._append_in(cur, stream_id, new_events, expected_version, look_up_keys)
                    raw.commit()
                    return result
                except (dbapi.IntegrityError, ConcurrencyError):
                    # a stale expected version may also be a re-delivery: decide after the lookup
                    raw.rollback()
                    if look_up_keys or not any(e.idempotency_key for e in new_events):
                        raise
                except BaseException:
                    raw.rollback()
                    raise
            raise AssertionError("unreachable")
        except dbapi.Error as exc:
            raise StoreError(f"append to '{stream_id}' failed: {exc}") from exc
        finally:
            raw.close()

    def _append_in(
        self,
        cur: Any,
        stream_id: str,
        new_events: Sequence[NewEvent],
        expected: int | None,
        look_up_keys: bool,
    ) -> list[RecordedEvent]:
        sql = self._sql
        self._lock_in(cur)
        keys = [e.idempotency_key for e in new_events if e.idempotency_key] if look_up_keys else []
        existing: dict[str, RecordedEvent] = {}
        for chunk_start in range(0, len(keys), 500):
            chunk = keys[chunk_start : chunk_start + 500]
            query, params = sql.by_keys(chunk)
            if self.dialect == "postgresql":  # a prepared generic plan for ANY($1) scans the table
                cur.execute(query, params, prepare=False)
            else:
                cur.execute(query, params)
            existing.update({row[7]: _tuple_to_event(row) for row in cur.fetchall()})
        fresh = [e for e in new_events if not (e.idempotency_key and e.idempotency_key in existing)]
        if not fresh:
            return [existing[e.idempotency_key] for e in new_events]  # type: ignore[index]
        cur.execute(sql.heads, (stream_id,))
        version, position, prev = cur.fetchone()
        prev = prev or GENESIS_HASH
        if expected is not None and version != expected:
            raise ConcurrencyError(stream_id, expected, version)
        recorded_at = datetime.now(UTC).isoformat(timespec="microseconds")
        rows: list[tuple] = []
        out: list[RecordedEvent] = []
        seen: set[str] = set()
        for e in fresh:
            key = e.idempotency_key
            if key:
                if key in seen:
                    continue  # the same key twice in one batch is one event
                seen.add(key)
            position += 1
            version += 1
            payload_json = compact_json(e.payload)
            metadata_json = compact_json(e.metadata) if e.metadata else "{}"
            digest = event_hash(
                prev,
                global_position=position,
                stream_id=stream_id,
                stream_version=version,
                type=e.type,
                schema_version=e.schema_version,
                payload_json=payload_json,
                metadata_json=metadata_json,
                idempotency_key=key,
                recorded_at=recorded_at,
            )
            row = (position, stream_id, version, e.type, e.schema_version, payload_json, metadata_json, key)
            rows.append((*row, prev, digest, recorded_at))
            out.append(_make_event(row, e.payload, e.metadata, prev, digest, recorded_at))
            prev = digest
        self._insert_rows(cur, rows)
        if len(out) == len(new_events):  # every event new and appended once: records in order
            return out
        by_key = {r.idempotency_key: r for r in out if r.idempotency_key}
        by_key.update(existing)
        fresh_iter = iter(out)
        return [
            by_key[e.idempotency_key] if e.idempotency_key in by_key else next(fresh_iter) for e in new_events
        ]

    def _lock_in(self, cur: Any) -> None:
        """Serialise appends (PostgreSQL; SQLite's BEGIN IMMEDIATE already does): positions and
        versions read after this stay current until the transaction ends."""
        if self.dialect == "postgresql":
            cur.execute("LOCK TABLE events IN EXCLUSIVE MODE")

    def _insert_encoded_in(self, cur: Any, encoded: Sequence[EncodedEvent]) -> None:
        """Chain and insert encoded events of many streams, in one statement, inside the caller's
        write transaction. The caller took ``_lock_in`` before reading the stream versions it
        assigned; a stale version or a stored idempotency key trips a unique index instead."""
        if not encoded:
            return
        cur.execute(self._sql.last)
        last = cur.fetchone()
        position, prev = (last[0], last[1]) if last else (0, GENESIS_HASH)
        recorded_at = datetime.now(UTC).isoformat(timespec="microseconds")
        rows: list[tuple] = []
        for e in encoded:
            position += 1
            digest = event_hash(
                prev,
                global_position=position,
                stream_id=e.stream_id,
                stream_version=e.stream_version,
                type=e.type,
                schema_version=e.schema_version,
                payload_json=e.payload_json,
                metadata_json=e.metadata_json,
                idempotency_key=e.idempotency_key,
                recorded_at=recorded_at,
            )
            head = (position, e.stream_id, e.stream_version, e.type, e.schema_version, e.payload_json)
            rows.append((*head, e.metadata_json, e.idempotency_key, prev, digest, recorded_at))
            prev = digest
        self._insert_rows(cur, rows)

    def _insert_rows(self, cur: Any, rows: list[tuple]) -> None:
        """Insert chained rows, then read back that the table holds exactly them: a trigger that
        skips an insert (SQLite ``RAISE(IGNORE)``, a PostgreSQL trigger returning NULL) or a rule
        that replaces it (``DO INSTEAD NOTHING``) raises no error of its own, and an append that
        reports success for an event it did not store would let ``tokens revoke`` exit 0 while the
        token stays active. The caller's transaction is then rolled back."""
        sql = self._sql
        if self.dialect == "postgresql" and len(rows) == 1:
            # one round trip; COPY takes three, and executemany enters pipeline mode. RETURNING is
            # the read-back: no row when a trigger skipped it, an error when a rule replaced it.
            cur.execute(sql.insert_returning, rows[0])
            written = cur.fetchall()
            stored = (len(written), *written[0]) if written else (0, None, None)
        else:
            if self.dialect == "sqlite":
                cur.executemany(sql.insert_rows(), rows)
            else:  # COPY: no per-row statement parsing (and no rules: only triggers apply)
                with cur.copy(sql.copy) as stream:
                    for r in rows:
                        stream.write_row(r)
            cur.execute(sql.written, (rows[-1][0], rows[0][0]))
            stored = cur.fetchone()
        if tuple(stored) != (len(rows), rows[-1][0], rows[-1][9]):
            raise StoreError(
                f"the database did not store the events of this append: {len(rows)} written from "
                f"position {rows[0][0]}, {stored[0]} found there; nothing was appended",
                hint="a trigger or rule on the events table drops or changes inserts: run "
                "'auditor store verify' (see docs/store.md)",
            )

    # -- reading ---------------------------------------------------------------------------
    def stream_version(self, stream_id: str) -> int:
        with self.engine.connect() as conn:
            return conn.execute(
                select(func.coalesce(func.max(events.c.stream_version), 0)).where(
                    events.c.stream_id == stream_id
                )
            ).scalar_one()

    def read_stream(self, stream_id: str, from_version: int = 1) -> Iterator[RecordedEvent]:
        yield from self._pages(self._sql.stream_page, (stream_id,), from_version, column=2)

    def read_all(self, from_position: int = 1, types: Sequence[str] | None = None) -> Iterator[RecordedEvent]:
        if types:
            types = list(types)
            yield from self._pages(
                self._sql.all_page_types(len(types)), tuple(types), from_position, column=0
            )
        else:
            yield from self._position_pages(max(from_position, 1))

    def _position_pages(self, start: int) -> Iterator[RecordedEvent]:
        """The global stream, page by page over ranges of positions. Positions are dense, so a
        range of ``_READ_BATCH`` positions is a full page, and PostgreSQL serves a bounded range
        from the primary key even before it has statistics (on a freshly filled table the
        ``>= n ORDER BY … LIMIT`` form scans and sorts the whole table for every page). A short
        page is the end, or a gap (a tampered store): the next stored position starts the next
        page, searched after the last row read, so that appends made meanwhile are not skipped."""
        lo: int | None = start
        while lo is not None:
            raw = self.engine.raw_connection()
            try:
                cur = raw.cursor()
                cur.execute(self._sql.all_range, (lo, lo + _READ_BATCH))
                rows = cur.fetchall()
                if len(rows) == _READ_BATCH:
                    lo += _READ_BATCH
                else:
                    cur.execute(self._sql.next_position, (rows[-1][0] if rows else lo - 1,))
                    lo = cur.fetchone()[0]
                raw.rollback()  # end the read transaction before yielding
            finally:
                raw.close()
            for r in rows:
                yield _tuple_to_event(r)

    def _pages(self, query: str, params: tuple, start: int, column: int) -> Iterator[RecordedEvent]:
        """Page through results so that huge streams are never held in memory at once."""
        cursor = start
        while True:
            raw = self.engine.raw_connection()
            try:
                cur = raw.cursor()
                cur.execute(query, (*params, cursor, _READ_BATCH))
                rows = cur.fetchall()
                raw.rollback()  # end the read transaction before yielding
            finally:
                raw.close()
            for r in rows:
                yield _tuple_to_event(r)
            if len(rows) < _READ_BATCH:
                return
            cursor = rows[-1][column] + 1

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


_COLUMNS = (
    "global_position, stream_id, stream_version, type, schema_version, payload, metadata, "
    "idempotency_key, prev_hash, hash, recorded_at"
)
_FIELDS_SET = frozenset(RecordedEvent.model_fields)


def _make_event(head: tuple, payload: Any, metadata: Any, prev: str, digest: str, at: str) -> RecordedEvent:
    """Build a RecordedEvent from trusted store data without re-validating it (the hot read path)."""
    ev = object.__new__(RecordedEvent)
    object.__setattr__(
        ev,
        "__dict__",
        {
            "global_position": head[0],
            "stream_id": head[1],
            "stream_version": head[2],
            "type": head[3],
            "schema_version": head[4],
            "payload": payload,
            "metadata": metadata,
            "idempotency_key": head[7],
            "prev_hash": prev,
            "hash": digest,
            "recorded_at": at,
        },
    )
    object.__setattr__(ev, "__pydantic_fields_set__", _FIELDS_SET)
    object.__setattr__(ev, "__pydantic_extra__", None)
    object.__setattr__(ev, "__pydantic_private__", None)
    return ev


_scan_json = json.JSONDecoder().scan_once  # the C scanner itself


def _load_json(text: str) -> Any:
    """Stored JSON back to a value. The store wrote it compact, so json.loads' whitespace and
    trailing-data checks (half the cost of a small payload) have nothing to find."""
    return _scan_json(text, 0)[0]


def _tuple_to_event(r: Sequence[Any]) -> RecordedEvent:
    metadata = {} if r[6] == "{}" else _load_json(r[6])
    return _make_event(tuple(r), _load_json(r[5]), metadata, r[8], r[9], r[10])


class _Sql:
    """Driver-level SQL for the hot paths, in the dialect's parameter style."""

    def __init__(self, dialect: str) -> None:
        self.p = "%s" if dialect == "postgresql" else "?"
        p = self.p
        self.heads = (
            f"SELECT (SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream_id = {p}), "
            "COALESCE((SELECT MAX(global_position) FROM events), 0), "
            "(SELECT hash FROM events ORDER BY global_position DESC LIMIT 1)"
        )
        self.stream_page = (
            f"SELECT {_COLUMNS} FROM events WHERE stream_id = {p} AND stream_version >= {p} "
            f"ORDER BY stream_version LIMIT {p}"
        )
        self.all_range = (
            f"SELECT {_COLUMNS} FROM events WHERE global_position >= {p} AND global_position < {p} "
            "ORDER BY global_position"
        )
        self.next_position = f"SELECT MIN(global_position) FROM events WHERE global_position > {p}"
        self.last = "SELECT global_position, hash FROM events ORDER BY global_position DESC LIMIT 1"
        self._one_row = "(" + ", ".join([p] * 11) + ")"
        self.copy = f"COPY events ({_COLUMNS}) FROM STDIN"
        self.insert_returning = f"{self.insert_rows()} RETURNING global_position, hash"
        self.written = (  # the rows from the first position written on: count, last, its hash
            "SELECT COUNT(*), MAX(global_position), "
            f"(SELECT hash FROM events WHERE global_position = {p}) FROM events WHERE global_position >= {p}"
        )

    def by_keys(self, keys: list[str]) -> tuple[str, tuple]:
        if self.p == "%s":  # one array parameter: psycopg parses long placeholder lists slowly
            return f"SELECT {_COLUMNS} FROM events WHERE idempotency_key = ANY(%s)", (keys,)
        return (
            f"SELECT {_COLUMNS} FROM events WHERE idempotency_key IN ({', '.join('?' * len(keys))})",
            tuple(keys),
        )

    def all_page_types(self, n: int) -> str:
        p = self.p
        return (
            f"SELECT {_COLUMNS} FROM events WHERE type IN ({', '.join([p] * n)}) AND global_position >= {p} "
            f"ORDER BY global_position LIMIT {p}"
        )

    def insert_rows(self) -> str:
        return f"INSERT INTO events ({_COLUMNS}) VALUES {self._one_row}"
