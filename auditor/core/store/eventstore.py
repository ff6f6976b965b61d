"""The append-only event store on SQLAlchemy Core: SQLite embedded, PostgreSQL in production.

Appends are serialised (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``LOCK TABLE … IN EXCLUSIVE MODE``),
which keeps the global order gap-free and equal to commit order, and lets each event's hash chain
to the one before it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from auditor.core.errors import ConcurrencyError, StoreError
from auditor.core.store.guards import check_guards
from auditor.core.store.migrate import INDEX, STORE, refuse_unless_usable
from auditor.core.store.recorder import recorder_for
from auditor.core.store.records import row_to_event
from auditor.core.store.tables import events
from auditor.core.store.transaction import Reader, Transaction
from schemas.events import NewEvent, RecordedEvent

DEFAULT_STORE_URL = "sqlite:///auditor.db"
_READ_BATCH = 2000
_SCAN_PAGE = 5000  # rows a scan fetches at a time
_KEEP_WRITER_S = 300.0  # as the pool recycles its connections


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
        self._writer: Any = None  # the kept writer connection (see _write_connection)
        self._writer_since = 0.0
        self._writer_lock = threading.Lock()
        self.recorder = recorder_for(self.url)
        try:
            self.engine = self.recorder.make_engine(self.url)
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
        self.dialect = self.recorder.dialect

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
        self._drop_writer()
        if hasattr(self, "engine"):
            self.engine.dispose()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A write transaction holding the append lock, on a driver connection: committed when
        the block ends, rolled back when it raises (see transaction.py)."""
        with self._write_connection() as raw:
            cur = raw.cursor()
            try:
                self.recorder.begin(cur)
                self.recorder.lock(cur)
                yield Transaction(self.recorder, cur)
                raw.commit()
            except BaseException:
                raw.rollback()
                raise

    @contextmanager
    def _write_connection(self) -> Iterator[Any]:
        """The store's writer connection, kept between transactions: a pool checkout and return
        cost as much as a small append. A second writer meanwhile (another thread, or a
        transaction opened inside one) takes a pooled connection, as before, and waits on the
        database's lock. A connection whose transaction failed, or older than ``_KEEP_WRITER_S``,
        is not kept."""
        if not self._writer_lock.acquire(blocking=False):
            raw = self.engine.raw_connection()
            try:
                yield raw
            finally:
                raw.close()
            return
        try:
            now = time.monotonic()
            if self._writer is None or now - self._writer_since > _KEEP_WRITER_S:
                self._drop_writer()
                self._writer, self._writer_since = self.engine.raw_connection(), now
            try:
                yield self._writer
            except BaseException:
                self._drop_writer()
                raise
        finally:
            self._writer_lock.release()

    def _drop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    @contextmanager
    def reading(self) -> Iterator[Reader]:
        """Queries in one read transaction (a consistent view), ended when the block ends."""
        raw = self.engine.raw_connection()
        try:
            yield Reader(self.recorder, raw.cursor())
            raw.rollback()
        finally:
            raw.close()

    def scan(self, query: str, params: Sequence[Any] = ()) -> Iterator[tuple]:
        """The rows of a query written with ``?`` placeholders, fetched a page at a time in one
        read transaction (on PostgreSQL through a server-side cursor): for a result too large to
        hold at once."""
        raw = self.engine.raw_connection()
        try:
            cur = self.recorder.paging_cursor(raw)
            cur.execute(self.recorder.sql(query), params)
            while rows := cur.fetchmany(_SCAN_PAGE):
                yield from rows
            raw.rollback()
        finally:
            raw.close()

    def read_engine(self, threads: int, settings: dict[str, str]) -> Engine:
        """An engine for one-statement reads from ``threads`` threads at once: on PostgreSQL its
        own autocommit pool of that many connections, their sessions set as ``settings`` says;
        on SQLite the store's engine."""
        return self.recorder.read_engine(self.engine, threads, settings)

    # -- appending -------------------------------------------------------------------------
    def append(
        self, stream_id: str, new_events: Sequence[NewEvent], expected_version: int | None = None
    ) -> list[RecordedEvent]:
        """Append events to one stream in one transaction (``Transaction.append``).

        ``expected_version`` is the stream's current version as the caller saw it (0 for a new
        stream); None skips the check. Events whose idempotency key is already stored are not
        appended again: their original record is returned in their place.
        """
        if not new_events:
            return []
        dbapi = self.engine.dialect.loaded_dbapi
        try:
            # Optimistic first: most events are new, so insert without looking keys up; a
            # re-delivered key trips the unique index and the append is redone with the lookup.
            for look_up_keys in (False, True):
                try:
                    with self.transaction() as tx:
                        return tx.append(stream_id, new_events, expected_version, look_up_keys=look_up_keys)
                except (dbapi.IntegrityError, ConcurrencyError):
                    # a stale expected version may also be a re-delivery: decide after the lookup
                    if look_up_keys or not any(e.idempotency_key for e in new_events):
                        raise
            raise AssertionError("unreachable")
        except dbapi.Error as exc:
            raise StoreError(f"append to '{stream_id}' failed: {exc}") from exc

    # -- reading ---------------------------------------------------------------------------
    def stream_version(self, stream_id: str) -> int:
        with self.engine.connect() as conn:
            return conn.execute(
                select(func.coalesce(func.max(events.c.stream_version), 0)).where(
                    events.c.stream_id == stream_id
                )
            ).scalar_one()

    def read_stream(self, stream_id: str, from_version: int = 1) -> Iterator[RecordedEvent]:
        yield from self._pages(self.recorder.stream_page, (stream_id,), from_version, column=2)

    def read_all(self, from_position: int = 1, types: Sequence[str] | None = None) -> Iterator[RecordedEvent]:
        if types:
            types = list(types)
            yield from self._pages(
                self.recorder.all_page_types(len(types)), tuple(types), from_position, column=0
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
                cur.execute(self.recorder.all_range, (lo, lo + _READ_BATCH))
                rows = cur.fetchall()
                if len(rows) == _READ_BATCH:
                    lo += _READ_BATCH
                else:
                    cur.execute(self.recorder.next_position, (rows[-1][0] if rows else lo - 1,))
                    lo = cur.fetchone()[0]
                raw.rollback()  # end the read transaction before yielding
            finally:
                raw.close()
            for r in rows:
                yield row_to_event(r)

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
                yield row_to_event(r)
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
