"""One recorder per database: every statement the store runs on its event table, in that
database's terms, behind one contract (as eventsourcing keeps a ``Recorder`` per database, and
LangGraph a checkpoint saver). Nothing outside these classes branches on the database.

A recorder holds no connection: it is handed the driver's cursor of the transaction it works in
(the hot paths talk to the driver directly, below SQLAlchemy). Queries written with ``?``
placeholders are translated to the database's style by ``sql``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from itertools import chain
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine

from auditor.core.errors import StoreError

COLUMNS = (
    "global_position, stream_id, stream_version, type, schema_version, payload, metadata, "
    "idempotency_key, prev_hash, hash, recorded_at"
)
_CHUNK = 500  # values per IN list or array parameter
# Rows per multi-row INSERT: powers of two up to 64, so that a batch of any size runs a handful of
# statements from a set of seven the driver keeps prepared (a 100-row statement takes ~0.2 ms to
# prepare, a third of running it); beyond ~64 rows a longer statement gains nothing.
_ROWS_PER_INSERT = tuple(1 << k for k in range(6, -1, -1))


class Recorder:
    """The event table's SQL, built in the database's parameter style; subclasses hold what
    differs (connecting, starting and serialising a write transaction, batch inserts, JSON)."""

    dialect = ""
    mark = "?"

    def __init__(self) -> None:
        p = self.mark
        self.heads = (
            f"SELECT (SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream_id = {p}), "
            "COALESCE((SELECT MAX(global_position) FROM events), 0), "
            "(SELECT hash FROM events ORDER BY global_position DESC LIMIT 1)"
        )
        self.last = "SELECT global_position, hash FROM events ORDER BY global_position DESC LIMIT 1"
        self.stream_page = (
            f"SELECT {COLUMNS} FROM events WHERE stream_id = {p} AND stream_version >= {p} "
            f"ORDER BY stream_version LIMIT {p}"
        )
        self.all_range = (
            f"SELECT {COLUMNS} FROM events WHERE global_position >= {p} AND global_position < {p} "
            "ORDER BY global_position"
        )
        self.next_position = f"SELECT MIN(global_position) FROM events WHERE global_position > {p}"
        row = "(" + ", ".join([p] * 11) + ")"
        self.insert = f"INSERT INTO events ({COLUMNS}) VALUES {row}"
        self.insert_many = {
            n: f"INSERT INTO events ({COLUMNS}) VALUES " + ", ".join([row] * n) for n in _ROWS_PER_INSERT
        }
        self.written = (  # the rows from the first position written on: count, last, its hash
            "SELECT COUNT(*), MAX(global_position), "
            f"(SELECT hash FROM events WHERE global_position = {p}) FROM events WHERE global_position >= {p}"
        )

    def make_engine(self, url: str) -> Engine:
        raise NotImplementedError

    def sql(self, query: str) -> str:
        """A query written with ``?`` placeholders, in this database's style."""
        return query

    def begin(self, cur: Any) -> None:
        """Start a write transaction on a fresh driver connection."""

    def lock(self, cur: Any) -> None:
        """Serialise appends: positions and versions read after this stay current until the
        transaction ends."""

    def execute(self, cur: Any, query: str, params: Sequence[Any] = ()) -> None:
        """Run a query already in this database's style."""
        cur.execute(query, params)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, tuple]:
        """``column IN (…)`` and its parameters (at most ``_CHUNK`` values)."""
        return f"{column} IN ({', '.join('?' * len(values))})", tuple(values)

    def json_text(self, column: str, *path: str) -> str:
        """An expression reading the text at ``path`` inside the JSON held in ``column``."""
        raise NotImplementedError

    def read_engine(self, engine: Engine, threads: int, settings: dict[str, str]) -> Engine:
        """An engine for one-statement reads from ``threads`` threads at once, its sessions set
        as ``settings`` say where the database has them (here: the store's own engine)."""
        return engine

    def paging_cursor(self, raw: Any) -> Any:
        """A cursor of the driver connection ``raw`` whose ``fetchmany`` pages through a result
        too large to hold."""
        return raw.cursor()

    def versions(self, cur: Any, streams: Sequence[str]) -> dict[str, int]:
        """Current versions of the streams that exist (one index probe per stream)."""
        out: dict[str, int] = {}
        for i in range(0, len(streams), _CHUNK):
            where, params = self.any_of("stream_id", streams[i : i + _CHUNK])
            query = f"SELECT stream_id, MAX(stream_version) FROM events WHERE {where} GROUP BY stream_id"
            self.execute(cur, self.sql(query), params)
            out.update({s: int(v) for s, v in cur.fetchall() if v})
        return out

    def by_keys(self, cur: Any, keys: Sequence[str]) -> list[tuple]:
        """The stored rows of these idempotency keys."""
        rows: list[tuple] = []
        for i in range(0, len(keys), _CHUNK):
            where, params = self.any_of("idempotency_key", keys[i : i + _CHUNK])
            self.execute(cur, self.sql(f"SELECT {COLUMNS} FROM events WHERE {where}"), params)
            rows += cur.fetchall()
        return rows

    def all_page_types(self, n: int) -> str:
        p = self.mark
        return (
            f"SELECT {COLUMNS} FROM events WHERE type IN ({', '.join([p] * n)}) AND global_position >= {p} "
            f"ORDER BY global_position LIMIT {p}"
        )

    def insert_rows(self, cur: Any, rows: list[tuple]) -> tuple:
        """Insert chained rows; returns what the table then holds from the first of them on
        (count, last position, its hash), read back in the same transaction."""
        return self.insert_one(cur, rows[0]) if len(rows) == 1 else self.insert_batch(cur, rows)

    def insert_one(self, cur: Any, row: tuple) -> tuple:
        """Insert one row; (1, its position, its hash) when the table holds it, else (0, None, None)."""
        raise NotImplementedError

    def insert_batch(self, cur: Any, rows: list[tuple]) -> tuple:
        """Insert rows by multi-row INSERTs, a statement for up to 64 rows, where ``executemany``
        runs one statement per row, each run set up and torn down anew (SQLite, batches of 100:
        5.5 -> 5.2 µs a row of CPU; the row's own checks, indexes and guard trigger, stay)."""
        start = 0
        for n in _ROWS_PER_INSERT:
            while len(rows) - start >= n:
                cur.execute(self.insert_many[n], list(chain.from_iterable(rows[start : start + n])))
                start += n
        return self._read_back(cur, rows)

    def _read_back(self, cur: Any, rows: list[tuple]) -> tuple:
        cur.execute(self.written, (rows[-1][0], rows[0][0]))
        return tuple(cur.fetchone())


