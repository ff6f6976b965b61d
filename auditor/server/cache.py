"""Views computed once per stream version: the store is append-only, so a key that names the
stream's version can never go stale. Concurrent requests for the same key compute it once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

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
