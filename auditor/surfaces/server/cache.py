"""Views computed once per stream version: the store is append-only, so a key that names the
stream's version can never go stale. Concurrent requests for the same key compute it once.

The store's head (its last position) is read once per request: while it has not moved, nothing
was appended anywhere, so token records, the search index and stream versions read at that head
still hold, and a read-only request costs one cheap query before its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from sqlalchemy.engine import Engine
from starlette.requests import Request

from auditor.core.store import EventStore
from auditor.core.store.tables import events

V = TypeVar("V")


class VersionedCache(Generic[V]):
    """A small LRU whose keys include the stream version they were computed at."""

    def __init__(self, size: int = 128) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            gate = self._pending.setdefault(key, threading.Lock())
        with gate:  # one computation per key; the others wait for it
            with self._lock:
                if key in self._items:
                    return self._items[key]
            value = compute()
            with self._lock:
                self._items[key] = value
                self._pending.pop(key, None)
                while len(self._items) > self._size:
                    self._items.popitem(last=False)
            return value


def read_engine(store: EventStore, threads: int) -> Engine:
    """An engine for the server's one-statement reads, one connection per request thread
    (``EventStore.read_engine``: on PostgreSQL an autocommit pool of its own; SQLite's is the store's).

    On PostgreSQL its sessions plan without sequential scans: every filter of the search index has an index, and
    the planner does not price un-TOASTing a trace's word vector, so it would otherwise scan and
    decompress every vector for a common word (300 ms against 3 ms from the GIN index at 10,000
    traces), or walk the table in order testing each one. And they plan every execution for its
    values: the driver prepares a statement after five runs, and PostgreSQL's generic plan of a
    prepared search cost 9-13 ms where a plan for the values costs 3."""
    return store.read_engine(threads, {"enable_seqscan": "off", "plan_cache_mode": "force_custom_plan"})


class StoreHead:
    """The store's last position as of this request (read on first use, then kept on the request)."""

    SQL = f"SELECT COALESCE(MAX(global_position), 0) FROM {events.name}"

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __call__(self, request: Request) -> int:
        head = getattr(request.state, "store_head", None)
        if head is None:
            conn = self._engine.raw_connection()  # every request asks: the driver alone, no result machinery
            try:
                cursor = conn.cursor()
                cursor.execute(self.SQL)
                head = request.state.store_head = cursor.fetchone()[0]
                cursor.close()
            finally:
                conn.close()
        return head


class StreamVersions:
    """Stream versions read at a head, kept until the head moves."""

    def __init__(self, store: EventStore, size: int = 50_000) -> None:
        self._store = store
        self._size = size
        self._head = -1
        self._versions: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, stream_id: str, head: int) -> int:
        with self._lock:
            if head == self._head and stream_id in self._versions:
                return self._versions[stream_id]
        version = self._store.stream_version(stream_id)  # read after the head: at least as new
        with self._lock:
            if head != self._head or len(self._versions) >= self._size:
                self._head, self._versions = head, {}
            self._versions[stream_id] = version
        return version