class SQLiteRecorder(Recorder):
    """SQLite: WAL, ``BEGIN IMMEDIATE`` for writes (which also serialises appends)."""

    dialect = "sqlite"

    def make_engine(self, url: str) -> Engine:
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

    def begin(self, cur: Any) -> None:
        cur.execute("BEGIN IMMEDIATE")

    def insert_one(self, cur: Any, row: tuple) -> tuple:
        # The count of rows the statement inserted is the read-back: SQLite's RETURNING would only
        # echo the values bound (a trigger cannot change NEW here) and costs 2 µs of a 45 µs
        # append; a trigger that skips the row leaves the count at 0, as it leaves RETURNING empty.
        cur.execute(self.insert, row)
        return (1, row[0], row[9]) if cur.rowcount == 1 else (0, None, None)

    def json_text(self, column: str, *path: str) -> str:
        return f"json_extract({column}, '$.{'.'.join(path)}')"


class PostgresRecorder(Recorder):
    """PostgreSQL (psycopg 3): an exclusive table lock per write transaction, COPY for batches."""

    dialect = "postgresql"
    mark = "%s"

    def __init__(self) -> None:
        super().__init__()
        self.copy = f"COPY events ({COLUMNS}) FROM STDIN"
        self.insert_returning = f"{self.insert} RETURNING global_position, hash"
        self.versions_query = (
            "SELECT s, (SELECT MAX(stream_version) FROM events WHERE stream_id = s) "
            "FROM unnest(%s::text[]) AS s"
        )

    def make_engine(self, url: str) -> Engine:
        return create_engine(url, pool_pre_ping=False, pool_size=5, pool_recycle=300)

    def sql(self, query: str) -> str:
        return query.replace("?", "%s")

    def lock(self, cur: Any) -> None:
        cur.execute("LOCK TABLE events IN EXCLUSIVE MODE")

    def execute(self, cur: Any, query: str, params: Sequence[Any] = ()) -> None:
        cur.execute(query, params, prepare=False)  # a prepared generic plan for ANY($1) scans the table

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, tuple]:
        return f"{column} = ANY(%s)", (list(values),)  # psycopg parses long placeholder lists slowly

    def json_text(self, column: str, *path: str) -> str:
        return f"CAST({column} AS json) #>> '{{{','.join(path)}}}'"

    def read_engine(self, engine: Engine, threads: int, settings: dict[str, str]) -> Engine:
        # its own pool, a connection per thread (the store's keeps 5, and opens then closes one
        # for each thread beyond them), in autocommit: a read is one round trip (no BEGIN before
        # it, no ROLLBACK when its connection goes back to the pool)
        url = engine.url
        given = " ".join(f"-c {name}={value}" for name, value in settings.items())
        options = f"{url.query['options']} {given}" if url.query.get("options") else given
        return create_engine(
            url.update_query_dict({"options": options}),
            pool_size=threads,
            max_overflow=0,
            isolation_level="AUTOCOMMIT",
        )

    def paging_cursor(self, raw: Any) -> Any:
        return raw.cursor(name="paged")  # a server-side cursor: the server holds the result

    def versions(self, cur: Any, streams: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in range(0, len(streams), _CHUNK):
            self.execute(cur, self.versions_query, (list(streams[i : i + _CHUNK]),))
            out.update({s: int(v) for s, v in cur.fetchall() if v})
        return out

    def insert_one(self, cur: Any, row: tuple) -> tuple:
        # RETURNING is the read-back: no row when a trigger skipped it, an error where a rule
        # replaced the insert
        cur.execute(self.insert_returning, row)
        written = cur.fetchall()
        return (len(written), *written[0]) if written else (0, None, None)

    def insert_batch(self, cur: Any, rows: list[tuple]) -> tuple:
        # COPY: no per-row statement parsing, and no rules (only triggers) apply. A single row
        # goes through INSERT … RETURNING: one round trip where COPY takes three, and an error
        # where a rule replaced it.
        with cur.copy(self.copy) as stream:
            for r in rows:
                stream.write_row(r)
        return self._read_back(cur, rows)


def recorder_for(url: str) -> Recorder:
    """The recorder of a store URL's database (SQLite or PostgreSQL)."""
    if url.startswith("sqlite"):
        return SQLiteRecorder()
    if url.startswith("postgresql"):
        return PostgresRecorder()
    raise StoreError(
        f"the event store runs on SQLite or PostgreSQL, not '{url.partition(':')[0]}'",
        hint="a store URL starts with sqlite:/// or postgresql://",
    )
